// Verilator bench of rocenic_axil_regport (built with READ_TIMEOUT = 64): an AXI4-Lite
// master with random valid/ready timing on all five channels against a model of the
// engine's register port (32K word registers, random reg_ready, read data after a random
// latency, in order; now and then much later than the timeout).
//
// Checks: every full-word write reaches the register port once with its address and data,
// answered OKAY; a write with a partial wstrb is answered SLVERR and never reaches it; every
// read returns the register's value (OKAY), or, when the engine answers later than the
// timeout, SLVERR with all ones, and that late answer is not given to a later read.

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "verilated.h"
#include "Vaxil_regport.h"

namespace {
std::mt19937_64 rng(1);
bool pct(int p) { return int(rng() % 100) < p; }
int failures = 0;
#define CHECK(c, ...) do { if (!(c)) { std::printf("FAIL: " __VA_ARGS__); std::printf("\n"); \
    if (++failures > 10) std::exit(1); } } while (0)
constexpr int kTimeout = 64;
}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 1;
    int n_ops = argc > 2 ? std::atoi(argv[2]) : 4000;
    rng.seed(seed);
    auto ctx = std::make_unique<VerilatedContext>();
    auto m = std::make_unique<Vaxil_regport>(ctx.get());

    std::vector<uint32_t> regs(1 << 15);        // the engine's registers
    std::vector<uint32_t> shadow(1 << 15);      // the master's expectation
    for (size_t i = 0; i < regs.size(); i++) regs[i] = shadow[i] = uint32_t(rng());

    struct Pending { uint64_t due; uint32_t data; };
    std::deque<Pending> engine_reads;           // accepted reads, answered in order
    // master state: one write and one read may be offered at a time (AXI allows both)
    bool aw_v = false, w_v = false, w_done_aw = false, w_done_w = false; uint32_t w_addr = 0, w_data = 0; uint8_t w_strb = 0;
    bool ar_v = false, ar_done = false; uint32_t r_addr = 0;
    bool expect_r = false, expect_b = false;
    int ops = 0, writes_ok = 0, writes_err = 0, reads_ok = 0, reads_timeout = 0;
    uint64_t cycle = 0;

    m->rst = 1; m->clk = 0;
    m->s_axil_awvalid = 0; m->s_axil_wvalid = 0; m->s_axil_bready = 0;
    m->s_axil_arvalid = 0; m->s_axil_rready = 0;
    m->reg_ready = 0; m->reg_rdata_valid = 0; m->reg_rdata = 0;
    while (cycle < 2000ull * n_ops) {
        cycle++;
        if (cycle == 4) m->rst = 0;
        // new master operations
        if (!m->rst && ops < n_ops && !expect_b && !aw_v && !w_v && !w_done_aw && pct(20)) {
            w_addr = uint32_t(rng() % (1 << 15)) * 4;
            w_data = uint32_t(rng());
            w_strb = pct(90) ? 0xF : uint8_t(rng() % 15);
            aw_v = w_v = true; w_done_aw = w_done_w = false; ops++;
        }
        if (!m->rst && ops < n_ops && !expect_r && !ar_v && !ar_done && pct(20)) {
            r_addr = uint32_t(rng() % (1 << 15)) * 4;
            ar_v = true; ops++;
        }
        m->s_axil_awvalid = aw_v && !w_done_aw && pct(70);
        m->s_axil_awaddr = w_addr;
        m->s_axil_wvalid = w_v && !w_done_w && pct(70);
        m->s_axil_wdata = w_data; m->s_axil_wstrb = w_strb;
        m->s_axil_arvalid = ar_v && pct(70);
        m->s_axil_araddr = r_addr;
        m->s_axil_bready = pct(60);
        m->s_axil_rready = pct(60);
        // engine
        m->reg_ready = pct(60);
        bool answer = !engine_reads.empty() && engine_reads.front().due <= cycle;
        m->reg_rdata_valid = answer;
        m->reg_rdata = answer ? engine_reads.front().data : uint32_t(rng());

        m->clk = 0; m->eval();
        bool aw_fire = m->s_axil_awvalid && m->s_axil_awready;
        bool w_fire = m->s_axil_wvalid && m->s_axil_wready;
        bool ar_fire = m->s_axil_arvalid && m->s_axil_arready;
        bool b_fire = m->s_axil_bvalid && m->s_axil_bready;
        bool r_fire = m->s_axil_rvalid && m->s_axil_rready;
        bool reg_fire = m->reg_valid && m->reg_ready;
        if (reg_fire) {
            uint32_t idx = m->reg_addr / 4;
            if (m->reg_write) {
                CHECK(w_strb == 0xF, "a partial write (wstrb %x) reached the register port", w_strb);
                CHECK(m->reg_addr == (w_addr & 0x1ffff) && m->reg_wdata == w_data,
                      "write reached the port as %05x=%08x, want %05x=%08x", m->reg_addr, m->reg_wdata, w_addr, w_data);
                regs[idx] = m->reg_wdata;
            } else {
                CHECK(m->reg_addr == (r_addr & 0x1ffff), "read address %05x, want %05x", m->reg_addr, r_addr);
                // latency: usually short, sometimes 0 (same cycle), sometimes past the timeout
                uint64_t lat = pct(8) ? kTimeout + 10 + rng() % 100 : (pct(10) ? 0 : 1 + rng() % 20);
                engine_reads.push_back({cycle + lat, regs[idx]});
            }
        }
        if (b_fire) {
            CHECK(expect_b, "write response without a write");
            bool full = w_strb == 0xF;
            CHECK(m->s_axil_bresp == (full ? 0 : 2), "bresp %d for wstrb %x", m->s_axil_bresp, w_strb);
            if (full) { shadow[(w_addr / 4)] = w_data; writes_ok++; } else writes_err++;
            expect_b = false; aw_v = w_v = false; w_done_aw = w_done_w = false;
        }
        if (r_fire) {
            CHECK(expect_r, "read response without a read");
            if (m->s_axil_rresp == 0) {
                CHECK(m->s_axil_rdata == shadow[r_addr / 4], "read %05x = %08x, want %08x", r_addr,
                      m->s_axil_rdata, shadow[r_addr / 4]);
                reads_ok++;
            } else {
                CHECK(m->s_axil_rresp == 2 && m->s_axil_rdata == 0xffffffffu, "bad error response %d/%08x",
                      m->s_axil_rresp, m->s_axil_rdata);
                reads_timeout++;
            }
            expect_r = false; ar_v = false; ar_done = false;
        }
        m->clk = 1; m->eval();
        if (answer) engine_reads.pop_front();
        if (aw_fire) w_done_aw = true;
        if (w_fire) w_done_w = true;
        CHECK(aw_fire == w_fire, "AW and W taken in different cycles");
        if (aw_fire && w_fire) expect_b = true;
        if (ar_fire) { ar_done = true; expect_r = true; ar_v = false; }
        if (ops >= n_ops && !expect_b && !expect_r && !aw_v && !ar_v && !ar_done) break;
    }
    CHECK(writes_ok + writes_err + reads_ok + reads_timeout == n_ops,
          "completed %d of %d operations", writes_ok + writes_err + reads_ok + reads_timeout, n_ops);
    CHECK(writes_err > 0 && reads_timeout > 0, "partial writes (%d) or timeouts (%d) never exercised",
          writes_err, reads_timeout);
    std::printf("axil regport: %d writes, %d refused partial writes, %d reads, %d reads timed out, "
                "%llu cycles, %d failures\n", writes_ok, writes_err, reads_ok, reads_timeout,
                (unsigned long long)cycle, failures);
    m->final();
    return failures ? 1 : 0;
}
