// A 512-bit, 8-stage pipeline for the harness's speed measurement (sim/tests/rtl.rs).
// Stage k (k = 0..7): rotate left by 1 bit, XOR {16{32'h9E3779B9 * (k+1)}}, then add
// (k + 1) to each 32-bit lane. `valid` travels with the data.
module pipe512 (
    input  wire         clk,
    input  wire         rst,
    input  wire         in_valid,
    input  wire [511:0] in_data,
    output wire         out_valid,
    output wire [511:0] out_data
);
    localparam STAGES = 8;
    reg [511:0] data  [0:STAGES];
    reg         valid [0:STAGES];

    always @(*) begin
        data[0]  = in_data;
        valid[0] = in_valid;
    end

    genvar k, l;
    generate
        for (k = 0; k < STAGES; k = k + 1) begin : stage
            localparam [31:0] KEY = 32'h9E3779B9 * (k + 1);
            wire [511:0] rot = {data[k][510:0], data[k][511]} ^ {16{KEY}};
            wire [511:0] next;
            for (l = 0; l < 16; l = l + 1) begin : lane
                assign next[32*l +: 32] = rot[32*l +: 32] + (k + 1);
            end
            always @(posedge clk) begin
                if (rst) begin
                    data[k+1]  <= 512'd0;
                    valid[k+1] <= 1'b0;
                end else begin
                    data[k+1]  <= next;
                    valid[k+1] <= valid[k];
                end
            end
        end
    endgenerate

    assign out_data  = data[STAGES];
    assign out_valid = valid[STAGES];
endmodule
