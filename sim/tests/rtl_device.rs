//! Tests of `rocenic_sim::rtl_device::RtlDevice` in a `World`, against the hand-written
//! contract design `tests/rtl/contract_top.v` (its register map is in its header). They
//! need `verilator` (5.x) and `g++` and FAIL when they are missing (install with
//! `scripts/install-deps.sh rtl`), as the other RTL tests do.
//!
//! Speed figures: `cargo test -p rocenic-sim --release --test rtl_device -- --nocapture`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use rocenic_sim::rtl::{ModelBuilder, TraceFormat, VerilatedLib};
use rocenic_sim::rtl_device::{
    RtlDevice, RtlDeviceConfig, RtlDeviceError, TxReady, DEAD_READ, TOP_PORTS,
};
use rocenic_sim::WorldConfig;
use rocenic_sim::{read_pcap, DmaConfig, NodeConfig, NodeId, SharedBuffer, TapPoint, World};

mod reg {
    pub const SCRATCH0: u32 = 0x00;
    pub const SCRATCH1: u32 = 0x04;
    pub const SRC_LO: u32 = 0x08;
    pub const DST_LO: u32 = 0x10;
    pub const LEN: u32 = 0x18;
    pub const GO: u32 = 0x1C;
    pub const COUNT: u32 = 0x20;
    pub const RESP_STALL: u32 = 0x24;
    pub const HOLD: u32 = 0x28;
    pub const FATAL: u32 = 0x2C;
    pub const STATUS: u32 = 0x40;
    pub const LAT_FIRST: u32 = 0x44;
    pub const SPAN: u32 = 0x48;
    pub const MAX_OUTST: u32 = 0x4C;
    pub const TAG_ERRS: u32 = 0x54;
    pub const RX_FRAMES: u32 = 0x58;
    pub const TX_FRAMES: u32 = 0x5C;
    pub const WR_STATUS: u32 = 0x60;
    pub const CYCLE: u32 = 0x64;
    pub const OVERFLOWS: u32 = 0x68;
    pub const RD_RESPS: u32 = 0x6C;
    pub const NEVER: u32 = 0x70;
    pub const SLOW: u32 = 0x74;
}

const GO_COPY: u32 = 1;
const GO_BURST: u32 = 2;

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtl/contract_top.v")
}

fn build(b: ModelBuilder) -> VerilatedLib {
    match b.build() {
        Ok(lib) => lib,
        Err(e) => panic!("building a Verilated model failed: {e}"),
    }
}

/// The contract design, untraced (built once per test process; cached across runs).
fn lib() -> &'static VerilatedLib {
    static LIB: OnceLock<VerilatedLib> = OnceLock::new();
    LIB.get_or_init(|| build(ModelBuilder::from_file(source(), "top").name("contract_top")))
}

fn world_with(cfg: RtlDeviceConfig) -> (World, NodeId) {
    let node = NodeConfig {
        dma: cfg.dma,
        ..NodeConfig::default()
    };
    let mut w = World::new(WorldConfig {
        node,
        ..WorldConfig::default()
    })
    .unwrap();
    let dev = RtlDevice::new(lib(), cfg).unwrap();
    let n = w.add_node(dev);
    (w, n)
}

fn dev(w: &World, n: NodeId) -> &RtlDevice {
    w.device_as::<RtlDevice>(n).unwrap()
}

fn set64(w: &mut World, n: NodeId, lo: u32, v: u64) {
    w.bar_write(n, lo, v as u32);
    w.bar_write(n, lo + 4, (v >> 32) as u32);
}

/// Runs until the design's DMA engine is idle (STATUS bit 0 clear), in steps of 50 cycles.
fn run_idle(w: &mut World, n: NodeId, max: u64) -> u32 {
    let start = w.now();
    loop {
        w.advance(50);
        let st = w.bar_read(n, reg::STATUS);
        if st & 1 == 0 {
            return st;
        }
        assert!(
            w.now() - start < max,
            "DMA engine still busy after {max} cycles"
        );
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

#[test]
fn contract_design_has_exactly_the_contract_ports() {
    assert_eq!(lib().ports().len(), TOP_PORTS.len());
}

#[test]
fn bar_writes_are_posted_and_reads_see_them_in_order() {
    let (mut w, n) = world_with(RtlDeviceConfig::default());
    // Several posted writes, some to the same register: the read returns the last one.
    for i in 0..10u32 {
        w.bar_write(n, reg::SCRATCH0, 0x1000 + i);
        w.bar_write(n, reg::SCRATCH1, 0x2000 + i);
    }
    let before = w.now();
    assert_eq!(w.bar_read(n, reg::SCRATCH0), 0x1009);
    assert_eq!(w.bar_read(n, reg::SCRATCH1), 0x2009);
    // bar_read clocks the model but is not world time.
    assert_eq!(w.now(), before);
    let s = dev(&w, n).stats();
    assert!(s.bar_read_cycles >= 20, "{s:?}"); // 20 writes, reg_ready low 1 cycle in 4
    assert_eq!(s.world_cycles, 0);
    assert_eq!(s.bar_writes, 20);
    assert_eq!(s.bar_reads, 2);
    // Interleaved with world time and an unknown register.
    w.bar_write(n, reg::SCRATCH0, 0xdead_beef);
    w.advance(10);
    assert_eq!(w.bar_read(n, reg::SCRATCH0), 0xdead_beef);
    assert_eq!(w.bar_read(n, 0x100), 0xBAD0_0100);
    // Outside the 128 KiB BAR: never reaches the engine.
    w.bar_write(n, 0x2_0000, 1);
    assert_eq!(w.bar_read(n, 0x2_0004), DEAD_READ);
    let errs = w.device_as_mut::<RtlDevice>(n).unwrap().take_errors();
    assert!(
        matches!(
            errs.as_slice(),
            [
                RtlDeviceError::BadOffset {
                    offset: 0x2_0000,
                    write: true
                },
                RtlDeviceError::BadOffset {
                    offset: 0x2_0004,
                    write: false
                }
            ]
        ),
        "{errs:?}"
    );
    // The design counts its own cycles: reset is not counted (held in reset), world and
    // bar_read cycles are.
    let cyc = w.bar_read(n, reg::CYCLE) as u64;
    let s = dev(&w, n).stats();
    assert_eq!(s.world_cycles, 10);
    assert!(
        cyc > 10 && cyc <= s.world_cycles + s.bar_read_cycles,
        "{cyc} {s:?}"
    );
    assert!(dev(&w, n).errors().is_empty());
}

#[test]
fn slow_read_is_waited_for_and_a_dead_read_times_out() {
    let cfg = RtlDeviceConfig {
        bar_read_timeout_cycles: 500,
        ..RtlDeviceConfig::default()
    };
    let (mut w, n) = world_with(cfg);
    assert_eq!(w.bar_read(n, reg::SLOW), 0x5105_5105);
    assert!(dev(&w, n).errors().is_empty());

    let cycles_before = dev(&w, n).cycles();
    assert_eq!(w.bar_read(n, reg::NEVER), DEAD_READ);
    let d = dev(&w, n);
    assert!(d.cycles() - cycles_before <= 500, "bounded wait");
    assert!(
        matches!(
            d.errors(),
            [RtlDeviceError::ReadTimeout {
                offset: 0x70,
                cycles: 500
            }]
        ),
        "{:?}",
        d.errors()
    );
    // The device still works afterwards.
    w.bar_write(n, reg::SCRATCH1, 77);
    assert_eq!(w.bar_read(n, reg::SCRATCH1), 77);

    // reg_ready held low for longer than the bound: the writes cannot drain.
    w.bar_write(n, reg::HOLD, 100_000);
    w.advance(5);
    w.bar_write(n, reg::SCRATCH0, 5);
    assert_eq!(w.bar_read(n, reg::SCRATCH0), DEAD_READ);
    let errs = w.device_as_mut::<RtlDevice>(n).unwrap().take_errors();
    assert!(
        matches!(
            errs.as_slice(),
            [
                RtlDeviceError::ReadTimeout { .. },
                RtlDeviceError::WriteDrainTimeout {
                    offset: 0,
                    pending: 1,
                    ..
                }
            ]
        ),
        "{errs:?}"
    );
    assert!(
        errs[1].to_string().contains("0xffffffff") || errs[1].to_string().contains("0xFFFF_FFFF")
    );
    w.advance(100_000);
    assert_eq!(
        w.bar_read(n, reg::SCRATCH0),
        5,
        "queued write delivered later"
    );
}

fn copy(w: &mut World, n: NodeId, src: u64, dst: u64, len: usize) -> u32 {
    set64(w, n, reg::SRC_LO, src);
    set64(w, n, reg::DST_LO, dst);
    w.bar_write(n, reg::LEN, len as u32);
    w.bar_write(n, reg::GO, GO_COPY);
    run_idle(w, n, 100_000)
}

#[test]
fn dma_copy_through_the_iommu_with_byte_enables_and_backpressure() {
    let (mut w, n) = world_with(RtlDeviceConfig::default());
    let src = w.host_mut(n).alloc_dma(8192).unwrap();
    let dst = w.host_mut(n).alloc_dma(8192 + 64).unwrap();
    for (k, &len) in [1usize, 63, 64, 65, 200, 4096, 8192].iter().enumerate() {
        for stall in [0u32, 1] {
            w.bar_write(n, reg::RESP_STALL, stall);
            let data = pattern(len, k as u8 * 2 + stall as u8);
            w.host_mut(n).write(src.va, &data).unwrap();
            w.host_mut(n).write(dst.va, &vec![0xEE; 8192 + 64]).unwrap();
            let st = copy(&mut w, n, src.iova, dst.iova, len);
            assert_eq!(st, 0, "len {len}: no error bits");
            let got = w.host(n).read_vec(dst.va, 8192 + 64).unwrap();
            assert_eq!(&got[..len], &data[..], "len {len} stall {stall}");
            assert!(
                got[len..].iter().all(|&b| b == 0xEE),
                "len {len}: bytes past the end written (keep not honoured)"
            );
        }
    }
    assert_eq!(w.bar_read(n, reg::TAG_ERRS), 0);
    assert_eq!(w.bar_read(n, reg::WR_STATUS), 14);
    assert_eq!(w.host(n).fault_count(), 0);
    let s = dev(&w, n).stats();
    assert_eq!(
        (s.dma_reads, s.dma_writes, s.dma_write_statuses),
        (14, 14, 14)
    );
    assert_eq!(
        s.dma_write_bytes,
        2 * (1 + 63 + 64 + 65 + 200 + 4096 + 8192)
    );
    assert_eq!(w.dma_stats(n).bytes_read, s.dma_read_bytes);
    assert!(dev(&w, n).errors().is_empty(), "{:?}", dev(&w, n).errors());
}

#[test]
fn unmapped_iova_gives_an_error_beat_and_writes_nothing() {
    let (mut w, n) = world_with(RtlDeviceConfig::default());
    let src = w.host_mut(n).alloc_dma(4096).unwrap();
    let dst = w.host_mut(n).alloc_dma(4096).unwrap();
    w.host_mut(n).write(dst.va, &[0x5A; 4096]).unwrap();
    // Read past the end of the mapping: refused, error beat, the copy writes nothing.
    let st = copy(&mut w, n, src.iova + 4000, dst.iova, 200);
    assert_eq!(st, 0b010, "read error seen, no write");
    assert_eq!(w.bar_read(n, reg::RD_RESPS), 1);
    assert_eq!(w.bar_read(n, reg::WR_STATUS), 0);
    assert!(w
        .host(n)
        .read_vec(dst.va, 4096)
        .unwrap()
        .iter()
        .all(|&b| b == 0x5A));
    assert_eq!(w.host(n).fault_count(), 1);
    let s = dev(&w, n).stats();
    assert_eq!((s.dma_read_errors, s.dma_read_beats), (1, 1));
    // The error beat still comes no earlier than the latency.
    assert!(w.bar_read(n, reg::LAT_FIRST) >= 250);

    // Write to an unmapped IOVA: error status, host records the fault.
    w.host_mut(n).write(src.va, &pattern(128, 9)).unwrap();
    let st = copy(&mut w, n, src.iova, 0x7_0000_0000, 128);
    assert_eq!(st, 0b100, "write error status");
    assert_eq!(w.bar_read(n, reg::WR_STATUS), 1);
    assert_eq!(w.host(n).fault_count(), 2);
    assert_eq!(dev(&w, n).stats().dma_write_errors, 1);
    assert!(dev(&w, n).errors().is_empty());
}

#[test]
fn dma_accepted_inside_bar_read_is_served_at_the_next_tick() {
    let (mut w, n) = world_with(RtlDeviceConfig::default());
    let src = w.host_mut(n).alloc_dma(64).unwrap();
    let dst = w.host_mut(n).alloc_dma(64).unwrap();
    let data = pattern(64, 42);
    w.host_mut(n).write(src.va, &data).unwrap();
    set64(&mut w, n, reg::SRC_LO, src.iova);
    set64(&mut w, n, reg::DST_LO, dst.iova);
    w.bar_write(n, reg::LEN, 64);
    w.bar_write(n, reg::GO, GO_COPY);
    // The GO write is accepted inside this read, and the engine's read request follows
    // while the world's clock stands still.
    assert_eq!(w.bar_read(n, reg::STATUS) & 1, 1);
    assert_eq!(dev(&w, n).stats().dma_deferred, 1);
    assert_eq!(w.dma_stats(n).reads, 0, "no host access without a DmaPort");
    let t0 = w.now();
    w.run_until(|w| dev(w, n).stats().dma_read_beats == 1, 10_000)
        .unwrap();
    // Timed from the tick that served it: the full latency in world cycles.
    assert!(w.now() - t0 > 250, "{}", w.now() - t0);
    // Read right after the response: the write request and its beat go in inside
    // bar_read, the host write happens at the next tick.
    w.bar_read(n, reg::STATUS);
    let s = dev(&w, n).stats();
    assert_eq!((s.dma_deferred, s.dma_writes), (2, 1), "{s:?}");
    assert_eq!(w.host(n).read_vec(dst.va, 64).unwrap(), vec![0; 64]);
    w.advance(5);
    assert_eq!(w.host(n).read_vec(dst.va, 64).unwrap(), data);
    assert_eq!(dev(&w, n).stats().dma_write_statuses, 1);
    assert_eq!(w.bar_read(n, reg::STATUS), 0);
}

#[test]
fn contract_breaches_are_recorded_and_answered_with_an_error_beat() {
    let (mut w, n) = world_with(RtlDeviceConfig::default());
    let src = w.host_mut(n).alloc_dma(16384).unwrap();
    for (k, len) in [0usize, 9000].into_iter().enumerate() {
        set64(&mut w, n, reg::SRC_LO, src.iova);
        w.bar_write(n, reg::LEN, len as u32);
        w.bar_write(n, reg::COUNT, 1);
        w.bar_write(n, reg::GO, GO_BURST);
        w.run_until(|w| dev(w, n).stats().dma_read_beats == k as u64 + 1, 10_000)
            .unwrap();
        w.advance(2);
        assert_eq!(w.bar_read(n, reg::STATUS), 0b010, "len {len}: error beat");
    }
    let errs = dev(&w, n).errors();
    assert_eq!(errs.len(), 2, "{errs:?}");
    for (e, len) in errs.iter().zip(["of 0 bytes", "of 9000 bytes"]) {
        assert!(matches!(e, RtlDeviceError::Protocol { .. }), "{e:?}");
        assert!(e.to_string().contains(len), "{e}");
    }
    assert_eq!(w.dma_stats(n).reads, 0, "nothing read for a bad request");
}

#[test]
fn a_fatal_error_stops_the_device_without_stopping_the_world() {
    let (mut w, n) = world_with(RtlDeviceConfig::default());
    w.bar_write(n, reg::FATAL, 1);
    w.advance(10);
    let d = dev(&w, n);
    assert!(d.is_dead());
    assert!(
        matches!(d.errors(), [RtlDeviceError::Rtl(e)] if e.to_string().contains("fatal requested")),
        "{:?}",
        d.errors()
    );
    assert_eq!(w.device(n).next_event(w.now()), None);
    assert_eq!(w.bar_read(n, reg::SCRATCH0), DEAD_READ);
    assert!(matches!(
        dev(&w, n).errors().last(),
        Some(RtlDeviceError::Dead { offset: 0 })
    ));
    w.advance(100); // ticks of a dead device are no-ops
    assert_eq!(w.now(), 110);
}

fn burst(w: &mut World, n: NodeId, src: u64, len: usize, count: u32) -> (u32, u32, u32) {
    set64(w, n, reg::SRC_LO, src);
    w.bar_write(n, reg::LEN, len as u32);
    w.bar_write(n, reg::COUNT, count);
    w.bar_write(n, reg::GO, GO_BURST);
    // Waits on the adapter's counters, not by polling STATUS: the cycles a bar_read
    // clocks are not world time but the design counts them.
    let want = dev(w, n).stats().dma_read_beats + u64::from(count) * len.div_ceil(64) as u64;
    w.run_until(|w| dev(w, n).stats().dma_read_beats == want, 200_000)
        .unwrap();
    w.advance(2);
    assert_eq!(w.bar_read(n, reg::STATUS), 0);
    assert_eq!(
        w.bar_read(n, reg::TAG_ERRS),
        0,
        "responses in request order"
    );
    (
        w.bar_read(n, reg::LAT_FIRST),
        w.bar_read(n, reg::SPAN),
        w.bar_read(n, reg::MAX_OUTST),
    )
}

#[test]
fn read_latency_bandwidth_and_outstanding_reads() {
    // Defaults: 250 cycles, 64 B/cycle, 256 outstanding.
    let (mut w, n) = world_with(RtlDeviceConfig::default());
    let src = w.host_mut(n).alloc_dma(8 * 4096).unwrap();
    let (lat, span, outst) = burst(&mut w, n, src.iova, 4096, 8);
    println!(
        "default: first beat after {lat} cycles, 512 beats over {span} cycles, {outst} outstanding"
    );
    assert!(lat >= 250, "latency {lat}");
    assert_eq!(lat, 251, "one beat of transfer after the round trip");
    assert_eq!(
        span, 511,
        "one beat per cycle, no bubbles between responses"
    );
    assert_eq!(outst, 8, "all eight reads in flight at once");
    assert_eq!(dev(&w, n).stats().min_read_latency, 251);

    // Many small reads: the 1 us round trip is hidden by 200 reads in flight.
    let (lat, span, outst) = burst(&mut w, n, src.iova, 64, 200);
    assert_eq!((lat, span, outst), (251, 199, 200));

    // Configured: 100 cycles, 32 B/cycle, at most 3 outstanding.
    let cfg = RtlDeviceConfig {
        dma: DmaConfig {
            read_latency_cycles: 100,
            write_latency_cycles: 0,
            bytes_per_cycle: 32,
        },
        max_outstanding_reads: 3,
        ..RtlDeviceConfig::default()
    };
    let (mut w, n) = world_with(cfg);
    let src = w.host_mut(n).alloc_dma(8 * 4096).unwrap();
    let (lat, span, outst) = burst(&mut w, n, src.iova, 4096, 8);
    println!("100 cyc, 32 B/cyc, 3 outstanding: first beat after {lat}, span {span}, {outst} outstanding");
    assert!(lat >= 100, "latency {lat}");
    assert_eq!(outst, 3);
    // 512 beats at 2 cycles each; the 3-read limit costs a round trip now and then.
    assert!(span >= 2 * 511, "bandwidth exceeded: span {span}");
    assert!(dev(&w, n).stats().max_reads_outstanding <= 3);

    // Enough outstanding reads hide the latency at 32 B/cycle too.
    let cfg = RtlDeviceConfig {
        dma: DmaConfig {
            read_latency_cycles: 100,
            write_latency_cycles: 0,
            bytes_per_cycle: 32,
        },
        ..RtlDeviceConfig::default()
    };
    let (mut w, n) = world_with(cfg);
    let src = w.host_mut(n).alloc_dma(8 * 4096).unwrap();
    let (lat, span, _) = burst(&mut w, n, src.iova, 4096, 8);
    assert_eq!((lat, span), (102, 2 * 511));
}

#[test]
fn write_bandwidth_is_respected() {
    let cfg = RtlDeviceConfig {
        dma: DmaConfig {
            read_latency_cycles: 10,
            write_latency_cycles: 0,
            bytes_per_cycle: 16,
        },
        ..RtlDeviceConfig::default()
    };
    let (mut w, n) = world_with(cfg);
    let src = w.host_mut(n).alloc_dma(4096).unwrap();
    let dst = w.host_mut(n).alloc_dma(4096).unwrap();
    let data = pattern(4096, 3);
    w.host_mut(n).write(src.va, &data).unwrap();
    set64(&mut w, n, reg::SRC_LO, src.iova);
    set64(&mut w, n, reg::DST_LO, dst.iova);
    w.bar_write(n, reg::LEN, 4096);
    w.bar_write(n, reg::GO, GO_COPY);
    let t0 = w.now();
    w.run_until(|w| dev(w, n).stats().dma_write_statuses == 1, 100_000)
        .unwrap();
    let took = w.now() - t0;
    // 4096 B read at 16 B/cycle (256) + write at 16 B/cycle (256).
    assert!(took >= 512, "copy took {took} cycles");
    assert!(took < 600, "copy took {took} cycles");
    assert_eq!(w.host(n).read_vec(dst.va, 4096).unwrap(), data);
}

fn loopback(cfg: RtlDeviceConfig, frames: &[Vec<u8>]) -> (World, NodeId, Vec<(u64, Vec<u8>)>) {
    let (mut w, n) = world_with(cfg);
    let buf = SharedBuffer::default();
    w.add_tap(TapPoint::Sent, Some(n), buf.clone()).unwrap();
    for f in frames {
        w.inject_rx(n, f.clone());
    }
    let want = frames.len() as u64;
    w.run_until(|w| dev(w, n).stats().tx_frames == want, 1_000_000)
        .unwrap();
    w.close_taps().unwrap();
    let out = w.take_outbox(n);
    let pcap = read_pcap(&buf.contents()[..]).unwrap();
    assert_eq!(pcap, out, "the tap saw what the device sent");
    (w, n, out)
}

#[test]
fn frames_loop_back_bit_for_bit_and_back_to_back() {
    // 16 minimum-size frames, then a 4 KiB frame, then odd sizes.
    let mut frames: Vec<Vec<u8>> = (0..16).map(|i| pattern(60, i)).collect();
    frames.push(pattern(4096, 99));
    frames.extend(
        [1usize, 63, 64, 65, 127, 1500, 4156]
            .iter()
            .map(|&l| pattern(l, l as u8)),
    );
    let (mut w, n, out) = loopback(RtlDeviceConfig::default(), &frames);
    let got: Vec<&Vec<u8>> = out.iter().map(|(_, f)| f).collect();
    assert_eq!(got, frames.iter().collect::<Vec<_>>());
    // One-beat frames come back one per cycle: RX drove them back to back, TX had no gap.
    let cycles: Vec<u64> = out[..16].iter().map(|(c, _)| *c).collect();
    for pair in cycles.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "{cycles:?}");
    }
    // The 4 KiB frame is 64 beats, right behind them.
    assert_eq!(out[16].0, cycles[15] + 64);
    assert_eq!(w.bar_read(n, reg::RX_FRAMES), frames.len() as u32);
    assert_eq!(w.bar_read(n, reg::TX_FRAMES), frames.len() as u32);
    assert_eq!(w.bar_read(n, reg::OVERFLOWS), 0);
    let s = dev(&w, n).stats();
    let beats: u64 = frames.iter().map(|f| f.len().div_ceil(64) as u64).sum();
    assert_eq!((s.rx_beats, s.tx_beats), (beats, beats));
    assert!(dev(&w, n).errors().is_empty());
}

#[test]
fn two_rtl_devices_share_the_worlds_links_faults_and_taps() {
    let mut w = World::new(WorldConfig::default()).unwrap();
    let a = w.add_node(RtlDevice::new(lib(), RtlDeviceConfig::default()).unwrap());
    let b = w.add_node(RtlDevice::new(lib(), RtlDeviceConfig::default()).unwrap());
    // a -> b duplicates every frame; b -> a loses every frame, so the echo stops there.
    let dup = rocenic_sim::FaultConfig {
        duplicate: 1.0,
        seed: 1,
        ..Default::default()
    };
    let loss = rocenic_sim::FaultConfig {
        loss: 1.0,
        seed: 2,
        ..Default::default()
    };
    let ab = rocenic_sim::LinkConfig::with_faults(dup);
    let latency = ab.latency_cycles;
    w.connect(a, b, ab, rocenic_sim::LinkConfig::with_faults(loss))
        .unwrap();
    let buf = SharedBuffer::default();
    w.add_tap(TapPoint::Delivered, Some(b), buf.clone())
        .unwrap();
    let frame = pattern(1000, 7);
    w.inject_rx(a, frame.clone());
    w.advance(2_000);
    w.close_taps().unwrap();
    let at_b = read_pcap(&buf.contents()[..]).unwrap();
    assert_eq!(at_b.len(), 2, "sent once, duplicated by the link");
    assert!(at_b.iter().all(|(_, f)| *f == frame));
    // a sent its echo in its tick; the link adds its latency before b sees it.
    assert!(at_b[0].0 >= latency);
    let (sa, sb) = (dev(&w, a).stats(), dev(&w, b).stats());
    assert_eq!((sa.rx_frames, sa.tx_frames), (1, 1));
    assert_eq!((sb.rx_frames, sb.tx_frames), (2, 2));
    assert_eq!(w.link_stats(b).unwrap().lost, 2);
    assert_eq!(
        w.bar_read(a, reg::RX_FRAMES),
        1,
        "b's echoes never reached a"
    );
}

#[test]
fn the_pause_request_holds_frames_in_the_link_and_loses_none() {
    // 24 frames of 4 KiB (1560 beats) into a 256-beat loopback FIFO drained one beat in
    // four: without the pause, most would overflow.
    let frames: Vec<Vec<u8>> = (0..24).map(|i| pattern(4096 + i, i as u8)).collect();
    let cfg = RtlDeviceConfig {
        tx_ready: TxReady::Duty { on: 1, period: 4 },
        ..RtlDeviceConfig::default()
    };
    let (mut w, n, out) = loopback(cfg, &frames);
    let got: Vec<&Vec<u8>> = out.iter().map(|(_, f)| f).collect();
    assert_eq!(got, frames.iter().collect::<Vec<_>>());
    assert_eq!(w.bar_read(n, reg::OVERFLOWS), 0);
    let s = dev(&w, n).stats();
    assert!(
        s.rx_pause_cycles > 1000,
        "held {} cycles",
        s.rx_pause_cycles
    );
}

#[test]
fn tx_ready_throttle_slows_but_keeps_frames_intact() {
    let frames: Vec<Vec<u8>> = (0..8).map(|i| pattern(60 + 70 * i, i as u8)).collect();
    let cfg = RtlDeviceConfig {
        tx_ready: TxReady::Duty { on: 1, period: 3 },
        ..RtlDeviceConfig::default()
    };
    let (_w, _n, out) = loopback(cfg, &frames);
    let got: Vec<Vec<u8>> = out.iter().map(|(_, f)| f.clone()).collect();
    assert_eq!(got, frames);
    // One beat every 3 cycles at most.
    let beats: u64 = frames.iter().map(|f| f.len().div_ceil(64) as u64).sum();
    let span = out.last().unwrap().0 - out[0].0;
    assert!(span >= 3 * (beats - 1 - 1), "span {span} for {beats} beats");
}

#[test]
fn trace_file_is_written() {
    static TRACED: OnceLock<VerilatedLib> = OnceLock::new();
    let dir = std::env::temp_dir().join(format!("rocenic-rtl-device-{}", std::process::id()));
    let path = dir.join("wave.vcd");
    let cfg = RtlDeviceConfig {
        trace: Some(path.clone()),
        ..RtlDeviceConfig::default()
    };
    // As a `--trace FILE` flag would do it: the file's extension picks the build.
    assert_eq!(cfg.trace_format(), Some(TraceFormat::Vcd));
    let traced = TRACED.get_or_init(|| {
        build(
            ModelBuilder::from_file(source(), "top")
                .name("contract_top")
                .trace_opt(cfg.trace_format()),
        )
    });
    let mut w = World::new(WorldConfig::default()).unwrap();
    let n = w.add_node(RtlDevice::new(traced, cfg).unwrap());
    w.bar_write(n, reg::SCRATCH0, 0x1234_5678);
    w.advance(100);
    assert_eq!(w.bar_read(n, reg::SCRATCH0), 0x1234_5678);
    drop(w); // closes the trace
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("$enddefinitions"));
    assert!(text.contains("reg_valid") && text.contains("mac_rx_tdata"));
    // Sampled at both edges of every cycle: at least 2 x 100 time stamps.
    let stamps = text.lines().filter(|l| l.starts_with('#')).count();
    assert!(stamps >= 200, "{stamps} time stamps");
    std::fs::remove_dir_all(dir).unwrap();

    // Without tracing compiled in, asking for a trace is a clear error.
    let bad = RtlDevice::new(
        lib(),
        RtlDeviceConfig {
            trace: Some(path),
            ..RtlDeviceConfig::default()
        },
    )
    .unwrap_err();
    assert!(bad.to_string().contains("without tracing"), "{bad}");
}

#[test]
fn missing_or_wrong_ports_are_named() {
    let text = std::fs::read_to_string(source()).unwrap();
    // Drop mac_rx_tuser from the design.
    let cut = text
        .replace(
            "  input  wire         mac_rx_tvalid,\n  input  wire         mac_rx_tuser\n",
            "  input  wire         mac_rx_tvalid\n",
        )
        .replace("&& !mac_rx_tuser", "");
    assert_ne!(cut, text);
    let cut_lib = build(ModelBuilder::from_string(cut, "top").name("contract_top_no_tuser"));
    let e = RtlDevice::new(&cut_lib, RtlDeviceConfig::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            RtlDeviceError::MissingPort {
                port: "mac_rx_tuser",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        msg.contains("mac_rx_tuser") && msg.contains("docs/rtl-architecture.md"),
        "{msg}"
    );
    // Port checking works on plain lists too (wrong width).
    let mut ports = lib().ports().to_vec();
    ports
        .iter_mut()
        .find(|p| p.name == "reg_addr")
        .unwrap()
        .width = 16;
    let e = rocenic_sim::rtl_device::check_ports(&ports).unwrap_err();
    assert!(
        e.to_string().contains("reg_addr") && e.to_string().contains("17 bits"),
        "{e}"
    );
}

#[test]
fn config_is_validated() {
    for cfg in [
        RtlDeviceConfig {
            max_outstanding_reads: 0,
            ..RtlDeviceConfig::default()
        },
        RtlDeviceConfig {
            tx_ready: TxReady::Duty { on: 4, period: 3 },
            ..RtlDeviceConfig::default()
        },
        RtlDeviceConfig {
            dma: DmaConfig {
                bytes_per_cycle: 0,
                ..DmaConfig::default()
            },
            ..RtlDeviceConfig::default()
        },
    ] {
        assert!(matches!(
            RtlDevice::new(lib(), cfg),
            Err(RtlDeviceError::InvalidConfig(_))
        ));
    }
}

/// CPU time of this thread (ns), so figures survive a loaded machine.
fn thread_cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

/// Speed in M cycles per second of wall time and of this thread's CPU time.
fn rate(cycles: u64, f: impl FnOnce()) -> (f64, f64) {
    let (t, c) = (Instant::now(), thread_cpu_ns());
    f();
    let wall = cycles as f64 / t.elapsed().as_secs_f64() / 1e6;
    let cpu = cycles as f64 / ((thread_cpu_ns() - c).max(1) as f64 / 1e9) / 1e6;
    (wall, cpu)
}

/// Prints simulated cycles per second: the bare model, and RtlDevice in a World idle and
/// under full load. The asserts check the load was really applied.
#[test]
fn speed() {
    // The bare model, clocked by one call per 200k cycles, for comparison.
    let mut m = lib().instantiate().unwrap();
    let clock = m.port("clock").unwrap();
    m.set("reset", 1).unwrap();
    m.tick(clock).unwrap();
    m.set("reset", 0).unwrap();
    let bare = rate(200_000, || m.ticks(clock, 200_000).unwrap());

    let (mut w, n) = world_with(RtlDeviceConfig::default());
    let idle = rate(200_000, || w.advance(200_000));
    assert_eq!(dev(&w, n).stats().world_cycles, 200_000);

    // Loopback at line rate: 2000 back-to-back 1500-byte frames (24 beats each, RX and TX
    // busy every cycle) beside a DMA burst of 4 x 8 KiB reads.
    for i in 0..2000 {
        w.inject_rx(n, pattern(1500, i as u8));
    }
    let src = w.host_mut(n).alloc_dma(8192 * 4).unwrap();
    set64(&mut w, n, reg::SRC_LO, src.iova);
    w.bar_write(n, reg::LEN, 8192);
    w.bar_write(n, reg::COUNT, 4);
    w.bar_write(n, reg::GO, GO_BURST);
    let c0 = w.now();
    let (t, c) = (Instant::now(), thread_cpu_ns());
    w.run_until(|w| dev(w, n).stats().tx_frames == 2000, 1_000_000)
        .unwrap();
    let cycles = w.now() - c0;
    let busy = (
        cycles as f64 / t.elapsed().as_secs_f64() / 1e6,
        cycles as f64 / ((thread_cpu_ns() - c).max(1) as f64 / 1e9) / 1e6,
    );
    assert!(cycles >= 2000 * 24, "{cycles}");
    assert_eq!(dev(&w, n).stats().dma_read_beats, 4 * 128);
    println!(
        "contract_top, M cycles/s (wall / CPU): bare model ticks {:.2} / {:.2}; RtlDevice in a \
         World idle {:.2} / {:.2}; full-rate loopback + DMA {:.2} / {:.2}",
        bare.0, bare.1, idle.0, idle.1, busy.0, busy.1
    );
    assert_eq!(
        w.device(n).next_event(7),
        Some(8),
        "never skips: see the module docs"
    );
}
