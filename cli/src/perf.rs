//! `rocenic perf`: a perftest-like throughput run counted in simulated cycles.
//!
//! Host A is the requester on every QP: it keeps up to `--tx-depth` messages of `--size`
//! bytes in flight per QP until each QP has completed `--iters`; host B is the responder
//! (for `send` it keeps its receive queue full). The clock runs from the first post to the
//! last completion. Message `i` of a QP uses slot `i mod tx_depth` of that QP's buffers,
//! so after the run the destination slots must equal the source slots (for atomics, each
//! QP's counter must equal `iters` and each result slot the last value fetched into it).
//!
//! Besides throughput it reports how close the run came to what framing allows
//! ([`framing_limit`], `wire_efficiency`) and, on the simulated backends, the latency of
//! one more message sent on an idle QP after the run ([`Latency`]).

use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use serde::Serialize;

use rocenic_model::beats;
use rocenic_proto::wire::{pad_count, Opcode, ICRC_LEN, ROCE_HEADERS_LEN};

use crate::pattern::Pattern;
use crate::setup::{
    connected_pair, parse_backend, BackendKind, ConnParams, Endpoint, Testbed, TestbedOptions,
};
use rocenic_driver::verbs::{
    access, send_flags, Buffer, Context, Counter, Mr, Mtu, QpCap, RecvWr, SendWr, Wc, WcOpcode,
    WcStatus, WrOpcode,
};
use rocenic_driver::{AtomicWr, RdmaWr};

/// The operation measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PerfOp {
    /// RDMA WRITE.
    Write,
    /// RDMA READ.
    Read,
    /// SEND/RECV.
    Send,
    /// ATOMIC FETCH_AND_ADD of 1 on one 8-byte counter per QP.
    Atomic,
}

impl PerfOp {
    fn name(self) -> &'static str {
        match self {
            PerfOp::Write => "write",
            PerfOp::Read => "read",
            PerfOp::Send => "send",
            PerfOp::Atomic => "atomic",
        }
    }
}

/// Arguments of `rocenic perf`.
#[derive(Debug, Clone, Args)]
pub struct PerfArgs {
    /// What to measure.
    pub op: PerfOp,
    /// Device backend: "model", "rtl" (the Verilated engine, lossy links too; needs
    /// verilator and g++), or "vfio:<bdf-a>,<bdf-b>" (two boards cabled together).
    #[arg(long, default_value = "model")]
    pub backend: String,
    /// Message size in bytes (8 for atomics, whatever is given).
    #[arg(short, long, default_value_t = 65536)]
    pub size: u32,
    /// Messages per QP.
    #[arg(short = 'n', long, default_value_t = 1000)]
    pub iters: u64,
    /// Number of QPs (connections), all running at once.
    #[arg(short, long, default_value_t = 1)]
    pub qps: u32,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    #[arg(long, default_value_t = 4096)]
    pub mtu: u32,
    /// Probability that the link loses a frame (each direction).
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Messages in flight per QP.
    #[arg(long, default_value_t = 128)]
    pub tx_depth: u32,
    /// Seed of the data pattern, the initial PSNs and the link faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write every frame both NICs send to this pcap file.
    #[arg(long)]
    pub pcap: Option<std::path::PathBuf>,
    /// Write a waveform of node A's RTL to this file (.vcd or .fst); --backend rtl only.
    #[arg(long)]
    pub trace: Option<std::path::PathBuf>,
    /// Sweep message sizes as perftest's -a does: 2 B, 4 B, ... up to --max-size, one
    /// run (and one table row, or one JSON line) per size. Not for atomics.
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Largest size of the -a sweep, a power of two from 2 (perftest goes to 8 MiB; the
    /// default keeps a model-backend sweep to seconds).
    #[arg(long, default_value_t = DEFAULT_SWEEP_MAX)]
    pub max_size: u32,
    /// With -a: draw bandwidth and message rate against size into FILE.png or FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// Print JSON instead of a table: one object, or with -a one object per line per size.
    #[arg(long)]
    pub json: bool,
}

/// The default largest size of a `-a` sweep: 1 MiB.
pub const DEFAULT_SWEEP_MAX: u32 = 1 << 20;

/// The sizes a `-a` sweep runs: the powers of two from 2 to `max` (a power of two).
pub fn sweep_sizes(max: u32) -> anyhow::Result<Vec<u32>> {
    if max < 2 || !max.is_power_of_two() {
        bail!("--max-size {max}: the largest size of a sweep is a power of two, at least 2");
    }
    Ok((1..=max.trailing_zeros()).map(|k| 1 << k).collect())
}

impl PerfArgs {
    /// Defaults for `op`, as the command line has them.
    pub fn new(op: PerfOp) -> Self {
        PerfArgs {
            op,
            backend: "model".into(),
            size: 65536,
            iters: 1000,
            qps: 1,
            mtu: 4096,
            loss: 0.0,
            tx_depth: 128,
            seed: 1,
            pcap: None,
            trace: None,
            all: false,
            max_size: DEFAULT_SWEEP_MAX,
            plot: None,
            json: false,
        }
    }
}

/// The result of a run (the `--json` object).
#[derive(Debug, Clone, Serialize)]
pub struct PerfResult {
    pub backend: String,
    pub op: PerfOp,
    pub size: u32,
    pub iters: u64,
    pub qps: u32,
    pub mtu: u32,
    pub tx_depth: u32,
    pub loss: f64,
    pub messages: u64,
    pub payload_bytes: u64,
    pub cycles: u64,
    pub retransmissions: u64,
    pub verified: bool,
    pub payload_bytes_per_cycle: f64,
    /// `payload_bytes_per_cycle` over [`framing_limit`] (`null` for messages without
    /// payload).
    pub wire_efficiency: Option<f64>,
    pub messages_per_cycle: f64,
    pub gbps_at_250mhz: f64,
    /// One message on an idle QP after the run (`null` on a board, which has no
    /// simulated clock to read).
    pub latency_cycles: Option<Latency>,
    /// Simulated cycles per wall-clock second (noisy: compare only within one machine).
    pub sim_cycles_per_wall_second: f64,
    /// What did not verify, when `verified` is false.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The latency of one message, in cycles of the simulated clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// From the cycle the driver writes the SQ doorbell to the first beat of the first
    /// frame the requester's NIC sends.
    pub doorbell_to_first_tx_beat: u64,
    /// From the last beat of the last frame the requester's NIC receives before the
    /// completion (the ACK, the last READ response) to the cycle the CQE is in host
    /// memory. The last beat is counted as if the frame streamed in at line rate from
    /// the cycle the link delivered it.
    pub last_rx_beat_to_cqe: u64,
}

/// The most payload bytes per cycle the framing of one `size`-byte message of `op` at
/// path MTU `mtu` allows on the 64-byte MAC bus: the frames that carry its data (WRITE and
/// SEND requests, READ responses) back to back, each a whole number of beats with every
/// header, pad and the ICRC (as the model counts a frame's beats); for an atomic, its 8
/// bytes per the longer of its request and its ATOMIC ACKNOWLEDGE. `None` for a message
/// without payload.
pub fn framing_limit(op: PerfOp, size: u32, mtu: u32) -> Option<f64> {
    use Opcode::*;
    let frame_beats = |opcode: Opcode, payload: usize| {
        let ext: usize = opcode.ext_headers().iter().map(|h| h.wire_len()).sum();
        beats(ROCE_HEADERS_LEN + ext + payload + usize::from(pad_count(payload)) + ICRC_LEN)
    };
    let (only, first, middle, last) = match op {
        PerfOp::Atomic => {
            let b = frame_beats(FetchAdd, 0).max(frame_beats(AtomicAcknowledge, 0));
            return Some(8.0 / b as f64);
        }
        _ if size == 0 || mtu == 0 => return None,
        PerfOp::Write => (
            RdmaWriteOnly,
            RdmaWriteFirst,
            RdmaWriteMiddle,
            RdmaWriteLast,
        ),
        PerfOp::Send => (SendOnly, SendFirst, SendMiddle, SendLast),
        PerfOp::Read => (
            RdmaReadResponseOnly,
            RdmaReadResponseFirst,
            RdmaReadResponseMiddle,
            RdmaReadResponseLast,
        ),
    };
    let n = size.div_ceil(mtu);
    let total: u64 = (0..n)
        .map(|i| {
            let opcode = match i {
                _ if n == 1 => only,
                0 => first,
                _ if i == n - 1 => last,
                _ => middle,
            };
            frame_beats(opcode, (size - i * mtu).min(mtu) as usize)
        })
        .sum();
    Some(size as f64 / total as f64)
}

/// No completion for this many cycles means the run is stuck.
const STALL_CYCLES: u64 = 200_000_000;
/// Pause between polls when nothing happened, in cycles (a CPU polling loop's latency).
const POLL_QUANTUM: u64 = 16;
/// The latency probe gives up after this many cycles.
const LATENCY_LIMIT: u64 = 10_000_000;
/// Largest buffer the run allocates per host.
const MAX_BUFFER: u64 = 1 << 30;

/// One connection's state.
struct Flow {
    a: Endpoint,
    b: Endpoint,
    a_buf: Buffer,
    a_mr: Mr,
    b_buf: Buffer,
    b_mr: Mr,
    posted: u64,
    done: u64,
    recv_posted: u64,
    recv_done: u64,
}

fn check(wc: &Wc, opcode: WcOpcode, byte_len: u32, what: &str) -> anyhow::Result<()> {
    if wc.status != WcStatus::Success || wc.opcode != opcode || wc.byte_len != byte_len {
        bail!("{what} completion: expected SUCCESS {opcode} byte_len={byte_len}, got {wc}");
    }
    Ok(())
}

/// Runs the measurement.
pub fn run_perf(args: &PerfArgs) -> anyhow::Result<PerfResult> {
    let kind = parse_backend(&args.backend)?;
    let mtu = Mtu::from_bytes(args.mtu).with_context(|| {
        format!(
            "--mtu {}: a path MTU is one of 256, 512, 1024, 2048, 4096",
            args.mtu
        )
    })?;
    if args.qps == 0 || args.iters == 0 || args.tx_depth == 0 {
        bail!("--qps, --iters and --tx-depth must be at least 1");
    }
    let size = if args.op == PerfOp::Atomic {
        8
    } else {
        args.size
    };
    let slots = args.iters.min(args.tx_depth as u64);
    let buf_len = (slots * size.max(8) as u64).max(4096);
    if buf_len > MAX_BUFFER {
        bail!(
            "{} slots of {size} bytes need {buf_len} bytes per QP: lower --tx-depth or --size",
            slots
        );
    }
    let mut tb = Testbed::new(
        kind,
        &TestbedOptions {
            seed: args.seed,
            loss: args.loss,
            pcap: args.pcap.clone(),
            trace: args.trace.clone(),
        },
    )?;
    let mut rng = Pattern::new(args.seed);
    let attr = tb.a.ctx.device_attr();
    let depth = args.tx_depth;
    if depth > attr.max_qp_wr || depth > attr.max_cqe {
        bail!(
            "--tx-depth {depth} exceeds the device's largest ring of {} entries",
            attr.max_qp_wr
        );
    }
    let rd = attr.max_qp_init_rd_atom.min(attr.max_qp_rd_atom).min(255) as u8;
    let params = ConnParams {
        max_rd_atomic: rd,
        ..ConnParams::new(mtu)
    };
    let cap = QpCap {
        max_send_wr: depth,
        max_recv_wr: depth,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let all =
        access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
    let mut flows = Vec::new();
    let pd_a = tb.a.ctx.alloc_pd()?;
    let pd_b = tb.b.ctx.alloc_pd()?;
    for _ in 0..args.qps {
        let side = |ctx: &mut Context, pd| -> rocenic_driver::Result<_> {
            let scq = ctx.create_cq(depth)?;
            let rcq = ctx.create_cq(depth)?;
            let buf = ctx.alloc_buf(buf_len as usize)?;
            let mr = ctx.reg_mr(pd, &buf, all)?;
            Ok((scq, rcq, buf, mr))
        };
        let (a_scq, a_rcq, a_buf, a_mr) = side(&mut tb.a.ctx, pd_a)?;
        let (b_scq, b_rcq, b_buf, b_mr) = side(&mut tb.b.ctx, pd_b)?;
        let (a, b) = connected_pair(
            &mut tb,
            (pd_a, a_scq, a_rcq),
            (pd_b, b_scq, b_rcq),
            cap,
            &params,
            &mut rng,
        )?;
        // The source side gets the pattern.
        match args.op {
            PerfOp::Write | PerfOp::Send => {
                tb.a.ctx.write(&a_buf, 0, &rng.bytes(buf_len as usize))?
            }
            PerfOp::Read => tb.b.ctx.write(&b_buf, 0, &rng.bytes(buf_len as usize))?,
            PerfOp::Atomic => {}
        }
        flows.push(Flow {
            a,
            b,
            a_buf,
            a_mr,
            b_buf,
            b_mr,
            posted: 0,
            done: 0,
            recv_posted: 0,
            recv_done: 0,
        });
    }
    let retrans = |tb: &mut Testbed| {
        tb.a.ctx.counters()[Counter::Retransmits as usize]
            + tb.b.ctx.counters()[Counter::Retransmits as usize]
    };
    let retrans0 = retrans(&mut tb);
    let recv_wr = |f: &Flow, i: u64| RecvWr {
        wr_id: i,
        sg_list: vec![f.b_mr.sge((i % slots) * size as u64, size)],
    };
    // Receives first, as perftest does: a full RQ before the first send.
    if args.op == PerfOp::Send {
        for f in &mut flows {
            let wrs: Vec<RecvWr> = (0..slots).map(|i| recv_wr(f, i)).collect();
            tb.b.ctx.post_recv(f.b.qp, &wrs)?;
            f.recv_posted = slots;
        }
    }
    let (opcode, wc_opcode) = match args.op {
        PerfOp::Write => (WrOpcode::RdmaWrite, WcOpcode::RdmaWrite),
        PerfOp::Read => (WrOpcode::RdmaRead, WcOpcode::RdmaRead),
        PerfOp::Send => (WrOpcode::Send, WcOpcode::Send),
        PerfOp::Atomic => (WrOpcode::AtomicFetchAndAdd, WcOpcode::FetchAdd),
    };
    let send_wr = |f: &Flow, i: u64| {
        let off = (i % slots) * size as u64;
        let mut wr = SendWr {
            wr_id: i,
            opcode,
            send_flags: send_flags::SIGNALED,
            sg_list: if size > 0 {
                vec![f.a_mr.sge(off, size)]
            } else {
                Vec::new()
            },
            ..SendWr::default()
        };
        match args.op {
            PerfOp::Write | PerfOp::Read => {
                wr.rdma = RdmaWr {
                    remote_addr: f.b_mr.addr + off,
                    rkey: f.b_mr.rkey,
                }
            }
            PerfOp::Atomic => {
                wr.atomic = AtomicWr {
                    remote_addr: f.b_mr.addr,
                    compare_add: 1,
                    swap: 0,
                    rkey: f.b_mr.rkey,
                }
            }
            PerfOp::Send => {}
        }
        wr
    };

    let bar = crate::progress::bar(
        args.iters * args.qps as u64,
        &format!("perf {} {size} B", args.op.name()),
    );
    bar.set_message("messages");
    let wall = Instant::now();
    let t0 = tb.a.ctx.now();
    let mut t_end = t0;
    let mut last_progress = t0;
    let total = args.iters * args.qps as u64;
    let mut completed = 0;
    let mut wcs = [Wc::default(); 64];
    while completed < total {
        let mut progressed = false;
        for f in &mut flows {
            if args.op == PerfOp::Send {
                let n = tb.b.ctx.poll_cq(f.b.recv_cq, &mut wcs)?;
                for wc in &wcs[..n] {
                    check(wc, WcOpcode::Recv, size, "receive")?;
                }
                f.recv_done += n as u64;
                let want = args.iters.min(f.recv_done + slots);
                if want > f.recv_posted {
                    let wrs: Vec<RecvWr> = (f.recv_posted..want).map(|i| recv_wr(f, i)).collect();
                    tb.b.ctx.post_recv(f.b.qp, &wrs)?;
                    f.recv_posted = want;
                }
                progressed |= n > 0;
            }
            let want = args.iters.min(f.done + depth as u64);
            if want > f.posted {
                let wrs: Vec<SendWr> = (f.posted..want).map(|i| send_wr(f, i)).collect();
                tb.a.ctx.post_send(f.a.qp, &wrs)?;
                f.posted = want;
                progressed = true;
            }
            let n = tb.a.ctx.poll_cq(f.a.send_cq, &mut wcs)?;
            for wc in &wcs[..n] {
                check(wc, wc_opcode, size, "requester")?;
            }
            if n > 0 {
                f.done += n as u64;
                completed += n as u64;
                bar.set_position(completed);
                t_end = tb.a.ctx.now();
                last_progress = t_end;
                progressed = true;
            }
        }
        if !progressed {
            if tb.a.ctx.now() - last_progress > STALL_CYCLES {
                bail!(
                    "no completion for {STALL_CYCLES} cycles: {completed} of {total} messages done"
                );
            }
            tb.a.ctx.wait(POLL_QUANTUM);
        }
    }
    bar.finish_and_clear();
    let wall = wall.elapsed().as_secs_f64();
    let cycles = (t_end - t0).max(1);
    let retransmissions = retrans(&mut tb) - retrans0;

    // Verify the data.
    let mut problems = Vec::new();
    let used = (slots * size as u64) as usize;
    for (q, f) in flows.iter().enumerate() {
        let mut a = vec![0; used];
        let mut b = vec![0; used];
        match args.op {
            PerfOp::Atomic => {
                let mut c = [0u8; 8];
                tb.b.ctx.read(&f.b_buf, 0, &mut c)?;
                let counter = u64::from_le_bytes(c);
                if counter != args.iters {
                    problems.push(format!(
                        "QP {q}: counter is {counter}, expected {}",
                        args.iters
                    ));
                }
                tb.a.ctx.read(&f.a_buf, 0, &mut a)?;
                for j in 0..slots {
                    let last = (args.iters - 1 - j) / slots * slots + j;
                    let got = u64::from_le_bytes(a[j as usize * 8..][..8].try_into()?);
                    if got != last {
                        problems.push(format!(
                            "QP {q}: result slot {j} holds {got}, expected {last}"
                        ));
                        break;
                    }
                }
            }
            _ => {
                tb.a.ctx.read(&f.a_buf, 0, &mut a)?;
                tb.b.ctx.read(&f.b_buf, 0, &mut b)?;
                if a != b {
                    let first = (0..used).find(|&i| a[i] != b[i]).unwrap_or(0);
                    problems.push(format!(
                        "QP {q}: destination differs from source, first at byte {first} (slot {})",
                        first / size.max(1) as usize
                    ));
                }
            }
        }
    }
    let f = &flows[0];
    let recv = (args.op == PerfOp::Send).then(|| recv_wr(f, 0));
    let latency_cycles = probe_latency(&mut tb, f, send_wr(f, 0), recv, wc_opcode, size)?;
    tb.finish()?;
    let messages = total;
    let payload_bytes = messages * size as u64;
    let bpc = payload_bytes as f64 / cycles as f64;
    let wire_efficiency = framing_limit(args.op, size, args.mtu).map(|limit| bpc / limit);
    Ok(PerfResult {
        backend: tb.backend.name().into(),
        op: args.op,
        size,
        iters: args.iters,
        qps: args.qps,
        mtu: args.mtu,
        tx_depth: depth,
        loss: args.loss,
        messages,
        payload_bytes,
        cycles,
        retransmissions,
        verified: problems.is_empty(),
        payload_bytes_per_cycle: bpc,
        wire_efficiency,
        messages_per_cycle: messages as f64 / cycles as f64,
        gbps_at_250mhz: bpc * 8.0 * 250e6 / 1e9,
        latency_cycles,
        sim_cycles_per_wall_second: cycles as f64 / wall.max(1e-9),
        problems,
    })
}

/// Sends `wr` alone on `f`'s idle QP (after posting `recv` at the responder) and times
/// it by stepping the world one cycle at a time: when node A's port sends and receives
/// frames (the world's port counters) and when the CQE appears (polled every cycle).
/// `None` without a simulated world.
fn probe_latency(
    tb: &mut Testbed,
    f: &Flow,
    wr: SendWr,
    recv: Option<RecvWr>,
    wc_opcode: WcOpcode,
    size: u32,
) -> anyhow::Result<Option<Latency>> {
    let (Some(world), Some(node)) = (tb.world.clone(), tb.a.node) else {
        return Ok(None);
    };
    // The model hands a frame to the link at its first beat, the RTL harness at its last
    // (`rocenic_sim::rtl_device`), and TxPath streams a frame's beats back to back.
    let handed_at_last_beat = tb.backend == BackendKind::Rtl;
    if let Some(r) = recv {
        tb.b.ctx.post_recv(f.b.qp, &[r])?;
    }
    let stats = || world.borrow().node_stats(node);
    let mut prev = stats();
    let t_doorbell = tb.a.ctx.now();
    tb.a.ctx.post_send(f.a.qp, &[wr])?;
    let (mut first_tx, mut last_rx) = (None, None);
    let mut wcs = [Wc::default(); 1];
    while tb.a.ctx.now() - t_doorbell < LATENCY_LIMIT {
        tb.a.ctx.wait(1);
        let cycle = tb.a.ctx.now() - 1;
        let now = stats();
        // A frame's length: the bytes the port counted this cycle over its frames (one
        // frame a cycle on a 64-byte port).
        let sent =
            (now.bytes_sent - prev.bytes_sent).checked_div(now.frames_sent - prev.frames_sent);
        if let (None, Some(len)) = (first_tx, sent) {
            first_tx = Some(if handed_at_last_beat {
                cycle + 1 - beats(len as usize)
            } else {
                cycle
            });
        }
        let received = (now.bytes_received - prev.bytes_received)
            .checked_div(now.frames_received - prev.frames_received);
        if let Some(len) = received {
            last_rx = Some(cycle + beats(len as usize) - 1);
        }
        prev = now;
        if tb.a.ctx.poll_cq(f.a.send_cq, &mut wcs)? == 0 {
            continue;
        }
        check(&wcs[0], wc_opcode, size, "latency probe")?;
        let (Some(tx), Some(rx)) = (first_tx, last_rx) else {
            bail!("latency probe: a completion before the NIC sent and received a frame");
        };
        return Ok(Some(Latency {
            doorbell_to_first_tx_beat: tx - t_doorbell,
            last_rx_beat_to_cqe: cycle.saturating_sub(rx),
        }));
    }
    bail!("latency probe: no completion within {LATENCY_LIMIT} cycles")
}

/// `rocenic perf -a`: one run per size of [`sweep_sizes`], each printed as it finishes.
pub fn run_sweep(args: &PerfArgs, out: &mut dyn Write) -> anyhow::Result<Vec<PerfResult>> {
    if args.op == PerfOp::Atomic {
        bail!("-a sweeps message sizes, and an atomic is always 8 bytes: run `perf atomic` alone");
    }
    if args.pcap.is_some() || args.trace.is_some() {
        bail!("--pcap and --trace record one run: give -s SIZE instead of -a");
    }
    let sizes = sweep_sizes(args.max_size)?;
    if let Some(p) = &args.plot {
        crate::plot::Format::from_path(p)?;
    }
    let bar = crate::progress::bar(sizes.len() as u64, &format!("perf {} -a", args.op.name()));
    if !args.json {
        writeln!(
            out,
            "rocenic perf {} -a: backend {}, {} QP(s), {} messages per QP and size, PMTU {}, tx depth {}, loss {}",
            args.op.name(),
            args.backend,
            args.qps,
            args.iters,
            args.mtu,
            args.tx_depth,
            args.loss
        )?;
        writeln!(
            out,
            "{:>10} {:>10} {:>12} {:>12} {:>10} {:>15} {:>8} {:>8}",
            "#bytes",
            "#messages",
            "cycles",
            "Gb/s@250MHz",
            "bytes/cyc",
            "Mmsg/s@250MHz",
            "wire eff",
            "retrans"
        )?;
    }
    let mut results = Vec::new();
    for size in sizes {
        bar.set_message(format!("{size} B"));
        let r = run_perf(&PerfArgs {
            size,
            all: false,
            ..args.clone()
        })?;
        bar.inc(1);
        if args.json {
            writeln!(out, "{}", serde_json::to_string(&r)?)?;
        } else {
            writeln!(
                out,
                "{:>10} {:>10} {:>12} {:>12.2} {:>10.3} {:>15.3} {:>8} {:>8}",
                r.size,
                r.messages,
                r.cycles,
                r.gbps_at_250mhz,
                r.payload_bytes_per_cycle,
                r.messages_per_cycle * 250.0,
                r.wire_efficiency.map_or("-".into(), |e| format!("{e:.3}")),
                r.retransmissions
            )?;
        }
        if !r.verified {
            bail!(
                "perf: {size} B: data did not verify: {}",
                r.problems.join("; ")
            );
        }
        results.push(r);
    }
    bar.finish_and_clear();
    if let Some(p) = &args.plot {
        crate::plot::plot(&results, p)?;
        if !args.json {
            writeln!(out, "plot written to {}", p.display())?;
        }
    }
    Ok(results)
}

/// `rocenic perf`.
pub fn run(args: &PerfArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if args.all {
        return run_sweep(args, out).map(drop);
    }
    if args.plot.is_some() {
        bail!("--plot draws a sweep of message sizes: add -a");
    }
    let r = run_perf(args)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&r)?)?;
    } else {
        writeln!(
            out,
            "rocenic perf {}: backend {}, {} QP(s), {} B x {} per QP, PMTU {}, tx depth {}, loss {}",
            r.op.name(),
            r.backend,
            r.qps,
            r.size,
            r.iters,
            r.mtu,
            r.tx_depth,
            r.loss
        )?;
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let rows: [(&str, String); 11] = [
            ("messages", r.messages.to_string()),
            ("payload bytes", r.payload_bytes.to_string()),
            ("cycles", r.cycles.to_string()),
            ("bytes/cycle", format!("{:.3}", r.payload_bytes_per_cycle)),
            (
                "wire efficiency",
                opt(r.wire_efficiency.map(|e| format!("{:.3}", e))),
            ),
            ("Gb/s at 250 MHz", format!("{:.2}", r.gbps_at_250mhz)),
            (
                "messages/kcycle",
                format!("{:.2}", r.messages_per_cycle * 1000.0),
            ),
            (
                "doorbell->TX beat",
                opt(r
                    .latency_cycles
                    .map(|l| format!("{} cycles", l.doorbell_to_first_tx_beat))),
            ),
            (
                "RX beat->CQE",
                opt(r
                    .latency_cycles
                    .map(|l| format!("{} cycles", l.last_rx_beat_to_cqe))),
            ),
            ("retransmissions", r.retransmissions.to_string()),
            (
                "verified",
                if r.verified { "yes" } else { "NO" }.to_string(),
            ),
        ];
        for (k, v) in rows {
            writeln!(out, "  {k:<18} {v}")?;
        }
        for p in &r.problems {
            writeln!(out, "  problem: {p}")?;
        }
    }
    if !r.verified {
        bail!("perf: data did not verify: {}", r.problems.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_framing_limit_counts_every_header_and_whole_beats() {
        // WRITE ONLY of 4096: 54 B of Ethernet..BTH, RETH 16, ICRC 4 -> 4170 B, 66 beats.
        assert_eq!(
            framing_limit(PerfOp::Write, 4096, 4096),
            Some(4096.0 / 66.0)
        );
        // READ of 3000 at 1024: FIRST (AETH) 1086 B = 17 beats, MIDDLE 1082 B = 17,
        // LAST (AETH, 952 B) 1014 B = 16.
        assert_eq!(framing_limit(PerfOp::Read, 3000, 1024), Some(60.0));
        // SEND of 1 byte: 54 + 1 + 3 pad + 4 = 62 B, one beat.
        assert_eq!(framing_limit(PerfOp::Send, 1, 256), Some(1.0));
        // FETCH_ADD: 54 + 28 + 4 = 86 B and ATOMIC ACK 54 + 4 + 8 + 4 = 70 B, two beats.
        assert_eq!(framing_limit(PerfOp::Atomic, 0, 1024), Some(4.0));
        assert_eq!(framing_limit(PerfOp::Write, 0, 1024), None);
    }
}
