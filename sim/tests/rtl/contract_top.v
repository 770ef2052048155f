// A hand-written stand-in for the engine: implements the full top port contract of
// docs/rtl-architecture.md ("The engine's top-level ports") so that sim::rtl_device can be
// tested before the RustHDL engine exists. Not synthesis quality; plain and observable.
//
// BAR0 (byte offsets):
//   0x00, 0x04  SCRATCH0/1   read/write
//   0x08, 0x0C  SRC lo/hi    IOVA read by GO
//   0x10, 0x14  DST lo/hi    IOVA written by a copy
//   0x18        LEN          bytes per read (1..=8192)
//   0x1C        GO           write 1: copy LEN bytes SRC -> DST (one read, one write);
//                            write 2: burst: COUNT reads of LEN bytes at SRC + i*LEN, tag i
//   0x20        COUNT        reads in a burst (1..=255)
//   0x24        RESP_STALL   bit 0: dma_rd_resp_ready low on odd cycles
//   0x28        HOLD         write n: reg_ready low for the next n cycles
//   0x2C        FATAL        write: $fatal (tests the adapter's handling of a dead model)
//   0x40        STATUS (ro)  bit 0 busy, bit 1 read error beat seen, bit 2 write status error
//   0x44        LAT_FIRST    cycles from the first read request to its first response beat
//   0x48        SPAN         cycles from the first to the last response beat of a GO
//   0x4C        MAX_OUTST    most reads outstanding at once during a GO
//   0x50        RESP_BEATS   response beats taken (all time)
//   0x54        TAG_ERRS     responses whose tag was not the expected one
//   0x58        RX_FRAMES    0x5C TX_FRAMES   0x60 WR_STATUS count   0x64 CYCLE
//   0x68        OVERFLOWS    loopback FIFO overflows   0x6C RD_RESPS responses completed
//   0x70        NEVER        a read that is accepted and never answered
//   0x74        SLOW         answered 40 cycles later with 0x51055105
//   others read 0xBAD00000 | offset.
// reg_ready is low one cycle in four (and during HOLD), so posted writes queue up.
// MAC: every received beat goes into a 256-beat FIFO that is sent back on TX (loopback);
// mac_rx_pause asks for a pause while more than 116 beats wait.
/* verilator lint_off DECLFILENAME */  // the contract names the module `top`
module top (
  input  wire         clock,
  input  wire         reset,
  input  wire         reg_valid,
  output wire         reg_ready,
  input  wire         reg_write,
  input  wire [16:0]  reg_addr,
  input  wire [31:0]  reg_wdata,
  output reg          reg_rdata_valid,
  output reg  [31:0]  reg_rdata,
  output wire         dma_rd_req_valid,
  input  wire         dma_rd_req_ready,
  output wire [63:0]  dma_rd_req_addr,
  output wire [15:0]  dma_rd_req_len,
  output wire [7:0]   dma_rd_req_tag,
  input  wire         dma_rd_resp_valid,
  output wire         dma_rd_resp_ready,
  input  wire [511:0] dma_rd_resp_data,
  input  wire [7:0]   dma_rd_resp_tag,
  input  wire         dma_rd_resp_last,
  input  wire         dma_rd_resp_err,
  output wire         dma_wr_req_valid,
  input  wire         dma_wr_req_ready,
  output wire [63:0]  dma_wr_req_addr,
  output wire [15:0]  dma_wr_req_len,
  output wire         dma_wr_data_valid,
  input  wire         dma_wr_data_ready,
  output wire [511:0] dma_wr_data,
  output wire [63:0]  dma_wr_data_keep,
  output wire         dma_wr_data_last,
  input  wire         dma_wr_status_valid,
  input  wire         dma_wr_status_err,
  output wire [511:0] mac_tx_tdata,
  output wire [63:0]  mac_tx_tkeep,
  output wire         mac_tx_tlast,
  output wire         mac_tx_tvalid,
  input  wire         mac_tx_tready,
  output wire         mac_rx_pause,
  input  wire [511:0] mac_rx_tdata,
  input  wire [63:0]  mac_rx_tkeep,
  input  wire         mac_rx_tlast,
  input  wire         mac_rx_tvalid,
  input  wire         mac_rx_tuser
);
  reg [31:0] cyc;
  reg [31:0] scratch0, scratch1, src_lo, src_hi, dst_lo, dst_hi, len, count, resp_stall;
  reg [31:0] hold;
  reg [5:0]  slow;                 // cycles left before the SLOW read is answered
  reg        rd_err, wr_err;
  reg [31:0] lat_first, span, max_outst, resp_beats, tag_errs, rx_frames, tx_frames;
  reg [31:0] wr_statuses, overflows, rd_resps;

  // ---- register port ----
  assign reg_ready = (cyc[1:0] != 2'd3) && (hold == 0) && (slow == 0);
  wire reg_hs = reg_valid && reg_ready;

  // ---- DMA engine state ----
  localparam S_IDLE = 3'd0, S_CRD = 3'd1, S_CRESP = 3'd2, S_CWREQ = 3'd3, S_CWDATA = 3'd4,
             S_CWST = 3'd5, S_BURST = 3'd6;
  reg [2:0]   st;
  reg [511:0] mem [0:127];
  reg [7:0]   beat;                // copy: beat index in mem
  reg [31:0]  issued, done;        // burst: requests issued, responses completed
  reg [63:0]  burst_addr;
  reg [31:0]  t_req, t_first;
  reg         seen_first;
  wire [15:0] len16 = len[15:0];
  wire [15:0] nbeats = (len16 + 16'd63) >> 6;
  wire [5:0]  rem = len16[5:0];
  wire [63:0] last_keep = (rem == 6'd0) ? {64{1'b1}} : ((64'd1 << rem) - 64'd1);

  assign dma_rd_req_valid = (st == S_CRD) || (st == S_BURST && issued < count);
  assign dma_rd_req_addr  = (st == S_BURST) ? burst_addr : {src_hi, src_lo};
  assign dma_rd_req_len   = len16;
  assign dma_rd_req_tag   = (st == S_BURST) ? issued[7:0] : 8'hC0;
  wire rd_req_hs = dma_rd_req_valid && dma_rd_req_ready;

  assign dma_rd_resp_ready = (st == S_CRESP || st == S_BURST) && !(resp_stall[0] && cyc[0]);
  wire rd_resp_hs = dma_rd_resp_valid && dma_rd_resp_ready;
  wire [7:0] want_tag = (st == S_BURST) ? done[7:0] : 8'hC0;

  assign dma_wr_req_valid  = (st == S_CWREQ);
  assign dma_wr_req_addr   = {dst_hi, dst_lo};
  assign dma_wr_req_len    = len16;
  assign dma_wr_data_valid = (st == S_CWDATA);
  assign dma_wr_data       = mem[beat[6:0]];
  assign dma_wr_data_last  = ({8'd0, beat} == nbeats - 16'd1);
  assign dma_wr_data_keep  = dma_wr_data_last ? last_keep : {64{1'b1}};

  wire [31:0] outst = issued - done;
  wire [31:0] outst_next = outst + {31'd0, rd_req_hs} - {31'd0, rd_resp_hs && dma_rd_resp_last};

  // ---- MAC loopback FIFO: {last, keep, data} ----
  reg [576:0] fifo [0:255];
  reg [8:0]   wp, rp;
  wire        fifo_empty = (wp == rp);
  wire        fifo_full  = (wp[7:0] == rp[7:0]) && (wp[8] != rp[8]);
  // Pause (PFC XOFF) with room for the frame in progress and one more 4 KiB frame.
  wire [8:0]  fifo_used  = wp - rp;
  assign mac_rx_pause = fifo_used > 9'd116;
  wire [576:0] head = fifo[rp[7:0]];
  assign mac_tx_tvalid = !fifo_empty;
  assign mac_tx_tdata  = head[511:0];
  assign mac_tx_tkeep  = head[575:512];
  assign mac_tx_tlast  = head[576];

  always @(posedge clock) begin
    if (reset) begin
      cyc <= 0; scratch0 <= 0; scratch1 <= 0; src_lo <= 0; src_hi <= 0; dst_lo <= 0;
      dst_hi <= 0; len <= 0; count <= 0; resp_stall <= 0; hold <= 0; slow <= 0;
      rd_err <= 0; wr_err <= 0; lat_first <= 0; span <= 0; max_outst <= 0;
      resp_beats <= 0; tag_errs <= 0; rx_frames <= 0; tx_frames <= 0; wr_statuses <= 0;
      overflows <= 0; rd_resps <= 0; reg_rdata_valid <= 0; reg_rdata <= 0;
      st <= S_IDLE; beat <= 0; issued <= 0; done <= 0; burst_addr <= 0; t_req <= 0;
      t_first <= 0; seen_first <= 0; wp <= 0; rp <= 0;
    end else begin
      cyc <= cyc + 1;
      reg_rdata_valid <= 0;
      if (hold != 0) hold <= hold - 1;
      if (slow != 0) begin
        slow <= slow - 1;
        if (slow == 1) begin
          reg_rdata_valid <= 1;
          reg_rdata <= 32'h5105_5105;
        end
      end

      // ---- register accesses ----
      if (reg_hs && reg_write) begin
        case (reg_addr)
          17'h00: scratch0 <= reg_wdata;
          17'h04: scratch1 <= reg_wdata;
          17'h08: src_lo <= reg_wdata;
          17'h0C: src_hi <= reg_wdata;
          17'h10: dst_lo <= reg_wdata;
          17'h14: dst_hi <= reg_wdata;
          17'h18: len <= reg_wdata;
          17'h1C: if (st == S_IDLE) begin
                    rd_err <= 0; wr_err <= 0; seen_first <= 0; max_outst <= 0;
                    issued <= 0; done <= 0; beat <= 0;
                    burst_addr <= {src_hi, src_lo};
                    if (reg_wdata == 1) st <= S_CRD;
                    else if (reg_wdata == 2) st <= S_BURST;
                  end
          17'h20: count <= reg_wdata;
          17'h24: resp_stall <= reg_wdata;
          17'h28: hold <= reg_wdata;
          17'h2C: $fatal(1, "contract_top: fatal requested by a register write");
          default: ;
        endcase
      end
      if (reg_hs && !reg_write) begin
        if (reg_addr == 17'h74) begin
          slow <= 6'd40;
        end else if (reg_addr != 17'h70) begin
          reg_rdata_valid <= 1;
          case (reg_addr)
            17'h00: reg_rdata <= scratch0;
            17'h04: reg_rdata <= scratch1;
            17'h08: reg_rdata <= src_lo;
            17'h0C: reg_rdata <= src_hi;
            17'h10: reg_rdata <= dst_lo;
            17'h14: reg_rdata <= dst_hi;
            17'h18: reg_rdata <= len;
            17'h20: reg_rdata <= count;
            17'h24: reg_rdata <= resp_stall;
            17'h40: reg_rdata <= {29'd0, wr_err, rd_err, st != S_IDLE};
            17'h44: reg_rdata <= lat_first;
            17'h48: reg_rdata <= span;
            17'h4C: reg_rdata <= max_outst;
            17'h50: reg_rdata <= resp_beats;
            17'h54: reg_rdata <= tag_errs;
            17'h58: reg_rdata <= rx_frames;
            17'h5C: reg_rdata <= tx_frames;
            17'h60: reg_rdata <= wr_statuses;
            17'h64: reg_rdata <= cyc;
            17'h68: reg_rdata <= overflows;
            17'h6C: reg_rdata <= rd_resps;
            default: reg_rdata <= 32'hBAD0_0000 | {15'd0, reg_addr};
          endcase
        end
      end

      // ---- DMA reads: measurements shared by copy and burst ----
      if (rd_req_hs && !(st == S_BURST && issued != 0)) t_req <= cyc;
      if (rd_resp_hs) begin
        resp_beats <= resp_beats + 1;
        if (!seen_first) begin
          seen_first <= 1;
          lat_first <= cyc - t_req;
          t_first <= cyc;
          span <= 0;
        end else begin
          span <= cyc - t_first;
        end
        if (dma_rd_resp_tag != want_tag) tag_errs <= tag_errs + 1;
        if (dma_rd_resp_err) rd_err <= 1;
        if (dma_rd_resp_last) rd_resps <= rd_resps + 1;
      end
      if (outst_next > max_outst && (st == S_CRD || st == S_CRESP || st == S_BURST))
        max_outst <= outst_next;
      if (dma_wr_status_valid) begin
        wr_statuses <= wr_statuses + 1;
        if (dma_wr_status_err) wr_err <= 1;
      end

      case (st)
        S_CRD: if (rd_req_hs) begin issued <= issued + 1; st <= S_CRESP; end
        S_CRESP: if (rd_resp_hs) begin
          if (dma_rd_resp_err) begin
            done <= done + 1;
            st <= S_IDLE;               // nothing is written after a failed read
          end else begin
            mem[beat[6:0]] <= dma_rd_resp_data;
            beat <= beat + 1;
            if (dma_rd_resp_last) begin
              done <= done + 1;
              st <= S_CWREQ;
            end
          end
        end
        S_CWREQ: if (dma_wr_req_ready) begin beat <= 0; st <= S_CWDATA; end
        S_CWDATA: if (dma_wr_data_ready) begin
          beat <= beat + 1;
          if (dma_wr_data_last) st <= S_CWST;
        end
        S_CWST: if (dma_wr_status_valid) st <= S_IDLE;
        S_BURST: begin
          if (rd_req_hs) begin
            issued <= issued + 1;
            burst_addr <= burst_addr + {48'd0, len16};
          end
          if (rd_resp_hs && dma_rd_resp_last) begin
            done <= done + 1;
            if (done + 1 == count) st <= S_IDLE;
          end
        end
        default: ;
      endcase

      // ---- MAC loopback ----
      if (mac_rx_tvalid) begin
        if (fifo_full) begin
          overflows <= overflows + 1;
        end else begin
          fifo[wp[7:0]] <= {mac_rx_tlast, mac_rx_tkeep, mac_rx_tdata};
          wp <= wp + 1;
        end
        if (mac_rx_tlast && !mac_rx_tuser) rx_frames <= rx_frames + 1;
      end
      if (mac_tx_tvalid && mac_tx_tready) begin
        rp <= rp + 1;
        if (mac_tx_tlast) tx_frames <= tx_frames + 1;
      end
    end
  end
endmodule
