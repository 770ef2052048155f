// Verilator bench of rocenic_xdma_dma against a behavioural model of XDMA's descriptor
// bypass and AXI4-Stream channels (PG195 semantics as the adapter relies on them: the
// channels take descriptors only once their Run bit is set through the AXI4-Lite slave;
// one channel completes its descriptors in order; H2C data is packed from lane 0 with
// tkeep on the last beat and tlast at the end of an EOP descriptor; C2H writes the stream to
// the descriptor's host address). Random ready/valid on every interface.
//
// Checks: no request is accepted before both channels run; every read response comes back
// in request order with its tag, ceil(len/64) beats, last on the last, the host bytes in
// lanes 0.., zeros past len (the model puts garbage there), err 0; every write lands in host
// memory at its address, nothing else changes, and one status pulse per write, in order.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "verilated.h"
#include "Vxdma_dma.h"

namespace {

constexpr uint64_t kMemBase = 0x7f0000000000ull;   // an IOVA region of the host model
constexpr size_t kMemSize = 1 << 20;

std::mt19937_64 rng(1);
bool pct(int p) { return int(rng() % 100) < p; }

// VlWide<16> access: 512-bit ports as 16 x u32, word 0 = bits 31:0.
template <class W> uint8_t get_byte(const W& w, int i) { return uint8_t(w[i / 4] >> (8 * (i % 4))); }
template <class W> void set_byte(W& w, int i, uint8_t b) {
    w[i / 4] = (w[i / 4] & ~(0xffu << (8 * (i % 4)))) | (uint32_t(b) << (8 * (i % 4)));
}

struct Desc { uint64_t addr; uint32_t len; };
struct Read { uint64_t addr; uint32_t len; uint8_t tag; };

int failures = 0;
#define CHECK(c, ...) do { if (!(c)) { std::printf("FAIL: " __VA_ARGS__); std::printf("\n"); \
    if (++failures > 10) std::exit(1); } } while (0)

}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 1;
    int n_ops = argc > 2 ? std::atoi(argv[2]) : 3000;
    rng.seed(seed);
    auto ctx = std::make_unique<VerilatedContext>();
    auto m = std::make_unique<Vxdma_dma>(ctx.get());

    std::vector<uint8_t> host(kMemSize), expect_host;
    for (auto& b : host) b = uint8_t(rng());
    expect_host = host;

    // XDMA model state
    bool h2c_run = false, c2h_run = false;
    bool aw_seen = false, w_seen = false; uint32_t aw_addr = 0, w_data = 0; int b_pending = 0;
    std::deque<Desc> h2c_q, c2h_q;
    uint32_t h2c_off = 0;          // bytes of the head H2C descriptor already streamed
    uint32_t c2h_off = 0;          // bytes of the head C2H descriptor written
    // engine model state
    std::deque<Read> reads_out;    // issued, awaiting response (in order)
    std::deque<Desc> writes_out;   // issued, awaiting status (in order)
    std::deque<std::pair<Desc, uint32_t>> wr_data_q;   // writes whose data is still to send
    uint32_t resp_beat = 0;
    int reads_left = n_ops, writes_left = n_ops;
    uint64_t cycles = 0, read_bytes = 0, write_bytes = 0, reads_done = 0, writes_done = 0;
    bool accepted_before_run = false;

    auto rand_len = [&]() -> uint32_t {
        switch (rng() % 4) {
            case 0: return 1 + rng() % 64;
            case 1: return 1 + rng() % 512;
            case 2: return 1 + rng() % 8192;
            default: return 64 * (1 + rng() % 8);
        }
    };
    auto rand_addr = [&](uint32_t len) { return kMemBase + rng() % (kMemSize - len); };

    m->rst = 1; m->clk = 0;
    // engine outputs into the adapter
    m->dma_rd_req_valid = 0; m->dma_wr_req_valid = 0; m->dma_wr_data_valid = 0;
    m->dma_rd_resp_ready = 0;
    m->h2c_dsc_byp_ready = 0; m->c2h_dsc_byp_ready = 0;
    m->m_axis_h2c_tvalid = 0; m->s_axis_c2h_tready = 0;
    m->m_axil_awready = 0; m->m_axil_wready = 0; m->m_axil_bvalid = 0; m->m_axil_bresp = 0;
    m->h2c_sts = 0; m->c2h_sts = 0;
    Read next_read{}; Desc next_write{};
    bool rd_pending = false, wr_pending = false;

    const uint64_t max_cycles = 400ull * n_ops + 100000;
    while (cycles < max_cycles) {
        cycles++;
        if (cycles == 5) m->rst = 0;
        // ---------------- drive inputs for this cycle
        // engine: read requests (hold until accepted)
        if (!rd_pending && reads_left > 0 && pct(30)) {
            uint32_t len = rand_len();
            next_read = {rand_addr(len), len, uint8_t(rng())};
            rd_pending = true;
        }
        m->dma_rd_req_valid = rd_pending;
        m->dma_rd_req_addr = next_read.addr; m->dma_rd_req_len = next_read.len;
        m->dma_rd_req_tag = next_read.tag;
        m->dma_rd_resp_ready = pct(70);
        if (!wr_pending && writes_left > 0 && pct(30)) {
            uint32_t len = rand_len();
            next_write = {rand_addr(len), len};
            wr_pending = true;
        }
        m->dma_wr_req_valid = wr_pending;
        m->dma_wr_req_addr = next_write.addr; m->dma_wr_req_len = next_write.len;
        // write data: the head of wr_data_q (its request already accepted)
        bool wd_valid = !wr_data_q.empty() && pct(80);
        if (wd_valid) {
            auto& [d, off] = wr_data_q.front();
            uint32_t n = std::min<uint32_t>(64, d.len - off);
            for (int i = 0; i < 64; i++) set_byte(m->dma_wr_data, i, uint8_t(rng()));
            uint64_t keep = n == 64 ? ~0ull : ((1ull << n) - 1);
            m->dma_wr_data_keep = keep;
            m->dma_wr_data_last = off + n == d.len;
        }
        m->dma_wr_data_valid = wd_valid;
        // XDMA: AXI4-Lite slave, bypass readiness, H2C stream, C2H readiness, status
        m->m_axil_awready = !aw_seen && pct(50);
        m->m_axil_wready = !w_seen && pct(50);
        m->m_axil_bvalid = b_pending > 0;
        m->h2c_dsc_byp_ready = h2c_run && h2c_q.size() < 8 && pct(70);
        m->c2h_dsc_byp_ready = c2h_run && c2h_q.size() < 8 && pct(70);
        bool h2c_valid = !h2c_q.empty() && pct(75);
        if (h2c_valid) {
            const Desc& d = h2c_q.front();
            uint32_t n = std::min<uint32_t>(64, d.len - h2c_off);
            for (int i = 0; i < 64; i++)
                set_byte(m->m_axis_h2c_tdata, i,
                         i < int(n) ? host[d.addr - kMemBase + h2c_off + i] : uint8_t(rng() | 1));
            m->m_axis_h2c_tkeep = n == 64 ? ~0ull : ((1ull << n) - 1);
            m->m_axis_h2c_tlast = h2c_off + n == d.len;
        }
        m->m_axis_h2c_tvalid = h2c_valid;
        m->s_axis_c2h_tready = !c2h_q.empty() && pct(70);
        m->h2c_sts = h2c_run ? 0x40 : 0; m->c2h_sts = c2h_run ? 0x40 : 0;

        m->clk = 0; m->eval();
        // ---------------- sample handshakes (before the edge)
        bool rd_req_fire = m->dma_rd_req_valid && m->dma_rd_req_ready;
        bool wr_req_fire = m->dma_wr_req_valid && m->dma_wr_req_ready;
        bool wd_fire = m->dma_wr_data_valid && m->dma_wr_data_ready;
        bool resp_fire = m->dma_rd_resp_valid && m->dma_rd_resp_ready;
        bool aw_fire = m->m_axil_awvalid && m->m_axil_awready;
        bool w_fire = m->m_axil_wvalid && m->m_axil_wready;
        bool b_fire = m->m_axil_bvalid && m->m_axil_bready;
        bool h2c_load = m->h2c_dsc_byp_load, c2h_load = m->c2h_dsc_byp_load;
        bool h2c_fire = m->m_axis_h2c_tvalid && m->m_axis_h2c_tready;
        bool c2h_fire = m->s_axis_c2h_tvalid && m->s_axis_c2h_tready;
        bool status = m->dma_wr_status_valid;
        if ((rd_req_fire || wr_req_fire) && !(h2c_run && c2h_run)) accepted_before_run = true;
        CHECK(!h2c_load || m->h2c_dsc_byp_ready, "h2c descriptor loaded while not ready");
        CHECK(!c2h_load || m->c2h_dsc_byp_ready, "c2h descriptor loaded while not ready");
        CHECK(h2c_load == rd_req_fire, "h2c load %d without/with a read request %d", h2c_load, rd_req_fire);
        CHECK(c2h_load == wr_req_fire, "c2h load %d vs write request %d", c2h_load, wr_req_fire);
        if (h2c_load) {
            CHECK(m->h2c_dsc_byp_src_addr == next_read.addr && m->h2c_dsc_byp_len == next_read.len,
                  "h2c descriptor fields");
            CHECK((m->h2c_dsc_byp_ctl & 0x13) == 0x10, "h2c ctl %x: want EOP, no stop/completed", m->h2c_dsc_byp_ctl);
        }
        if (c2h_load)
            CHECK(m->c2h_dsc_byp_dst_addr == next_write.addr && m->c2h_dsc_byp_len == next_write.len,
                  "c2h descriptor fields");
        // response check (outputs before the edge)
        if (resp_fire) {
            CHECK(!reads_out.empty(), "read response with no read outstanding");
            if (!reads_out.empty()) {
                const Read& r = reads_out.front();
                uint32_t nbeats = (r.len + 63) / 64;
                CHECK(m->dma_rd_resp_tag == r.tag, "tag %u, want %u", m->dma_rd_resp_tag, r.tag);
                CHECK(!m->dma_rd_resp_err, "err set");
                bool want_last = resp_beat + 1 == nbeats;
                CHECK(m->dma_rd_resp_last == want_last, "last=%d on beat %u of %u", m->dma_rd_resp_last, resp_beat, nbeats);
                for (int i = 0; i < 64; i++) {
                    uint32_t off = resp_beat * 64 + i;
                    uint8_t want = off < r.len ? host[r.addr - kMemBase + off] : 0;
                    uint8_t got = get_byte(m->dma_rd_resp_data, i);
                    if (got != want) {
                        CHECK(false, "read tag %u beat %u lane %d: %02x, want %02x", r.tag, resp_beat, i, got, want);
                        break;
                    }
                }
                if (++resp_beat == nbeats) { resp_beat = 0; reads_out.pop_front(); reads_done++; read_bytes += r.len; }
            }
        }
        // C2H stream into host memory (the model's own view of where it goes)
        if (c2h_fire) {
            CHECK(!c2h_q.empty(), "c2h data with no descriptor");
            const Desc& d = c2h_q.front();
            uint64_t keep = m->s_axis_c2h_tkeep;
            uint32_t n = 0;
            while (n < 64 && (keep >> n & 1)) n++;
            CHECK(n > 0 && (n == 64 || (keep >> n) == 0), "c2h tkeep not contiguous: %llx", (unsigned long long)keep);
            for (uint32_t i = 0; i < n && c2h_off + i < d.len; i++)
                host[d.addr - kMemBase + c2h_off + i] = get_byte(m->s_axis_c2h_tdata, i);
            c2h_off += n;
            CHECK(bool(m->s_axis_c2h_tlast) == (c2h_off >= d.len), "c2h tlast at %u of %u", c2h_off, d.len);
            if (c2h_off >= d.len) { c2h_off = 0; c2h_q.pop_front(); }
        }
        // engine's view of its write data (what memory must hold)
        if (wd_fire) {
            auto& [d, off] = wr_data_q.front();
            uint32_t n = std::min<uint32_t>(64, d.len - off);
            for (uint32_t i = 0; i < n; i++)
                expect_host[d.addr - kMemBase + off + i] = get_byte(m->dma_wr_data, i);
            off += n;
            if (off == d.len) wr_data_q.pop_front();
        }

        m->clk = 1; m->eval();
        // ---------------- update models after the edge
        if (rd_req_fire) { reads_out.push_back(next_read); rd_pending = false; reads_left--; }
        if (wr_req_fire) {
            writes_out.push_back(next_write); wr_data_q.push_back({next_write, 0});
            wr_pending = false; writes_left--;
        }
        if (h2c_load) h2c_q.push_back({next_read.addr, next_read.len});
        if (c2h_load) c2h_q.push_back({next_write.addr, next_write.len});
        if (h2c_fire) {
            const Desc& d = h2c_q.front();
            h2c_off += std::min<uint32_t>(64, d.len - h2c_off);
            if (h2c_off == d.len) { h2c_off = 0; h2c_q.pop_front(); }
        }
        if (aw_fire) { aw_seen = true; aw_addr = m->m_axil_awaddr; }
        if (w_fire) { w_seen = true; w_data = m->m_axil_wdata; }
        if (aw_seen && w_seen) {
            if (aw_addr == 0x0004) h2c_run = w_data & 1;
            if (aw_addr == 0x1004) c2h_run = w_data & 1;
            aw_seen = w_seen = false; b_pending++;
        }
        if (b_fire) b_pending--;
        if (status) {
            CHECK(!writes_out.empty(), "write status with no write outstanding");
            CHECK(!m->dma_wr_status_err, "write status err");
            if (!writes_out.empty()) { write_bytes += writes_out.front().len; writes_out.pop_front(); writes_done++; }
        }
        if (reads_left == 0 && writes_left == 0 && reads_out.empty() && writes_out.empty() &&
            wr_data_q.empty() && c2h_q.empty())
            break;
    }
    CHECK(h2c_run && c2h_run, "the adapter never started both channels");
    CHECK(!accepted_before_run, "a request was accepted before the channels ran");
    CHECK(reads_done == uint64_t(n_ops) && writes_done == uint64_t(n_ops),
          "finished %llu reads and %llu writes of %d each in %llu cycles",
          (unsigned long long)reads_done, (unsigned long long)writes_done, n_ops, (unsigned long long)cycles);
    CHECK(host == expect_host, "host memory differs from the writes the engine made");
    std::printf("xdma adapter: %llu reads (%llu B), %llu writes (%llu B) in %llu cycles, %d failures\n",
                (unsigned long long)reads_done, (unsigned long long)read_bytes,
                (unsigned long long)writes_done, (unsigned long long)write_bytes,
                (unsigned long long)cycles, failures);
    m->final();
    return failures ? 1 : 0;
}
