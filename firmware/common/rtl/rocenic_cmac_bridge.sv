// rocenic_cmac_bridge: the engine's MAC ports (core clock) <-> a 100G CMAC's 512-bit
// AXI4-Stream user interface (its own clock, 322.265625 MHz for the UltraScale+ CMAC),
// plus the CMAC's bring-up controls.
//
//   core clk                                          cmac clk (gt_txusrclk2, also rx_clk)
//   mac_tx_* --> rocenic_async_fifo (whole frames) --> tx_axis_*   (link down: drained)
//   mac_rx_* <-- rocenic_async_fifo (drop if full) <-- rx_axis_*
//
// - TX uses frame mode: the CMAC aborts a frame whose tvalid falls before tlast (underflow),
//   and the reader's clock is the faster one, so a frame may only start once it is whole.
//   The FIFO must hold the largest frame: 2^FIFO_ADDR_W beats of 64 B. 512 beats (32 KiB)
//   hold several 9 KB jumbo frames (the engine's own are at most PMTU 4096 + headers, 66
//   beats) and cost no more block RAM than 256: a 577-bit FIFO is as many 512 x 72 RAMB36
//   as its width needs, whichever depth up to 512 (yosys: 8 RAMB36 + 17 RAMB18 for both).
// - RX has no backpressure (neither the CMAC nor the engine's mac_rx has a ready); the
//   reader is faster than line rate (250 MHz x 64 B > 100 Gb/s), and a frame that still does
//   not fit is dropped whole and counted (rx_drop pulses, in the core domain).
// - While RX is not aligned the CMAC sends remote/local fault and TX is disabled; frames the
//   engine sends meanwhile are drained and dropped, so a dead link never stalls the engine's
//   TX (a NIC drops on a down link; the peer's retransmission covers it). Both switches
//   happen only between frames, so the wire never sees a frame cut short.
module rocenic_cmac_bridge #(
    parameter int FIFO_ADDR_W = 9,
    parameter bit RSFEC = 1'b1   // RS-FEC on (100GBASE-SR4/CR4 switches expect clause 91)
) (
    // core domain
    input  logic         clk,
    input  logic         rst,          // synchronous to clk
    input  logic [511:0] mac_tx_tdata,
    input  logic [63:0]  mac_tx_tkeep,
    input  logic         mac_tx_tlast,
    input  logic         mac_tx_tvalid,
    output logic         mac_tx_tready,
    output logic [511:0] mac_rx_tdata,
    output logic [63:0]  mac_rx_tkeep,
    output logic         mac_rx_tlast,
    output logic         mac_rx_tvalid,
    output logic         mac_rx_tuser,
    output logic         rx_drop,      // a received frame was dropped (FIFO full)

    // CMAC domain
    input  logic         cmac_clk,     // gt_txusrclk2 (rx_clk is tied to it)
    input  logic         cmac_arst,    // usr_tx_reset | usr_rx_reset, asynchronous here
    output logic         link_up,      // stat_rx_aligned, synchronised to cmac_clk
    output logic [511:0] tx_axis_tdata,
    output logic [63:0]  tx_axis_tkeep,
    output logic         tx_axis_tlast,
    output logic         tx_axis_tvalid,
    output logic         tx_axis_tuser,
    input  logic         tx_axis_tready,
    input  logic [511:0] rx_axis_tdata,
    input  logic [63:0]  rx_axis_tkeep,
    input  logic         rx_axis_tlast,
    input  logic         rx_axis_tvalid,
    input  logic         rx_axis_tuser,
    input  logic         stat_rx_aligned,
    output logic         ctl_rx_enable,
    output logic         ctl_rx_force_resync,
    output logic         ctl_rx_test_pattern,
    output logic         ctl_tx_enable,
    output logic         ctl_tx_send_idle,
    output logic         ctl_tx_send_lfi,
    output logic         ctl_tx_send_rfi,
    output logic         ctl_tx_test_pattern,
    output logic         ctl_rx_rsfec_enable,
    output logic         ctl_rx_rsfec_enable_correction,
    output logic         ctl_rx_rsfec_enable_indication,
    output logic         ctl_tx_rsfec_enable,
    output logic         ctl_rsfec_ieee_error_indication_mode
);
    // Both FIFO sides reset together, from either domain's reset.
    logic fifo_arst, core_fifo_rst, cmac_rst;
    assign fifo_arst = rst || cmac_arst;
    rocenic_sync_reset core_rs (.clk(clk), .arst(fifo_arst), .rst(core_fifo_rst));
    rocenic_sync_reset cmac_rs (.clk(cmac_clk), .arst(fifo_arst), .rst(cmac_rst));

    // ---------------------------------------------------------------- link bring-up
    logic tx_pass;      // frames go to the CMAC (else drained); changes between frames only
    (* ASYNC_REG = "TRUE" *) logic [1:0] aligned_sync;
    always_ff @(posedge cmac_clk) begin
        if (cmac_rst) aligned_sync <= '0;
        else aligned_sync <= {aligned_sync[0], stat_rx_aligned};
    end
    assign link_up = aligned_sync[1];
    assign ctl_rx_enable = 1'b1;
    assign ctl_rx_force_resync = 1'b0;
    assign ctl_rx_test_pattern = 1'b0;
    assign ctl_tx_test_pattern = 1'b0;
    assign ctl_tx_send_idle = 1'b0;
    // TX enable and the fault indications follow the link only between frames (tx_pass
    // below): switching them inside a frame would cut it short on the wire.
    assign ctl_tx_enable = tx_pass;
    assign ctl_tx_send_lfi = !tx_pass;
    assign ctl_tx_send_rfi = !tx_pass;
    assign ctl_rx_rsfec_enable = RSFEC;
    assign ctl_rx_rsfec_enable_correction = RSFEC;
    assign ctl_rx_rsfec_enable_indication = RSFEC;
    assign ctl_tx_rsfec_enable = RSFEC;
    assign ctl_rsfec_ieee_error_indication_mode = 1'b0;

    // ---------------------------------------------------------------- TX: core -> CMAC
    logic [575:0] txf_data;
    logic txf_last, txf_valid, txf_ready;
    logic tx_in_frame;
    logic unused_tx_drop;

    rocenic_async_fifo #(.WIDTH(576), .ADDR_W(FIFO_ADDR_W), .FRAME_MODE(1), .DROP_WHEN_FULL(0))
    tx_fifo (
        .s_clk(clk), .s_rst(core_fifo_rst),
        .s_data({mac_tx_tkeep, mac_tx_tdata}), .s_last(mac_tx_tlast),
        .s_valid(mac_tx_tvalid), .s_ready(mac_tx_tready), .s_drop(unused_tx_drop),
        .m_clk(cmac_clk), .m_rst(cmac_rst),
        .m_data(txf_data), .m_last(txf_last), .m_valid(txf_valid), .m_ready(txf_ready)
    );

    always_ff @(posedge cmac_clk) begin
        if (cmac_rst) begin
            tx_pass <= 1'b0;
            tx_in_frame <= 1'b0;
        end else begin
            if (txf_valid && txf_ready) tx_in_frame <= !txf_last;
            // decide at a frame boundary: nothing in flight, or the last beat leaving now
            if (!tx_in_frame && !(txf_valid && txf_ready && !txf_last)) tx_pass <= link_up;
            else if (txf_valid && txf_ready && txf_last) tx_pass <= link_up;
        end
    end
    assign tx_axis_tdata = txf_data[511:0];
    assign tx_axis_tkeep = txf_data[575:512];
    assign tx_axis_tlast = txf_last;
    assign tx_axis_tuser = 1'b0;
    assign tx_axis_tvalid = txf_valid && tx_pass;
    assign txf_ready = tx_pass ? tx_axis_tready : 1'b1;

    // ---------------------------------------------------------------- RX: CMAC -> core
    logic [576:0] rxf_data;
    logic rxf_drop_cmac;
    logic unused_rx_ready;

    rocenic_async_fifo #(.WIDTH(577), .ADDR_W(FIFO_ADDR_W), .FRAME_MODE(1), .DROP_WHEN_FULL(1))
    rx_fifo (
        .s_clk(cmac_clk), .s_rst(cmac_rst),
        .s_data({rx_axis_tuser, rx_axis_tkeep, rx_axis_tdata}), .s_last(rx_axis_tlast),
        .s_valid(rx_axis_tvalid), .s_ready(unused_rx_ready), .s_drop(rxf_drop_cmac),
        .m_clk(clk), .m_rst(core_fifo_rst),
        .m_data(rxf_data), .m_last(mac_rx_tlast), .m_valid(mac_rx_tvalid), .m_ready(1'b1)
    );
    assign mac_rx_tdata = rxf_data[511:0];
    assign mac_rx_tkeep = rxf_data[575:512];
    assign mac_rx_tuser = rxf_data[576];

    // Drop pulses cross as a toggle (one bit, changes at most once per frame).
    logic drop_toggle;
    (* ASYNC_REG = "TRUE" *) logic [2:0] drop_sync;
    always_ff @(posedge cmac_clk) begin
        if (cmac_rst) drop_toggle <= 1'b0;
        else if (rxf_drop_cmac) drop_toggle <= !drop_toggle;
    end
    always_ff @(posedge clk) begin
        if (core_fifo_rst) drop_sync <= '0;
        else drop_sync <= {drop_sync[1:0], drop_toggle};
    end
    assign rx_drop = drop_sync[2] ^ drop_sync[1];
endmodule
