//! Tests of the Verilator harness (`rocenic_sim::rtl`). They need `verilator` (5.x) and `g++`
//! and FAIL when they are missing (install with `scripts/install-deps.sh rtl`): the RTL is
//! the product, so a machine that cannot simulate it must not pass silently.
//!
//! Speed figures: `cargo test -p rocenic-sim --release --test rtl -- --nocapture`.

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::Instant;

use rocenic_sim::rtl::{
    ModelBuilder, PortDir, RtlError, TraceFormat, VerilatedLib, VerilatedModel,
};

fn verilog(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/rtl")
        .join(name)
}

fn toy_text() -> String {
    std::fs::read_to_string(verilog("toy.v")).expect("reading tests/rtl/toy.v")
}

/// Unwraps a build, failing loudly with the harness's own message (which says how to
/// install the tools when they are missing).
fn build(b: ModelBuilder) -> VerilatedLib {
    match b.build() {
        Ok(lib) => lib,
        Err(e) => panic!("building a Verilated model failed: {e}"),
    }
}

fn toy() -> VerilatedLib {
    build(ModelBuilder::from_file(verilog("toy.v"), "toy"))
}

/// A string unique to this test run, so "first build" and "change" cases are real builds.
fn nonce() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}_{t}", std::process::id())
}

fn scratch_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocenic-rtl-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn reset(m: &mut VerilatedModel) {
    m.set("rst", 1).unwrap();
    m.tick("clk").unwrap();
    m.set("rst", 0).unwrap();
}

#[test]
fn ports_are_discovered_from_the_verilated_header() {
    let lib = toy();
    let ports: Vec<(&str, PortDir, u32)> = lib
        .ports()
        .iter()
        .map(|p| (p.name.as_str(), p.dir, p.width))
        .collect();
    for expected in [
        ("clk", PortDir::Input, 1),
        ("rst", PortDir::Input, 1),
        ("a", PortDir::Input, 8),
        ("sum", PortDir::Output, 9),
        ("count", PortDir::Output, 32),
        ("x64", PortDir::Input, 64),
        ("x64_inv", PortDir::Output, 64),
        ("w72", PortDir::Input, 72),
        ("w72_inc", PortDir::Output, 72),
        ("d512", PortDir::Input, 512),
        ("q512", PortDir::Output, 512),
    ] {
        assert!(
            ports.contains(&expected),
            "{expected:?} missing in {ports:?}"
        );
    }
    assert_eq!(ports.len(), 13);
    let q512 = lib.ports().iter().find(|p| p.name == "q512").unwrap();
    assert_eq!(q512.words(), 16);
}

#[test]
fn narrow_and_wide_ports_clock_and_reset() {
    let lib = toy();
    let mut m = lib.instantiate().unwrap();
    reset(&mut m);
    assert_eq!(m.get("count").unwrap(), 0);

    // Combinational: visible after eval, without a clock.
    m.set("a", 200).unwrap();
    m.set("b", 100).unwrap();
    m.set("x64", 0x0123_4567_89ab_cdef).unwrap();
    m.eval().unwrap();
    assert_eq!(m.get("sum").unwrap(), 300);
    assert_eq!(m.get("x64_inv").unwrap(), !0x0123_4567_89ab_cdef_u64);

    // Counter: counts enabled cycles only.
    m.set("en", 1).unwrap();
    m.ticks("clk", 10).unwrap();
    m.set("en", 0).unwrap();
    m.ticks("clk", 5).unwrap();
    assert_eq!(m.get("count").unwrap(), 10);
    let clk = m.port("clk").unwrap();
    m.set("en", 1).unwrap();
    for _ in 0..32 {
        m.tick(clk).unwrap();
    }
    assert_eq!(m.get("count").unwrap(), 42);
    assert_eq!(m.cycles(), 1 + 10 + 5 + 32);

    // 72 bits: the +1 carries across the 64-bit boundary.
    m.set_wide("w72", &[0xffff_ffff, 0xffff_ffff, 0x7f])
        .unwrap();
    m.tick(clk).unwrap();
    assert_eq!(m.get_wide("w72_inc").unwrap(), vec![0, 0, 0x80]);
    // A u64 set zero-extends a wide port.
    m.set("w72", u64::MAX).unwrap();
    m.tick(clk).unwrap();
    assert_eq!(m.get_wide("w72_inc").unwrap(), vec![0, 0, 1]);
    assert_eq!(m.get_wide("w72").unwrap(), vec![u32::MAX, u32::MAX, 0]);

    // 512 bits: registered rotate left by 8.
    let d: Vec<u32> = (0..16u32).map(|i| 0x0101_0101 * (i + 1)).collect();
    m.set_wide("d512", &d).unwrap();
    m.tick(clk).unwrap();
    let q = m.get_wide("q512").unwrap();
    let expect: Vec<u32> = (0..16)
        .map(|i| (d[i] << 8) | (d[(i + 15) % 16] >> 24))
        .collect();
    assert_eq!(q, expect);
    let mut buf = [0u32; 16];
    m.get_wide_into("q512", &mut buf).unwrap();
    assert_eq!(buf.to_vec(), expect);
    // Narrow ports read as words too.
    assert_eq!(m.get_wide("count").unwrap().len(), 1);

    // Reset clears state.
    reset(&mut m);
    assert_eq!(m.get("count").unwrap(), 0);
    assert_eq!(m.get_wide("q512").unwrap(), vec![0; 16]);
    assert_eq!(m.get_wide("w72_inc").unwrap(), vec![0; 3]);
}

#[test]
fn port_errors_are_reported() {
    let lib = toy();
    let mut m = lib.instantiate().unwrap();
    let e = m.set("no_such_port", 1).unwrap_err();
    assert!(matches!(e, RtlError::UnknownPort { .. }), "{e}");
    assert!(e.to_string().contains("no_such_port") && e.to_string().contains("count"));
    assert!(matches!(m.get("nope"), Err(RtlError::UnknownPort { .. })));
    assert!(matches!(m.set("count", 1), Err(RtlError::NotWritable(_))));
    assert!(matches!(
        m.set("a", 256),
        Err(RtlError::ValueTooWide { .. })
    ));
    assert!(matches!(m.get("q512"), Err(RtlError::TooWide { .. })));
    assert!(matches!(
        m.set_wide("w72", &[0, 0, 0x100]),
        Err(RtlError::ValueTooWide { .. })
    ));
    assert!(matches!(
        m.set_wide("w72", &[0, 0, 0, 1]),
        Err(RtlError::ValueTooWide { .. })
    ));
    assert!(matches!(m.tick("sum"), Err(RtlError::NotWritable(_))));
    // A handle of another library is refused.
    let other = build(ModelBuilder::from_file(verilog("pipe512.v"), "pipe512"));
    let foreign = other.port("clk").unwrap();
    assert!(matches!(m.tick(foreign), Err(RtlError::ForeignPort)));
    // Tracing not compiled in.
    assert!(matches!(
        m.trace_to(scratch_dir("notrace").join("x.vcd")),
        Err(RtlError::TraceNotEnabled(_))
    ));
}

#[test]
fn vcd_trace_is_written() {
    let lib = build(ModelBuilder::from_file(verilog("toy.v"), "toy").trace(TraceFormat::Vcd));
    assert_eq!(lib.trace_format(), Some(TraceFormat::Vcd));
    let dir = scratch_dir("vcd");
    let path = dir.join("toy.vcd");
    {
        let mut m = lib.instantiate().unwrap();
        assert!(matches!(
            m.trace_to(dir.join("toy.fst")),
            Err(RtlError::Trace(_))
        ));
        m.trace_to(&path).unwrap();
        assert!(matches!(m.trace_to(&path), Err(RtlError::TraceAlreadyOpen)));
        reset(&mut m);
        m.set("en", 1).unwrap();
        m.set_wide("d512", &[0xa5a5_a5a5; 16]).unwrap();
        m.ticks("clk", 20).unwrap();
        assert_eq!(m.get("count").unwrap(), 20);
        assert_eq!(m.time(), 21 * 2 * rocenic_sim::rtl::DEFAULT_HALF_PERIOD);
    } // drop closes the trace
    let vcd = std::fs::read_to_string(&path).unwrap();
    assert!(vcd.len() > 1000, "VCD too small: {} bytes", vcd.len());
    assert!(vcd.contains("$enddefinitions"));
    for signal in ["clk", "count", "q512 [511:0]", "w72_inc [71:0]"] {
        assert!(vcd.contains(signal), "VCD lacks {signal}");
    }
    // Samples at both edges of 21 cycles.
    let stamps = vcd.lines().filter(|l| l.starts_with('#')).count();
    assert!(stamps >= 42, "only {stamps} time stamps");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn fst_trace_is_written() {
    let lib = build(ModelBuilder::from_file(verilog("toy.v"), "toy").trace(TraceFormat::Fst));
    let dir = scratch_dir("fst");
    let path = dir.join("toy.fst");
    {
        let mut m = lib.instantiate().unwrap();
        m.trace_to(&path).unwrap();
        reset(&mut m);
        m.set("en", 1).unwrap();
        m.ticks("clk", 50).unwrap();
    }
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 100, "FST too small: {len} bytes");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn cache_hits_and_rebuilds_on_change() {
    // Same inputs twice: the second build is a cache hit and fast.
    let first = toy();
    let t = Instant::now();
    let second = toy();
    let cached_time = t.elapsed();
    assert!(second.report().cached, "second build was not cached");
    assert!(
        cached_time.as_secs_f64() < 1.0,
        "cached build took {cached_time:?}"
    );
    assert_eq!(first.dir(), second.dir());
    // A string source with the same text and top is the same model.
    let from_text = build(ModelBuilder::from_string(toy_text(), "toy"));
    assert!(from_text.report().cached);
    println!(
        "toy: first build in this run {:?} (cached: {}), cached build {cached_time:?}",
        first.report().total,
        first.report().cached
    );

    // A Verilog change (STEP 1 -> 3, plus a per-run comment so it really is new) is
    // rebuilt; two threads asking at once build it once (the other waits on the lock).
    let changed = toy_text().replace("32'd1\n", "32'd3\n") + &format!("// {}\n", nonce());
    assert!(changed.contains("STEP = 32'd3"));
    let barrier = Barrier::new(2);
    let libs: Vec<VerilatedLib> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    build(ModelBuilder::from_string(changed.clone(), "toy"))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let built: Vec<bool> = libs.iter().map(|l| !l.report().cached).collect();
    assert_eq!(
        built.iter().filter(|b| **b).count(),
        1,
        "exactly one thread builds: {built:?}"
    );
    assert_eq!(libs[0].dir(), libs[1].dir());
    assert_ne!(libs[0].dir(), first.dir());
    let r = libs.iter().find(|l| !l.report().cached).unwrap().report();
    println!(
        "toy changed: rebuilt in {:?} (verilate {:?}, compile {:?}, runtime built: {})",
        r.total, r.verilate, r.compile, r.runtime_built
    );
    for lib in &libs {
        let mut m = lib.instantiate().unwrap();
        reset(&mut m);
        m.set("en", 1).unwrap();
        m.ticks("clk", 4).unwrap();
        assert_eq!(m.get("count").unwrap(), 12, "STEP = 3 in the rebuilt model");
    }
    // A flag change is a different model too.
    let flagged = build(ModelBuilder::from_file(verilog("toy.v"), "toy").verilator_arg("-GSTEP=5"));
    assert_ne!(flagged.dir(), first.dir());
    let mut m = flagged.instantiate().unwrap();
    reset(&mut m);
    m.set("en", 1).unwrap();
    m.tick("clk").unwrap();
    assert_eq!(m.get("count").unwrap(), 5);

    // The per-run model must not pile up in the cache.
    let dir = libs[0].dir().to_path_buf();
    drop(libs);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn two_models_run_on_two_threads_at_once() {
    let lib = toy();
    let barrier = Barrier::new(2);
    let counts: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = [1u64, 2]
            .into_iter()
            .map(|k| {
                // Instantiated here, moved to the thread: models are Send.
                let mut m = lib.instantiate().unwrap();
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    reset(&mut m);
                    let clk = m.port("clk").unwrap();
                    let en = m.port("en").unwrap();
                    for cycle in 0..200_000u64 {
                        // Thread k enables the counter every k-th cycle.
                        m.set(en, u64::from(cycle % k == 0)).unwrap();
                        m.set_wide("d512", &[cycle as u32; 16]).unwrap();
                        m.tick(clk).unwrap();
                        if cycle % 50_000 == 0 {
                            let q = m.get_wide("q512").unwrap();
                            let c = cycle as u32;
                            assert_eq!(q[0], c.rotate_left(8));
                        }
                    }
                    m.get("count").unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(counts, vec![200_000, 100_000]);
}

#[test]
fn verilog_errors_show_verilator_diagnostics() {
    let e = ModelBuilder::from_string(
        "module broken(input wire a, output wire y);\n  assign y = a +;\nendmodule\n",
        "broken",
    )
    .build()
    .unwrap_err();
    match &e {
        RtlError::Verilate { top, stderr } => {
            assert_eq!(top, "broken");
            assert!(stderr.contains("syntax error"), "{stderr}");
        }
        other => panic!("expected a Verilate error, got {other}"),
    }
    // A missing top module.
    let e = ModelBuilder::from_file(verilog("toy.v"), "not_there")
        .build()
        .unwrap_err();
    assert!(matches!(e, RtlError::Verilate { .. }), "{e}");
    // Bad names never reach Verilator.
    let e = ModelBuilder::from_file(verilog("toy.v"), "toy")
        .name("bad-name")
        .build()
        .unwrap_err();
    assert!(matches!(e, RtlError::InvalidName { .. }), "{e}");
}

#[test]
fn missing_tools_say_how_to_install_them() {
    let e = ModelBuilder::from_file(verilog("toy.v"), "toy")
        .verilator("/nonexistent/verilator")
        .build()
        .unwrap_err();
    assert!(matches!(e, RtlError::ToolMissing { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("scripts/install-deps.sh rtl"), "{msg}");
    assert!(msg.contains("apt-get install verilator g++"), "{msg}");
    let e = ModelBuilder::from_file(verilog("toy.v"), "toy")
        .cxx("/nonexistent/g++")
        .build()
        .unwrap_err();
    assert!(matches!(e, RtlError::ToolMissing { .. }), "{e}");
}

#[test]
fn fatal_finish_and_display_do_not_kill_the_process() {
    let lib = build(ModelBuilder::from_string(
        "module asserts(input wire clk, input wire boom, input wire done);\n\
         always @(posedge clk) begin\n\
           if (boom) $fatal(1, \"boom asserted\");\n\
           if (done) begin $display(\"finishing\"); $finish; end\n\
         end\n\
         endmodule\n",
        "asserts",
    ));
    let mut m = lib.instantiate().unwrap();
    m.set_echo(false);
    m.ticks("clk", 3).unwrap();
    assert_eq!(m.take_output(), "");
    m.set("done", 1).unwrap();
    m.tick("clk").unwrap();
    assert!(m.finished());
    m.tick("clk").unwrap(); // a second $finish does not exit the process either
    assert_eq!(m.take_output(), "finishing\nfinishing\n");
    m.set("done", 0).unwrap();
    m.set("boom", 1).unwrap();
    let e = m.tick("clk").unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, RtlError::Fatal(_)), "{msg}");
    // The location of the $fatal (the text's label, thanks to `line) and its message.
    assert!(msg.contains("asserts.v:3"), "{msg}");
    assert!(msg.contains("boom asserted"), "{msg}");
    assert!(matches!(m.eval(), Err(RtlError::Fatal(_))));
    // Other instances are unaffected.
    let mut other = lib.instantiate().unwrap();
    other.set_echo(false);
    other.ticks("clk", 2).unwrap();
    assert!(!other.finished());
}

/// Reference model of tests/rtl/pipe512.v.
fn pipe_ref(mut d: [u32; 16]) -> [u32; 16] {
    for k in 0..8u32 {
        let mut r = [0u32; 16];
        for i in 0..16 {
            r[i] = (d[i] << 1) | (d[(i + 15) % 16] >> 31);
        }
        let key = 0x9E37_79B9u32.wrapping_mul(k + 1);
        for w in r.iter_mut() {
            *w = (*w ^ key).wrapping_add(k + 1);
        }
        d = r;
    }
    d
}

#[test]
fn pipeline_512_speed() {
    let t = Instant::now();
    let lib = build(ModelBuilder::from_file(verilog("pipe512.v"), "pipe512"));
    let build_time = t.elapsed();
    let mut m = lib.instantiate().unwrap();
    let clk = m.port("clk").unwrap();
    let in_valid = m.port("in_valid").unwrap();
    let in_data = m.port("in_data").unwrap();
    let out_valid = m.port("out_valid").unwrap();
    let out_data = m.port("out_data").unwrap();
    reset(&mut m);

    // Correctness against the reference, with the 8-cycle latency.
    let inputs: Vec<[u32; 16]> = (0..64u32)
        .map(|n| std::array::from_fn(|i| n.wrapping_mul(0x0100_0193) ^ (i as u32 * 0x1111_1111)))
        .collect();
    let mut out = [0u32; 16];
    let mut seen = 0;
    for n in 0..inputs.len() + 8 {
        if let Some(d) = inputs.get(n) {
            m.set(in_valid, 1).unwrap();
            m.set_wide(in_data, d).unwrap();
        } else {
            m.set(in_valid, 0).unwrap();
        }
        m.tick(clk).unwrap();
        if m.get(out_valid).unwrap() == 1 {
            m.get_wide_into(out_data, &mut out).unwrap();
            assert_eq!(out, pipe_ref(inputs[seen]), "output {seen}");
            seen += 1;
        }
    }
    assert_eq!(seen, inputs.len());

    // Speed: a 512-bit word in and out every cycle, through the safe API.
    let cycles = 500_000u64;
    let mut data = [0u32; 16];
    m.set(in_valid, 1).unwrap();
    let t = Instant::now();
    for c in 0..cycles {
        data[0] = c as u32;
        m.set_wide(in_data, &data).unwrap();
        m.tick(clk).unwrap();
        m.get_wide_into(out_data, &mut out).unwrap();
    }
    let io_rate = cycles as f64 / t.elapsed().as_secs_f64();
    std::hint::black_box(out);
    // Clock only (ticks in one call).
    let t = Instant::now();
    m.ticks(clk, cycles).unwrap();
    let clock_rate = cycles as f64 / t.elapsed().as_secs_f64();
    println!(
        "pipe512: build {build_time:?} (cached: {}); {:.2} M cycles/s with 512-bit I/O per \
         cycle, {:.2} M cycles/s clock only",
        lib.report().cached,
        io_rate / 1e6,
        clock_rate / 1e6
    );
    // A floor far below the expected millions, to catch gross regressions only.
    assert!(io_rate > 20_000.0, "{io_rate} cycles/s");
}
