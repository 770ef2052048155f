// LINT STUB of `cmac_usplus_0`, the UltraScale+ Integrated 100G Ethernet subsystem
// (CMAC USPLUS 3.1) as tcl/ip.tcl configures it: CAUI-4 (4 x 25.78 Gb/s GTY lanes),
// 161.1328125 MHz reference clock, 512-bit AXI4-Stream user interface (no LBUS), RS-FEC
// included, control by ports (no AXI4-Lite), no flow control.
//
// Port list: PG203 v3.1 "Port Descriptions" (transceiver, clocking/reset, AXI4-Stream
// TX/RX, control and status, RS-FEC, DRP). Every input is listed (all must be driven);
// of the many statistics outputs (stat_rx_*, stat_tx_*) only those the wrapper reads are
// here, which Verilog allows since outputs may stay unconnected. No behaviour: outputs are
// zero. Only for Verilator lint; Vivado uses the real IP.
/* verilator lint_off UNUSEDSIGNAL */
module cmac_usplus_0 (
    input  wire [3:0]   gt_rxp_in,
    input  wire [3:0]   gt_rxn_in,
    output wire [3:0]   gt_txp_out,
    output wire [3:0]   gt_txn_out,
    output wire         gt_txusrclk2,
    input  wire [11:0]  gt_loopback_in,
    output wire [3:0]   gt_rxrecclkout,
    output wire [3:0]   gt_powergoodout,
    output wire         gt_ref_clk_out,
    input  wire         gtwiz_reset_tx_datapath,
    input  wire         gtwiz_reset_rx_datapath,
    input  wire         sys_reset,
    input  wire         gt_ref_clk_p,
    input  wire         gt_ref_clk_n,
    input  wire         init_clk,
    // RX user interface (rx_clk domain)
    input  wire         rx_clk,
    output wire         rx_axis_tvalid,
    output wire [511:0] rx_axis_tdata,
    output wire         rx_axis_tlast,
    output wire [63:0]  rx_axis_tkeep,
    output wire         rx_axis_tuser,
    output wire [55:0]  rx_preambleout,
    output wire         usr_rx_reset,
    output wire         stat_rx_aligned,
    output wire         stat_rx_aligned_err,
    output wire [2:0]   stat_rx_bad_fcs,
    output wire         stat_rx_local_fault,
    output wire         stat_rx_remote_fault,
    output wire         stat_rx_status,
    input  wire         ctl_rx_enable,
    input  wire         ctl_rx_force_resync,
    input  wire         ctl_rx_test_pattern,
    input  wire         core_rx_reset,
    // RS-FEC controls
    input  wire         ctl_rsfec_ieee_error_indication_mode,
    input  wire         ctl_rx_rsfec_enable,
    input  wire         ctl_rx_rsfec_enable_correction,
    input  wire         ctl_rx_rsfec_enable_indication,
    input  wire         ctl_tx_rsfec_enable,
    // TX user interface (gt_txusrclk2 domain)
    input  wire         ctl_tx_enable,
    input  wire         ctl_tx_send_idle,
    input  wire         ctl_tx_send_rfi,
    input  wire         ctl_tx_send_lfi,
    input  wire         ctl_tx_test_pattern,
    input  wire         core_tx_reset,
    output wire         tx_axis_tready,
    input  wire         tx_axis_tvalid,
    input  wire [511:0] tx_axis_tdata,
    input  wire         tx_axis_tlast,
    input  wire [63:0]  tx_axis_tkeep,
    input  wire         tx_axis_tuser,
    output wire         tx_ovfout,
    output wire         tx_unfout,
    input  wire [55:0]  tx_preamblein,
    output wire         usr_tx_reset,
    // DRP (unused: tied off)
    input  wire         core_drp_reset,
    input  wire         drp_clk,
    input  wire [9:0]   drp_addr,
    input  wire [15:0]  drp_di,
    input  wire         drp_en,
    output wire [15:0]  drp_do,
    output wire         drp_rdy,
    input  wire         drp_we
);
    assign gt_txp_out = '0;
    assign gt_txn_out = '0;
    assign gt_txusrclk2 = init_clk;
    assign gt_rxrecclkout = '0;
    assign gt_powergoodout = '0;
    assign gt_ref_clk_out = 1'b0;
    assign rx_axis_tvalid = 1'b0;
    assign rx_axis_tdata = '0;
    assign rx_axis_tlast = 1'b0;
    assign rx_axis_tkeep = '0;
    assign rx_axis_tuser = 1'b0;
    assign rx_preambleout = '0;
    assign usr_rx_reset = sys_reset;
    assign stat_rx_aligned = 1'b0;
    assign stat_rx_aligned_err = 1'b0;
    assign stat_rx_bad_fcs = '0;
    assign stat_rx_local_fault = 1'b0;
    assign stat_rx_remote_fault = 1'b0;
    assign stat_rx_status = 1'b0;
    assign tx_axis_tready = 1'b0;
    assign tx_ovfout = 1'b0;
    assign tx_unfout = 1'b0;
    assign usr_tx_reset = sys_reset;
    assign drp_do = '0;
    assign drp_rdy = 1'b0;
endmodule
/* verilator lint_on UNUSEDSIGNAL */
