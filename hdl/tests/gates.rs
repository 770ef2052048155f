//! Hardware quality gates on the generated Verilog of every design: Verilator `-Wall` lint,
//! yosys structural checks (no latches, no undriven signals), and yosys `synth_xilinx` with
//! its figures printed and held to a budget. Missing tools fail these tests with the
//! install command; they never skip.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use rocenic_hdl::gates::{self, GateError, Structure, SynthStats};
use rocenic_hdl::{Design, EngineConfig};

/// Area the TX back end may use before this gate fails: it synthesises to about 6.7k LUT
/// (ICRC engine about 2.9k, frame builder 2.7k, arbiter 1k) and 7.2k FF (mostly the
/// 8-stage, 512-bit delay line beside the ICRC engine); docs/hdl.md. The ICRC engine has
/// no synthesis gate of its own: it is inside this one and the RX front end's. The engine
/// top has none yet: until its datapath is wired, synthesis trims every block whose outputs
/// go nowhere, so its figure would understate the design.
const TX_PATH_MAX_LUTS: u64 = 7_500;
const TX_PATH_MAX_FFS: u64 = 8_000;

/// Area of the RX front end (`rx-fifo`, which contains `rx-parser` and an ICRC checker):
/// about 4.8k LUT, 2.6k FF and 15 RAMB18 (the 32 KiB frame buffer) in docs/hdl.md.
const RX_MAX_LUTS: u64 = 5_500;
const RX_MAX_FFS: u64 = 3_000;
const RX_MAX_BRAM36: f64 = 8.0;

/// A directory for one gate run, per process so that concurrent test runs in one target
/// directory do not write over each other's files. The tool logs stay there.
fn work_dir(gate: &str, design: Design) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("gates")
        .join(format!("{}-{gate}-{}", design.name(), std::process::id()))
}

/// A design's Verilog, generated once per test process: the lint, the yosys check, the
/// synthesis figures and the generator test all read it (the engine alone takes seconds to
/// elaborate). `generation_is_deterministic` compares a fresh generation with it.
fn verilog(design: Design) -> &'static str {
    static CACHE: Mutex<Vec<(Design, &'static str)>> = Mutex::new(Vec::new());
    if let Some((_, v)) = lock(&CACHE).iter().find(|(d, _)| *d == design) {
        return v;
    }
    // Generated outside the lock, so tests elaborate different designs in parallel; a
    // design generated twice at once is kept once (the copies are equal).
    let fresh: &'static str = Box::leak(design.verilog().into_boxed_str());
    let mut cache = lock(&CACHE);
    match cache.iter().find(|(d, _)| *d == design) {
        Some((_, v)) => v,
        None => {
            cache.push((design, fresh));
            fresh
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn pass<T>(result: Result<T, GateError>) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn verilator_lint_is_clean() {
    for design in Design::ALL {
        let dir = work_dir("lint", design);
        pass(gates::verilator_lint(verilog(design), &dir));
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The engine verilates (`verilator --cc -Wall`, the simulator's flags) with no warning:
/// in particular no UNOPTFLAT, circular logic between blocks that `--lint-only` does not
/// see and that makes Verilator re-evaluate the loop every cycle (docs/hdl.md "Quality
/// gates"). Verilating only, no C++ compile: about 10 s.
#[test]
fn the_engine_verilates_without_circular_logic() {
    let dir = work_dir("verilate", Design::Engine);
    pass(gates::verilator_verilate(verilog(Design::Engine), &dir));
    let _ = std::fs::remove_dir_all(dir);
}

/// The read mux one level down a cascade (`DmaReadMux<6, 7>`, not a `Design` of its own):
/// its Verilog is as clean as the top level's.
#[test]
fn a_cascaded_read_mux_lints_clean() {
    let verilog = rocenic_hdl::generate_verilog(&mut rocenic_hdl::dma::dma_rd_mux::DmaReadMux::<
        6,
        7,
    >::default());
    let dir = work_dir("lint-cascade", Design::DmaReadMux);
    pass(gates::verilator_lint(&verilog, &dir));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn yosys_finds_no_latch_and_no_undriven_signal() {
    // Each design once: a block instantiated in another is checked there (flattened). The
    // engine is checked at every build size by `engine_sizes_keep_their_state_in_memories`.
    for design in Design::ALL
        .into_iter()
        .filter(|d| d.part_of().is_none() && *d != Design::Engine)
    {
        let dir = work_dir("check", design);
        pass(gates::yosys_check(verilog(design), &dir));
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn yosys_synth_xilinx_tx_path_figures() {
    let design = Design::TxPath;
    let dir = work_dir("synth", design);
    let stats: SynthStats = pass(gates::yosys_synth(verilog(design), &dir));
    println!("{} (yosys synth_xilinx): {stats}", design.name());
    assert!(
        stats.luts <= TX_PATH_MAX_LUTS && stats.ffs <= TX_PATH_MAX_FFS,
        "{}: over the area budget ({TX_PATH_MAX_LUTS} LUT, {TX_PATH_MAX_FFS} FF): {stats}",
        design.name()
    );
    assert_eq!(
        stats.bram36_equivalent(),
        0.0,
        "the TX path uses no block RAM"
    );
}

#[test]
fn rx_front_end_synth_xilinx_figures() {
    // The RX front end holds the parser and an ICRC checker, so this covers all three.
    let design = Design::RxFifo;
    let dir = work_dir("synth", design);
    let stats: SynthStats = pass(gates::yosys_synth(verilog(design), &dir));
    println!("{} (yosys synth_xilinx): {stats}", design.name());
    assert!(
        stats.luts <= RX_MAX_LUTS && stats.ffs <= RX_MAX_FFS,
        "{}: over the area budget ({RX_MAX_LUTS} LUT, {RX_MAX_FFS} FF): {stats}",
        design.name()
    );
    // The frame buffer must map to block RAM (not to flip-flops), and only it.
    let bram = stats.bram36_equivalent();
    assert!(
        bram > 0.0 && bram <= RX_MAX_BRAM36,
        "{}: block RAM {bram} (want the 512 x 512 buffer, at most {RX_MAX_BRAM36}): {stats}",
        design.name()
    );
}

/// The control plane at 256 QPs / 1024 MRs: its context tables and per-QP counters must
/// land in block RAM (about 21 BRAM36 for the tables with the responder's in-progress
/// message in `qps`, 14 for the counters' eight lanes; docs/hdl.md), not in LUTs or
/// flip-flops. Measured with the counters: 7926 LUT, 5349 FF, 35 BRAM36.
const CONTROL_MAX_LUTS: u64 = 9_000;
const CONTROL_MAX_FFS: u64 = 6_000;

#[test]
fn control_plane_tables_are_block_ram() {
    let design = Design::Control;
    let dir = work_dir("synth", design);
    let stats: SynthStats = pass(gates::yosys_synth(verilog(design), &dir));
    println!("{} (yosys synth_xilinx): {stats}", design.name());
    let bram = stats.bram36_equivalent();
    assert!(
        (28.0..=40.0).contains(&bram),
        "the QP/MR/CQ/PD tables and the per-QP counters should take 28-40 BRAM36: {stats}"
    );
    assert!(
        stats.luts <= CONTROL_MAX_LUTS && stats.ffs <= CONTROL_MAX_FFS,
        "control: over the area budget ({CONTROL_MAX_LUTS} LUT, {CONTROL_MAX_FFS} FF): {stats}"
    );
}

/// The engine top's Verilog at a build size, generated once per test process (the default
/// is `verilog(Design::Engine)`).
fn engine_verilog(config: EngineConfig) -> &'static str {
    static LARGE: OnceLock<String> = OnceLock::new();
    match config {
        EngineConfig::Default => verilog(Design::Engine),
        EngineConfig::Large => LARGE.get_or_init(|| config.engine_verilog()),
    }
}

/// `f` at every engine build size, one thread each (yosys is single-threaded), in
/// `EngineConfig::ALL` order; a panic in one is raised here.
fn per_engine_size<T: Send>(f: impl Fn(EngineConfig) -> T + Sync) -> [T; 2] {
    let f = &f;
    std::thread::scope(|scope| {
        EngineConfig::ALL
            .map(|config| scope.spawn(move || f(config)))
            .map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}

/// The engine top at every build size other than the default (which
/// `verilator_lint_is_clean` covers) lints as clean.
#[test]
fn every_engine_size_lints_clean() {
    for config in EngineConfig::ALL {
        if config == EngineConfig::Default {
            continue;
        }
        let dir = work_dir(&format!("lint-{}", config.name()), Design::Engine);
        pass(gates::verilator_lint(engine_verilog(config), &dir));
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The engine's storage as yosys' front end sees it (`gates::Structure`), recorded at
/// both build sizes in docs/hdl.md and held within [`ENGINE_MARGIN`] both ways.
const ENGINE_DEFAULT_MEMORY_BITS: u64 = 2_911_856;
const ENGINE_LARGE_MEMORY_BITS: u64 = 12_115_732;
/// BRAM36 data plus parity bits: the unit the large build's extra memory is counted in.
const BRAM36_BITS: u64 = 36 * 1024;
/// How many more register bits the large build may have: only the QP and MR index
/// registers widen (by 2 and 4 bits: among them the per-QP counters' lanes, two QP numbers
/// each, and the Segmenter's 64 slot QPNs; 220 measured).
const ENGINE_LARGE_MAX_EXTRA_REGISTER_BITS: u64 = 230;

/// The CI utilization gate of the engine at both build sizes (one thread each, about
/// 20 CPU-seconds of yosys per size): yosys' structural checks (no latch, no undriven
/// signal) pass at both sizes, the memories hold the recorded number of bits, the large
/// build's extra QP and MR entries are memory (block RAM in `synth_xilinx`), and its
/// registers do not grow. The LUT/FF/BRAM figures of the full flow are
/// `engine_utilization_at_both_sizes` (not in CI; docs/hdl.md says why).
#[test]
fn engine_sizes_keep_their_state_in_memories() {
    let [default, large] = per_engine_size(|config| {
        let dir = work_dir(&format!("check-{}", config.name()), Design::Engine);
        let log = pass(gates::yosys_check(engine_verilog(config), &dir));
        let _ = std::fs::remove_dir_all(dir);
        let s = Structure::parse(&log).expect("stat -width in the yosys log");
        println!("engine {} (yosys proc; flatten): {s}", config.name());
        s
    });
    for (config, s, record) in [
        (EngineConfig::Default, &default, ENGINE_DEFAULT_MEMORY_BITS),
        (EngineConfig::Large, &large, ENGINE_LARGE_MEMORY_BITS),
    ] {
        assert!(
            near(s.memory_bits as f64, record as f64),
            "engine {}: {s}; the record is {record} memory bits (update it and docs/hdl.md \
             if the tables changed on purpose)",
            config.name()
        );
    }
    let extra = large.memory_bits.saturating_sub(default.memory_bits);
    assert!(
        extra >= ENGINE_LARGE_MIN_EXTRA_BRAM36 as u64 * BRAM36_BITS,
        "the large build has only {extra} more memory bits: {large} vs {default}"
    );
    assert!(
        large.register_bits <= default.register_bits + ENGINE_LARGE_MAX_EXTRA_REGISTER_BITS,
        "the large build's registers grew: {large} vs {default}"
    );
}

/// The wired engine's yosys `synth_xilinx` figures, recorded in docs/hdl.md "Utilization by
/// configuration" (yosys 0.23, the engine as of the commit named there). The gate holds each
/// within [`ENGINE_MARGIN`] of its record, both ways: more means the engine grew, much less
/// that synthesis trimmed a block whose outputs go nowhere. Either way, look, then update
/// the record here and in the docs.
const ENGINE_DEFAULT: EngineRecord = EngineRecord {
    luts: 40_250,
    ffs: 42_013,
    bram36: 97.5,
};
const ENGINE_LARGE: EngineRecord = EngineRecord {
    luts: 34_740,
    ffs: 37_138,
    bram36: 299.5,
};
const ENGINE_MARGIN: f64 = 0.05;
/// The large build's extra block RAM over the default: the 16-times-deeper `mr` table and
/// the 4-times-deeper per-QP tables (225.5 BRAM36 recorded).
const ENGINE_LARGE_MIN_EXTRA_BRAM36: f64 = 100.0;
/// How much more logic the large build may take than the default: its per-QP and per-MR
/// state is all in block RAM, so only address widths and the read multiplexers of the
/// deeper tables (more BRAMs per table) grow (2.4 % more LUT and 0.2 % more FF recorded).
const ENGINE_LARGE_MAX_LOGIC_GROWTH: f64 = 0.04;

struct EngineRecord {
    luts: u64,
    ffs: u64,
    bram36: f64,
}

fn near(value: f64, record: f64) -> bool {
    (value - record).abs() <= record * ENGINE_MARGIN
}

/// Each `synth_xilinx` figure within [`ENGINE_MARGIN`] of the size's record, both ways.
fn assert_near_record(config: EngineConfig, stats: &SynthStats, record: &EngineRecord) {
    assert!(
        near(stats.luts as f64, record.luts as f64)
            && near(stats.ffs as f64, record.ffs as f64)
            && near(stats.bram36_equivalent(), record.bram36),
        "engine {}: {stats} is not within {} % of the record ({} LUT, {} FF, {} BRAM36); if \
         the engine changed on purpose, update the record in hdl/tests/gates.rs and docs/hdl.md",
        config.name(),
        ENGINE_MARGIN * 100.0,
        record.luts,
        record.ffs,
        record.bram36
    );
}

/// The default engine's full `synth_xilinx` figures held to [`ENGINE_DEFAULT`]: the CI's
/// utilization check. About 6 CPU-minutes of yosys on one thread, so `scripts/test.sh` runs
/// it in the background beside the rest of the suite (where a core is mostly idle) and
/// fails if it fails; `cargo test` alone leaves it out. Run it with `cargo test -p
/// rocenic-hdl --release --test gates -- --ignored --exact engine_synthesis_is_within_its_record`.
#[test]
#[ignore = "about 6 CPU-minutes; scripts/test.sh runs it beside the suite"]
fn engine_synthesis_is_within_its_record() {
    let config = EngineConfig::Default;
    let dir = work_dir(&format!("synth-{}", config.name()), Design::Engine);
    let stats = pass(gates::yosys_synth(engine_verilog(config), &dir));
    println!("engine {} (yosys synth_xilinx): {stats}", config.name());
    assert_near_record(config, &stats, &ENGINE_DEFAULT);
    let _ = std::fs::remove_dir_all(dir);
}

/// Synthesises the wired engine at both build sizes (one thread each) with the full
/// `synth_xilinx` flow and checks the figures against the record, the large build's block
/// RAM growth, and that its logic does not grow. Not in CI (the default size alone is,
/// [`engine_synthesis_is_within_its_record`]): about 6 CPU-minutes per size. Run with
/// `cargo test -p rocenic-hdl --release --test gates -- --ignored engine_utilization`.
#[test]
#[ignore = "about 6 CPU-minutes of yosys per size; run with --ignored (docs/hdl.md)"]
fn engine_utilization_at_both_sizes() {
    let [default, large] = per_engine_size(|config| {
        let dir = work_dir(&format!("synth-{}", config.name()), Design::Engine);
        let stats = pass(gates::yosys_synth(engine_verilog(config), &dir));
        println!("engine {} (yosys synth_xilinx): {stats}", config.name());
        stats
    });
    assert_near_record(EngineConfig::Default, &default, &ENGINE_DEFAULT);
    assert_near_record(EngineConfig::Large, &large, &ENGINE_LARGE);
    let extra = large.bram36_equivalent() - default.bram36_equivalent();
    assert!(
        extra >= ENGINE_LARGE_MIN_EXTRA_BRAM36,
        "the large build has only {extra} more BRAM36 than the default: {large} vs {default}"
    );
    let grows = |l: u64, d: u64| l as f64 > d as f64 * (1.0 + ENGINE_LARGE_MAX_LOGIC_GROWTH);
    assert!(
        !grows(large.luts, default.luts) && !grows(large.ffs, default.ffs),
        "the large build's logic grew: {large} vs {default}"
    );
}

#[test]
fn generator_writes_top_v_and_prints_its_path() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("generator-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(env!("CARGO_BIN_EXE_rocenic-hdl"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run rocenic-hdl");
    assert!(run.status.success(), "{run:?}");
    let printed = String::from_utf8(run.stdout).expect("utf-8");
    let path = PathBuf::from(printed.trim());
    assert_eq!(path, out.join("top.v"));
    let verilog = std::fs::read_to_string(&path).expect("top.v");
    assert!(
        verilog.contains("\nmodule top("),
        "module top in {}",
        path.display()
    );
    assert_eq!(verilog, self::verilog(Design::ALL[0]), "the default top");

    let unknown = Command::new(env!("CARGO_BIN_EXE_rocenic-hdl"))
        .args(["--out", "/nonexistent", "--top", "no-such-design"])
        .output()
        .expect("run rocenic-hdl");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("icrc-check"));
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn generation_is_deterministic() {
    for design in Design::ALL {
        assert_eq!(design.verilog(), verilog(design), "{}", design.name());
    }
}

/// The gates themselves: each must reject what it is there to catch.
#[test]
fn gates_reject_latches_undriven_signals_and_lint_warnings() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("gates")
        .join("negative");
    let latch = "module top(input wire en, input wire d, output reg q);\n\
                 always @(*) begin if (en) q = d; end\nendmodule\n";
    let undriven = "module top(input wire a, output wire y);\n\
                    wire floating;\nassign y = a & floating;\nendmodule\n";
    let width = "module top(input wire [3:0] a, output wire [7:0] y);\n\
                 assign y = a;\nendmodule\n";
    let clean = "module top(input wire [3:0] a, output wire [3:0] y);\n\
                 assign y = ~a;\nendmodule\n";
    for (name, v) in [("latch", latch), ("undriven", undriven)] {
        match gates::yosys_check(v, &dir.join(name)) {
            Err(GateError::Failed { .. }) => {}
            other => panic!("yosys check accepted a {name}: {other:?}"),
        }
    }
    match gates::verilator_lint(width, &dir.join("width")) {
        Err(GateError::Failed { .. }) => {}
        other => panic!("lint accepted a width mismatch: {other:?}"),
    }
    // A slice whose outputs are registers, written with `if`s that Verilator 5.006 does
    // not split, before a consumer: clean under `--lint-only`, UNOPTFLAT when verilated.
    let circular = r#"
module top(input wire clock, input wire reset, input wire a, output reg y);
wire sr; wire mv; reg mr; reg n; reg q;
slice s(.clock(clock), .reset(reset), .s_valid(a), .s_ready(sr), .m_valid(mv), .m_ready(mr));
always @(posedge clock) q <= n;
always @(*) begin n = q; mr = ~q; if (mv & mr) n = 1'b1; if (q) n = 1'b0; y = sr; end
endmodule
module ff(input wire clock, input wire d, output reg q);
always @(posedge clock) q <= d;
endmodule
module slice(input wire clock, input wire reset, input wire s_valid, output reg s_ready, output reg m_valid, input wire m_ready);
reg a_d; wire a_q; reg d_d; wire d_q; reg a_c; reg d_c;
ff fa(.clock(a_c), .d(a_d), .q(a_q));
ff fd(.clock(d_c), .d(d_d), .q(d_q));
always @(*) begin
a_c = clock; d_c = clock; a_d = a_q; m_valid = a_q; s_ready = d_q; d_d = 1'b0;
if (a_q & m_ready) begin a_d = 1'b0; d_d = 1'b1; end
if (s_valid & ~a_q & ~d_q) a_d = 1'b1;
if (reset) begin a_d = 1'b0; d_d = 1'b0; end
end
endmodule
"#;
    pass(gates::verilator_lint(circular, &dir.join("circular-lint")));
    match gates::verilator_verilate(circular, &dir.join("circular")) {
        Err(GateError::Failed { reason, .. }) if reason.contains("UNOPTFLAT") => {}
        other => panic!("verilating accepted circular logic: {other:?}"),
    }
    pass(gates::verilator_verilate(clean, &dir.join("clean-cc")));
    pass(gates::verilator_lint(clean, &dir.join("clean")));
    pass(gates::yosys_check(clean, &dir.join("clean")));
    let _ = std::fs::remove_dir_all(dir);
}
