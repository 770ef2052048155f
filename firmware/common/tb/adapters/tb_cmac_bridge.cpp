// Verilator bench of rocenic_cmac_bridge (FIFO_ADDR_W = 5: 32-beat FIFOs) with the board's
// clocks: core 250 MHz (4000 ps), CMAC 322.27 MHz (3104 ps).
//
// Phases: (1) link down: frames the engine sends are taken and dropped, nothing reaches the
// CMAC, TX disabled with remote/local fault; (2) link up: every frame reaches the CMAC whole
// and in order with tkeep, tvalid never falls inside a frame although the CMAC stalls at
// random; (3) the link drops and returns during traffic: whatever reaches the CMAC is whole
// frames, in order, a subsequence of what was sent, and the engine is never stalled for good.
// RX throughout: CMAC frames (bursty, 61% of its cycles, random tuser) come out on the core
// side in order with data, keep, last and tuser intact and no drops; then frames longer than
// the FIFO are dropped whole, each with one rx_drop pulse, while the next short frame passes.

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "verilated.h"
#include "Vcmac_bridge.h"

namespace {
std::mt19937_64 rng(1);
bool pct(int p) { return int(rng() % 100) < p; }
int failures = 0;
#define CHECK(c, ...) do { if (!(c)) { std::printf("FAIL: " __VA_ARGS__); std::printf("\n"); \
    if (++failures > 10) std::exit(1); } } while (0)

struct Beat { std::vector<uint32_t> d; uint64_t keep; bool last; bool user; };
using Frame = std::vector<Beat>;

Frame make_frame(int beats, bool user) {
    Frame f(beats);
    for (int i = 0; i < beats; i++) {
        f[i].d.resize(16);
        for (auto& w : f[i].d) w = uint32_t(rng());
        int n = i + 1 == beats ? 1 + int(rng() % 64) : 64;
        f[i].keep = n == 64 ? ~0ull : ((1ull << n) - 1);
        f[i].last = i + 1 == beats;
        f[i].user = f[i].last && user;
    }
    return f;
}
template <class W> void put(W& w, const Beat& b) { for (int i = 0; i < 16; i++) w[i] = b.d[i]; }
template <class W> bool same(const W& w, const Beat& b) {
    for (int i = 0; i < 16; i++) if (w[i] != b.d[i]) return false;
    return true;
}
}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 1;
    rng.seed(seed);
    auto ctx = std::make_unique<VerilatedContext>();
    auto m = std::make_unique<Vcmac_bridge>(ctx.get());
    const uint64_t core_p = 4000, cmac_p = 3104;

    // TX: frames offered by the engine; what the CMAC saw
    std::deque<Frame> tx_todo;           // frames still to offer in the current phase
    std::vector<Frame> tx_sent;          // frames the engine handed over (all phases)
    size_t tx_beat = 0;
    std::vector<Frame> cmac_got; Frame cmac_cur;
    bool cmac_in_frame = false;
    // RX: frames the CMAC delivers; what the core side saw
    std::deque<Frame> rx_todo; std::vector<Frame> rx_sent; size_t rx_beat = 0; int rx_gap = 0;
    std::vector<Frame> core_got; Frame core_cur;
    uint64_t rx_drops = 0;

    m->clk = 0; m->cmac_clk = 0; m->rst = 1; m->cmac_arst = 1;
    m->mac_tx_tvalid = 0; m->tx_axis_tready = 0; m->rx_axis_tvalid = 0; m->stat_rx_aligned = 0;
    m->eval();
    uint64_t t = 0, next_core = core_p / 2, next_cmac = cmac_p / 2, core_cycles = 0;
    int phase = 0; uint64_t phase_start = 0; size_t phase_first_sent = 0;
    size_t sent_before_phase2 = 0, sent_before_phase3 = 0;
    uint64_t last_tx_fire = 0;

    auto phase_done = [&]() { return tx_todo.empty() && tx_beat == 0; };
    while (phase < 4 && t < 400000000ull) {
        t = std::min(next_core, next_cmac);
        bool ec = next_core == t, em = next_cmac == t;
        bool core_rise = ec && !m->clk, cmac_rise = em && !m->cmac_clk;
        // sample before the edges
        bool tx_fire = core_rise && m->mac_tx_tvalid && m->mac_tx_tready;
        bool cmac_tx_fire = cmac_rise && m->tx_axis_tvalid && m->tx_axis_tready;
        bool cmac_tx_gap = cmac_rise && cmac_in_frame && !m->tx_axis_tvalid;
        bool rx_fire = cmac_rise && m->rx_axis_tvalid;
        bool core_rx = core_rise && m->mac_rx_tvalid;
        bool drop = core_rise && m->rx_drop;
        if (cmac_tx_gap) CHECK(false, "tvalid fell inside a TX frame (phase %d)", phase);
        if (cmac_tx_fire) {
            Beat b; b.d.assign(m->tx_axis_tdata.m_storage, m->tx_axis_tdata.m_storage + 16);
            b.keep = m->tx_axis_tkeep; b.last = m->tx_axis_tlast; b.user = m->tx_axis_tuser;
            CHECK(!b.user, "tx_axis_tuser set");
            CHECK(m->ctl_tx_enable, "a beat went out with TX disabled");
            cmac_cur.push_back(b); cmac_in_frame = !b.last;
            if (b.last) { cmac_got.push_back(cmac_cur); cmac_cur.clear(); }
        }
        if (core_rx) {
            Beat b; b.d.assign(m->mac_rx_tdata.m_storage, m->mac_rx_tdata.m_storage + 16);
            b.keep = m->mac_rx_tkeep; b.last = m->mac_rx_tlast; b.user = b.last && m->mac_rx_tuser;
            core_cur.push_back(b);
            if (b.last) { core_got.push_back(core_cur); core_cur.clear(); }
        }
        if (drop) rx_drops++;
        if (ec) { m->clk = !m->clk; next_core += core_p / 2; }
        if (em) { m->cmac_clk = !m->cmac_clk; next_cmac += cmac_p / 2; }
        m->eval();

        if (core_rise) {
            core_cycles++;
            if (core_cycles == 6) m->rst = 0;
            if (tx_fire) {
                last_tx_fire = core_cycles;
                if (++tx_beat == tx_todo.front().size()) {
                    tx_sent.push_back(tx_todo.front()); tx_todo.pop_front(); tx_beat = 0;
                }
            }
            // offer the next beat (held while stalled: same frame/beat until it fires)
            bool offer = !tx_todo.empty() && (tx_beat > 0 || pct(40));
            if (m->mac_tx_tvalid && !tx_fire) offer = true;
            if (offer && !tx_todo.empty()) {
                const Beat& b = tx_todo.front()[tx_beat];
                put(m->mac_tx_tdata, b); m->mac_tx_tkeep = b.keep; m->mac_tx_tlast = b.last;
            }
            m->mac_tx_tvalid = offer && !tx_todo.empty();
            // phases
            uint64_t in_phase = core_cycles - phase_start;
            if (phase == 0 && core_cycles == 20) {   // (1) link down
                for (int i = 0; i < 30; i++) tx_todo.push_back(make_frame(1 + rng() % 8, false));
                phase = 1; phase_start = core_cycles;
            } else if (phase == 1 && phase_done() && in_phase > 200) {
                CHECK(cmac_got.empty(), "%zu frames reached the CMAC while the link was down", cmac_got.size());
                CHECK(!m->ctl_tx_enable && m->ctl_tx_send_rfi && m->ctl_tx_send_lfi, "controls while down");
                m->stat_rx_aligned = 1;
                phase = 2; phase_start = core_cycles; sent_before_phase2 = tx_sent.size();
            } else if (phase == 2 && in_phase == 50) {  // link is up by now: send
                CHECK(m->ctl_tx_enable && !m->ctl_tx_send_rfi, "TX not enabled 50 cycles after alignment");
                for (int i = 0; i < 300; i++) tx_todo.push_back(make_frame(1 + rng() % 16, false));
            } else if (phase == 2 && in_phase > 3000 && phase_done() && !cmac_in_frame &&
                       core_cycles - last_tx_fire > 300) {   // everything sent has drained
                size_t n = tx_sent.size() - sent_before_phase2;
                CHECK(cmac_got.size() == n, "link up: %zu frames reached the CMAC, %zu sent", cmac_got.size(), n);
                for (size_t i = 0; i < std::min(n, cmac_got.size()); i++) {
                    const Frame& s = tx_sent[sent_before_phase2 + i]; const Frame& g = cmac_got[i];
                    bool ok = s.size() == g.size();
                    for (size_t k = 0; ok && k < s.size(); k++)
                        ok = s[k].d == g[k].d && s[k].keep == g[k].keep && s[k].last == g[k].last;
                    if (!ok) { CHECK(false, "TX frame %zu differs at the CMAC", i); break; }
                }
                phase = 3; phase_start = core_cycles; sent_before_phase3 = tx_sent.size();
                phase_first_sent = cmac_got.size();
                for (int i = 0; i < 400; i++) tx_todo.push_back(make_frame(1 + rng() % 16, false));
            } else if (phase == 3) {
                if (in_phase % 700 == 350) m->stat_rx_aligned = !m->stat_rx_aligned;
                if (phase_done() && in_phase > 20000) { m->stat_rx_aligned = 1; phase = 4; }
            }
        }
        if (cmac_rise) {
            m->cmac_arst = core_cycles < 3;
            m->tx_axis_tready = pct(80);
            // RX traffic: bursty frames; the last part of the run sends oversize frames
            if (rx_fire) {
                if (++rx_beat == rx_todo.front().size()) {
                    rx_sent.push_back(rx_todo.front()); rx_todo.pop_front(); rx_beat = 0;
                    rx_gap = int(rx_sent.back().size() * 39 / 61) + 1;
                }
            }
            if (rx_todo.empty() && rx_sent.size() < 2000 && core_cycles > 10)
                rx_todo.push_back(make_frame(rx_sent.size() >= 1900 && rx_sent.size() % 2 == 0
                                                 ? 40 : 1 + int(rng() % 8), pct(20)));
            bool v = !rx_todo.empty() && (rx_beat > 0 || rx_gap == 0);
            if (rx_gap > 0 && rx_beat == 0) rx_gap--;
            if (v) {
                const Beat& b = rx_todo.front()[rx_beat];
                put(m->rx_axis_tdata, b); m->rx_axis_tkeep = b.keep; m->rx_axis_tlast = b.last;
                m->rx_axis_tuser = b.user;
            }
            m->rx_axis_tvalid = v;
        }
        m->eval();
    }
    CHECK(phase == 4, "stuck in phase %d at %llu ps", phase, (unsigned long long)t);
    // Phase 3: whole frames, in order, a subsequence of what was sent then.
    {
        auto equal = [](const Frame& a, const Frame& b) {
            if (a.size() != b.size()) return false;
            for (size_t j = 0; j < a.size(); j++)
                if (a[j].d != b[j].d || a[j].keep != b[j].keep || a[j].last != b[j].last) return false;
            return true;
        };
        size_t k = sent_before_phase3;
        bool whole = true;
        for (size_t i = phase_first_sent; i < cmac_got.size(); i++) {
            while (k < tx_sent.size() && !equal(tx_sent[k], cmac_got[i])) k++;
            if (k == tx_sent.size()) {
                CHECK(false, "flapping link: frame %zu at the CMAC is not a whole sent frame in order", i);
                whole = false;
                break;
            }
            k++;
        }
        std::printf("cmac bridge: flapping link: %zu of %zu frames went out%s\n",
                    cmac_got.size() - phase_first_sent, tx_sent.size() - sent_before_phase3,
                    whole ? ", all whole and in order" : "");
    }
    // RX: frames of <= 8 beats all arrive; the 40-beat ones are dropped with one pulse each.
    size_t big = 0, gi = 0;
    for (const Frame& s : rx_sent) {
        if (s.size() == 40) { big++; continue; }
        if (gi >= core_got.size()) { CHECK(false, "RX frame lost"); break; }
        const Frame& g = core_got[gi++];
        bool ok = g.size() == s.size();
        for (size_t j = 0; ok && j < s.size(); j++)
            ok = g[j].d == s[j].d && g[j].keep == s[j].keep && g[j].last == s[j].last && g[j].user == s[j].user;
        if (!ok) { CHECK(false, "RX frame %zu differs", gi - 1); break; }
    }
    CHECK(gi == core_got.size(), "extra RX frames on the core side");
    CHECK(rx_drops == big && big > 0, "rx_drop pulsed %llu times for %zu oversize frames",
          (unsigned long long)rx_drops, big);
    std::printf("cmac bridge: TX %zu frames sent, RX %zu frames delivered, %zu oversize dropped, "
                "%d failures\n", tx_sent.size(), core_got.size(), big, failures);
    m->final();
    return failures ? 1 : 0;
}
