// LINT STUB of `xdma_0`, the DMA/Bridge Subsystem for PCI Express (XDMA 4.1) as
// tcl/ip.tcl configures it: Gen3 x16, 512-bit AXI4-Stream at 250 MHz, one H2C and one C2H
// channel with descriptor bypass, channel status ports, AXI4-Lite master (BAR0) and
// AXI4-Lite slave (DMA registers from user logic).
//
// Port list: PG195 v4.1 "Port Descriptions" (Global, AXI4-Lite Master, AXI4-Lite Slave,
// Descriptor Bypass, AXI4-Stream H2C/C2H, Channel Status, Interrupt), in the order and with
// the widths of the instantiation template Vivado writes for such a configuration
// (xdma_0.veo). No behaviour: outputs are zero. Only for Verilator lint; Vivado builds the
// real IP from tcl/ip.tcl, and synthesis fails if a port here does not exist there.
/* verilator lint_off UNUSEDSIGNAL */
module xdma_0 (
    input  wire         sys_clk,
    input  wire         sys_clk_gt,
    input  wire         sys_rst_n,
    output wire         user_lnk_up,
    output wire [15:0]  pci_exp_txp,
    output wire [15:0]  pci_exp_txn,
    input  wire [15:0]  pci_exp_rxp,
    input  wire [15:0]  pci_exp_rxn,
    output wire         axi_aclk,
    output wire         axi_aresetn,
    input  wire [0:0]   usr_irq_req,
    output wire [0:0]   usr_irq_ack,
    output wire         msi_enable,
    output wire [2:0]   msi_vector_width,
    // AXI4-Lite master: BAR0 of the function
    output wire [31:0]  m_axil_awaddr,
    output wire [2:0]   m_axil_awprot,
    output wire         m_axil_awvalid,
    input  wire         m_axil_awready,
    output wire [31:0]  m_axil_wdata,
    output wire [3:0]   m_axil_wstrb,
    output wire         m_axil_wvalid,
    input  wire         m_axil_wready,
    input  wire         m_axil_bvalid,
    input  wire [1:0]   m_axil_bresp,
    output wire         m_axil_bready,
    output wire [31:0]  m_axil_araddr,
    output wire [2:0]   m_axil_arprot,
    output wire         m_axil_arvalid,
    input  wire         m_axil_arready,
    input  wire [31:0]  m_axil_rdata,
    input  wire [1:0]   m_axil_rresp,
    input  wire         m_axil_rvalid,
    output wire         m_axil_rready,
    // AXI4-Stream C2H / H2C channel 0
    input  wire [511:0] s_axis_c2h_tdata_0,
    input  wire         s_axis_c2h_tlast_0,
    input  wire         s_axis_c2h_tvalid_0,
    output wire         s_axis_c2h_tready_0,
    input  wire [63:0]  s_axis_c2h_tkeep_0,
    output wire [511:0] m_axis_h2c_tdata_0,
    output wire         m_axis_h2c_tlast_0,
    output wire         m_axis_h2c_tvalid_0,
    input  wire         m_axis_h2c_tready_0,
    output wire [63:0]  m_axis_h2c_tkeep_0,
    // AXI4-Lite slave: DMA registers from user logic
    input  wire [31:0]  s_axil_awaddr,
    input  wire [2:0]   s_axil_awprot,
    input  wire         s_axil_awvalid,
    output wire         s_axil_awready,
    input  wire [31:0]  s_axil_wdata,
    input  wire [3:0]   s_axil_wstrb,
    input  wire         s_axil_wvalid,
    output wire         s_axil_wready,
    output wire         s_axil_bvalid,
    output wire [1:0]   s_axil_bresp,
    input  wire         s_axil_bready,
    input  wire [31:0]  s_axil_araddr,
    input  wire [2:0]   s_axil_arprot,
    input  wire         s_axil_arvalid,
    output wire         s_axil_arready,
    output wire [31:0]  s_axil_rdata,
    output wire [1:0]   s_axil_rresp,
    output wire         s_axil_rvalid,
    input  wire         s_axil_rready,
    // Descriptor bypass, channel 0
    output wire         c2h_dsc_byp_ready_0,
    input  wire [63:0]  c2h_dsc_byp_src_addr_0,
    input  wire [63:0]  c2h_dsc_byp_dst_addr_0,
    input  wire [27:0]  c2h_dsc_byp_len_0,
    input  wire [15:0]  c2h_dsc_byp_ctl_0,
    input  wire         c2h_dsc_byp_load_0,
    output wire         h2c_dsc_byp_ready_0,
    input  wire [63:0]  h2c_dsc_byp_src_addr_0,
    input  wire [63:0]  h2c_dsc_byp_dst_addr_0,
    input  wire [27:0]  h2c_dsc_byp_len_0,
    input  wire [15:0]  h2c_dsc_byp_ctl_0,
    input  wire         h2c_dsc_byp_load_0,
    // Channel status: [6] Run, [5] IRQ pending, [4] packet done, [3] descriptor done,
    // [2] descriptor stop, [1] descriptor completed, [0] busy
    output wire [7:0]   c2h_sts_0,
    output wire [7:0]   h2c_sts_0
);
    assign user_lnk_up = 1'b0;
    assign pci_exp_txp = '0;
    assign pci_exp_txn = '0;
    assign axi_aclk = sys_clk;
    assign axi_aresetn = sys_rst_n;
    assign usr_irq_ack = '0;
    assign msi_enable = 1'b0;
    assign msi_vector_width = '0;
    assign m_axil_awaddr = '0;
    assign m_axil_awprot = '0;
    assign m_axil_awvalid = 1'b0;
    assign m_axil_wdata = '0;
    assign m_axil_wstrb = '0;
    assign m_axil_wvalid = 1'b0;
    assign m_axil_bready = 1'b0;
    assign m_axil_araddr = '0;
    assign m_axil_arprot = '0;
    assign m_axil_arvalid = 1'b0;
    assign m_axil_rready = 1'b0;
    assign s_axis_c2h_tready_0 = 1'b0;
    assign m_axis_h2c_tdata_0 = '0;
    assign m_axis_h2c_tlast_0 = 1'b0;
    assign m_axis_h2c_tvalid_0 = 1'b0;
    assign m_axis_h2c_tkeep_0 = '0;
    assign s_axil_awready = 1'b0;
    assign s_axil_wready = 1'b0;
    assign s_axil_bvalid = 1'b0;
    assign s_axil_bresp = '0;
    assign s_axil_arready = 1'b0;
    assign s_axil_rdata = '0;
    assign s_axil_rresp = '0;
    assign s_axil_rvalid = 1'b0;
    assign c2h_dsc_byp_ready_0 = 1'b0;
    assign h2c_dsc_byp_ready_0 = 1'b0;
    assign c2h_sts_0 = '0;
    assign h2c_sts_0 = '0;
endmodule
/* verilator lint_on UNUSEDSIGNAL */
