//! The control plane ([`Control`]: register file, command engine, context tables) against
//! the model's `Nic`: random command and register sequences, every status, output
//! argument, doorbell, QP event and counter compared.

use rocenic_hdl::bench::Rng;
use rocenic_hdl::control::cmd::{QPEV_ACTIVE, QPEV_DESTROYED, QPEV_ERROR, QPEV_RESET};
use rocenic_hdl::control::driver::{Rtl, FAULT_IOVA};
use rocenic_hdl::control::regfile::{DB_CQ, DB_RQ, DB_SQ};
use rocenic_model::{Nic, NicConfig};
use rocenic_proto::abi::cmd::{
    mr_key, qp_attr, CmdOpcode, CmdStatus, CqArgs, CreateQpArgs, ModifyQpArgs, MrArgs, PdArgs,
    QpCountersArgs,
};
use rocenic_proto::abi::regs::{self, Counter};
use rocenic_proto::abi::verbs::QpState;
use rocenic_proto::device::{Device, DeviceIo, DmaFault, DmaPort};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Host memory for the model: every IOVA below 2^63 is mapped (writes are counted),
/// anything above faults, so QUERY_QP_COUNTERS can end either way.
#[derive(Default)]
struct Memory {
    writes: usize,
    /// The bytes of the last write taken.
    last: Vec<u8>,
}

impl DmaPort for Memory {
    fn dma_read(&mut self, _now: u64, iova: u64, buf: &mut [u8]) -> Result<u64, DmaFault> {
        if iova >= FAULT_IOVA {
            return Err(DmaFault {
                iova,
                len: buf.len(),
                write: false,
            });
        }
        buf.fill(0);
        Ok(0)
    }
    fn dma_write(&mut self, _now: u64, iova: u64, data: &[u8]) -> Result<u64, DmaFault> {
        if iova >= FAULT_IOVA {
            return Err(DmaFault {
                iova,
                len: data.len(),
                write: true,
            });
        }
        self.writes += 1;
        self.last = data.to_vec();
        Ok(0)
    }
}

/// The model, ticked as a host would wait on it.
struct Model {
    nic: Nic,
    mem: Memory,
    now: u64,
}

impl Model {
    fn new() -> Model {
        let cfg = NicConfig::default();
        assert_eq!(cfg.max_qp, 1 << rocenic_hdl::QP_LOG, "the RTL's QP count");
        assert_eq!(cfg.max_mr, 1 << rocenic_hdl::MR_LOG, "the RTL's MR count");
        Model {
            nic: Nic::new(cfg),
            mem: Memory::default(),
            now: 0,
        }
    }
    fn tick(&mut self) {
        self.now += 1;
        let (mut rx, mut tx) = (VecDeque::new(), Vec::new());
        let mut io = DeviceIo {
            dma: &mut self.mem,
            rx: &mut rx,
            tx: &mut tx,
        };
        self.nic.tick(self.now, &mut io);
        assert!(
            tx.is_empty(),
            "the model sent a frame: the bench must not start traffic"
        );
    }
    fn command(&mut self, opcode: u32, all_outs: bool) -> (u32, [u32; 8]) {
        self.nic.bar_write(regs::CMD_OPCODE, opcode);
        let status = loop {
            self.tick();
            let s = self.nic.bar_read(regs::CMD_STATUS);
            if s & regs::CMD_STATUS_BUSY == 0 {
                break s;
            }
        };
        let mut outs = [0; 8];
        for (i, o) in outs.iter_mut().enumerate() {
            if all_outs || i == (opcode as usize) % 8 {
                *o = self.nic.bar_read(regs::cmd_out(i as u32));
            }
        }
        (status, outs)
    }
}

/// What the bench knows of the objects that exist (from the statuses, which both
/// devices agree on), to aim commands at them and to predict QP events.
#[derive(Default)]
struct Shadow {
    pds: BTreeSet<u32>,
    cqs: BTreeSet<u32>,
    mrs: BTreeSet<u32>,
    qps: BTreeMap<u32, QpState>,
}

fn small(rng: &mut Rng, n: u64) -> u32 {
    rng.below(n) as u32
}

/// An object number: mostly a few low ones (so objects collide), sometimes the edge of
/// the table or anything.
fn number(rng: &mut Rng, table: u32) -> u32 {
    match rng.below(20) {
        0 => table,
        1 => table - 1,
        2 => rng.next_u64() as u32,
        _ => small(rng, 6),
    }
}

fn pick<T: Copy>(rng: &mut Rng, set: &BTreeSet<T>) -> Option<T> {
    let n = set.len() as u64;
    (n > 0).then(|| *set.iter().nth(rng.below(n) as usize).expect("in range"))
}

fn ring_iova(rng: &mut Rng) -> u64 {
    let base = rng.next_u64() & 0x0000_ffff_ffff_ffc0;
    if rng.percent(10) {
        base | 8
    } else {
        base
    }
}

fn log_size(rng: &mut Rng) -> u32 {
    if rng.percent(10) {
        16 + small(rng, 20)
    } else {
        small(rng, 16)
    }
}

/// The attributes of a legal next step for a QP in `cur`, or a random one.
fn modify_args(rng: &mut Rng, qpn: u32, cur: Option<QpState>) -> ModifyQpArgs {
    let (target, required) = match (cur, rng.below(10)) {
        (Some(QpState::Reset), 0..=6) => (QpState::Init, qp_attr::REQ_INIT),
        (Some(QpState::Init), 0..=6) => (QpState::Rtr, qp_attr::REQ_RTR),
        (Some(QpState::Rtr), 0..=6) => (QpState::Rts, qp_attr::REQ_RTS),
        (Some(QpState::Rts), 0..=3) => (QpState::Sqd, qp_attr::STATE),
        (Some(QpState::Sqd), 0..=3) => (QpState::Rts, qp_attr::STATE),
        (_, 7) => (QpState::Err, qp_attr::STATE),
        (_, 8) => (QpState::Reset, qp_attr::STATE),
        _ => (
            QpState::from(small(rng, 8) as u8),
            rng.next_u64() as u32 & qp_attr::ALL,
        ),
    };
    let mut mask = required | (rng.next_u64() as u32 & qp_attr::ALL);
    if rng.percent(8) {
        mask &= !(1 << rng.below(21)); // maybe drop a required attribute
    }
    if rng.percent(5) {
        mask |= 1 << (21 + rng.below(11)); // an attribute the device does not know
    }
    if rng.percent(10) {
        mask &= !qp_attr::STATE;
    }
    let mut m = ModifyQpArgs {
        qpn,
        mask,
        state: u8::from(target),
        path_mtu: if rng.percent(90) {
            1 + small(rng, 5) as u8
        } else {
            rng.byte()
        },
        dest_qpn: if rng.percent(90) {
            rng.below(1 << 24) as u32
        } else {
            rng.next_u64() as u32
        },
        rq_psn: rng.next_u64() as u32,
        sq_psn: rng.next_u64() as u32,
        dest_mac: rng.bytes(6).try_into().expect("6"),
        dest_ip: rng.bytes(4).try_into().expect("4"),
        access: if rng.percent(90) {
            small(rng, 16)
        } else {
            rng.next_u64() as u32
        },
        timeout: if rng.percent(90) {
            1 + small(rng, 31) as u8
        } else {
            0
        },
        retry_cnt: small(rng, 8) as u8,
        rnr_retry: small(rng, 8) as u8,
        min_rnr_timer: small(rng, 32) as u8,
        max_rd_atomic: small(rng, 20) as u8,
        max_dest_rd_atomic: small(rng, 20) as u8,
        udp_sport: rng.next_u64() as u16,
    };
    if rng.percent(5) {
        m.state = rng.byte();
    }
    m
}

/// One random command: its opcode and 16 argument words (unnamed words random too).
fn random_command(rng: &mut Rng, sh: &Shadow) -> (u32, [u32; 16], usize) {
    let garbage: [u32; 16] = std::array::from_fn(|_| rng.next_u64() as u32);
    // Build up objects first, so that the commands on QPs mostly find one.
    let op = if sh.pds.is_empty() && rng.percent(50) {
        CmdOpcode::CreatePd
    } else if sh.cqs.is_empty() && rng.percent(50) {
        CmdOpcode::CreateCq
    } else if sh.qps.len() < 3 && rng.percent(40) {
        CmdOpcode::CreateQp
    } else {
        match rng.below(100) {
            0..=7 => CmdOpcode::CreatePd,
            8..=10 => CmdOpcode::DestroyPd,
            11..=18 => CmdOpcode::CreateCq,
            19..=21 => CmdOpcode::DestroyCq,
            22..=31 => CmdOpcode::RegMr,
            32..=36 => CmdOpcode::DeregMr,
            37..=50 => CmdOpcode::CreateQp,
            51..=74 => CmdOpcode::ModifyQp,
            75..=82 => CmdOpcode::QueryQp,
            83..=87 => CmdOpcode::DestroyQp,
            88..=92 => CmdOpcode::QueryQpCounters,
            93..=95 => CmdOpcode::Nop,
            _ => CmdOpcode::Unknown(12 + rng.below(1 << 20) as u32),
        }
    };
    let pdn = |rng: &mut Rng| match pick(rng, &sh.pds) {
        Some(p) if rng.percent(85) => p,
        _ => number(rng, 256),
    };
    let cqn = |rng: &mut Rng| match pick(rng, &sh.cqs) {
        Some(c) if rng.percent(85) => c,
        _ => number(rng, 256),
    };
    let qps: BTreeSet<u32> = sh.qps.keys().copied().collect();
    let qpn = |rng: &mut Rng| match pick(rng, &qps) {
        Some(q) if rng.percent(90) => q,
        _ => number(rng, 256),
    };
    let mut a = match op {
        CmdOpcode::CreatePd | CmdOpcode::DestroyPd => PdArgs {
            pdn: number(rng, 256),
        }
        .to_args(),
        CmdOpcode::CreateCq | CmdOpcode::DestroyCq => CqArgs {
            cqn: number(rng, 256),
            log_size: log_size(rng),
            ring_iova: ring_iova(rng),
        }
        .to_args(),
        CmdOpcode::RegMr | CmdOpcode::DeregMr => {
            let index = match pick(rng, &sh.mrs) {
                Some(i) if op == CmdOpcode::DeregMr && rng.percent(70) => i,
                _ => number(rng, 1024),
            };
            let va = if rng.percent(5) {
                u64::MAX - rng.below(1000)
            } else {
                rng.next_u64() >> 16
            };
            let iova = if rng.percent(5) {
                u64::MAX - rng.below(1000)
            } else {
                rng.next_u64() >> 16
            };
            MrArgs {
                index,
                key: if rng.percent(90) {
                    mr_key(index, rng.byte())
                } else {
                    rng.next_u64() as u32
                },
                pdn: pdn(rng),
                access: if rng.percent(90) {
                    small(rng, 16)
                } else {
                    rng.next_u64() as u32
                },
                va,
                iova,
                length: if rng.percent(10) {
                    rng.next_u64()
                } else {
                    rng.next_u64() >> 30
                },
            }
            .to_args()
        }
        CmdOpcode::CreateQp => CreateQpArgs {
            qpn: if rng.percent(80) {
                2 + small(rng, 8)
            } else {
                number(rng, 256)
            },
            pdn: pdn(rng),
            send_cqn: cqn(rng),
            recv_cqn: cqn(rng),
            sq_iova: ring_iova(rng),
            sq_log_size: log_size(rng),
            rq_iova: ring_iova(rng),
            rq_log_size: log_size(rng),
        }
        .to_args(),
        CmdOpcode::ModifyQp => {
            let q = qpn(rng);
            let mut a = modify_args(rng, q, sh.qps.get(&q).copied()).to_args();
            // Bits the model ignores (it reads bytes of these words): random.
            a[2] |= garbage[2] & 0xffff_ff00 & !7;
            a[3] |= garbage[3] & 0xffff_ff00;
            a[8] |= garbage[8] & 0xffff_0000;
            a[11] |= garbage[11] & 0xe0e0_f8e0;
            a[12] |= garbage[12] & 0xffff_0000;
            a[13] |= garbage[13] & 0xffff_0000;
            a
        }
        CmdOpcode::QueryQpCounters => QpCountersArgs {
            qpn: qpn(rng),
            iova: if rng.percent(30) {
                FAULT_IOVA | rng.next_u64()
            } else {
                rng.next_u64() >> 8
            },
        }
        .to_args(),
        CmdOpcode::QueryQp | CmdOpcode::DestroyQp => {
            let mut a = [0; 16];
            a[0] = qpn(rng);
            a
        }
        _ => [0; 16],
    };
    // Words a command does not name are ignored: fill them with garbage.
    let named = match op {
        CmdOpcode::CreatePd | CmdOpcode::DestroyPd | CmdOpcode::QueryQp | CmdOpcode::DestroyQp => 1,
        CmdOpcode::DestroyCq | CmdOpcode::DeregMr => 1,
        CmdOpcode::CreateCq => 4,
        CmdOpcode::RegMr => 10,
        CmdOpcode::CreateQp => 10,
        CmdOpcode::ModifyQp => 14,
        CmdOpcode::QueryQpCounters => 3,
        _ => 0,
    };
    a[named..].copy_from_slice(&garbage[named..]);
    (u32::from(op), a, named)
}

/// Keeps the shadow up to date after a command both devices ran with `status`, and
/// returns the QP event the RTL must have produced.
fn note(sh: &mut Shadow, op: u32, a: &[u32; 16], status: u32) -> Option<(u64, u64)> {
    if status != u32::from(CmdStatus::Ok) {
        return None;
    }
    match CmdOpcode::from(op) {
        CmdOpcode::CreatePd => {
            sh.pds.insert(a[0]);
        }
        CmdOpcode::DestroyPd => {
            sh.pds.remove(&a[0]);
        }
        CmdOpcode::CreateCq => {
            sh.cqs.insert(a[0]);
        }
        CmdOpcode::DestroyCq => {
            sh.cqs.remove(&a[0]);
        }
        CmdOpcode::RegMr => {
            sh.mrs.insert(a[0]);
        }
        CmdOpcode::DeregMr => {
            sh.mrs.remove(&a[0]);
        }
        CmdOpcode::CreateQp => {
            sh.qps.insert(a[0], QpState::Reset);
        }
        CmdOpcode::DestroyQp => {
            sh.qps.remove(&a[0]);
            return Some((QPEV_DESTROYED, u64::from(a[0])));
        }
        CmdOpcode::ModifyQp => {
            let m = ModifyQpArgs::from_args(a);
            let old = sh.qps[&m.qpn];
            let new = if m.mask & qp_attr::STATE != 0 {
                QpState::from(m.state)
            } else {
                old
            };
            sh.qps.insert(m.qpn, new);
            let q = u64::from(m.qpn);
            return match new {
                QpState::Reset => Some((QPEV_RESET, q)),
                QpState::Err if old != QpState::Err => Some((QPEV_ERROR, q)),
                QpState::Rts | QpState::Sqd => Some((QPEV_ACTIVE, q)),
                _ => None,
            };
        }
        _ => {}
    }
    None
}

/// Register offsets a host may read, each compared between the devices (the cycle
/// counter aside: the two clocks differ).
fn random_read_offset(rng: &mut Rng) -> u32 {
    let fixed = [
        regs::ID,
        regs::ABI_VERSION,
        regs::MAX_QP,
        regs::MAX_CQ,
        regs::MAX_MR,
        regs::MAX_PD,
        regs::MAX_LOG_RING,
        regs::MAX_SGE,
        regs::MAX_INLINE,
        regs::MAX_RD_ATOMIC,
        regs::CLOCK_MHZ,
        regs::MAC_LO,
        regs::MAC_HI,
        regs::IPV4_ADDR,
        regs::CONTROL,
        regs::CMD_STATUS,
        regs::CMD_OPCODE,
    ];
    match rng.below(6) {
        0 | 1 => fixed[rng.below(fixed.len() as u64) as usize],
        2 => regs::cmd_arg(small(rng, 16)),
        3 => regs::cmd_out(small(rng, 8)),
        4 => 0x400 + 4 * small(rng, 32), // counters, LO and HI
        _ => (rng.below(u64::from(regs::BAR0_SIZE)) as u32) & !3, // anywhere, mostly nothing
    }
}

/// A doorbell write that cannot start the model's datapath: to a QP that does not
/// exist, or index 0 (nothing posted), or a CQ (no completions are held).
fn random_doorbell(rng: &mut Rng, sh: &Shadow) -> (u32, u32) {
    let v = rng.next_u64() as u32;
    match rng.below(3) {
        0 | 1 => {
            let qpn = if rng.percent(10) {
                256 + small(rng, 3840)
            } else {
                small(rng, 256)
            };
            let off = if rng.percent(50) {
                regs::sq_doorbell(qpn)
            } else {
                regs::rq_doorbell(qpn)
            };
            (off, if sh.qps.contains_key(&qpn) { 0 } else { v })
        }
        _ => {
            let cqn = if rng.percent(10) {
                256 + small(rng, 7936)
            } else {
                small(rng, 256)
            };
            (regs::cq_doorbell(cqn), v)
        }
    }
}

/// The doorbell the RTL must hand out for a write at `off`, if any.
fn expected_doorbell(off: u32, v: u32) -> Option<(u64, u64, u32)> {
    if (regs::sq_doorbell(0)..regs::sq_doorbell(256)).contains(&off) {
        let q = u64::from((off - regs::sq_doorbell(0)) / 8);
        let kind = if off.is_multiple_of(8) { DB_SQ } else { DB_RQ };
        return Some((kind, q, v));
    }
    if (regs::cq_doorbell(0)..regs::cq_doorbell(256)).contains(&off) {
        return Some((DB_CQ, u64::from((off - regs::cq_doorbell(0)) / 4), v));
    }
    None
}

/// The differential run: `commands` random commands with random register traffic in
/// between, on the RTL and the model; every read compared.
fn differential(seed: u64, commands: usize, ready_pct: u32) -> BTreeMap<u32, usize> {
    let mut rng = Rng::new(seed);
    let mut rtl = Rtl::new(seed ^ 0x5a5a, ready_pct);
    let mut model = Model::new();
    let mut sh = Shadow::default();
    let mut statuses = BTreeMap::new();
    let mut want_db = vec![];
    let mut want_ev = vec![];
    let mut qcnt_ok = 0;
    for i in 0..commands {
        // Register traffic: reads of anything, port configuration, doorbells.
        for _ in 0..rng.below(4) {
            match rng.below(4) {
                0 => {
                    let off = [regs::MAC_LO, regs::MAC_HI, regs::IPV4_ADDR, regs::CONTROL]
                        [rng.below(4) as usize];
                    let v = rng.next_u64() as u32;
                    rtl.write(off, v);
                    model.nic.bar_write(off, v);
                }
                1 => {
                    let (off, v) = random_doorbell(&mut rng, &sh);
                    rtl.write(off, v);
                    model.nic.bar_write(off, v);
                    want_db.extend(expected_doorbell(off, v));
                }
                _ => {
                    let off = random_read_offset(&mut rng);
                    let (r, m) = (rtl.read(off), model.nic.bar_read(off));
                    assert_eq!(
                        r, m,
                        "seed {seed} step {i}: read of {off:#x}: RTL {r:#x}, model {m:#x}"
                    );
                }
            }
        }
        let (op, args, named) = random_command(&mut rng, &sh);
        // The named words, and a few others (garbage the command must ignore); the
        // rest keep what earlier commands left, the same on both devices.
        let extra: Vec<usize> = (0..2).map(|_| rng.below(16) as usize).collect();
        for (w, &v) in args.iter().enumerate() {
            if w < named || extra.contains(&w) {
                rtl.write(regs::cmd_arg(w as u32), v);
                model.nic.bar_write(regs::cmd_arg(w as u32), v);
            }
        }
        let all_outs = CmdOpcode::from(op) == CmdOpcode::QueryQp || rng.percent(25);
        let (rs, ro) = rtl.command(op, all_outs);
        let (ms, mo) = model.command(op, all_outs);
        *statuses.entry(ms).or_insert(0) += 1;
        let what = format!(
            "seed {seed} step {i}: {} args {:x?}",
            CmdOpcode::from(op),
            &args[..14]
        );
        assert_eq!(
            CmdStatus::from(rs),
            CmdStatus::from(ms),
            "{what}: status RTL {rs:#x}, model {ms:#x}"
        );
        if CmdOpcode::from(op) == CmdOpcode::QueryQpCounters && ms == u32::from(CmdStatus::Ok) {
            // The counters written to host memory: the same 128 bytes (no traffic here:
            // zero on both, even for a QP number used before, cleared at CREATE_QP).
            let (addr, bytes, refused) = rtl.dma_writes.last().expect("a DMA write").clone();
            assert_eq!(
                addr,
                u64::from(args[1]) | u64::from(args[2]) << 32,
                "{what}"
            );
            assert!(!refused, "{what}");
            assert_eq!(bytes, model.mem.last, "{what}: the counters written");
            qcnt_ok += 1;
        }
        assert_eq!(ro, mo, "{what}: result words");
        want_ev.extend(note(&mut sh, op, &args, ms));
    }
    // Let the consumers drain what is still queued.
    for _ in 0..200 {
        rtl.step();
    }
    let (want_cq, want_qp): (Vec<_>, Vec<_>) = want_db.into_iter().partition(|d| d.0 == DB_CQ);
    assert_eq!(
        rtl.doorbells, want_qp,
        "seed {seed}: SQ/RQ doorbells, in write order"
    );
    assert_eq!(
        rtl.cq_doorbells, want_cq,
        "seed {seed}: CQ doorbells, in write order"
    );
    assert_eq!(rtl.events, want_ev, "seed {seed}: QP events");
    println!("seed {seed}: {qcnt_ok} QUERY_QP_COUNTERS written");
    // Every counter still equal (no traffic: zero on both) and the LO/HI pairs agree.
    for c in Counter::ALL {
        for off in [regs::counter_lo(c), regs::counter_hi(c)] {
            assert_eq!(
                rtl.read(off),
                model.nic.bar_read(off),
                "counter {}",
                c.name()
            );
        }
    }
    statuses
}

#[test]
fn differential_random_commands_match_the_model() {
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    for (seed, ready) in [(1, 100), (2, 30)] {
        for (s, n) in differential(seed, 150, ready) {
            *seen.entry(s).or_insert(0) += n;
        }
    }
    let names: Vec<String> = seen
        .iter()
        .map(|(s, n)| format!("{}={n}", CmdStatus::from(*s)))
        .collect();
    println!("statuses seen: {}", names.join(" "));
    for s in 0..8 {
        assert!(
            seen.contains_key(&s),
            "status {} never reached: {names:?}",
            CmdStatus::from(s)
        );
    }
}
