// Test design for rocenic-sim's Verilator harness (sim/tests/rtl.rs): narrow, 64-bit,
// 72-bit and 512-bit ports, a synchronous reset and a clocked counter.
module toy #(
    parameter [31:0] STEP = 32'd1
) (
    input  wire         clk,
    input  wire         rst,       // synchronous, active high
    input  wire         en,
    input  wire [7:0]   a,
    input  wire [7:0]   b,
    output wire [8:0]   sum,       // a + b, combinational
    output reg  [31:0]  count,     // += STEP per enabled cycle
    input  wire [63:0]  x64,
    output wire [63:0]  x64_inv,   // ~x64, combinational
    input  wire [71:0]  w72,
    output reg  [71:0]  w72_inc,   // w72 + 1, registered
    input  wire [511:0] d512,
    output reg  [511:0] q512       // d512 rotated left by 8 bits, registered
);
    assign sum = {1'b0, a} + {1'b0, b};
    assign x64_inv = ~x64;

    always @(posedge clk) begin
        if (rst) begin
            count   <= 32'd0;
            w72_inc <= 72'd0;
            q512    <= 512'd0;
        end else begin
            if (en) count <= count + STEP;
            w72_inc <= w72 + 72'd1;
            q512    <= {d512[503:0], d512[511:504]};
        end
    end
endmodule
