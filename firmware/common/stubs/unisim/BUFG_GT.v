// LINT STUB of the UltraScale+ primitive BUFG_GT (UG974): ports only, O follows I.
module BUFG_GT (
    output wire O,
    input  wire CE,
    input  wire CEMASK,
    input  wire CLR,
    input  wire CLRMASK,
    input  wire [2:0] DIV,
    input  wire I
);
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused = CE ^ CEMASK ^ CLR ^ CLRMASK ^ (^DIV);
    /* verilator lint_on UNUSEDSIGNAL */
    assign O = I;
endmodule
