// rocenic_axil_regport: BAR0 as an AXI4-Lite slave (the PCIe DMA IP's AXI-Lite master) in
// front of the engine's register port (docs/rtl-architecture.md, "BAR0 register port").
//
// One access at a time, which is what a PCIe BAR sees anyway (the host's MMIO accesses to
// one BAR arrive one TLP after another). Reads and writes alternate when both wait.
//
//   IDLE --aw&w--> WREQ --reg_ready--> BRESP --bready--> IDLE
//   IDLE --ar----> RREQ --reg_ready--> RWAIT --reg_rdata_valid--> RRESP --rready--> IDLE
//
// - Only whole-word writes reach the engine (its registers are 32-bit and it has no byte
//   enables); a write with wstrb != 4'hF is answered SLVERR and dropped.
// - A read the engine does not answer within READ_TIMEOUT cycles is answered SLVERR with all
//   ones (what a host sees from a missing device) so the host's MMIO read completes before
//   the PCIe completion timeout; the engine's late answer is then discarded (reads are
//   answered in order, so a count of abandoned reads is enough).
module rocenic_axil_regport #(
    parameter int REG_ADDR_W = 17,      // BAR0 is 128 KiB (proto::abi::regs::BAR0_SIZE)
    parameter int READ_TIMEOUT = 4096   // cycles: 16 us at 250 MHz, under any completion timeout
) (
    input  logic                  clk,
    input  logic                  rst,

    input  logic [31:0]           s_axil_awaddr,
    input  logic                  s_axil_awvalid,
    output logic                  s_axil_awready,
    input  logic [31:0]           s_axil_wdata,
    input  logic [3:0]            s_axil_wstrb,
    input  logic                  s_axil_wvalid,
    output logic                  s_axil_wready,
    output logic [1:0]            s_axil_bresp,
    output logic                  s_axil_bvalid,
    input  logic                  s_axil_bready,
    input  logic [31:0]           s_axil_araddr,
    input  logic                  s_axil_arvalid,
    output logic                  s_axil_arready,
    output logic [31:0]           s_axil_rdata,
    output logic [1:0]            s_axil_rresp,
    output logic                  s_axil_rvalid,
    input  logic                  s_axil_rready,

    output logic                  reg_valid,
    input  logic                  reg_ready,
    output logic                  reg_write,
    output logic [REG_ADDR_W-1:0] reg_addr,
    output logic [31:0]           reg_wdata,
    input  logic                  reg_rdata_valid,
    input  logic [31:0]           reg_rdata
);
    localparam logic [1:0] OKAY = 2'b00, SLVERR = 2'b10;
    localparam int TW = $clog2(READ_TIMEOUT + 1);

    typedef enum logic [2:0] {IDLE, WREQ, BRESP, RREQ, RWAIT, RRESP} state_t;
    state_t state;
    logic prefer_read;              // alternate when a read and a write both wait
    logic [TW-1:0] waited;
    logic [7:0] abandoned;          // reads answered by timeout whose data is still to come
    logic take_write, take_read;
    logic late_data;                // a reg_rdata_valid that belongs to an abandoned read

    // The address bits above BAR0 are always zero (the IP's BAR is 128 KiB, translation 0);
    // the two below a word are ignored.
    logic unused_addr;
    assign unused_addr = ^{s_axil_awaddr[31:REG_ADDR_W], s_axil_awaddr[1:0],
                           s_axil_araddr[31:REG_ADDR_W], s_axil_araddr[1:0]};

    assign take_write = state == IDLE && s_axil_awvalid && s_axil_wvalid &&
                        !(prefer_read && s_axil_arvalid);
    assign take_read = state == IDLE && s_axil_arvalid && !take_write;
    assign s_axil_awready = take_write;
    assign s_axil_wready = take_write;
    assign s_axil_arready = take_read;
    assign s_axil_bvalid = state == BRESP;
    assign s_axil_rvalid = state == RRESP;
    assign reg_valid = state == WREQ || state == RREQ;
    assign reg_write = state == WREQ;
    assign late_data = reg_rdata_valid && abandoned != 0;

    always_ff @(posedge clk) begin
        if (rst) begin
            state <= IDLE;
            prefer_read <= 1'b0;
            waited <= '0;
            abandoned <= '0;
            s_axil_bresp <= OKAY;
            s_axil_rresp <= OKAY;
            s_axil_rdata <= '0;
            reg_addr <= '0;
            reg_wdata <= '0;
        end else begin
            if (late_data) abandoned <= abandoned - 1'b1;
            case (state)
                IDLE: begin
                    if (take_write) begin
                        reg_addr <= {s_axil_awaddr[REG_ADDR_W-1:2], 2'b00};
                        reg_wdata <= s_axil_wdata;
                        prefer_read <= 1'b1;
                        if (s_axil_wstrb == 4'hF) begin
                            state <= WREQ;
                        end else begin
                            s_axil_bresp <= SLVERR;
                            state <= BRESP;
                        end
                    end else if (take_read) begin
                        reg_addr <= {s_axil_araddr[REG_ADDR_W-1:2], 2'b00};
                        prefer_read <= 1'b0;
                        state <= RREQ;
                    end
                end
                WREQ: if (reg_ready) begin
                    s_axil_bresp <= OKAY;
                    state <= BRESP;
                end
                BRESP: if (s_axil_bready) state <= IDLE;
                RREQ: if (reg_ready) begin
                    waited <= '0;
                    if (reg_rdata_valid && !late_data) begin
                        // answered in the cycle it was accepted
                        s_axil_rdata <= reg_rdata;
                        s_axil_rresp <= OKAY;
                        state <= RRESP;
                    end else begin
                        state <= RWAIT;
                    end
                end
                RWAIT: begin
                    if (reg_rdata_valid && !late_data) begin
                        s_axil_rdata <= reg_rdata;
                        s_axil_rresp <= OKAY;
                        state <= RRESP;
                    end else if (waited == TW'(READ_TIMEOUT)) begin
                        s_axil_rdata <= '1;
                        s_axil_rresp <= SLVERR;
                        abandoned <= abandoned + 1'b1 - {7'd0, late_data};
                        state <= RRESP;
                    end else begin
                        waited <= waited + 1'b1;
                    end
                end
                RRESP: if (s_axil_rready) state <= IDLE;
                default: state <= IDLE;
            endcase
        end
    end
endmodule
