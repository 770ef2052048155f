// LINT STUB of the UltraScale+ primitive IBUFDS (UG974): ports only, O follows I.
module IBUFDS (
    output wire O,
    input  wire I,
    input  wire IB
);
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused = IB;
    /* verilator lint_on UNUSEDSIGNAL */
    assign O = I;
endmodule
