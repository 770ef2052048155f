// rocenic_async_fifo: a clock-domain-crossing FIFO for frame streams.
//
// Write side (s_*, s_clk) and read side (m_*, m_clk) run on unrelated clocks. Only Gray-coded
// counters cross, each from a register in its source domain into a two-flop synchroniser
// (ASYNC_REG) in the other; the constraints (constraints/cdc.xdc) bound those paths with
// set_max_delay -datapath_only of one destination period.
//
//   s_clk domain                                    m_clk domain
//   wr_ptr ----------------- mem[] (write port) --- read port -> out register -> m_data
//   wr_cnt_gray (reg) ------ 2FF sync ------------> wr_cnt_sync   (what may be read)
//   rd_ptr_sync    <-------- 2FF sync ------------- rd_ptr_gray (reg)   (what was freed)
//
// FRAME_MODE = 0: wr_cnt counts beats; a beat is readable once its pointer has crossed.
// FRAME_MODE = 1: wr_cnt counts whole frames (beats up to and including s_last); the read
//   side starts a frame only when all of it is stored, so a frame leaves back to back at the
//   read clock. This is what a 100G MAC's TX needs (an underrun mid-frame aborts the frame)
//   when the writer's clock is slower than the reader's. A committed counter that jumped by a
//   whole frame could not cross as Gray code (several bits would change at once); counting
//   frames keeps every crossing counter incrementing by one.
// DROP_WHEN_FULL = 1 (needs FRAME_MODE = 1): s_ready is always 1; a frame that does not fit
//   is discarded whole (the write pointer rewinds to the frame's start) and s_drop pulses on
//   its last beat. For a receive path whose source (a MAC) cannot be stalled.
//
// Reset: s_rst and m_rst are synchronous, active high, each in its own domain, and should be
// asserted together (rocenic_sync_reset of one common source): while either side is in reset
// the other must not transfer.
module rocenic_async_fifo #(
    parameter int WIDTH = 578,         // payload bits per beat (besides m_last)
    parameter int ADDR_W = 8,          // log2 of the depth in beats
    parameter int FRAME_MODE = 1,       // 1: release whole frames only (see above)
    parameter int DROP_WHEN_FULL = 0    // 1: never stall the writer; drop frames that do not fit
) (
    input  logic             s_clk,
    input  logic             s_rst,
    input  logic [WIDTH-1:0] s_data,
    input  logic             s_last,
    input  logic             s_valid,
    output logic             s_ready,
    output logic             s_drop,   // pulses on the last beat of a dropped frame

    input  logic             m_clk,
    input  logic             m_rst,
    output logic [WIDTH-1:0] m_data,
    output logic             m_last,
    output logic             m_valid,
    input  logic             m_ready
);
    localparam int DEPTH = 1 << ADDR_W;
    localparam int PW = ADDR_W + 1;  // pointer width: one wrap bit tells full from empty
    localparam bit FRAMES = FRAME_MODE != 0;
    localparam bit DROP = DROP_WHEN_FULL != 0;

    initial begin
        if (DROP && !FRAMES) $error("DROP_WHEN_FULL needs FRAME_MODE");
        if (ADDR_W < 2) $error("ADDR_W must be at least 2");
    end

    // (Verilog-2001 function style, so that yosys reads this file too.)
    function automatic [PW-1:0] bin2gray(input [PW-1:0] b);
        bin2gray = b ^ (b >> 1);
    endfunction

    function automatic [PW-1:0] gray2bin(input [PW-1:0] g);
        integer i;
        gray2bin[PW-1] = g[PW-1];
        for (i = PW - 2; i >= 0; i = i - 1) gray2bin[i] = gray2bin[i+1] ^ g[i];
    endfunction

    // Data in block RAM (synchronous read into out_q); the last flags also in a 1-bit-wide
    // LUT RAM read asynchronously, because the read side must know whether the beat it is
    // taking ends a frame in the same cycle (to stop before an incomplete frame).
    logic [WIDTH-1:0] mem_data[DEPTH];
    logic             mem_last[DEPTH];

    // ---------------------------------------------------------------- write side (s_clk)
    logic [PW-1:0] wr_ptr;         // next beat slot
    logic [PW-1:0] wr_start;       // first slot of the frame being written (frame mode)
    logic [PW-1:0] wr_cnt;         // beats (mode 0) or frames (mode 1) released to the reader
    logic [PW-1:0] wr_cnt_gray;    // registered: the only signal that crosses to m_clk
    (* ASYNC_REG = "TRUE" *) logic [PW-1:0] rd_ptr_meta, rd_ptr_sync_g;
    logic [PW-1:0] rd_ptr_sync;
    logic          full;
    logic          dropping;       // discarding the rest of a frame that did not fit
    logic          s_fire;

    assign rd_ptr_sync = gray2bin(rd_ptr_sync_g);
    assign full = (wr_ptr - rd_ptr_sync) == PW'(DEPTH);
    assign s_ready = DROP ? 1'b1 : !full && !s_rst;
    assign s_fire = s_valid && s_ready;

    always_ff @(posedge s_clk) begin
        rd_ptr_meta <= rd_ptr_gray;
        rd_ptr_sync_g <= rd_ptr_meta;
        s_drop <= 1'b0;
        if (s_rst) begin
            wr_ptr <= '0;
            wr_start <= '0;
            wr_cnt <= '0;
            wr_cnt_gray <= '0;
            dropping <= 1'b0;
            rd_ptr_meta <= '0;
            rd_ptr_sync_g <= '0;
        end else begin
            wr_cnt_gray <= bin2gray(wr_cnt);
            if (s_fire) begin
                if (DROP && (dropping || full)) begin
                    // rewind: the slots written for this frame are free again
                    wr_ptr <= wr_start;
                    dropping <= !s_last;
                    s_drop <= s_last;
                end else begin
                    mem_data[wr_ptr[ADDR_W-1:0]] <= s_data;
                    mem_last[wr_ptr[ADDR_W-1:0]] <= s_last;
                    wr_ptr <= wr_ptr + 1'b1;
                    if (!FRAMES) wr_cnt <= wr_cnt + 1'b1;
                    else if (s_last) begin
                        wr_cnt <= wr_cnt + 1'b1;
                        wr_start <= wr_ptr + 1'b1;
                    end
                end
            end
        end
    end

    // ---------------------------------------------------------------- read side (m_clk)
    logic [PW-1:0] rd_ptr;         // next slot to read
    logic [PW-1:0] rd_cnt;         // beats (mode 0) or frames (mode 1) taken
    logic [PW-1:0] rd_ptr_gray;    // registered: crosses to s_clk
    (* ASYNC_REG = "TRUE" *) logic [PW-1:0] wr_cnt_meta, wr_cnt_sync_g;
    logic          avail;
    logic          rd_en;
    logic [WIDTH-1:0] out_q;
    logic          out_last;
    logic          out_valid;
    logic          rd_last;        // the slot at rd_ptr ends a frame

    assign avail = rd_cnt != gray2bin(wr_cnt_sync_g);
    // the output register is the RAM's read register: load it when empty or being taken
    assign rd_en = avail && (!out_valid || m_ready) && !m_rst;
    assign m_valid = out_valid;
    assign m_data = out_q;
    assign m_last = out_last;
    assign rd_last = mem_last[rd_ptr[ADDR_W-1:0]];

    always_ff @(posedge m_clk) begin
        wr_cnt_meta <= wr_cnt_gray;
        wr_cnt_sync_g <= wr_cnt_meta;
        if (m_rst) begin
            rd_ptr <= '0;
            rd_cnt <= '0;
            rd_ptr_gray <= '0;
            out_valid <= 1'b0;
            wr_cnt_meta <= '0;
            wr_cnt_sync_g <= '0;
        end else begin
            rd_ptr_gray <= bin2gray(rd_ptr);
            if (rd_en) begin
                out_q <= mem_data[rd_ptr[ADDR_W-1:0]];
                out_last <= rd_last;
                out_valid <= 1'b1;
                rd_ptr <= rd_ptr + 1'b1;
                if (!FRAMES || rd_last) rd_cnt <= rd_cnt + 1'b1;
            end else if (m_ready) begin
                out_valid <= 1'b0;
            end
        end
    end
endmodule
