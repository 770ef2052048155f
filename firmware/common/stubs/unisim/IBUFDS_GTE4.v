// LINT STUB of the UltraScale+ primitive IBUFDS_GTE4 (UG974, "IBUFDS_GTE4"): the ports and
// the parameters the wrapper sets, no behaviour. Vivado uses its own UNISIM library.
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off UNUSEDSIGNAL */
module IBUFDS_GTE4 #(
    parameter [0:0] REFCLK_EN_TX_PATH = 1'b0,
    parameter [1:0] REFCLK_HROW_CK_SEL = 2'b00,
    parameter [1:0] REFCLK_ICNTL_RX = 2'b00
) (
    output wire O,
    output wire ODIV2,
    input  wire CEB,
    input  wire I,
    input  wire IB
);
    wire unused = CEB ^ IB;
    assign O = I;
    assign ODIV2 = I;
endmodule
/* verilator lint_on UNUSEDSIGNAL */
/* verilator lint_on UNUSEDPARAM */
