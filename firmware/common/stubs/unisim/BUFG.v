// LINT STUB of the UltraScale+ primitive BUFG (UG974): ports only, O follows I.
module BUFG (
    output wire O,
    input  wire I
);
    assign O = I;
endmodule
