//! `rocenic perftest`: the counterpart of perftest's `ib_write_bw`, `ib_read_bw`,
//! `ib_send_bw` and `ib_atomic_bw` (perftest 4.5 as in Debian 12), run by our NIC on a
//! real wire, so either side of a bandwidth test can be the original program.
//!
//! What is the same as the original, so the two interoperate:
//!
//! - the TCP handshake of perftest's "Ethernet" data exchange ([`proto`]): versions,
//!   page and cache line sizes, MTU (the smaller wins), the keys message (LID,
//!   out_reads, QPN, PSN, rkey, vaddr, GID), the synchronisations before and after the
//!   traffic, the report exchange and the closing `"done"`;
//! - options `SERVER`, `-p/--port` (18515), `-s/--size` (65536; atomics: 8 and no
//!   other), `-n/--iters` (5000), `-m/--mtu`, `-A/--atomic_type` (FETCH_AND_ADD or
//!   CMP_AND_SWAP), `-x/--gid-index`, `-F`, `-t/--tx-depth` (128);
//! - the QP: RC, one QP, a random 24-bit PSN, `timeout` 14 (`-u/--qp-timeout`),
//!   `retry_cnt` 7, `rnr_retry` 7, `min_rnr_timer` 12; the server's buffer is
//!   `2 * max(SIZE, 4096)` bytes and its address and rkey go to the client; the client's
//!   remote address steps by SIZE rounded up to the cache line through the first 4096
//!   bytes while SIZE is at most 2048, as perftest's `increase_rem_addr` does; READ and
//!   atomics use the peer's out_reads;
//! - the half-duplex roles: the client moves the data (WRITE, READ, SEND, atomics), the
//!   SEND server receives ITERS messages, the other servers wait for the client's end;
//! - the result line `#bytes #iterations BW peak[MB/sec] BW average[MB/sec]
//!   MsgRate[Mpps]` (MB = 2^20 bytes, wall-clock time; the peak is the best rate over
//!   any TX-depth consecutive completions); a server prints the client's report, as the
//!   original does.
//!
//! What rocenic adds or does differently:
//!
//! - `--backend rtl` puts the Verilated RTL engine on the wire, as server or client; its QP
//!   timeout defaults to 6 instead of 14, since the simulated engine is thousands of
//!   times slower than its 250 MHz clock;
//! - the port options of `rocenic pingpong` (`--backend model`, `--wire`, `--mac`,
//!   `--ip`, `--peer-mac`, `--pcap`, `--timeout`, `--loss`/`--dup`/`--reorder`/`--seed`);
//!   our port has one GID (index 0, `::ffff:IP`): `-x` is accepted and ignored;
//! - no warm-up and no CQ moderation: every WR is signaled;
//! - verification, where the operation allows it: a READ client checks that every read
//!   of one remote offset returned the same bytes; a FETCH_AND_ADD client that each
//!   remote word returned consecutive values; a CMP_AND_SWAP client compares with the
//!   value it last saw at each word and swaps in that value + 1, so every swap after
//!   the first must succeed and return exactly that value (perftest compares with 0 and
//!   swaps 0, which checks nothing); a SEND server checks every receive's length and
//!   their number; a WRITE, READ or atomic server checks its buffer afterwards (WRITE:
//!   nothing outside the client's footprint changed; READ: nothing changed;
//!   FETCH_AND_ADD: only the words the client targets changed, by at least ITERS in all;
//!   CMP_AND_SWAP with perftest's values: nothing changed). WRITE and SEND clients cannot
//!   see the remote memory: only their completions are checked;
//! - the summary adds the simulated cycles (250 MHz core clock) and the wire's counters.

pub mod proto;

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use rocenic_sim::UdpWireStats;

use crate::pingpong::handshake::{
    accept_one, connect_retrying, read_opening_answer, write_all, Attempt, Dest,
};
use crate::pingpong::{peer_ipv4, random_psn, Prebound};
use crate::setup::{connect, ConnInfo, ConnParams};
use crate::wire::{
    check_gid_index, close_session, fmt_gid, fmt_mac, gid_of_ipv4, WireLinkArgs, WireSpec, WiredNic,
};
use proto::{Channel, Keys, Report, TestKind, CACHE_LINE, CYCLE_BUFFER, VERSION_LEN};
use rocenic_driver::verbs::{
    access, qp_attr, send_flags, AtomicWr, Buffer, Context, Counter, Cq, Mr, Mtu, Qp, QpAttr,
    QpCap, QpInitAttr, QpState, RdmaWr, RecvWr, SendWr, Wc, WcOpcode, WcStatus, WrOpcode,
};

/// Largest message (the buffers live in simulated host memory).
const MAX_SIZE: u32 = 1 << 24;
/// Longest wait for the NIC to write host memory between two empty polls of the CQ.
const POLL_WAIT: Duration = Duration::from_millis(5);
/// How long the NIC keeps running after the traffic before the closing exchanges.
const DRAIN: Duration = Duration::from_millis(2);
/// Receives a SEND server keeps posted at most (perftest's default rx depth).
const RX_DEPTH: u32 = 512;
/// What perftest's FETCH_AND_ADD adds.
const ADD_VALUE: u64 = 1;

/// The operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Verb {
    /// RDMA WRITE, like ib_write_bw.
    Write,
    /// RDMA READ, like ib_read_bw.
    Read,
    /// SEND, like ib_send_bw.
    Send,
    /// Atomics, like ib_atomic_bw.
    Atomic,
}

impl Verb {
    fn kind(self) -> TestKind {
        match self {
            Verb::Write => TestKind::Write,
            Verb::Read => TestKind::Read,
            Verb::Send => TestKind::Send,
            Verb::Atomic => TestKind::Atomic,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Verb::Write => "RDMA_Write BW Test",
            Verb::Read => "RDMA_Read BW Test",
            Verb::Send => "Send BW Test",
            Verb::Atomic => "Atomic BW Test",
        }
    }
}

/// perftest's `-A` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AtomicType {
    #[value(name = "FETCH_AND_ADD")]
    FetchAndAdd,
    #[value(name = "CMP_AND_SWAP")]
    CmpAndSwap,
}

/// Arguments of `rocenic perftest` (see the module documentation).
#[derive(Debug, Clone, Args)]
pub struct PerftestArgs {
    /// The test: write, read, send or atomic.
    #[arg(value_enum)]
    pub verb: Verb,
    /// Connect to the perftest server at this host; without it, be the server and wait
    /// for a client on 127.0.0.1:PORT.
    pub server: Option<String>,
    /// Listen on / connect to this TCP port.
    #[arg(short = 'p', long = "port", default_value_t = 18515)]
    pub port: u16,
    /// Message size, bytes (default 65536; atomics are 8 bytes and take no -s).
    #[arg(short = 's', long = "size")]
    pub size: Option<u32>,
    /// Number of messages.
    #[arg(short = 'n', long = "iters", default_value_t = 5000)]
    pub iters: u32,
    /// Path MTU (256, 512, 1024, 2048, 4096; default 4096); the smaller of both sides'
    /// is used.
    #[arg(short = 'm', long = "mtu")]
    pub mtu: Option<u32>,
    /// Atomic operation: FETCH_AND_ADD or CMP_AND_SWAP.
    #[arg(
        short = 'A',
        long = "atomic_type",
        value_enum,
        default_value = "FETCH_AND_ADD"
    )]
    pub atomic_type: AtomicType,
    /// GID index: accepted for perftest's command lines; our port has one GID (index 0).
    #[arg(short = 'x', long = "gid-index")]
    pub gid_index: Option<i32>,
    /// perftest's "do not fail on cpufreq scaling": accepted, nothing to do here.
    #[arg(short = 'F', long = "CPU-freq")]
    pub cpu_freq: bool,
    /// Work requests in flight at most.
    #[arg(short = 't', long = "tx-depth", default_value_t = 128)]
    pub tx_depth: u32,
    /// QP timeout: the ACK timeout is 4.096 us * 2^N of the NIC's clock (1..=31). Default
    /// 14 as perftest's (67 ms), but 6 (262 us) on a device that runs slower than
    /// wall-clock time (`--backend rtl`): 67 ms there are 16.8 M simulated cycles, minutes
    /// of wall-clock time before a lost tail is resent.
    #[arg(short = 'u', long = "qp-timeout", value_parser = clap::value_parser!(u8).range(1..=31))]
    pub qp_timeout: Option<u8>,
    /// The wire and our port on it.
    #[command(flatten)]
    pub link: WireLinkArgs,
    /// Bound on every wait, seconds: connecting (with retries), accepting, each
    /// handshake step (a server waits this long for the client's traffic to end), ARP,
    /// and the time between two completions.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Negative test, client of write or read: one operation that breaks the rules, with
    /// a wrong rkey (`rkey`) or just past the end of the server's buffer (`bounds`). It
    /// must complete with REM_ACCESS_ERR (the server NAKs it); the handshake is still
    /// closed normally, so the server ends well.
    #[arg(long, value_enum)]
    pub violate: Option<Violation>,
    /// Negative test, server of write or read: advertise a wrong rkey (`rkey`) or an
    /// address just past the end of our buffer (`bounds`). The client's operations must
    /// be NAKed with a remote access error and our memory stay untouched; the client then
    /// fails and closes, which is what this run expects.
    #[arg(long, value_enum)]
    pub advertise_bad: Option<Violation>,
}

/// How a negative test breaks the access rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Violation {
    /// A wrong rkey.
    Rkey,
    /// An address just past the end of the registered buffer.
    Bounds,
}

/// The rkey a negative test uses instead of `rkey`: another key, never 0.
fn wrong_rkey(rkey: u32) -> u32 {
    rkey ^ 0x5a5a_5a00
}

impl PerftestArgs {
    /// The defaults, as a server, with the given port addresses.
    pub fn new(verb: Verb, wire: WireSpec, mac: [u8; 6], ip: [u8; 4]) -> Self {
        PerftestArgs {
            verb,
            server: None,
            port: 18515,
            size: None,
            iters: 5000,
            mtu: None,
            atomic_type: AtomicType::FetchAndAdd,
            gid_index: None,
            cpu_freq: false,
            tx_depth: 128,
            qp_timeout: None,
            link: WireLinkArgs::new(wire, mac, ip),
            timeout: 60.0,
            violate: None,
            advertise_bad: None,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct PerftestReport {
    pub client: bool,
    pub verb: Verb,
    pub size: u32,
    pub iters: u32,
    /// The path MTU used (after the exchange).
    pub mtu: u32,
    pub peer_version: String,
    pub local: Keys,
    pub remote: Keys,
    /// Our result (client) or the client's report (server).
    pub result: Report,
    /// Wall-clock time of our traffic loop (client) or of the wait for the client (server).
    pub wall: Duration,
    /// Simulated cycles of the same.
    pub cycles: u64,
    /// Successful completions we polled.
    pub completions: u64,
    /// What the verification found (one line).
    pub verified: String,
    pub retransmits: u64,
    pub counters: [u64; Counter::COUNT],
    pub wire: UdpWireStats,
}

/// Runs the command.
pub fn run(args: &PerftestArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    run_with(args, Prebound::default(), out).map(|_| ())
}

/// The checked sizes of a run.
struct Plan {
    size: u32,
    mtu: Mtu,
    /// Each side's buffer: `2 * max(size, 4096)`, as perftest's.
    buf_len: usize,
}

fn plan(args: &PerftestArgs) -> anyhow::Result<Plan> {
    let size = match (args.verb, args.size) {
        (Verb::Atomic, None | Some(8)) => 8,
        (Verb::Atomic, Some(s)) => {
            bail!("-s {s}: Message size cannot be changed for Atomic tests (always 8)")
        }
        (_, None) => 65536,
        (_, Some(s)) if s == 0 || s > MAX_SIZE => {
            bail!("-s {s}: the size must be 1 ..= {MAX_SIZE} bytes")
        }
        (_, Some(s)) => s,
    };
    let mtu_bytes = args.mtu.unwrap_or(4096);
    let mtu = Mtu::from_bytes(mtu_bytes).ok_or_else(|| {
        anyhow::anyhow!("-m {mtu_bytes}: the path MTU must be 256, 512, 1024, 2048 or 4096")
    })?;
    // perftest's own bounds, so that a command line fails the same way on both sides.
    if !(5..=100_000_000).contains(&args.iters) {
        bail!(
            "-n {}: Iteration num should be between 5 and 100000000",
            args.iters
        );
    }
    if args.tx_depth == 0 {
        bail!("-t 0: at least one work request in flight");
    }
    check_gid_index("-x", args.gid_index, args.link.ip)?;
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!(
            "--timeout {}: must be a positive number of seconds",
            args.timeout
        );
    }
    let rdma = matches!(args.verb, Verb::Write | Verb::Read);
    match (args.violate, args.advertise_bad, &args.server) {
        (Some(_), Some(_), _) => bail!("--violate is for a client, --advertise-bad for a server"),
        (Some(_), None, None) => bail!("--violate needs SERVER: it is the client's negative test"),
        (None, Some(_), Some(_)) => {
            bail!("--advertise-bad is the server's negative test: drop SERVER")
        }
        (Some(_), None, _) | (None, Some(_), _) if !rdma => {
            bail!("--violate and --advertise-bad are for write and read")
        }
        _ => {}
    }
    Ok(Plan {
        size,
        mtu,
        buf_len: 2 * (size as usize).max(CYCLE_BUFFER as usize),
    })
}

/// Runs the command with sockets the caller bound; returns what happened.
pub fn run_with(
    args: &PerftestArgs,
    pre: Prebound,
    out: &mut dyn Write,
) -> anyhow::Result<PerftestReport> {
    args.link.check_backend("perftest")?;
    let plan = plan(args)?;
    let timeout = Duration::from_secs_f64(args.timeout);
    let listener = match (&args.server, pre.listener) {
        (Some(_), _) => None,
        (None, Some(l)) => Some(l),
        (None, None) => Some(
            TcpListener::bind((Ipv4Addr::LOCALHOST, args.port))
                .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?,
        ),
    };
    let (nic, mut ctx) = args.link.open_nic(pre.udp)?;
    let result = session(args, &plan, timeout, &nic, &mut ctx, listener, out);
    let (mut report, wire) = close_session(&nic, ctx, result)?;
    report.wire = wire;
    Ok(report)
}

/// Our QP and buffer.
struct Side {
    cq: Cq,
    qp: Qp,
    buf: Buffer,
    mr: Mr,
    /// Receives a SEND server keeps posted.
    rx_depth: u32,
}

fn remote_access(verb: Verb) -> u32 {
    match verb {
        Verb::Write => access::REMOTE_WRITE,
        Verb::Read => access::REMOTE_READ,
        Verb::Atomic => access::REMOTE_ATOMIC,
        Verb::Send => 0,
    }
}

fn setup(
    ctx: &mut Context,
    args: &PerftestArgs,
    plan: &Plan,
    client: bool,
) -> anyhow::Result<Side> {
    let attr = ctx.device_attr();
    let tx_depth = args.tx_depth.min(args.iters);
    if tx_depth > attr.max_qp_wr {
        bail!(
            "-t {}: the device's queues hold at most {} work requests",
            args.tx_depth,
            attr.max_qp_wr
        );
    }
    let rx_depth = if !client && args.verb == Verb::Send {
        RX_DEPTH.min(args.iters).min(attr.max_qp_wr)
    } else {
        1
    };
    let pd = ctx.alloc_pd()?;
    let buf = ctx.alloc_buf(plan.buf_len)?;
    let acc = access::LOCAL_WRITE | remote_access(args.verb);
    let mr = ctx.reg_mr(pd, &buf, acc)?;
    if !client && args.verb == Verb::Read {
        // What the client READs: real bytes, checked unchanged afterwards.
        ctx.write(&buf, 0, &read_source(plan.buf_len))?;
    }
    let cq = ctx.create_cq((tx_depth + rx_depth + 1).min(attr.max_cqe))?;
    let qp = ctx.create_qp(
        pd,
        &QpInitAttr {
            send_cq: cq,
            recv_cq: cq,
            cap: QpCap {
                max_send_wr: tx_depth,
                max_recv_wr: rx_depth,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
        },
    )?;
    let init = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: acc,
        ..QpAttr::default()
    };
    ctx.modify_qp(qp, &init, qp_attr::STATE | qp_attr::ACCESS_FLAGS)
        .context("Failed to modify QP to INIT")?;
    Ok(Side {
        cq,
        qp,
        buf,
        mr,
        rx_depth,
    })
}

/// A READ server's buffer contents.
fn read_source(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 31 + 7) ^ (i >> 8)) as u8).collect()
}

/// The remote (and local) offset of message `i`: perftest steps by the size rounded up to
/// the cache line through the cycle buffer while the size is at most half of it.
pub fn message_offset(i: u64, size: u32) -> u64 {
    if size > CYCLE_BUFFER / 2 {
        return 0;
    }
    let step = u64::from(size.div_ceil(CACHE_LINE) * CACHE_LINE);
    let slots = u64::from(CYCLE_BUFFER) / step;
    (i % slots) * step
}

fn print_keys(out: &mut dyn Write, which: &str, k: &Keys, verb: Verb) -> anyhow::Result<()> {
    write!(
        out,
        " {which} address: LID {:04x} QPN {:#06x} PSN {:#08x}",
        k.lid, k.qpn, k.psn
    )?;
    if matches!(verb, Verb::Read | Verb::Atomic) {
        write!(out, " OUT {:#04x}", k.out_reads)?;
    }
    if verb != Verb::Send {
        write!(out, " RKey {:#08x} VAddr {:#016x}", k.rkey, k.vaddr)?;
    }
    writeln!(out, "\n GID: {}", fmt_gid(k.gid))?;
    Ok(())
}

fn mb_per_sec(bytes: f64, secs: f64) -> f64 {
    bytes / secs.max(1e-9) / f64::from(1u32 << 20)
}

fn session(
    args: &PerftestArgs,
    plan: &Plan,
    timeout: Duration,
    nic: &WiredNic,
    ctx: &mut Context,
    listener: Option<TcpListener>,
    out: &mut dyn Write,
) -> anyhow::Result<PerftestReport> {
    let client = args.server.is_some();
    let verb = args.verb;
    let side = setup(ctx, args, plan, client)?;
    let mut idle = |d: Duration| nic.run_for(d);

    // The SEND server's receives are posted before anything is exchanged.
    if !client && verb == Verb::Send {
        post_recvs(ctx, &side, plan.size, side.rx_depth)?;
    }

    // Versions (the client's first exchange is its retry point while the guest boots).
    let mut chan = match (&args.server, &listener) {
        (Some(server), _) => {
            let (stream, theirs) = connect_retrying(
                server,
                args.port,
                timeout,
                &mut idle,
                &mut |s, addr, left, deadline, idle| {
                    write_all(s, &proto::version_message(), deadline, idle)
                        .map_err(Attempt::Retry)?;
                    let mut theirs = [0u8; VERSION_LEN];
                    read_opening_answer(s, &mut theirs, addr, left, deadline, idle)?;
                    Ok(theirs)
                },
            )?;
            Channel::new(stream, true, timeout, proto::parse_version(&theirs))?
        }
        (None, Some(l)) => {
            let (stream, _) = accept_one(l, timeout, &mut idle)?;
            Channel::accept_versions(stream, timeout, &mut idle)?
        }
        (None, None) => unreachable!("a server always has a listener"),
    };
    drop(listener);
    if chan.peer_version != proto::VERSION {
        writeln!(
            out,
            "warning: the peer speaks perftest protocol version {:?}, we speak {:?} (perftest \
             4.5); the steps may differ",
            chan.peer_version,
            proto::VERSION
        )?;
    }
    chan.sys_data(&mut idle)?;
    let peer_mtu = chan.mtu(plan.mtu as u8, &mut idle)?;
    let mtu = match peer_mtu.and_then(|m| Mtu::from_code(u32::from(m))) {
        Some(m) if m.bytes() < plan.mtu.bytes() => m,
        _ => plan.mtu,
    };

    let attr = ctx.device_attr();
    let rd_cap = attr.max_qp_rd_atom.min(attr.max_qp_init_rd_atom).min(255);
    let out_reads = if matches!(verb, Verb::Read | Verb::Atomic) {
        rd_cap
    } else {
        1
    };
    let me = Keys {
        lid: 0,
        out_reads,
        qpn: side.qp.qp_num,
        psn: random_psn(),
        rkey: side.mr.rkey,
        vaddr: side.mr.addr,
        gid: gid_of_ipv4(args.link.ip),
        srqn: 0,
    };
    // A negative test's server shows the client a key or an address it must not use.
    let shown = match args.advertise_bad {
        Some(Violation::Rkey) => Keys {
            rkey: wrong_rkey(me.rkey),
            ..me
        },
        Some(Violation::Bounds) => Keys {
            vaddr: me.vaddr + plan.buf_len as u64,
            ..me
        },
        None => me,
    };
    // perftest takes the keys of every later synchronisation as the peer's address, so
    // the bad ones are sent every time.
    let real = me;
    let me = shown;
    let remote = chan.keys(&me, "keys", &mut idle)?;
    writeln!(
        out,
        "---------------------------------------------------------------------------------------"
    )?;
    writeln!(out, "                    {}", verb.title())?;
    writeln!(
        out,
        " Connection type : RC\t\tMtu : {}[B]\tTX depth : {}\tPeer version : {}",
        mtu.bytes(),
        args.tx_depth.min(args.iters),
        chan.peer_version
    )?;
    print_keys(out, "local", &me, verb)?;
    if let Some(v) = args.advertise_bad {
        writeln!(
            out,
            " negative test: we advertised {} (our MR: rkey {:#x}, {} bytes at {:#x})",
            match v {
                Violation::Rkey => "a wrong rkey",
                Violation::Bounds => "an address just past the end of our buffer",
            },
            real.rkey,
            plan.buf_len,
            real.vaddr
        )?;
    }
    print_keys(out, "remote", &remote, verb)?;
    out.flush()?;

    // Connect: the peer's out_reads bounds what we may have in flight as initiator; ours
    // (advertised) is what we should accept as target. `ConnParams` has one value for
    // both, so the smaller is used: right whenever the peer advertises at least ours
    // (rxe: 128, the model: 16); a peer advertising fewer would see us accept fewer than
    // we advertised (a known limit, see docs/interop.md).
    let rd = if matches!(verb, Verb::Read | Verb::Atomic) {
        rd_cap.min(remote.out_reads.max(1))
    } else {
        1
    };
    let peer_dest = Dest {
        lid: remote.lid,
        qpn: remote.qpn,
        psn: remote.psn,
        gid: remote.gid,
    };
    let peer_ip = peer_ipv4(&peer_dest)?;
    let peer_mac = match args.link.peer_mac {
        Some(m) => m,
        None => nic.resolve(peer_ip, timeout)?,
    };
    let params = ConnParams {
        mtu,
        access: access::LOCAL_WRITE | remote_access(verb),
        timeout: args.qp_timeout.unwrap_or(nic.qp_timeout()),
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 12,
        max_rd_atomic: rd as u8,
    };
    connect(
        ctx,
        side.qp,
        &ConnInfo {
            qpn: me.qpn,
            psn: me.psn,
            mac: args.link.mac,
            ip: args.link.ip,
        },
        &ConnInfo {
            qpn: remote.qpn,
            psn: remote.psn,
            mac: peer_mac,
            ip: peer_ip,
        },
        &params,
    )
    .context("Failed to connect the QP (RTR/RTS)")?;
    for k in 0..proto::pre_run_syncs(verb.kind()) {
        chan.keys(
            &me,
            &format!("synchronisation {} before the traffic", k + 1),
            &mut idle,
        )?;
    }

    let size = plan.size;
    let iters = u64::from(args.iters);
    let start = Instant::now();
    let c0 = ctx.now();
    let (result, completions, verified, wall, cycles) = if client {
        let r = run_client(args, plan, ctx, nic, &side, &remote, timeout, out)?;
        let wall = start.elapsed();
        let cycles = ctx.now() - c0;
        nic.run_for(DRAIN);
        let secs = wall.as_secs_f64();
        let bw_avg = mb_per_sec(f64::from(size) * iters as f64, secs);
        let report = Report {
            size: u64::from(size),
            // A negative test moved nothing.
            iters: if args.violate.is_some() { 0 } else { iters },
            bw_peak: peak_mb_per_sec(&r, size, bw_avg),
            bw_avg,
            msg_rate: iters as f64 / secs.max(1e-9) / 1e6,
        };
        if proto::exchanges_reports(verb.kind()) {
            chan.keys(&me, "synchronisation after the traffic", &mut idle)?;
            chan.reports(&report, &mut idle)?;
        }
        (report, r.completions, r.verified, wall, cycles)
    } else {
        let (completions, received_ok) = if verb == Verb::Send {
            serve_sends(ctx, nic, &side, size, iters, timeout)?
        } else {
            (0, String::new())
        };
        if args.advertise_bad.is_some() {
            let (wall, verified) =
                await_refused_client(ctx, nic, verb, &side, plan, &me, &mut chan)?;
            let cycles = ctx.now() - c0;
            writeln!(out, "data: {verified}")?;
            return Ok(PerftestReport {
                client,
                verb,
                size,
                iters: args.iters,
                mtu: mtu.bytes(),
                peer_version: chan.peer_version.clone(),
                local: me,
                remote,
                result: Report::default(),
                wall,
                cycles,
                completions: 0,
                verified,
                retransmits: ctx.counters()[Counter::Retransmits as usize],
                counters: ctx.counters(),
                wire: nic.stats(),
            });
        }
        let mut theirs = Report::default();
        if proto::exchanges_reports(verb.kind()) {
            // The client's traffic runs while we wait here for its synchronisation.
            chan.keys(&me, "waiting for the client's traffic to end", &mut idle)?;
            let ours = Report {
                size: u64::from(size),
                iters,
                ..Report::default()
            };
            theirs = chan.reports(&ours, &mut idle)?;
        }
        let wall = start.elapsed();
        let cycles = ctx.now() - c0;
        let verified = if verb == Verb::Send {
            received_ok
        } else {
            check_server_memory(ctx, args, &side, plan, &theirs)?
        };
        (theirs, completions, verified, wall, cycles)
    };
    chan.keys(&me, "closing synchronisation", &mut idle)?;
    let peer_version = chan.peer_version.clone();
    chan.done(&mut idle)?;

    writeln!(
        out,
        "---------------------------------------------------------------------------------------"
    )?;
    writeln!(
        out,
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
    )?;
    if client || proto::exchanges_reports(verb.kind()) {
        writeln!(
            out,
            " {:<10} {:<10}       {:<16.2}   {:<16.2}     {:.6}",
            result.size, result.iters, result.bw_peak, result.bw_avg, result.msg_rate
        )?;
    } else {
        // The SEND server has no report of the client: its own receive rate.
        let secs = wall.as_secs_f64();
        writeln!(
            out,
            " {:<10} {:<10}       {:<16}   {:<16.2}     {:.6}",
            size,
            iters,
            "-",
            mb_per_sec(f64::from(size) * iters as f64, secs),
            iters as f64 / secs.max(1e-9) / 1e6
        )?;
    }
    writeln!(
        out,
        "---------------------------------------------------------------------------------------"
    )?;
    if !client {
        writeln!(out, "(a server shows the client's report, as perftest does; the SEND server its receive rate)")?;
    }
    let mhz = f64::from(ctx.device_attr().clock_mhz);
    let sim_secs = (cycles as f64 / mhz / 1e6).max(1e-9);
    writeln!(
        out,
        "simulated: {cycles} cycles at {mhz} MHz = {:.2} usec{}",
        sim_secs * 1e6,
        if client || nic.is_slow() {
            // A server's span runs from the last synchronisation before the traffic to
            // the first after it: the client's traffic as our NIC saw it (on the RTL,
            // whose clock lags wall-clock time, the only meaningful rate of this side).
            format!(
                ": {:.2} MB/sec, {:.6} Mpps{}",
                mb_per_sec(f64::from(size) * iters as f64, sim_secs),
                iters as f64 / sim_secs / 1e6,
                if client {
                    ""
                } else {
                    " (the client's traffic, received)"
                }
            )
        } else {
            String::new()
        }
    )?;
    writeln!(out, "data: {verified}")?;
    let counters = ctx.counters();
    let retransmits = counters[Counter::Retransmits as usize];
    writeln!(
        out,
        "peer MAC {}; NIC retransmits {retransmits}; NIC receive queue full: {} frames \
         dropped; wire: {}",
        fmt_mac(peer_mac),
        nic.rx_overflow(),
        nic.stats()
    )?;
    Ok(PerftestReport {
        client,
        verb,
        size,
        iters: args.iters,
        mtu: mtu.bytes(),
        peer_version,
        local: me,
        remote,
        result,
        wall,
        cycles,
        completions,
        verified,
        retransmits,
        counters,
        wire: nic.stats(),
    })
}

fn post_recvs(ctx: &mut Context, side: &Side, size: u32, n: u32) -> anyhow::Result<()> {
    let wr = RecvWr {
        wr_id: 0,
        sg_list: vec![side.mr.sge(0, size)],
    };
    ctx.post_recv(side.qp, &vec![wr; n as usize])
        .with_context(|| format!("Couldn't post {n} receives"))
}

/// Polls until a completion arrives or `timeout` passes without one.
fn poll(
    ctx: &mut Context,
    nic: &WiredNic,
    cq: Cq,
    wcs: &mut [Wc],
    timeout: Duration,
    what: &dyn Fn() -> String,
) -> anyhow::Result<usize> {
    let since = Instant::now();
    loop {
        let n = ctx.poll_cq(cq, wcs)?;
        if n > 0 {
            return Ok(n);
        }
        if since.elapsed() >= timeout {
            bail!(
                "no completion for {:.1} s {}: the peer stopped answering (wire: {}; NIC \
                 retransmits {})",
                timeout.as_secs_f64(),
                what(),
                nic.stats(),
                ctx.counters()[Counter::Retransmits as usize]
            );
        }
        nic.wait_for_dma_write(POLL_WAIT);
    }
}

fn check_wc(wc: &Wc, want: WcOpcode) -> anyhow::Result<()> {
    if wc.status != WcStatus::Success {
        bail!(
            "Completion with error: {} ({}) for wr_id {} ({wc})",
            wc.status,
            u8::from(wc.status),
            wc.wr_id
        );
    }
    if wc.opcode != want {
        bail!(
            "completion of {} where {} was expected ({wc})",
            wc.opcode,
            want
        );
    }
    Ok(())
}

/// The SEND server: ITERS receives, each of SIZE bytes, receives topped up as they
/// complete. Returns the completions and the verification line.
fn serve_sends(
    ctx: &mut Context,
    nic: &WiredNic,
    side: &Side,
    size: u32,
    iters: u64,
    timeout: Duration,
) -> anyhow::Result<(u64, String)> {
    let mut posted = u64::from(side.rx_depth);
    let mut got = 0u64;
    let mut wcs = [Wc::default(); 64];
    while got < iters {
        let n = poll(ctx, nic, side.cq, &mut wcs, timeout, &|| {
            format!("after {got} of {iters} receives")
        })?;
        for wc in &wcs[..n] {
            check_wc(wc, WcOpcode::Recv)?;
            if wc.byte_len != size {
                bail!(
                    "receive {got} carried {} bytes, expected {size}: both sides must use the \
                     same -s",
                    wc.byte_len
                );
            }
            got += 1;
        }
        let want = iters
            .saturating_sub(posted)
            .min(got + u64::from(side.rx_depth) - posted);
        if want > 0 {
            post_recvs(ctx, side, size, want as u32)?;
            posted += want;
        }
    }
    Ok((
        got,
        format!("{got} receives of {size} bytes each (every length checked)"),
    ))
}

/// What the client's traffic loop found.
struct ClientRun {
    completions: u64,
    verified: String,
    /// When each operation completed.
    completed_at: Vec<Instant>,
    /// Operations in flight at most.
    window: u64,
}

/// perftest-like peak: the best rate over any `window` consecutive completions (the
/// average when there are no more completions than that).
fn peak_mb_per_sec(r: &ClientRun, size: u32, avg: f64) -> f64 {
    let w = r.window.max(1) as usize;
    let t = &r.completed_at;
    let best = (w..t.len())
        .map(|k| t[k].duration_since(t[k - w]).as_secs_f64())
        .filter(|d| *d > 0.0)
        .map(|d| mb_per_sec(f64::from(size) * w as f64, d))
        .fold(0.0, f64::max);
    best.max(avg)
}

/// The client: ITERS operations, up to the TX depth in flight, each checked as it
/// completes (see the module documentation for what is verified).
#[allow(clippy::too_many_arguments)]
fn run_client(
    args: &PerftestArgs,
    plan: &Plan,
    ctx: &mut Context,
    nic: &WiredNic,
    side: &Side,
    remote: &Keys,
    timeout: Duration,
    _out: &mut dyn Write,
) -> anyhow::Result<ClientRun> {
    if let Some(v) = args.violate {
        return run_violation(v, args, plan, ctx, nic, side, remote, timeout);
    }
    let verb = args.verb;
    let size = plan.size;
    let iters = u64::from(args.iters);
    let cas = verb == Verb::Atomic && args.atomic_type == AtomicType::CmpAndSwap;
    // Atomics: the result of op i lands in its own word of the first half of our buffer;
    // a CMP_AND_SWAP must know the word's value, so one op per remote word is in flight.
    let slots = u64::from(CYCLE_BUFFER / CACHE_LINE);
    let mut window = u64::from(args.tx_depth.min(args.iters));
    if cas {
        window = window.min(slots);
    }
    if verb == Verb::Atomic {
        window = window.min((plan.buf_len / 2 / 8) as u64);
    }
    let opcode = match (verb, args.atomic_type) {
        (Verb::Write, _) => WrOpcode::RdmaWrite,
        (Verb::Read, _) => WrOpcode::RdmaRead,
        (Verb::Send, _) => WrOpcode::Send,
        (Verb::Atomic, AtomicType::FetchAndAdd) => WrOpcode::AtomicFetchAndAdd,
        (Verb::Atomic, AtomicType::CmpAndSwap) => WrOpcode::AtomicCmpAndSwp,
    };
    let want_opcode = opcode.wc_opcode();
    // The source data of WRITE and SEND: a pattern, so the wire shows real bytes.
    if matches!(verb, Verb::Write | Verb::Send) {
        let data: Vec<u8> = (0..plan.buf_len).map(|i| (i * 7 + 13) as u8).collect();
        ctx.write(&side.buf, 0, &data)?;
    }
    // Per remote word (atomics): the value last seen; per remote offset (READ): the bytes.
    let mut word: Vec<Option<u64>> = vec![None; slots as usize];
    let mut read_seen: std::collections::HashMap<u64, Vec<u8>> = Default::default();
    let mut expected = 0u64;
    let mut completed_at = Vec::with_capacity(iters as usize);
    let (mut posted, mut done, mut checks) = (0u64, 0u64, 0u64);
    let mut wcs = [Wc::default(); 64];
    while done < iters {
        while posted < iters && posted - done < window {
            let i = posted;
            let off = message_offset(i, size);
            let mut wr = SendWr {
                wr_id: i,
                opcode,
                send_flags: send_flags::SIGNALED,
                sg_list: vec![side.mr.sge(off, size)],
                ..SendWr::default()
            };
            match verb {
                Verb::Write | Verb::Read => {
                    wr.rdma = RdmaWr {
                        remote_addr: remote.vaddr + off,
                        rkey: remote.rkey,
                    }
                }
                Verb::Atomic => {
                    let local = (i % window) * 8;
                    wr.sg_list = vec![side.mr.sge(local, 8)];
                    let slot = (off / u64::from(CACHE_LINE)) as usize;
                    let (compare_add, swap) = match (cas, word[slot]) {
                        (false, _) => (ADD_VALUE, 0),
                        // First visit: perftest's values, which change nothing.
                        (true, None) => (0, 0),
                        (true, Some(v)) => (v, v.wrapping_add(1)),
                    };
                    wr.atomic = AtomicWr {
                        remote_addr: remote.vaddr + off,
                        compare_add,
                        swap,
                        rkey: remote.rkey,
                    };
                }
                Verb::Send => {}
            }
            ctx.post_send(side.qp, &[wr])
                .with_context(|| format!("Couldn't post send {i}"))?;
            posted += 1;
        }
        let n = poll(ctx, nic, side.cq, &mut wcs, timeout, &|| {
            format!("after {done} of {iters} operations")
        })?;
        for wc in &wcs[..n] {
            check_wc(wc, want_opcode)?;
            let i = wc.wr_id;
            // Completions come in order on an RC send queue.
            if i != expected {
                bail!("completion for wr_id {i} out of order (expected {expected})");
            }
            expected += 1;
            completed_at.push(Instant::now());
            let off = message_offset(i, size);
            match verb {
                Verb::Read => {
                    let mut got = vec![0u8; size as usize];
                    ctx.read(&side.buf, off as usize, &mut got)?;
                    match read_seen.get(&off) {
                        Some(first) if *first != got => {
                            let at = first
                                .iter()
                                .zip(&got)
                                .position(|(a, b)| a != b)
                                .unwrap_or(0);
                            bail!(
                                "READ {i} of remote offset {off}: byte {at} is {:#04x}, an \
                                 earlier READ of the same bytes returned {:#04x}",
                                got[at],
                                first[at]
                            );
                        }
                        Some(_) => checks += 1,
                        None => {
                            read_seen.insert(off, got);
                        }
                    }
                }
                Verb::Atomic => {
                    let mut b = [0u8; 8];
                    ctx.read(&side.buf, ((i % window) * 8) as usize, &mut b)?;
                    let orig = u64::from_le_bytes(b);
                    let slot = (off / u64::from(CACHE_LINE)) as usize;
                    if let Some(expect) = word[slot] {
                        if orig != expect {
                            bail!(
                                "{} {i} at remote offset {off} returned {orig:#x}, but the word \
                                 held {expect:#x} after our previous operation on it",
                                if cas { "CMP_AND_SWAP" } else { "FETCH_AND_ADD" }
                            );
                        }
                        checks += 1;
                    }
                    word[slot] = Some(match (cas, word[slot]) {
                        (false, _) => orig.wrapping_add(ADD_VALUE),
                        (true, None) => orig,
                        (true, Some(_)) => orig.wrapping_add(1),
                    });
                }
                Verb::Write | Verb::Send => {}
            }
            done += 1;
        }
    }
    let verified = match verb {
        Verb::Write | Verb::Send => {
            format!("{done} completions checked (the remote memory is not visible to this side)")
        }
        Verb::Read => format!(
            "{done} READs; {checks} re-reads of {} remote offsets matched the first read byte \
             for byte",
            read_seen.len()
        ),
        Verb::Atomic => format!(
            "{done} {}; {checks} returned exactly the value our previous operation on the \
             same word left ({} words)",
            if cas {
                "CMP_AND_SWAPs"
            } else {
                "FETCH_AND_ADDs"
            },
            word.iter().filter(|w| w.is_some()).count()
        ),
    };
    Ok(ClientRun {
        completions: done,
        verified,
        completed_at,
        window,
    })
}

/// The client's negative test: one WRITE or READ with a wrong rkey or past the end of
/// the server's buffer (the server's buffer is `2 * max(SIZE, 4096)` bytes, perftest's
/// layout), which must complete with REM_ACCESS_ERR.
#[allow(clippy::too_many_arguments)]
fn run_violation(
    v: Violation,
    args: &PerftestArgs,
    plan: &Plan,
    ctx: &mut Context,
    nic: &WiredNic,
    side: &Side,
    remote: &Keys,
    timeout: Duration,
) -> anyhow::Result<ClientRun> {
    let (remote_addr, rkey) = match v {
        Violation::Rkey => (remote.vaddr, wrong_rkey(remote.rkey)),
        Violation::Bounds => (remote.vaddr + plan.buf_len as u64, remote.rkey),
    };
    let opcode = if args.verb == Verb::Read {
        WrOpcode::RdmaRead
    } else {
        WrOpcode::RdmaWrite
    };
    let wr = SendWr {
        wr_id: 0,
        opcode,
        send_flags: send_flags::SIGNALED,
        sg_list: vec![side.mr.sge(0, plan.size)],
        rdma: RdmaWr { remote_addr, rkey },
        ..SendWr::default()
    };
    ctx.post_send(side.qp, &[wr])
        .context("Couldn't post send")?;
    let mut wcs = [Wc::default(); 4];
    let n = poll(ctx, nic, side.cq, &mut wcs, timeout, &|| {
        "for the operation that breaks the access rules".into()
    })?;
    let wc = wcs[..n][0];
    let what = match v {
        Violation::Rkey => format!("a wrong rkey ({rkey:#x} for {:#x})", remote.rkey),
        Violation::Bounds => format!("the address {remote_addr:#x}, past the server's buffer"),
    };
    if wc.status != WcStatus::RemAccessErr {
        bail!(
            "the {opcode} with {what} completed {} ({wc}), expected REM_ACCESS_ERR",
            wc.status
        );
    }
    Ok(ClientRun {
        completions: 0,
        verified: format!(
            "negative test: one {opcode} with {what} completed REM_ACCESS_ERR (NAK \
             syndrome {:#04x}), as it must",
            wc.vendor_err
        ),
        completed_at: Vec::new(),
        window: 1,
    })
}

/// The server's negative test: the client uses the bad key or address we advertised;
/// our NIC must NAK (remote access error) and our memory stay as it was. The client then
/// fails and closes the connection: waiting for its synchronisation ends in EOF.
#[allow(clippy::too_many_arguments)]
fn await_refused_client(
    ctx: &mut Context,
    nic: &WiredNic,
    verb: Verb,
    side: &Side,
    plan: &Plan,
    me: &Keys,
    chan: &mut Channel,
) -> anyhow::Result<(Duration, String)> {
    let start = Instant::now();
    let naks0 = ctx.counters()[Counter::NaksSent as usize];
    let mut idle = |d: Duration| nic.run_for(d);
    let sync = chan.keys(me, "waiting for the refused client", &mut idle);
    let wall = start.elapsed();
    let naks = ctx.counters()[Counter::NaksSent as usize] - naks0;
    if sync.is_ok() {
        bail!("the client finished its run normally: it was not refused ({naks} NAKs sent)");
    }
    if naks == 0 {
        bail!(
            "the client went away without our NIC having sent a NAK: {:#}",
            sync.unwrap_err()
        );
    }
    let mut mem = vec![0u8; plan.buf_len];
    ctx.read(&side.buf, 0, &mut mem)?;
    let want = if verb == Verb::Read {
        read_source(plan.buf_len)
    } else {
        vec![0; plan.buf_len]
    };
    if let Some(at) = mem.iter().zip(&want).position(|(a, b)| a != b) {
        bail!("byte {at} of our buffer changed although every access was refused");
    }
    Ok((
        wall,
        format!(
            "negative test: our NIC sent {naks} NAK(s), the client gave up and closed, our {} \
             bytes are untouched",
            plan.buf_len
        ),
    ))
}

/// A WRITE/READ/atomic server's look at its buffer after the client's traffic.
fn check_server_memory(
    ctx: &mut Context,
    args: &PerftestArgs,
    side: &Side,
    plan: &Plan,
    theirs: &Report,
) -> anyhow::Result<String> {
    let mut mem = vec![0u8; plan.buf_len];
    ctx.read(&side.buf, 0, &mut mem)?;
    // The client's footprint: offsets through the cycle buffer, or the first message.
    let size = plan.size as usize;
    let footprint = if plan.size > CYCLE_BUFFER / 2 {
        size
    } else {
        CYCLE_BUFFER as usize
    };
    match args.verb {
        Verb::Write => {
            // The buffer started as zeros.
            if let Some(at) = mem[footprint..].iter().position(|&b| b != 0) {
                bail!(
                    "byte {} of our buffer changed, outside the {footprint} bytes the client \
                     writes to",
                    footprint + at
                );
            }
            let changed = mem[..footprint].iter().filter(|&&b| b != 0).count();
            Ok(format!(
                "{changed} of the {footprint} bytes the client writes to are non-zero; the \
                 other {} bytes of our buffer are untouched",
                plan.buf_len - footprint
            ))
        }
        Verb::Read => {
            let want = read_source(plan.buf_len);
            if let Some(at) = mem.iter().zip(&want).position(|(a, b)| a != b) {
                bail!("byte {at} of our buffer changed: READs must not modify it");
            }
            Ok(format!(
                "our {} bytes (a pattern) unchanged by the client's READs",
                plan.buf_len
            ))
        }
        Verb::Atomic => {
            let words: Vec<u64> = mem
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            let per_line = (CACHE_LINE / 8) as usize;
            let off_target = words
                .iter()
                .enumerate()
                .filter(|(k, w)| **w != 0 && (k % per_line != 0 || k * 8 >= CYCLE_BUFFER as usize))
                .map(|(k, _)| k * 8)
                .next();
            if let Some(at) = off_target {
                bail!("our word at offset {at} changed: the client targets only the first word of each cache line of the first {CYCLE_BUFFER} bytes");
            }
            let sum: u64 = words.iter().fold(0u64, |a, w| a.wrapping_add(*w));
            match args.atomic_type {
                AtomicType::FetchAndAdd => {
                    if sum < theirs.iters {
                        bail!(
                            "the client reports {} FETCH_AND_ADDs of {ADD_VALUE}, but our words \
                             only grew by {sum}",
                            theirs.iters
                        );
                    }
                    Ok(format!(
                        "our words grew by {sum} in all: the client's {} FETCH_AND_ADDs of \
                         {ADD_VALUE} (and its warm-up, if any) landed where they were aimed",
                        theirs.iters
                    ))
                }
                AtomicType::CmpAndSwap => Ok(format!(
                    "our words sum to {sum} after the client's {} CMP_AND_SWAPs (perftest \
                     compares with 0 and swaps in 0: nothing may change; rocenic's client \
                     counts up)",
                    theirs.iters
                )),
            }
        }
        Verb::Send => unreachable!("the SEND server counts receives"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_step_through_the_cycle_buffer_like_perftest() {
        assert_eq!(message_offset(0, 1), 0);
        assert_eq!(message_offset(1, 1), 64);
        assert_eq!(message_offset(63, 1), 63 * 64);
        assert_eq!(message_offset(64, 1), 0);
        assert_eq!(message_offset(1, 65), 128);
        assert_eq!(message_offset(1, 2048), 2048);
        assert_eq!(message_offset(2, 2048), 0);
        assert_eq!(message_offset(5, 2049), 0);
        for size in [1u32, 8, 100, 1000, 2048] {
            for i in 0..200 {
                assert!(message_offset(i, size) + u64::from(size) <= u64::from(CYCLE_BUFFER));
            }
        }
    }

    #[test]
    fn the_command_line_has_perftests_option_names() {
        use crate::{Cli, Command};
        use clap::Parser;
        let cli = Cli::try_parse_from([
            "rocenic",
            "perftest",
            "atomic",
            "127.0.0.1",
            "-p",
            "18600",
            "-n",
            "5",
            "-m",
            "1024",
            "-A",
            "CMP_AND_SWAP",
            "-x",
            "1",
            "-F",
            "-t",
            "16",
            "-u",
            "9",
            "--wire",
            "udp:9000:9001",
            "--mac",
            "02:00:00:00:00:01",
            "--ip",
            "10.0.0.1",
        ])
        .unwrap();
        let Command::Perftest(a) = cli.command else {
            panic!("not perftest")
        };
        assert_eq!(a.verb, Verb::Atomic);
        assert_eq!(a.server.as_deref(), Some("127.0.0.1"));
        assert_eq!(
            (a.port, a.iters, a.mtu, a.tx_depth),
            (18600, 5, Some(1024), 16)
        );
        assert_eq!(
            (a.atomic_type, a.gid_index, a.cpu_freq),
            (AtomicType::CmpAndSwap, Some(1), true)
        );
        assert_eq!(a.qp_timeout, Some(9));
        let parse = |args: &[&str]| crate::parse_on_a_wire("perftest", args);
        let cli = parse(&["write", "-s", "1048576"]).unwrap();
        let Command::Perftest(a) = cli.command else {
            panic!("not perftest")
        };
        assert_eq!(
            (a.verb, a.server, a.size, a.port),
            (Verb::Write, None, Some(1048576), 18515)
        );
        for bad in ["0", "32"] {
            assert!(
                parse(&["write", "-u", bad]).is_err(),
                "-u {bad} was accepted"
            );
        }
        assert!(parse(&["bogus"]).is_err());
    }

    #[test]
    fn bad_arguments_are_refused_before_anything_is_opened() {
        let base = PerftestArgs::new(
            Verb::Write,
            WireSpec::Udp { local: 1, peer: 2 },
            [2, 0, 0, 0, 0, 1],
            [10, 0, 0, 1],
        );
        type Change = fn(&mut PerftestArgs);
        let cases: [(Change, &str); 6] = [
            (|a| a.mtu = Some(1500), "the path MTU must be"),
            (|a| a.size = Some(0), "the size must be"),
            (|a| a.iters = 4, "between 5 and 100000000"),
            (
                |a| {
                    a.verb = Verb::Atomic;
                    a.size = Some(16)
                },
                "cannot be changed for Atomic",
            ),
            (|a| a.timeout = -1.0, "--timeout"),
            (|a| a.link.backend = "fpga".into(), "unknown backend"),
        ];
        for (change, want) in cases {
            let mut a = base.clone();
            change(&mut a);
            let e = run_with(&a, Prebound::default(), &mut Vec::new()).unwrap_err();
            assert!(format!("{e:#}").contains(want), "{e:#} (wanted {want:?})");
        }
    }

    /// One rocenic perftest server and one client, each with its own model NIC, cabled by
    /// UDP on 127.0.0.1: the whole handshake and the traffic, without QEMU.
    fn loopback(verb: Verb, size: Option<u32>, atomic: AtomicType, iters: u32, loss: f64) {
        let (c, s, client_out, server_out) =
            loopback_run(verb, size, atomic, iters, loss, None, None);
        let c = c.unwrap_or_else(|e| panic!("client: {e:#}\n{client_out}\nserver:\n{server_out}"));
        let s = s.unwrap_or_else(|e| panic!("server: {e:#}\n{server_out}\nclient:\n{client_out}"));
        check_loopback(verb, atomic, iters, loss, &c, &s, &client_out, &server_out);
    }

    type Outcome = anyhow::Result<PerftestReport>;

    #[allow(clippy::too_many_arguments)]
    fn loopback_run(
        verb: Verb,
        size: Option<u32>,
        atomic: AtomicType,
        iters: u32,
        loss: f64,
        violate: Option<Violation>,
        advertise_bad: Option<Violation>,
    ) -> (Outcome, Outcome, String, String) {
        use std::net::UdpSocket;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (ua, ub) = (
            UdpSocket::bind("127.0.0.1:0").unwrap(),
            UdpSocket::bind("127.0.0.1:0").unwrap(),
        );
        let (pa, pb) = (
            ua.local_addr().unwrap().port(),
            ub.local_addr().unwrap().port(),
        );
        let (mac_a, mac_b) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let mut sa = PerftestArgs::new(
            verb,
            WireSpec::Udp {
                local: pa,
                peer: pb,
            },
            mac_a,
            [10, 0, 0, 1],
        );
        sa.size = size;
        sa.iters = iters;
        sa.atomic_type = atomic;
        sa.mtu = Some(1024);
        sa.port = port;
        sa.timeout = 20.0;
        sa.link.peer_mac = Some(mac_b);
        let mut ca = sa.clone();
        ca.server = Some("127.0.0.1".into());
        ca.link.wire = WireSpec::Udp {
            local: pb,
            peer: pa,
        };
        ca.link.mac = mac_b;
        ca.link.ip = [10, 0, 0, 2];
        ca.link.peer_mac = Some(mac_a);
        ca.link.faults.loss = loss;
        ca.link.faults.seed = 9;
        ca.violate = violate;
        sa.advertise_bad = advertise_bad;
        let server = std::thread::spawn(move || {
            let pre = Prebound {
                listener: Some(listener),
                udp: Some(ua),
            };
            let mut out = Vec::new();
            let r = run_with(&sa, pre, &mut out);
            (r, String::from_utf8_lossy(&out).into_owned())
        });
        let mut out = Vec::new();
        let pre = Prebound {
            listener: None,
            udp: Some(ub),
        };
        let client = run_with(&ca, pre, &mut out);
        let client_out = String::from_utf8_lossy(&out).into_owned();
        let (server, server_out) = server.join().unwrap();
        (client, server, client_out, server_out)
    }

    #[allow(clippy::too_many_arguments)]
    fn check_loopback(
        verb: Verb,
        atomic: AtomicType,
        iters: u32,
        loss: f64,
        c: &PerftestReport,
        s: &PerftestReport,
        client_out: &str,
        server_out: &str,
    ) {
        let n = u64::from(iters);
        assert_eq!(c.completions, n, "{client_out}");
        assert_eq!((c.local.qpn, c.local.rkey), (s.remote.qpn, s.remote.rkey));
        assert_eq!(c.remote.vaddr, s.local.vaddr);
        assert_eq!(c.peer_version, "6.06");
        if verb == Verb::Send {
            assert_eq!(s.completions, n, "{server_out}");
        } else {
            // The server got the client's report.
            assert_eq!(
                (s.result.iters, s.result.size),
                (n, c.result.size),
                "{server_out}"
            );
            assert!(
                s.result.bw_avg > 0.0 && s.result.msg_rate > 0.0,
                "{server_out}"
            );
        }
        if loss > 0.0 {
            assert!(
                c.wire.fault_tx_dropped + c.wire.fault_rx_dropped > 0,
                "{client_out}"
            );
        }
        let checked = |r: &PerftestReport| r.verified.clone();
        match (verb, atomic) {
            (Verb::Read, _) => {
                assert!(
                    checked(c).contains("matched the first read"),
                    "{client_out}"
                );
                assert!(checked(s).contains("unchanged"), "{server_out}");
            }
            (Verb::Atomic, AtomicType::FetchAndAdd) => {
                assert!(
                    checked(s).contains(&format!("grew by {n} in all")),
                    "{server_out}"
                );
            }
            (Verb::Atomic, AtomicType::CmpAndSwap) => {
                // 64 words: each first visit swaps nothing, each later one adds 1.
                let visits = n.saturating_sub(64);
                assert!(
                    checked(c).contains(&format!("; {visits} returned")),
                    "{client_out}"
                );
                assert!(
                    checked(s).contains(&format!("sum to {visits} ")),
                    "{server_out}"
                );
            }
            _ => {}
        }
    }

    #[test]
    fn rocenic_against_rocenic_every_verb() {
        loopback(Verb::Write, Some(3000), AtomicType::FetchAndAdd, 20, 0.0);
        loopback(Verb::Read, Some(100), AtomicType::FetchAndAdd, 100, 0.0);
        loopback(Verb::Send, Some(5000), AtomicType::FetchAndAdd, 20, 0.0);
        loopback(Verb::Atomic, None, AtomicType::FetchAndAdd, 100, 0.0);
        loopback(Verb::Atomic, None, AtomicType::CmpAndSwap, 100, 0.0);
    }

    #[test]
    fn rocenic_against_rocenic_with_loss() {
        loopback(Verb::Read, Some(2500), AtomicType::FetchAndAdd, 30, 0.05);
        loopback(Verb::Send, Some(2500), AtomicType::FetchAndAdd, 30, 0.05);
    }

    #[test]
    fn access_violations_are_refused_both_ways() {
        for v in [Violation::Rkey, Violation::Bounds] {
            // Our client breaks the rules: REM_ACCESS_ERR, and both ends finish normally.
            let (c, s, co, so) = loopback_run(
                Verb::Write,
                Some(4096),
                AtomicType::FetchAndAdd,
                5,
                0.0,
                Some(v),
                None,
            );
            let c = c.unwrap_or_else(|e| panic!("{v:?} client: {e:#}\n{co}\n{so}"));
            let s = s.unwrap_or_else(|e| panic!("{v:?} server: {e:#}\n{so}\n{co}"));
            assert!(
                c.verified
                    .contains("completed REM_ACCESS_ERR (NAK syndrome 0x62)"),
                "{co}"
            );
            assert_eq!(s.result.iters, 0, "{so}");
            assert!(s.verified.contains("0 of the 4096 bytes"), "{so}");
            // Our server shows a bad key or address: our NAK fails the client.
            let (c, s, co, so) = loopback_run(
                Verb::Write,
                Some(4096),
                AtomicType::FetchAndAdd,
                5,
                0.0,
                None,
                Some(v),
            );
            let e = c.expect_err("the client must fail");
            assert!(format!("{e:#}").contains("REM_ACCESS_ERR"), "{e:#}\n{co}");
            let s = s.unwrap_or_else(|e| panic!("{v:?} server: {e:#}\n{so}\n{co}"));
            assert!(s.verified.contains("NAK(s), the client gave up"), "{so}");
        }
    }
}
