//! `rocenic pingpong`: the counterpart of rdma-core's `ibv_rc_pingpong`, run by our NIC
//! on a real wire, so either side of a ping-pong can be the original program (on Linux
//! soft-RoCE in a QEMU guest, say) and the other rocenic.
//!
//! What is the same as the original, so the two interoperate:
//!
//! - options `SERVER`, `-p/--port` (18515), `-s/--size` (4096), `-m/--mtu` (1024),
//!   `-r/--rx-depth` (500), `-n/--iters` (1000), `-g/--gid-idx`, `-c/--chk`;
//! - the TCP handshake ([`handshake`]): `%04x:%06x:%06x:%s` = LID:QPN:PSN:GID + NUL, the
//!   server connecting its QP before it answers, the client's final `"done"`;
//! - the QP: RC, one send WR, `rx_depth` receives of SIZE bytes kept posted (topped up when
//!   one or none is left), one CQ of `rx_depth + 1`, access flags 0, a random 24-bit PSN,
//!   path MTU from `-m`, `min_rnr_timer` 12, `max_dest_rd_atomic` 1, `timeout` 14 (6 on
//!   the slow RTL backend: `WiredNic::qp_timeout`), `retry_cnt` 7, `rnr_retry` 7,
//!   `max_rd_atomic` 1; sends are signaled, and inline when SIZE fits the QP's inline data;
//! - the data flow: the client sends SIZE bytes; the server, having received them, sends
//!   its buffer (what it just received) back; the next send waits for both the previous
//!   send's and the receive's completions; ITERS round trips; a failed completion status
//!   stops the run;
//! - the summary: `%lld bytes in %.2f seconds = %.2f Mbit/sec` and
//!   `%d iters in %.2f seconds = %.2f usec/iter` (wall clock; bytes = SIZE x ITERS x 2).
//!
//! What rocenic adds or does differently:
//!
//! - the port: `--backend model` (the behavioural NIC), `--wire udp:LOCAL:PEER`, `--mac`,
//!   `--ip` (our GID is `::ffff:IP`, our only GID: index 0; `-g` may be omitted or 0, and
//!   unlike the original the GID is sent without it, since RoCE cannot work without one),
//!   `--peer-mac` (else the peer's MAC is resolved by ARP from the IPv4 address in its
//!   GID), `--pcap` (every frame on the wire, both directions), `--timeout` (bounds every
//!   wait: TCP connection retries, accept, each handshake read, ARP, each completion),
//!   `--loss`/`--dup`/`--reorder`/`--seed` (seeded faults on our side of the wire, both
//!   directions, so both stacks' retransmission paths meet);
//! - verification: every receive must carry exactly SIZE bytes. The client sends a
//!   different position-dependent pattern in each iteration (page-start bytes 0, so an
//!   original server run with `-c` is satisfied) from a send buffer and receives into a
//!   separate buffer, and checks every echo byte for byte. The server keeps the
//!   original's single buffer, filled with 0x7b, and echoes what it received; with `-c` it
//!   checks the first byte of each 4 KiB page is 0 at the end, as the original server does;
//! - the summary adds the simulated cycles (250 MHz core clock), the verification and the
//!   wire's counters. The world's clock is paced against wall-clock time (see
//!   `rocenic_sim::udp_wire`), so simulated time is at most the wall time.

pub mod handshake;

use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context as _};
use clap::Args;
use rocenic_sim::UdpWireStats;

use crate::setup::{connect, ConnInfo, ConnParams};
use crate::wire::{
    check_gid_index, close_session, fmt_gid, fmt_mac, gid_of_ipv4, ipv4_of_gid, WireLinkArgs,
    WireSpec, WiredNic,
};
use handshake::{client_exchange, server_accept, server_finish, Dest, DEFAULT_PORT};
use rocenic_driver::verbs::{
    access, qp_attr, send_flags, Buffer, Context, Counter, Cq, Mr, Mtu, Qp, QpAttr, QpCap,
    QpInitAttr, QpState, RecvWr, SendWr, Wc, WcStatus, WrOpcode,
};

/// `wr_id` of receives (`PINGPONG_RECV_WRID`).
pub const RECV_WRID: u64 = 1;
/// `wr_id` of sends (`PINGPONG_SEND_WRID`).
pub const SEND_WRID: u64 = 2;
/// What the original fills its buffer with.
pub const FILL: u8 = 0x7b;
/// The page size `-c` works in (the guest's and the original's `sysconf(_SC_PAGESIZE)`).
pub const PAGE_SIZE: usize = 4096;
/// Longest wait for the NIC to write host memory between two empty polls of the CQ.
const POLL_WAIT: Duration = Duration::from_millis(5);
/// How long the NIC keeps running after the last completion, before teardown.
const DRAIN: Duration = Duration::from_millis(2);
/// Largest message (the buffer is allocated in simulated host memory).
const MAX_SIZE: u32 = 1 << 30;

/// Arguments of `rocenic pingpong` (see the module documentation).
#[derive(Debug, Clone, Args)]
pub struct PingpongArgs {
    /// Connect to the pingpong server at this host; without it, be the server and wait
    /// for a client on 127.0.0.1:PORT.
    pub server: Option<String>,
    /// Listen on / connect to this TCP port.
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Size of the message to exchange, bytes.
    #[arg(short = 's', long = "size", default_value_t = 4096)]
    pub size: u32,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    #[arg(short = 'm', long = "mtu", default_value_t = 1024)]
    pub mtu: u32,
    /// Receives to post at a time.
    #[arg(short = 'r', long = "rx-depth", default_value_t = 500)]
    pub rx_depth: u32,
    /// Number of exchanges (round trips).
    #[arg(short = 'n', long = "iters", default_value_t = 1000)]
    pub iters: u32,
    /// Local port GID index: our port has one GID, index 0 (::ffff:IP), used with or
    /// without this option.
    #[arg(short = 'g', long = "gid-idx")]
    pub gid_idx: Option<i32>,
    /// Validate the received buffer as the original's -c does (the server checks that the
    /// first byte of every 4 KiB page is 0; a rocenic client always sends that).
    #[arg(short = 'c', long = "chk")]
    pub chk: bool,
    /// The wire and our port on it.
    #[command(flatten)]
    pub link: WireLinkArgs,
    /// Bound on every wait, seconds: connecting (with retries), accepting, each handshake
    /// read, ARP resolution, and the time between two completions.
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
}

impl PingpongArgs {
    /// The command line's defaults, as a server, with the given port addresses.
    pub fn new(wire: WireSpec, mac: [u8; 6], ip: [u8; 4]) -> Self {
        PingpongArgs {
            server: None,
            port: DEFAULT_PORT,
            size: 4096,
            mtu: 1024,
            rx_depth: 500,
            iters: 1000,
            gid_idx: None,
            chk: false,
            link: WireLinkArgs::new(wire, mac, ip),
            timeout: 30.0,
        }
    }
}

/// Sockets bound by the caller, used instead of binding `--port` and `--wire`'s
/// LOCAL_PORT (tests bind port 0 to get free ports).
#[derive(Debug, Default)]
pub struct Prebound {
    /// The server's listening socket.
    pub listener: Option<TcpListener>,
    /// The wire's UDP socket.
    pub udp: Option<UdpSocket>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct PingpongReport {
    /// Client (true) or server.
    pub client: bool,
    pub size: u32,
    pub iters: u32,
    pub mtu: u32,
    /// Our address and the peer's, as exchanged.
    pub local: Dest,
    pub remote: Dest,
    /// The MAC our QP sends to.
    pub peer_mac: [u8; 6],
    /// Wall-clock time of the ping-pong loop.
    pub wall: Duration,
    /// Simulated cycles of the loop.
    pub cycles: u64,
    pub sends: u64,
    pub receives: u64,
    /// Echoes checked byte for byte (client).
    pub verified_echoes: u64,
    /// Request packets the NIC sent again.
    pub retransmits: u64,
    /// The NIC's global counters at the end (indexed by `Counter as usize`).
    pub counters: [u64; Counter::COUNT],
    /// The wire's counters at the end.
    pub wire: UdpWireStats,
}

/// Runs the command.
pub fn run(args: &PingpongArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    run_with(args, Prebound::default(), out).map(|_| ())
}

/// Runs the command with sockets the caller bound; returns what happened.
pub fn run_with(
    args: &PingpongArgs,
    pre: Prebound,
    out: &mut dyn Write,
) -> anyhow::Result<PingpongReport> {
    args.link.check_backend("pingpong")?;
    let mtu = Mtu::from_bytes(args.mtu).ok_or_else(|| {
        anyhow::anyhow!(
            "-m {}: the path MTU must be 256, 512, 1024, 2048 or 4096",
            args.mtu
        )
    })?;
    if args.size == 0 || args.size > MAX_SIZE {
        bail!("-s {}: the size must be 1 ..= {MAX_SIZE} bytes", args.size);
    }
    if args.iters == 0 {
        bail!("-n 0: at least one iteration");
    }
    if args.rx_depth == 0 {
        bail!("-r 0: at least one receive must be posted");
    }
    check_gid_index("-g", args.gid_idx, args.link.ip)?;
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!(
            "--timeout {}: must be a positive number of seconds",
            args.timeout
        );
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    // A server listens first, so a port in use is reported before anything else.
    let listener = match (&args.server, pre.listener) {
        (Some(_), _) => None,
        (None, Some(l)) => Some(l),
        (None, None) => Some(
            TcpListener::bind((Ipv4Addr::LOCALHOST, args.port))
                .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?,
        ),
    };
    let (nic, mut ctx) = args.link.open_nic(pre.udp)?;
    let result = session(args, mtu, timeout, &nic, &mut ctx, listener, out);
    let (mut report, wire) = close_session(&nic, ctx, result)?;
    report.wire = wire;
    Ok(report)
}

/// A random 24-bit PSN (`lrand48() & 0xffffff`).
pub(crate) fn random_psn() -> u32 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(t);
    h.write_u32(std::process::id());
    (h.finish() & 0xff_ffff) as u32
}

/// The client's message of iteration `k`: distinct per iteration and position, with the
/// first byte of every page 0 (what an original server's `-c` checks).
pub fn pattern(k: u64, len: usize) -> Vec<u8> {
    let salt = (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32;
    (0..len)
        .map(|i| {
            if i % PAGE_SIZE == 0 {
                0
            } else {
                let x = (i as u32 ^ salt).wrapping_mul(0x85eb_ca6b);
                (x >> 24) as u8 ^ (x >> 13) as u8
            }
        })
        .collect()
}

fn print_dest(out: &mut dyn Write, which: &str, d: &Dest) -> anyhow::Result<()> {
    writeln!(
        out,
        "  {which} LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
        d.lid,
        d.qpn,
        d.psn,
        fmt_gid(d.gid)
    )?;
    Ok(())
}

/// The QP and the buffers of one side.
struct Side {
    cq: Cq,
    qp: Qp,
    /// Receives land here (and, on the server, sends read from here).
    buf: Buffer,
    mr: Mr,
    /// The client's separate send buffer.
    send: Option<(Buffer, Mr)>,
    inline: bool,
}

impl Side {
    fn post_recvs(&self, ctx: &mut Context, n: u32) -> anyhow::Result<()> {
        let wr = RecvWr {
            wr_id: RECV_WRID,
            sg_list: vec![self.mr.sge(0, self.buf.len as u32)],
        };
        ctx.post_recv(self.qp, &vec![wr; n as usize])
            .with_context(|| format!("Couldn't post {n} receives"))
    }

    /// Posts the send of round `round`; a client first writes that round's pattern into its
    /// send buffer (and keeps a copy in `sent` to check the echo against).
    fn send_round(&self, ctx: &mut Context, round: u64, sent: &mut Vec<u8>) -> anyhow::Result<()> {
        if let Some((b, _)) = &self.send {
            *sent = pattern(round, b.len);
            ctx.write(b, 0, sent)?;
        }
        self.post_send(ctx)
    }

    fn post_send(&self, ctx: &mut Context) -> anyhow::Result<()> {
        let mr = self.send.as_ref().map_or(&self.mr, |(_, m)| m);
        let mut flags = send_flags::SIGNALED;
        if self.inline {
            flags |= send_flags::INLINE;
        }
        let wr = SendWr {
            wr_id: SEND_WRID,
            opcode: WrOpcode::Send,
            send_flags: flags,
            sg_list: vec![mr.sge(0, self.buf.len as u32)],
            ..SendWr::default()
        };
        ctx.post_send(self.qp, &[wr]).context("Couldn't post send")
    }
}

fn setup(ctx: &mut Context, args: &PingpongArgs) -> anyhow::Result<Side> {
    let attr = ctx.device_attr();
    if args.rx_depth > attr.max_qp_wr {
        bail!(
            "-r {}: the device's queues hold at most {} work requests",
            args.rx_depth,
            attr.max_qp_wr
        );
    }
    let size = args.size as usize;
    let client = args.server.is_some();
    let pd = ctx.alloc_pd()?;
    let buf = ctx.alloc_buf(size)?;
    ctx.write(&buf, 0, &vec![FILL; size])?;
    let mr = ctx.reg_mr(pd, &buf, access::LOCAL_WRITE)?;
    let send = if client {
        let b = ctx.alloc_buf(size)?;
        let m = ctx.reg_mr(pd, &b, 0)?;
        Some((b, m))
    } else {
        None
    };
    let cq = ctx.create_cq(args.rx_depth + 1)?;
    let qp = ctx.create_qp(
        pd,
        &QpInitAttr {
            send_cq: cq,
            recv_cq: cq,
            cap: QpCap {
                max_send_wr: 1,
                max_recv_wr: args.rx_depth,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: attr.max_inline_data,
            },
        },
    )?;
    let init = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: 0,
        ..QpAttr::default()
    };
    ctx.modify_qp(qp, &init, qp_attr::STATE | qp_attr::ACCESS_FLAGS)
        .context("Failed to modify QP to INIT")?;
    Ok(Side {
        cq,
        qp,
        buf,
        mr,
        send,
        inline: args.size <= qp.cap.max_inline_data,
    })
}

/// The peer's IPv4 address from its GID, with a clear refusal of GIDs RoCE over IPv4
/// cannot use.
pub(crate) fn peer_ipv4(remote: &Dest) -> anyhow::Result<[u8; 4]> {
    if remote.gid == [0; 16] {
        bail!(
            "the peer sent no GID (::): run ibv_rc_pingpong with -g <index of its \
             ::ffff:IPv4 GID> (1 on Linux soft-RoCE)"
        );
    }
    ipv4_of_gid(remote.gid).ok_or_else(|| {
        anyhow::anyhow!(
            "the peer's GID {} is not IPv4-mapped: rocenic speaks RoCE v2 over IPv4; give \
             the peer the index of its ::ffff:IPv4 GID",
            fmt_gid(remote.gid)
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn connect_qp(
    ctx: &mut Context,
    nic: &WiredNic,
    side: &Side,
    args: &PingpongArgs,
    mtu: Mtu,
    timeout: Duration,
    me: &Dest,
    remote: &Dest,
) -> anyhow::Result<[u8; 6]> {
    let peer_ip = peer_ipv4(remote)?;
    let peer_mac = match args.link.peer_mac {
        Some(m) => m,
        None => nic.resolve(peer_ip, timeout)?,
    };
    let params = ConnParams {
        mtu,
        access: 0,
        timeout: nic.qp_timeout(),
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 12,
        max_rd_atomic: 1,
    };
    let local = ConnInfo {
        qpn: me.qpn,
        psn: me.psn,
        mac: args.link.mac,
        ip: args.link.ip,
    };
    let peer = ConnInfo {
        qpn: remote.qpn,
        psn: remote.psn,
        mac: peer_mac,
        ip: peer_ip,
    };
    connect(ctx, side.qp, &local, &peer, &params).context("Failed to connect the QP (RTR/RTS)")?;
    Ok(peer_mac)
}

/// Counts a send about to be posted and stops the injected faults before the last round
/// trip (see docs/interop.md, "The flaky rxe_client_with_loss_dup_reorder").
///
/// ibv_rc_pingpong ends without a closing handshake: each side exits, destroying its QP,
/// as soon as its own last completions are in. In the last round the client's message
/// M and the server's echo E are each acknowledged after the other side may already
/// have everything it waits for: a lost ACK of M (the server may have exited once E was
/// acknowledged) or of E (the client exits once it has E and the ACK of M) is
/// retransmitted to a QP that no longer exists, and the sender ends in RETRY_EXC_ERR
/// (rxe, which treats retry_cnt 7 as "for ever", hangs instead). No RC stack can recover
/// that, so faults there test only this race. The client stops them as it posts M, the
/// server as it posts the echo before (so that the ACK of M is sent clean); with one
/// iteration the server stops them before it starts.
fn spare_final_exchange(
    nic: &WiredNic,
    client: bool,
    posted: &mut u64,
    iters: u64,
    stopped: &mut bool,
) -> anyhow::Result<()> {
    let clean_from = if client { iters } else { iters - 1 };
    if *posted + 1 >= clean_from && !*stopped {
        *stopped = nic.stop_faults()?;
    }
    *posted += 1;
    Ok(())
}

fn session(
    args: &PingpongArgs,
    mtu: Mtu,
    timeout: Duration,
    nic: &WiredNic,
    ctx: &mut Context,
    listener: Option<TcpListener>,
    out: &mut dyn Write,
) -> anyhow::Result<PingpongReport> {
    let client = args.server.is_some();
    let side = setup(ctx, args)?;
    side.post_recvs(ctx, args.rx_depth)?;
    let mut routs = args.rx_depth;
    let me = Dest {
        lid: 0,
        qpn: side.qp.qp_num,
        psn: random_psn(),
        gid: gid_of_ipv4(args.link.ip),
    };
    print_dest(out, "local address: ", &me)?;
    out.flush()?;

    let mut idle = |d: Duration| nic.run_for(d);
    let (remote, peer_mac) = match (&args.server, &listener) {
        (Some(server), _) => {
            let remote = client_exchange(server, args.port, &me, timeout, &mut idle)?;
            let mac = connect_qp(ctx, nic, &side, args, mtu, timeout, &me, &remote)?;
            (remote, mac)
        }
        (None, Some(l)) => {
            let (stream, remote) = server_accept(l, timeout, &mut idle)?;
            let mac = connect_qp(ctx, nic, &side, args, mtu, timeout, &me, &remote)?;
            server_finish(stream, &me, timeout, &mut idle)?;
            (remote, mac)
        }
        (None, None) => unreachable!("a server always has a listener"),
    };
    drop(listener);
    print_dest(out, "remote address:", &remote)?;
    out.flush()?;

    let size = args.size as usize;
    let iters = u64::from(args.iters);
    let mut pending = RECV_WRID;
    let mut round = 0u64;
    let mut sent_pattern = Vec::new();
    let start = Instant::now();
    let c0 = ctx.now();
    // Injected faults end before the last send is posted: see `spare_final_exchange`.
    let mut posted = 0u64;
    let mut faults_stopped = false;
    if !client && iters == 1 {
        faults_stopped = nic.stop_faults()?;
    }
    if client {
        spare_final_exchange(nic, client, &mut posted, iters, &mut faults_stopped)?;
        side.send_round(ctx, round, &mut sent_pattern)?;
        pending |= SEND_WRID;
    }
    let (mut scnt, mut rcnt, mut verified) = (0u64, 0u64, 0u64);
    let mut echo = vec![0u8; if client { size } else { 0 }];
    let mut wcs = [Wc::default(); 2];
    let mut last_progress = Instant::now();
    while rcnt < iters || scnt < iters {
        let n = ctx.poll_cq(side.cq, &mut wcs)?;
        if n == 0 {
            if last_progress.elapsed() >= timeout {
                bail!(
                    "no completion for {:.1} s after {scnt} sends and {rcnt} receives of {iters}: \
                     the peer stopped answering (wire: {}; NIC retransmits {})",
                    timeout.as_secs_f64(),
                    nic.stats(),
                    ctx.counters()[Counter::Retransmits as usize]
                );
            }
            nic.wait_for_dma_write(POLL_WAIT);
            continue;
        }
        last_progress = Instant::now();
        for wc in &wcs[..n] {
            if wc.status != WcStatus::Success {
                bail!(
                    "Failed status {} ({}) for wr_id {} ({wc})",
                    wc.status,
                    u8::from(wc.status),
                    wc.wr_id
                );
            }
            match wc.wr_id {
                SEND_WRID => scnt += 1,
                RECV_WRID => {
                    if wc.byte_len as usize != size {
                        bail!(
                            "receive {rcnt} carried {} bytes, expected {size}: both sides must \
                             use the same -s",
                            wc.byte_len
                        );
                    }
                    routs -= 1;
                    if routs <= 1 {
                        side.post_recvs(ctx, args.rx_depth - routs)?;
                        routs = args.rx_depth;
                    }
                    rcnt += 1;
                }
                other => bail!("Completion for unknown wr_id {other}"),
            }
            pending &= !wc.wr_id;
            if pending == 0 && client {
                // Round `round` is complete: its echo is in the receive buffer.
                ctx.read(&side.buf, 0, &mut echo)?;
                if let Some(i) = echo.iter().zip(&sent_pattern).position(|(a, b)| a != b) {
                    bail!(
                        "echo {round}: byte {i} is {:#04x}, sent {:#04x}",
                        echo[i],
                        sent_pattern[i]
                    );
                }
                verified += 1;
                round += 1;
            }
            if scnt < iters && pending == 0 {
                spare_final_exchange(nic, client, &mut posted, iters, &mut faults_stopped)?;
                side.send_round(ctx, round, &mut sent_pattern)?;
                pending = RECV_WRID | SEND_WRID;
            }
        }
    }
    let wall = start.elapsed();
    let cycles = ctx.now() - c0;
    // Let frames still queued at the port leave (the ACK of the last message may trail
    // its completion) before the QP is destroyed.
    nic.run_for(DRAIN);

    let usec = (wall.as_secs_f64() * 1e6).max(1e-3);
    let bytes = u64::from(args.size) * iters * 2;
    writeln!(
        out,
        "{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec",
        usec / 1e6,
        bytes as f64 * 8.0 / usec
    )?;
    writeln!(
        out,
        "{iters} iters in {:.2} seconds = {:.2} usec/iter",
        usec / 1e6,
        usec / iters as f64
    )?;
    let mhz = f64::from(ctx.device_attr().clock_mhz);
    let sim_usec = (cycles as f64 / mhz).max(1e-3);
    writeln!(
        out,
        "simulated: {cycles} cycles at {mhz} MHz = {:.2} usec: {:.2} Mbit/sec, {:.2} usec/iter",
        sim_usec,
        bytes as f64 * 8.0 / sim_usec,
        sim_usec / iters as f64
    )?;
    if client {
        writeln!(
            out,
            "data: {verified} echoes of {size} bytes verified byte for byte"
        )?;
    } else {
        writeln!(out, "data: {rcnt} receives of {size} bytes each")?;
    }
    if args.chk && !client {
        let mut data = vec![0u8; size];
        ctx.read(&side.buf, 0, &mut data)?;
        let bad: Vec<usize> = (0..size)
            .step_by(PAGE_SIZE)
            .filter(|&i| data[i] != 0)
            .map(|i| i / PAGE_SIZE)
            .collect();
        for p in &bad {
            writeln!(out, "invalid data in page {p}")?;
        }
        if !bad.is_empty() {
            bail!(
                "-c: {} of {} pages hold invalid data",
                bad.len(),
                size.div_ceil(PAGE_SIZE)
            );
        }
    }
    if faults_stopped {
        writeln!(
            out,
            "faults: stopped before the last round trip (a lost final ACK cannot be \
             recovered once the peer has exited)"
        )?;
    }
    let counters = ctx.counters();
    let retransmits = counters[Counter::Retransmits as usize];
    writeln!(
        out,
        "peer MAC {}; NIC retransmits {retransmits}; wire: {}",
        fmt_mac(peer_mac),
        nic.stats()
    )?;
    Ok(PingpongReport {
        client,
        size: args.size,
        iters: args.iters,
        mtu: args.mtu,
        local: me,
        remote,
        peer_mac,
        wall,
        cycles,
        sends: scnt,
        receives: rcnt,
        verified_echoes: verified,
        retransmits,
        counters,
        wire: nic.stats(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_differs_per_round_and_keeps_page_starts_zero() {
        let a = pattern(0, 3 * PAGE_SIZE + 5);
        let b = pattern(1, 3 * PAGE_SIZE + 5);
        assert_ne!(a, b);
        for p in 0..4 {
            assert_eq!((a[p * PAGE_SIZE], b[p * PAGE_SIZE]), (0, 0));
        }
        // Neighbouring bytes differ mostly: a shifted copy would be caught.
        let same = a.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(same < a.len() / 50, "{same} equal neighbours");
        assert_eq!(pattern(7, 10), pattern(7, 10));
        assert!(random_psn() < 1 << 24);
    }

    #[test]
    fn the_command_line_has_the_originals_option_names() {
        use crate::{Cli, Command};
        use clap::Parser;
        let cli = Cli::try_parse_from([
            "rocenic",
            "pingpong",
            "127.0.0.1",
            "-p",
            "18600",
            "-s",
            "1",
            "-n",
            "5",
            "-g",
            "0",
            "-m",
            "4096",
            "-r",
            "16",
            "-c",
            "--backend",
            "model",
            "--wire",
            "udp:9000:9001",
            "--mac",
            "02:00:00:00:00:02",
            "--ip",
            "10.0.2.2",
            "--peer-mac",
            "52:54:00:12:34:56",
            "--pcap",
            "x.pcap",
            "--timeout",
            "5",
        ])
        .unwrap();
        let Command::Pingpong(a) = cli.command else {
            panic!("not pingpong")
        };
        assert_eq!(a.server.as_deref(), Some("127.0.0.1"));
        assert_eq!(
            (a.port, a.size, a.iters, a.mtu, a.rx_depth),
            (18600, 1, 5, 4096, 16)
        );
        assert_eq!((a.gid_idx, a.chk, a.timeout), (Some(0), true, 5.0));
        assert_eq!(
            a.link.wire,
            WireSpec::Udp {
                local: 9000,
                peer: 9001
            }
        );
        assert_eq!((a.link.mac, a.link.ip), ([2, 0, 0, 0, 0, 2], [10, 0, 2, 2]));
        assert_eq!(a.link.peer_mac, Some([0x52, 0x54, 0, 0x12, 0x34, 0x56]));
        // The long names too, and the defaults of the original.
        let cli = Cli::try_parse_from([
            "rocenic",
            "pingpong",
            "--port=18601",
            "--size=64",
            "--iters=3",
            "--gid-idx=0",
            "--mtu=256",
            "--rx-depth=8",
            "--chk",
            "--wire=udp:1:2",
            "--mac=02:00:00:00:00:01",
            "--ip=10.0.0.1",
        ])
        .unwrap();
        let Command::Pingpong(a) = cli.command else {
            panic!("not pingpong")
        };
        assert_eq!((a.server, a.port, a.size, a.mtu), (None, 18601, 64, 256));
        let d = crate::parse_on_a_wire("pingpong", &[]).unwrap();
        let Command::Pingpong(d) = d.command else {
            panic!("not pingpong")
        };
        assert_eq!(
            (d.port, d.size, d.mtu, d.rx_depth, d.iters, d.gid_idx),
            (18515, 4096, 1024, 500, 1000, None)
        );
        for (flag, bad, want) in [
            ("--mac", "02:00:00:00:00", "is not a MAC address"),
            ("--ip", "10.0.0", "is not an IPv4 address"),
            ("--wire", "udp:5", "expected udp:LOCAL_PORT:PEER_PORT"),
            ("--peer-mac", "ff:ff:ff:ff:ff:ff", "multicast"),
        ] {
            let mut argv = vec!["rocenic", "pingpong"];
            for (f, v) in [
                ("--wire", "udp:1:2"),
                ("--mac", "02:00:00:00:00:01"),
                ("--ip", "10.0.0.1"),
            ] {
                if f != flag {
                    argv.extend([f, v]);
                }
            }
            argv.extend([flag, bad]);
            let e = Cli::try_parse_from(argv).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn bad_arguments_are_refused_before_anything_is_opened() {
        let base = PingpongArgs::new(
            WireSpec::Udp { local: 1, peer: 2 },
            [2, 0, 0, 0, 0, 1],
            [10, 0, 0, 1],
        );
        type Change = fn(&mut PingpongArgs);
        let cases: [(Change, &str); 8] = [
            (|a| a.mtu = 1500, "the path MTU must be"),
            (|a| a.size = 0, "the size must be"),
            (|a| a.iters = 0, "at least one iteration"),
            (|a| a.rx_depth = 0, "at least one receive"),
            (|a| a.gid_idx = Some(0), "IPv6 is not supported"),
            (|a| a.gid_idx = Some(2), "GID index 2 is out of range"),
            (|a| a.timeout = 0.0, "--timeout"),
            (|a| a.link.backend = "fpga".into(), "unknown backend"),
        ];
        for (change, want) in cases {
            let mut a = base.clone();
            change(&mut a);
            let e = run_with(&a, Prebound::default(), &mut Vec::new()).unwrap_err();
            assert!(format!("{e:#}").contains(want), "{e:#} (wanted {want:?})");
        }
    }
}
