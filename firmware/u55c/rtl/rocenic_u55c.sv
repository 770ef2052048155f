// rocenic_u55c: the board top for an AMD Alveo U55C (xcu55c-fsvh2892-2L-e).
//
//   PCIe Gen3 x16 --- xdma_0 (XDMA 4.1, AXI4-Stream + descriptor bypass) ---+
//        BAR0 (AXI4-Lite master) -- rocenic_axil_regport -- reg_*          |
//        H2C/C2H bypass + streams -- rocenic_xdma_dma ----- dma_*          |  axi_aclk,
//                                                                          |  250 MHz:
//                                     top (the engine, generated) <--------+  core clock
//                                        mac_tx_* / mac_rx_*
//                                     rocenic_cmac_bridge (async FIFOs)
//   QSFP28 0 ---- cmac_usplus_0 (CMAC, RS-FEC, 512-bit AXI4-Stream) : gt_txusrclk2,
//                                                                      322.265625 MHz
//
// Clocks: the engine runs on the XDMA's axi_aclk (250 MHz for Gen3 x16 at 512 bits), so the
// host side needs no crossing; the CMAC's user clock is the only other domain, crossed in
// rocenic_cmac_bridge. The CMAC's init/DRP clock is the board's free-running 100 MHz
// oscillator, so the Ethernet side comes up whether or not PCIe has trained.
// Resets: PCIe PERST# resets the XDMA; its axi_aresetn, synchronised, is the engine's
// synchronous reset. A power-on counter on the 100 MHz clock resets the CMAC once.
// No HBM is used; HBM_CATTRIP must still be driven low (the card's controller cuts power
// when it reads high).
module rocenic_u55c (
    // PCIe edge connector
    input  wire         pcie_refclk_p,   // 100 MHz, MGTREFCLK0 of quad 225
    input  wire         pcie_refclk_n,
    input  wire         pcie_perst_n,
    output wire [15:0]  pci_exp_txp,
    output wire [15:0]  pci_exp_txn,
    input  wire [15:0]  pci_exp_rxp,
    input  wire [15:0]  pci_exp_rxn,
    // 100 MHz board clock (SI5394 OUT3)
    input  wire         clk_100mhz_p,
    input  wire         clk_100mhz_n,
    // QSFP28 cage 0: 4 lanes of quad 130, 161.1328125 MHz reference (SI5394 OUT0)
    input  wire         qsfp0_refclk_p,
    input  wire         qsfp0_refclk_n,
    input  wire [3:0]   qsfp0_rxp,
    input  wire [3:0]   qsfp0_rxn,
    output wire [3:0]   qsfp0_txp,
    output wire [3:0]   qsfp0_txn,
    // cage 0 LEDs and the HBM over-temperature line
    output wire         qsfp0_led_act,
    output wire         qsfp0_led_stat_g,
    output wire         qsfp0_led_stat_y,
    output wire         hbm_cattrip
);
    assign hbm_cattrip = 1'b0;

    // ---------------------------------------------------------------- clocks and resets
    wire pcie_sys_clk_gt, pcie_sys_clk_odiv2, pcie_sys_clk;
    IBUFDS_GTE4 #(.REFCLK_HROW_CK_SEL(2'b00)) pcie_refclk_buf (
        .O(pcie_sys_clk_gt), .ODIV2(pcie_sys_clk_odiv2), .CEB(1'b0),
        .I(pcie_refclk_p), .IB(pcie_refclk_n)
    );
    BUFG_GT pcie_sys_clk_bufg (
        .O(pcie_sys_clk), .CE(1'b1), .CEMASK(1'b0), .CLR(1'b0), .CLRMASK(1'b0),
        .DIV(3'd0), .I(pcie_sys_clk_odiv2)
    );

    wire clk_100_ibuf, init_clk;
    IBUFDS clk_100_buf (.O(clk_100_ibuf), .I(clk_100mhz_p), .IB(clk_100mhz_n));
    BUFG clk_100_bufg (.O(init_clk), .I(clk_100_ibuf));

    // CMAC reset: held for 128 cycles of init_clk after configuration.
    logic [7:0] por_count = 8'd0;
    always_ff @(posedge init_clk) if (!por_count[7]) por_count <= por_count + 8'd1;
    wire cmac_sys_reset = !por_count[7];

    wire clk;            // core clock: XDMA axi_aclk
    wire axi_aresetn;
    wire rst;            // core reset, synchronous, active high
    rocenic_sync_reset core_rst_sync (.clk(clk), .arst(!axi_aresetn), .rst(rst));

    // ---------------------------------------------------------------- PCIe DMA (XDMA)
    wire         user_lnk_up;
    wire [31:0]  bar_awaddr, bar_wdata, bar_araddr, bar_rdata;
    wire [2:0]   bar_awprot, bar_arprot;
    wire [3:0]   bar_wstrb;
    wire [1:0]   bar_bresp, bar_rresp;
    wire         bar_awvalid, bar_awready, bar_wvalid, bar_wready, bar_bvalid, bar_bready;
    wire         bar_arvalid, bar_arready, bar_rvalid, bar_rready;

    wire [511:0] c2h_tdata, h2c_tdata;
    wire [63:0]  c2h_tkeep, h2c_tkeep;
    wire         c2h_tlast, c2h_tvalid, c2h_tready, h2c_tlast, h2c_tvalid, h2c_tready;
    wire [31:0]  dcsr_awaddr, dcsr_wdata;
    wire [3:0]   dcsr_wstrb;
    wire [1:0]   dcsr_bresp;
    wire         dcsr_awvalid, dcsr_awready, dcsr_wvalid, dcsr_wready, dcsr_bvalid, dcsr_bready;
    wire         c2h_byp_ready, c2h_byp_load, h2c_byp_ready, h2c_byp_load;
    wire [63:0]  c2h_byp_src, c2h_byp_dst, h2c_byp_src, h2c_byp_dst;
    wire [27:0]  c2h_byp_len, h2c_byp_len;
    wire [15:0]  c2h_byp_ctl, h2c_byp_ctl;
    wire [7:0]   c2h_sts, h2c_sts;

    // Unused outputs of the IP, named so that lint sees them read.
    wire [0:0]   unused_irq_ack;
    wire         unused_msi_enable;
    wire [2:0]   unused_msi_width;
    wire         unused_dcsr_arready, unused_dcsr_rvalid;
    wire [31:0]  unused_dcsr_rdata;
    wire [1:0]   unused_dcsr_rresp;

    xdma_0 pcie_dma (
        .sys_clk(pcie_sys_clk), .sys_clk_gt(pcie_sys_clk_gt), .sys_rst_n(pcie_perst_n),
        .user_lnk_up(user_lnk_up),
        .pci_exp_txp(pci_exp_txp), .pci_exp_txn(pci_exp_txn),
        .pci_exp_rxp(pci_exp_rxp), .pci_exp_rxn(pci_exp_rxn),
        .axi_aclk(clk), .axi_aresetn(axi_aresetn),
        // no interrupts: the driver polls the completion queues
        .usr_irq_req(1'b0), .usr_irq_ack(unused_irq_ack),
        .msi_enable(unused_msi_enable), .msi_vector_width(unused_msi_width),
        .m_axil_awaddr(bar_awaddr), .m_axil_awprot(bar_awprot), .m_axil_awvalid(bar_awvalid),
        .m_axil_awready(bar_awready), .m_axil_wdata(bar_wdata), .m_axil_wstrb(bar_wstrb),
        .m_axil_wvalid(bar_wvalid), .m_axil_wready(bar_wready), .m_axil_bvalid(bar_bvalid),
        .m_axil_bresp(bar_bresp), .m_axil_bready(bar_bready), .m_axil_araddr(bar_araddr),
        .m_axil_arprot(bar_arprot), .m_axil_arvalid(bar_arvalid),
        .m_axil_arready(bar_arready), .m_axil_rdata(bar_rdata), .m_axil_rresp(bar_rresp),
        .m_axil_rvalid(bar_rvalid), .m_axil_rready(bar_rready),
        .s_axis_c2h_tdata_0(c2h_tdata), .s_axis_c2h_tlast_0(c2h_tlast),
        .s_axis_c2h_tvalid_0(c2h_tvalid), .s_axis_c2h_tready_0(c2h_tready),
        .s_axis_c2h_tkeep_0(c2h_tkeep),
        .m_axis_h2c_tdata_0(h2c_tdata), .m_axis_h2c_tlast_0(h2c_tlast),
        .m_axis_h2c_tvalid_0(h2c_tvalid), .m_axis_h2c_tready_0(h2c_tready),
        .m_axis_h2c_tkeep_0(h2c_tkeep),
        .s_axil_awaddr(dcsr_awaddr), .s_axil_awprot(3'd0), .s_axil_awvalid(dcsr_awvalid),
        .s_axil_awready(dcsr_awready), .s_axil_wdata(dcsr_wdata), .s_axil_wstrb(dcsr_wstrb),
        .s_axil_wvalid(dcsr_wvalid), .s_axil_wready(dcsr_wready),
        .s_axil_bvalid(dcsr_bvalid), .s_axil_bresp(dcsr_bresp), .s_axil_bready(dcsr_bready),
        .s_axil_araddr(32'd0), .s_axil_arprot(3'd0), .s_axil_arvalid(1'b0),
        .s_axil_arready(unused_dcsr_arready), .s_axil_rdata(unused_dcsr_rdata),
        .s_axil_rresp(unused_dcsr_rresp), .s_axil_rvalid(unused_dcsr_rvalid),
        .s_axil_rready(1'b1),
        .c2h_dsc_byp_ready_0(c2h_byp_ready), .c2h_dsc_byp_src_addr_0(c2h_byp_src),
        .c2h_dsc_byp_dst_addr_0(c2h_byp_dst), .c2h_dsc_byp_len_0(c2h_byp_len),
        .c2h_dsc_byp_ctl_0(c2h_byp_ctl), .c2h_dsc_byp_load_0(c2h_byp_load),
        .h2c_dsc_byp_ready_0(h2c_byp_ready), .h2c_dsc_byp_src_addr_0(h2c_byp_src),
        .h2c_dsc_byp_dst_addr_0(h2c_byp_dst), .h2c_dsc_byp_len_0(h2c_byp_len),
        .h2c_dsc_byp_ctl_0(h2c_byp_ctl), .h2c_dsc_byp_load_0(h2c_byp_load),
        .c2h_sts_0(c2h_sts), .h2c_sts_0(h2c_sts)
    );

    // ---------------------------------------------------------------- the engine
    wire         reg_valid, reg_ready, reg_write, reg_rdata_valid;
    wire [16:0]  reg_addr;
    wire [31:0]  reg_wdata, reg_rdata;
    wire         rd_req_valid, rd_req_ready, rd_resp_valid, rd_resp_ready, rd_resp_last;
    wire         rd_resp_err;
    wire [63:0]  rd_req_addr, wr_req_addr;
    wire [15:0]  rd_req_len, wr_req_len;
    wire [7:0]   rd_req_tag, rd_resp_tag;
    wire [511:0] rd_resp_data, wr_data;
    wire         wr_req_valid, wr_req_ready, wr_data_valid, wr_data_ready, wr_data_last;
    wire [63:0]  wr_data_keep;
    wire         wr_status_valid, wr_status_err;
    wire [511:0] tx_tdata, rx_tdata;
    wire [63:0]  tx_tkeep, rx_tkeep;
    wire         tx_tlast, tx_tvalid, tx_tready, rx_tlast, rx_tvalid, rx_tuser;
    wire         dma_running;

    rocenic_axil_regport bar0 (
        .clk(clk), .rst(rst),
        .s_axil_awaddr(bar_awaddr), .s_axil_awvalid(bar_awvalid), .s_axil_awready(bar_awready),
        .s_axil_wdata(bar_wdata), .s_axil_wstrb(bar_wstrb), .s_axil_wvalid(bar_wvalid),
        .s_axil_wready(bar_wready), .s_axil_bresp(bar_bresp), .s_axil_bvalid(bar_bvalid),
        .s_axil_bready(bar_bready), .s_axil_araddr(bar_araddr), .s_axil_arvalid(bar_arvalid),
        .s_axil_arready(bar_arready), .s_axil_rdata(bar_rdata), .s_axil_rresp(bar_rresp),
        .s_axil_rvalid(bar_rvalid), .s_axil_rready(bar_rready),
        .reg_valid(reg_valid), .reg_ready(reg_ready), .reg_write(reg_write),
        .reg_addr(reg_addr), .reg_wdata(reg_wdata), .reg_rdata_valid(reg_rdata_valid),
        .reg_rdata(reg_rdata)
    );
    wire [5:0] unused_prot = {bar_awprot, bar_arprot};

    rocenic_xdma_dma dma (
        .clk(clk), .rst(rst), .running(dma_running),
        .dma_rd_req_valid(rd_req_valid), .dma_rd_req_ready(rd_req_ready),
        .dma_rd_req_addr(rd_req_addr), .dma_rd_req_len(rd_req_len),
        .dma_rd_req_tag(rd_req_tag),
        .dma_rd_resp_valid(rd_resp_valid), .dma_rd_resp_ready(rd_resp_ready),
        .dma_rd_resp_data(rd_resp_data), .dma_rd_resp_tag(rd_resp_tag),
        .dma_rd_resp_last(rd_resp_last), .dma_rd_resp_err(rd_resp_err),
        .dma_wr_req_valid(wr_req_valid), .dma_wr_req_ready(wr_req_ready),
        .dma_wr_req_addr(wr_req_addr), .dma_wr_req_len(wr_req_len),
        .dma_wr_data_valid(wr_data_valid), .dma_wr_data_ready(wr_data_ready),
        .dma_wr_data(wr_data), .dma_wr_data_keep(wr_data_keep),
        .dma_wr_data_last(wr_data_last),
        .dma_wr_status_valid(wr_status_valid), .dma_wr_status_err(wr_status_err),
        .h2c_dsc_byp_ready(h2c_byp_ready), .h2c_dsc_byp_src_addr(h2c_byp_src),
        .h2c_dsc_byp_dst_addr(h2c_byp_dst), .h2c_dsc_byp_len(h2c_byp_len),
        .h2c_dsc_byp_ctl(h2c_byp_ctl), .h2c_dsc_byp_load(h2c_byp_load),
        .m_axis_h2c_tdata(h2c_tdata), .m_axis_h2c_tkeep(h2c_tkeep),
        .m_axis_h2c_tlast(h2c_tlast), .m_axis_h2c_tvalid(h2c_tvalid),
        .m_axis_h2c_tready(h2c_tready), .h2c_sts(h2c_sts),
        .c2h_dsc_byp_ready(c2h_byp_ready), .c2h_dsc_byp_src_addr(c2h_byp_src),
        .c2h_dsc_byp_dst_addr(c2h_byp_dst), .c2h_dsc_byp_len(c2h_byp_len),
        .c2h_dsc_byp_ctl(c2h_byp_ctl), .c2h_dsc_byp_load(c2h_byp_load),
        .s_axis_c2h_tdata(c2h_tdata), .s_axis_c2h_tkeep(c2h_tkeep),
        .s_axis_c2h_tlast(c2h_tlast), .s_axis_c2h_tvalid(c2h_tvalid),
        .s_axis_c2h_tready(c2h_tready), .c2h_sts(c2h_sts),
        .m_axil_awaddr(dcsr_awaddr), .m_axil_awvalid(dcsr_awvalid),
        .m_axil_awready(dcsr_awready), .m_axil_wdata(dcsr_wdata), .m_axil_wstrb(dcsr_wstrb),
        .m_axil_wvalid(dcsr_wvalid), .m_axil_wready(dcsr_wready), .m_axil_bresp(dcsr_bresp),
        .m_axil_bvalid(dcsr_bvalid), .m_axil_bready(dcsr_bready)
    );

    wire         unused_rx_pause;
    top engine (
        .clock(clk), .reset(rst),
        .reg_valid(reg_valid), .reg_ready(reg_ready), .reg_write(reg_write),
        .reg_addr(reg_addr), .reg_wdata(reg_wdata), .reg_rdata_valid(reg_rdata_valid),
        .reg_rdata(reg_rdata),
        .dma_rd_req_valid(rd_req_valid), .dma_rd_req_ready(rd_req_ready),
        .dma_rd_req_addr(rd_req_addr), .dma_rd_req_len(rd_req_len),
        .dma_rd_req_tag(rd_req_tag),
        .dma_rd_resp_valid(rd_resp_valid), .dma_rd_resp_ready(rd_resp_ready),
        .dma_rd_resp_data(rd_resp_data), .dma_rd_resp_tag(rd_resp_tag),
        .dma_rd_resp_last(rd_resp_last), .dma_rd_resp_err(rd_resp_err),
        .dma_wr_req_valid(wr_req_valid), .dma_wr_req_ready(wr_req_ready),
        .dma_wr_req_addr(wr_req_addr), .dma_wr_req_len(wr_req_len),
        .dma_wr_data_valid(wr_data_valid), .dma_wr_data_ready(wr_data_ready),
        .dma_wr_data(wr_data), .dma_wr_data_keep(wr_data_keep),
        .dma_wr_data_last(wr_data_last),
        .dma_wr_status_valid(wr_status_valid), .dma_wr_status_err(wr_status_err),
        .mac_tx_tdata(tx_tdata), .mac_tx_tkeep(tx_tkeep), .mac_tx_tlast(tx_tlast),
        .mac_tx_tvalid(tx_tvalid), .mac_tx_tready(tx_tready),
        .mac_rx_tdata(rx_tdata), .mac_rx_tkeep(rx_tkeep), .mac_rx_tlast(rx_tlast),
        .mac_rx_tvalid(rx_tvalid), .mac_rx_tuser(rx_tuser),
        // The engine's PFC pause request: this CMAC is generated without pause-frame
        // logic (tcl/ip.tcl), so it is not sent yet (docs/flashing.md, congestion).
        .mac_rx_pause(unused_rx_pause)
    );

    // ---------------------------------------------------------------- 100G MAC (CMAC)
    wire         cmac_clk, usr_tx_reset, usr_rx_reset, link_up, rx_drop;
    wire [511:0] cmac_tx_tdata, cmac_rx_tdata;
    wire [63:0]  cmac_tx_tkeep, cmac_rx_tkeep;
    wire         cmac_tx_tlast, cmac_tx_tvalid, cmac_tx_tready, cmac_tx_tuser;
    wire         cmac_rx_tlast, cmac_rx_tvalid, cmac_rx_tuser, stat_rx_aligned;
    wire         ctl_rx_enable, ctl_rx_force_resync, ctl_rx_test_pattern, ctl_tx_enable;
    wire         ctl_tx_send_idle, ctl_tx_send_lfi, ctl_tx_send_rfi, ctl_tx_test_pattern;
    wire         ctl_rx_rsfec_enable, ctl_rx_rsfec_enable_correction;
    wire         ctl_rx_rsfec_enable_indication, ctl_tx_rsfec_enable, ctl_rsfec_ieee_mode;
    wire [3:0]   unused_recclk, unused_powergood;
    wire         unused_refclk_out, unused_aligned_err, unused_local_fault;
    wire         unused_remote_fault, unused_rx_status, unused_ovf, unused_unf, unused_drp_rdy;
    wire [2:0]   unused_bad_fcs;
    wire [55:0]  unused_preamble;
    wire [15:0]  unused_drp_do;

    cmac_usplus_0 mac (
        .gt_rxp_in(qsfp0_rxp), .gt_rxn_in(qsfp0_rxn),
        .gt_txp_out(qsfp0_txp), .gt_txn_out(qsfp0_txn),
        .gt_txusrclk2(cmac_clk), .gt_loopback_in(12'd0),
        .gt_rxrecclkout(unused_recclk), .gt_powergoodout(unused_powergood),
        .gt_ref_clk_out(unused_refclk_out),
        .gtwiz_reset_tx_datapath(1'b0), .gtwiz_reset_rx_datapath(1'b0),
        .sys_reset(cmac_sys_reset),
        .gt_ref_clk_p(qsfp0_refclk_p), .gt_ref_clk_n(qsfp0_refclk_n), .init_clk(init_clk),
        .rx_clk(cmac_clk),
        .rx_axis_tvalid(cmac_rx_tvalid), .rx_axis_tdata(cmac_rx_tdata),
        .rx_axis_tlast(cmac_rx_tlast), .rx_axis_tkeep(cmac_rx_tkeep),
        .rx_axis_tuser(cmac_rx_tuser), .rx_preambleout(unused_preamble),
        .usr_rx_reset(usr_rx_reset),
        .stat_rx_aligned(stat_rx_aligned), .stat_rx_aligned_err(unused_aligned_err),
        .stat_rx_bad_fcs(unused_bad_fcs), .stat_rx_local_fault(unused_local_fault),
        .stat_rx_remote_fault(unused_remote_fault), .stat_rx_status(unused_rx_status),
        .ctl_rx_enable(ctl_rx_enable), .ctl_rx_force_resync(ctl_rx_force_resync),
        .ctl_rx_test_pattern(ctl_rx_test_pattern), .core_rx_reset(1'b0),
        .ctl_rsfec_ieee_error_indication_mode(ctl_rsfec_ieee_mode),
        .ctl_rx_rsfec_enable(ctl_rx_rsfec_enable),
        .ctl_rx_rsfec_enable_correction(ctl_rx_rsfec_enable_correction),
        .ctl_rx_rsfec_enable_indication(ctl_rx_rsfec_enable_indication),
        .ctl_tx_rsfec_enable(ctl_tx_rsfec_enable),
        .ctl_tx_enable(ctl_tx_enable), .ctl_tx_send_idle(ctl_tx_send_idle),
        .ctl_tx_send_rfi(ctl_tx_send_rfi), .ctl_tx_send_lfi(ctl_tx_send_lfi),
        .ctl_tx_test_pattern(ctl_tx_test_pattern), .core_tx_reset(1'b0),
        .tx_axis_tready(cmac_tx_tready), .tx_axis_tvalid(cmac_tx_tvalid),
        .tx_axis_tdata(cmac_tx_tdata), .tx_axis_tlast(cmac_tx_tlast),
        .tx_axis_tkeep(cmac_tx_tkeep), .tx_axis_tuser(cmac_tx_tuser),
        .tx_ovfout(unused_ovf), .tx_unfout(unused_unf), .tx_preamblein(56'd0),
        .usr_tx_reset(usr_tx_reset),
        .core_drp_reset(1'b0), .drp_clk(init_clk), .drp_addr(10'd0), .drp_di(16'd0),
        .drp_en(1'b0), .drp_do(unused_drp_do), .drp_rdy(unused_drp_rdy), .drp_we(1'b0)
    );

    rocenic_cmac_bridge mac_cdc (
        .clk(clk), .rst(rst),
        .mac_tx_tdata(tx_tdata), .mac_tx_tkeep(tx_tkeep), .mac_tx_tlast(tx_tlast),
        .mac_tx_tvalid(tx_tvalid), .mac_tx_tready(tx_tready),
        .mac_rx_tdata(rx_tdata), .mac_rx_tkeep(rx_tkeep), .mac_rx_tlast(rx_tlast),
        .mac_rx_tvalid(rx_tvalid), .mac_rx_tuser(rx_tuser), .rx_drop(rx_drop),
        .cmac_clk(cmac_clk), .cmac_arst(usr_tx_reset || usr_rx_reset), .link_up(link_up),
        .tx_axis_tdata(cmac_tx_tdata), .tx_axis_tkeep(cmac_tx_tkeep),
        .tx_axis_tlast(cmac_tx_tlast), .tx_axis_tvalid(cmac_tx_tvalid),
        .tx_axis_tuser(cmac_tx_tuser), .tx_axis_tready(cmac_tx_tready),
        .rx_axis_tdata(cmac_rx_tdata), .rx_axis_tkeep(cmac_rx_tkeep),
        .rx_axis_tlast(cmac_rx_tlast), .rx_axis_tvalid(cmac_rx_tvalid),
        .rx_axis_tuser(cmac_rx_tuser), .stat_rx_aligned(stat_rx_aligned),
        .ctl_rx_enable(ctl_rx_enable), .ctl_rx_force_resync(ctl_rx_force_resync),
        .ctl_rx_test_pattern(ctl_rx_test_pattern), .ctl_tx_enable(ctl_tx_enable),
        .ctl_tx_send_idle(ctl_tx_send_idle), .ctl_tx_send_lfi(ctl_tx_send_lfi),
        .ctl_tx_send_rfi(ctl_tx_send_rfi), .ctl_tx_test_pattern(ctl_tx_test_pattern),
        .ctl_rx_rsfec_enable(ctl_rx_rsfec_enable),
        .ctl_rx_rsfec_enable_correction(ctl_rx_rsfec_enable_correction),
        .ctl_rx_rsfec_enable_indication(ctl_rx_rsfec_enable_indication),
        .ctl_tx_rsfec_enable(ctl_tx_rsfec_enable),
        .ctl_rsfec_ieee_error_indication_mode(ctl_rsfec_ieee_mode)
    );

    // ---------------------------------------------------------------- LEDs
    // act: a frame went either way in the last ~67 ms; green: Ethernet link up (RX aligned);
    // yellow: PCIe link up but the DMA channels are not running, or a received frame was
    // dropped in the last ~67 ms.
    logic [23:0] act_hold, drop_hold;
    always_ff @(posedge clk) begin
        if (rst) begin
            act_hold <= '0;
            drop_hold <= '0;
        end else begin
            if ((tx_tvalid && tx_tready && tx_tlast) || (rx_tvalid && rx_tlast)) act_hold <= '1;
            else if (act_hold != 0) act_hold <= act_hold - 24'd1;
            if (rx_drop) drop_hold <= '1;
            else if (drop_hold != 0) drop_hold <= drop_hold - 24'd1;
        end
    end
    assign qsfp0_led_act = act_hold != 0;
    assign qsfp0_led_stat_g = link_up;
    assign qsfp0_led_stat_y = (user_lnk_up && !dma_running) || drop_hold != 0;
endmodule
