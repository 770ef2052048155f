// rocenic_sync_reset: a reset for one clock domain from an asynchronous source.
//
// Asserts asynchronously (so a domain whose clock is not running yet is held in reset),
// releases synchronously after STAGES edges of clk. The output is meant for logic that uses
// it as a synchronous reset, as the engine and rocenic_async_fifo do. The first flop's input
// is a constant, so only its asynchronous clear sees the other domain: the constraints put a
// false path on that pin (constraints/cdc.xdc).
module rocenic_sync_reset #(
    parameter int STAGES = 4  // flops after the asynchronous clear; >= 2 for metastability
) (
    input  logic clk,
    input  logic arst,  // asynchronous, active high
    output logic rst    // synchronous to clk, active high
);
    (* ASYNC_REG = "TRUE" *) logic [STAGES-1:0] sync;

    always_ff @(posedge clk or posedge arst) begin
        if (arst) sync <= '1;
        else sync <= {sync[STAGES-2:0], 1'b0};
    end
    assign rst = sync[STAGES-1];
endmodule
