// Verilator test bench of rocenic_async_fifo: two unrelated clocks with random periods,
// random valid/ready patterns, random frame lengths, a scoreboard of every beat.
//
// Built three times, once per configuration (FRAME_MODE, DROP_WHEN_FULL) = (0,0), (1,0),
// (1,1), each a Verilated model with its own prefix (Vfifo_beat, Vfifo_frame, Vfifo_drop);
// WIDTH = 40, ADDR_W = 4 (16 beats, so full and empty are hit constantly).
//
// Checks, per run:
//  - every beat read equals the beat written, in order (data and last), none lost or
//    duplicated; drop mode: every frame read is a whole written frame, frames come out in
//    order, and frames read + frames dropped (s_drop pulses) = frames written;
//  - frame modes: once a frame's first beat is out, m_valid never falls before its last beat
//    (what a 100G MAC's TX needs);
//  - drop mode with a reader that is never slower: nothing is dropped;
//  - throughput with both sides always ready: at least 0.9 beats per cycle of the slower
//    clock in the non-frame mode, 0.8 in frame mode (frames of 16 beats fill the 16-beat FIFO
//    whole in the worst case, so a little is lost while the last one crosses).
// Exit status 0 only if every run passed; prints one line of figures per configuration.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "verilated.h"
#include "Vfifo_beat.h"
#include "Vfifo_drop.h"
#include "Vfifo_frame.h"

namespace {

constexpr int kDepth = 16;
constexpr uint64_t kMask40 = (uint64_t{1} << 40) - 1;

struct Beat {
    uint64_t data;
    bool last;
};

struct Params {
    const char* name;
    bool frame_mode;
    bool drop_mode;
    uint32_t s_period_ps;
    uint32_t m_period_ps;
    int s_valid_pct;   // probability (%) that the writer offers a beat in a cycle
    int m_ready_pct;   // probability (%) that the reader takes one
    int max_frame;     // beats per frame: 1..max_frame
    int frames;        // frames to write
    uint32_t seed;
    bool burst = false; // writer: a frame's beats back to back, then idle for the rest of
                        // s_valid_pct (as a MAC delivers a frame at its clock, then a gap)
};

struct Result {
    bool ok = true;
    uint64_t beats_out = 0;
    uint64_t frames_out = 0;
    uint64_t frames_dropped = 0;
    uint64_t s_cycles = 0;
    uint64_t m_cycles = 0;
    std::string why;
};

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            char buf_[512];                                                   \
            std::snprintf(buf_, sizeof buf_, __VA_ARGS__);                    \
            r.ok = false;                                                     \
            r.why = buf_;                                                     \
            return r;                                                         \
        }                                                                     \
    } while (0)

template <class M>
Result run(const Params& p) {
    Result r;
    auto ctx = std::make_unique<VerilatedContext>();
    auto m = std::make_unique<M>(ctx.get());
    std::mt19937 rng(p.seed);
    auto pct = [&](int x) { return int(rng() % 100) < x; };

    // Frames to write, generated up front: the scoreboard.
    std::vector<std::vector<uint64_t>> frames(p.frames);
    for (auto& f : frames) {
        f.resize(1 + rng() % p.max_frame);
        for (auto& d : f) d = ((uint64_t(rng()) << 8) ^ rng()) & kMask40;
    }

    // Reset both sides for a few cycles of each clock.
    m->s_clk = 0; m->m_clk = 0; m->s_rst = 1; m->m_rst = 1;
    m->s_valid = 0; m->m_ready = 0; m->s_data = 0; m->s_last = 0;
    m->eval();
    uint64_t t = 0, next_s = p.s_period_ps, next_m = p.m_period_ps;
    int rst_s = 4, rst_m = 4;
    size_t wf = 0, wb = 0;          // writer: frame, beat index
    size_t rf = 0, rb = 0;          // reader: expected frame, beat index (exact modes)
    std::vector<uint64_t> cur;      // drop mode: beats of the frame being read
    bool in_frame = false;          // reader is between a frame's first and last beat
    bool done_writing = false;
    uint64_t idle = 0;              // burst writer: cycles left before the next frame
    const uint64_t limit_ps = uint64_t(p.frames) * p.max_frame * 200 *
                              std::max(p.s_period_ps, p.m_period_ps);

    while (true) {
        CHECK(t < limit_ps, "timeout at %llu ps: wrote %zu frames, read %llu",
              (unsigned long long)t, wf, (unsigned long long)r.frames_out);
        t = std::min(next_s, next_m);
        bool es = next_s == t, em = next_m == t;
        // Clocks are 50% duty: an event at t toggles; a rising edge when the clock is low.
        bool s_rise = es && !m->s_clk, m_rise = em && !m->m_clk;
        // Sample the handshakes before the edge.
        bool s_fire = s_rise && m->s_valid && m->s_ready;
        bool m_fire = m_rise && m->m_valid && m->m_ready;
        bool m_valid_before = m->m_valid;
        bool m_last_before = m->m_last;
        uint64_t m_data_before = m->m_data;
        if (es) { m->s_clk = !m->s_clk; next_s += p.s_period_ps / 2; }
        if (em) { m->m_clk = !m->m_clk; next_m += p.m_period_ps / 2; }
        m->eval();

        if (s_rise) {
            r.s_cycles++;
            if (rst_s > 0 && --rst_s == 0) m->s_rst = 0;
            if (m->s_drop) r.frames_dropped++;
            if (s_fire) {
                if (++wb == frames[wf].size()) {
                    if (p.burst)
                        idle = (frames[wf].size() * (100 - p.s_valid_pct) + p.s_valid_pct - 1) /
                               p.s_valid_pct;
                    wb = 0;
                    wf++;
                }
            }
            done_writing = wf == frames.size();
            // A stalled beat stays offered unchanged; otherwise offer the next one at random
            // (or, bursty, whenever the gap after the previous frame is over).
            bool hold = m->s_valid && !s_fire;
            bool offer = p.burst ? idle == 0 : pct(p.s_valid_pct);
            if (idle > 0 && !(m->s_valid && !s_fire)) idle--;
            if (!hold) m->s_valid = !m->s_rst && !done_writing && offer;
            if (!done_writing) {
                m->s_data = frames[wf][wb];
                m->s_last = wb + 1 == frames[wf].size();
            }
        }
        if (m_rise) {
            r.m_cycles++;
            if (rst_m > 0 && --rst_m == 0) m->m_rst = 0;
            if (p.frame_mode && in_frame && !m_fire) {
                CHECK(m_valid_before, "m_valid fell inside a frame (frame %llu)",
                      (unsigned long long)r.frames_out);
            }
            if (m_fire) {
                r.beats_out++;
                in_frame = !m_last_before;
                if (!p.drop_mode) {
                    CHECK(rf < frames.size(), "beat read after the last frame");
                    CHECK(m_data_before == frames[rf][rb],
                          "frame %zu beat %zu: read %010llx, wrote %010llx", rf, rb,
                          (unsigned long long)m_data_before,
                          (unsigned long long)frames[rf][rb]);
                    bool want_last = rb + 1 == frames[rf].size();
                    CHECK(m_last_before == want_last, "frame %zu beat %zu: last=%d, want %d",
                          rf, rb, m_last_before, want_last);
                    if (++rb == frames[rf].size()) { rb = 0; rf++; r.frames_out++; }
                } else {
                    cur.push_back(m_data_before);
                    if (m_last_before) {
                        // Must be a whole written frame at or after the expected one.
                        size_t k = rf;
                        while (k < wf && frames[k] != cur) k++;
                        CHECK(k < wf, "frame %llu read is no whole written frame (%zu beats)",
                              (unsigned long long)r.frames_out, cur.size());
                        rf = k + 1;
                        r.frames_out++;
                        cur.clear();
                    }
                }
            }
            m->m_ready = pct(p.m_ready_pct);
        }
        m->eval();

        if (done_writing) {
            uint64_t accounted = r.frames_out + (p.drop_mode ? r.frames_dropped : 0);
            if (accounted == frames.size() && !m->m_valid) break;
            // in drop mode s_drop may still be in flight: allow some cycles for it
        }
    }
    if (p.drop_mode) {
        CHECK(r.frames_out + r.frames_dropped == frames.size(),
              "read %llu + dropped %llu != written %zu", (unsigned long long)r.frames_out,
              (unsigned long long)r.frames_dropped, frames.size());
    } else {
        CHECK(rf == frames.size() && rb == 0, "lost beats: read up to frame %zu beat %zu", rf,
              rb);
    }
    m->final();
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    uint32_t seed = argc > 1 ? uint32_t(std::strtoul(argv[1], nullptr, 0)) : 1;
    int runs = argc > 2 ? std::atoi(argv[2]) : 40;
    std::mt19937 rng(seed);
    int failures = 0;
    auto report = [&](const Params& p, const Result& r) {
        if (!r.ok) {
            failures++;
            std::printf("FAIL %s seed=%u s=%ups m=%ups valid=%d%% ready=%d%%: %s\n", p.name,
                        p.seed, p.s_period_ps, p.m_period_ps, p.s_valid_pct, p.m_ready_pct,
                        r.why.c_str());
        }
    };
    auto dispatch = [&](const Params& p) {
        if (!p.frame_mode) return run<Vfifo_beat>(p);
        if (!p.drop_mode) return run<Vfifo_frame>(p);
        return run<Vfifo_drop>(p);
    };

    // 1. Random clock ratios (periods 1..10 ns, even ps so both halves are equal) and random
    //    valid/ready, in every configuration.
    const struct { const char* name; bool frame, drop; int max_frame; } cfgs[] = {
        {"beat", false, false, 8}, {"frame", true, false, kDepth}, {"drop", true, true, 24}};
    uint64_t beats = 0, dropped = 0, frames_total = 0;
    for (auto& c : cfgs) {
        for (int i = 0; i < runs; i++) {
            Params p{c.name, c.frame, c.drop, uint32_t(2 * (500 + rng() % 4501)),
                     uint32_t(2 * (500 + rng() % 4501)), int(10 + rng() % 91),
                     int(10 + rng() % 91), c.max_frame, 300, uint32_t(rng())};
            Result r = dispatch(p);
            report(p, r);
            beats += r.beats_out;
            dropped += r.frames_dropped;
            frames_total += r.frames_out;
        }
    }
    std::printf("random runs: %d per configuration, %llu beats and %llu frames read, %llu "
                "frames dropped (drop mode), %d failures\n",
                runs, (unsigned long long)beats, (unsigned long long)frames_total,
                (unsigned long long)dropped, failures);
    if (dropped == 0) {
        std::printf("FAIL drop mode never dropped a frame: the overflow path was not exercised\n");
        failures++;
    }

    // 2. The board's ratios: core 250 MHz (4000 ps) and CMAC 322.265625 MHz (~3104 ps).
    //    TX: core -> CMAC, frame mode, MAC always ready; RX: CMAC -> core, drop mode, each
    //    frame back to back at the CMAC clock with gaps that make 61% on average (100 Gb/s of
    //    165), frames of at most a quarter of the depth (the board's 512-beat FIFO holds 7
    //    of the engine's 66-beat 4 KiB-MTU frames), reader always ready: nothing may be dropped.
    {
        Params tx{"tx-core-to-cmac", true, false, 4000, 3104, 100, 100, kDepth, 2000, uint32_t(rng())};
        Result r = run<Vfifo_frame>(tx);
        report(tx, r);
        double per_slow = double(r.beats_out) / double(r.s_cycles);
        std::printf("tx 250->322 MHz, frame mode, always valid/ready: %.3f beats per core "
                    "cycle\n", per_slow);
        if (r.ok && per_slow < 0.8) {
            std::printf("FAIL tx throughput %.3f < 0.8\n", per_slow);
            failures++;
        }
        Params rx{"rx-cmac-to-core", true, true, 3104, 4000, 61, 100, kDepth / 4, 2000,
                  uint32_t(rng()), true};
        r = run<Vfifo_drop>(rx);
        report(rx, r);
        std::printf("rx 322->250 MHz, drop mode, bursty 61%% valid, always ready: %llu frames, %llu "
                    "dropped\n", (unsigned long long)r.frames_out,
                    (unsigned long long)r.frames_dropped);
        if (r.ok && r.frames_dropped != 0) {
            std::printf("FAIL rx dropped frames at line rate with a faster reader\n");
            failures++;
        }
        Params beat{"beat-full-rate", false, false, 3000, 7000, 100, 100, 8, 2000, uint32_t(rng())};
        r = run<Vfifo_beat>(beat);
        report(beat, r);
        per_slow = double(r.beats_out) / double(r.m_cycles);
        std::printf("beat mode 333->143 MHz, always valid/ready: %.3f beats per slow cycle\n",
                    per_slow);
        if (r.ok && per_slow < 0.9) {
            std::printf("FAIL beat-mode throughput %.3f < 0.9\n", per_slow);
            failures++;
        }
    }
    std::printf(failures ? "async FIFO: %d FAILED\n" : "async FIFO: all passed\n", failures);
    return failures ? 1 : 0;
}
