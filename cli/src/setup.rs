//! What both commands need: choosing a backend, building the two-node testbed, and
//! connecting RC QPs the way an application does (exchange QPN, PSN, MAC and IP out of
//! band, then RESET -> INIT -> RTR -> RTS).

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use rocenic_sim::{FaultConfig, LinkConfig, NodeId, World};

use crate::pattern::Pattern;
use rocenic_driver::backend::model::{close_captures, two_node_world, ModelBackend, PairConfig};
use rocenic_driver::backend::rtl::two_node_rtl_world;
use rocenic_driver::backend::vfio::{PciAddress, VfioBackend, VfioOptions};
use rocenic_driver::verbs::{
    access, qp_attr, AhAttr, Context, Cq, Mtu, Pd, Qp, QpAttr, QpCap, QpInitAttr, QpState,
};
use rocenic_driver::{Error, Result};

/// The backends `--backend` accepts in this build.
pub const AVAILABLE_BACKENDS: &str = "model, rtl, vfio:<bdf>[,<bdf>]";

/// A backend named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendKind {
    /// The behavioural model in a simulated two-node world.
    Model,
    /// The Verilated engine RTL in a simulated two-node world.
    Rtl,
    /// NICs behind VFIO, by PCI address (`vfio:0000:03:00.0,0000:04:00.0`).
    Vfio(Vec<String>),
}

impl BackendKind {
    pub fn name(&self) -> &'static str {
        match self {
            BackendKind::Model => "model",
            BackendKind::Rtl => "rtl",
            BackendKind::Vfio(_) => "vfio",
        }
    }
}

/// Parses a `--backend` value.
pub fn parse_backend(name: &str) -> Result<BackendKind> {
    match name {
        "model" => Ok(BackendKind::Model),
        "rtl" => Ok(BackendKind::Rtl),
        n if n.starts_with("vfio:") => {
            let bdfs = n["vfio:".len()..]
                .split(',')
                .map(|a| a.parse::<PciAddress>());
            Ok(BackendKind::Vfio(
                bdfs.map(|a| Ok(a?.to_string())).collect::<Result<_>>()?,
            ))
        }
        _ => Err(Error::UnknownBackend {
            name: name.into(),
            available: AVAILABLE_BACKENDS.into(),
        }),
    }
}

/// How to build a testbed.
#[derive(Debug, Clone, Default)]
pub struct TestbedOptions {
    /// Seed of the links' faults (each direction gets its own stream).
    pub seed: u64,
    /// Per-frame loss probability on both links.
    pub loss: f64,
    /// Capture every frame either node sends into this pcap file.
    pub pcap: Option<PathBuf>,
    /// Write a waveform of node A to this file (`.vcd` or `.fst`); RTL backend only.
    pub trace: Option<PathBuf>,
}

/// One host with its NIC: a context and the port's addresses.
pub struct Host {
    pub ctx: Context,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    /// The host's node in [`Testbed::world`], for backends that have one.
    pub node: Option<NodeId>,
}

/// Two hosts whose NICs share a cable.
pub struct Testbed {
    pub backend: BackendKind,
    pub a: Host,
    pub b: Host,
    /// The simulated world, for backends that have one.
    pub world: Option<Rc<RefCell<World>>>,
}

impl Testbed {
    /// Builds the testbed and opens both devices.
    pub fn new(kind: BackendKind, opts: &TestbedOptions) -> Result<Testbed> {
        if !(0.0..=1.0).contains(&opts.loss) {
            return Err(Error::InvalidArgument(format!(
                "--loss {} is not a probability",
                opts.loss
            )));
        }
        if opts.trace.is_some() && kind != BackendKind::Rtl {
            return Err(Error::InvalidArgument(
                "--trace writes a waveform of the RTL: it needs --backend rtl".into(),
            ));
        }
        match kind {
            BackendKind::Model | BackendKind::Rtl => {
                let link = |seed| LinkConfig {
                    faults: FaultConfig {
                        loss: opts.loss,
                        seed,
                        ..FaultConfig::default()
                    },
                    ..LinkConfig::default()
                };
                let cfg = PairConfig {
                    a_to_b: link(opts.seed.wrapping_mul(2)),
                    b_to_a: link(opts.seed.wrapping_mul(2).wrapping_add(1)),
                    ..PairConfig::default()
                };
                let pair = if kind == BackendKind::Rtl {
                    crate::progress::rtl_build(|| {
                        two_node_rtl_world(&cfg, opts.pcap.as_deref(), opts.trace.as_deref())
                    })?
                } else {
                    two_node_world(&cfg, opts.pcap.as_deref())?
                };
                let host = |be: ModelBackend, last: u8| -> Result<Host> {
                    let node = Some(be.node());
                    let mut ctx = Context::open(Box::new(be))?;
                    let mac = [0x02, 0x00, 0x00, 0x00, 0x00, last];
                    let ip = [10, 0, 0, last];
                    ctx.set_port(mac, ip);
                    Ok(Host { ctx, mac, ip, node })
                };
                tracing::info!(
                    backend = kind.name(),
                    loss = opts.loss,
                    seed = opts.seed,
                    "two-node world built"
                );
                Ok(Testbed {
                    backend: kind,
                    a: host(pair.a, 1)?,
                    b: host(pair.b, 2)?,
                    world: Some(pair.world),
                })
            }
            BackendKind::Vfio(ref bdfs) => {
                if opts.loss > 0.0 || opts.pcap.is_some() {
                    return Err(Error::InvalidArgument(
                        "--loss and --pcap act on the simulated link; with vfio the link is \
                         a real cable"
                            .into(),
                    ));
                }
                let [a, b] = bdfs.as_slice() else {
                    return Err(Error::InvalidArgument(format!(
                        "this command connects two NICs cabled together: give both, \
                         --backend vfio:<bdf-a>,<bdf-b> (got {})",
                        bdfs.len()
                    )));
                };
                let host = |bdf: &str, last: u8| -> Result<Host> {
                    let be = VfioBackend::open(bdf, &VfioOptions::default())?;
                    tracing::info!(bdf, "VFIO device opened");
                    let mut ctx = Context::open(Box::new(be))?;
                    let (mac, ip) = ([0x02, 0x00, 0x00, 0x00, 0x00, last], [10, 0, 0, last]);
                    ctx.set_port(mac, ip);
                    Ok(Host {
                        ctx,
                        mac,
                        ip,
                        node: None,
                    })
                };
                let (a, b) = (host(a, 1)?, host(b, 2)?);
                Ok(Testbed {
                    backend: kind,
                    a,
                    b,
                    world: None,
                })
            }
        }
    }

    /// Flushes packet captures.
    pub fn finish(&self) -> Result<()> {
        match &self.world {
            Some(w) => close_captures(w),
            None => Ok(()),
        }
    }
}

/// What two applications exchange out of band to connect an RC QP pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnInfo {
    pub qpn: u32,
    /// The first PSN this side will send.
    pub psn: u32,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
}

/// Connection parameters both sides agree on.
#[derive(Debug, Clone, Copy)]
pub struct ConnParams {
    pub mtu: Mtu,
    /// What the remote side may do to our memory through this QP.
    pub access: u32,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
}

impl ConnParams {
    /// Everything allowed; retries and timeouts suited to a simulated link: an ACK timeout
    /// of 4.096 us * 2^10 (about 4 ms) and the most retries.
    pub fn new(mtu: Mtu) -> Self {
        ConnParams {
            mtu,
            access: access::LOCAL_WRITE
                | access::REMOTE_WRITE
                | access::REMOTE_READ
                | access::REMOTE_ATOMIC,
            timeout: 10,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            max_rd_atomic: 8,
        }
    }
}

/// Moves a QP through INIT, RTR and RTS towards `remote`.
pub fn connect(
    ctx: &mut Context,
    qp: Qp,
    local: &ConnInfo,
    remote: &ConnInfo,
    p: &ConnParams,
) -> Result<()> {
    let init = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: p.access,
        ..QpAttr::default()
    };
    ctx.modify_qp(qp, &init, qp_attr::STATE | qp_attr::ACCESS_FLAGS)?;
    let rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: p.mtu,
        dest_qp_num: remote.qpn,
        rq_psn: remote.psn,
        ah_attr: AhAttr {
            dmac: remote.mac,
            dip: remote.ip,
            udp_sport: 0xc000 | (local.qpn as u16 & 0x3fff),
        },
        max_dest_rd_atomic: p.max_rd_atomic,
        min_rnr_timer: p.min_rnr_timer,
        ..init
    };
    ctx.modify_qp(qp, &rtr, qp_attr::REQ_RTR)?;
    let rts = QpAttr {
        qp_state: QpState::Rts,
        sq_psn: local.psn,
        timeout: p.timeout,
        retry_cnt: p.retry_cnt,
        rnr_retry: p.rnr_retry,
        max_rd_atomic: p.max_rd_atomic,
        ..rtr
    };
    ctx.modify_qp(qp, &rts, qp_attr::REQ_RTS)
}

/// One end of a connection: its PD, CQs and QP.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint {
    pub pd: Pd,
    pub send_cq: Cq,
    pub recv_cq: Cq,
    pub qp: Qp,
}

/// Creates a QP on each host (sharing the given PDs and CQs) and connects them. PSNs are
/// drawn from `rng`, as applications pick random initial PSNs.
pub fn connected_pair(
    tb: &mut Testbed,
    a: (Pd, Cq, Cq),
    b: (Pd, Cq, Cq),
    cap: QpCap,
    params: &ConnParams,
    rng: &mut Pattern,
) -> Result<(Endpoint, Endpoint)> {
    let mut make = |h: &mut Host, (pd, scq, rcq): (Pd, Cq, Cq)| -> Result<(Endpoint, ConnInfo)> {
        let qp = h.ctx.create_qp(
            pd,
            &QpInitAttr {
                send_cq: scq,
                recv_cq: rcq,
                cap,
            },
        )?;
        let info = ConnInfo {
            qpn: qp.qp_num,
            psn: rng.below(1 << 24) as u32,
            mac: h.mac,
            ip: h.ip,
        };
        Ok((
            Endpoint {
                pd,
                send_cq: scq,
                recv_cq: rcq,
                qp,
            },
            info,
        ))
    };
    let (ea, ia) = make(&mut tb.a, a)?;
    let (eb, ib) = make(&mut tb.b, b)?;
    connect(&mut tb.a.ctx, ea.qp, &ia, &ib, params)?;
    connect(&mut tb.b.ctx, eb.qp, &ib, &ia, params)?;
    Ok((ea, eb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names() {
        assert_eq!(parse_backend("model").unwrap(), BackendKind::Model);
        let e = parse_backend("fpga").unwrap_err();
        assert!(e.to_string().contains("available backends: model"), "{e}");
        assert_eq!(
            parse_backend("vfio:01:00.0,0000:02:00.0").unwrap(),
            BackendKind::Vfio(vec!["0000:01:00.0".into(), "0000:02:00.0".into()])
        );
        assert_eq!(parse_backend("vfio:0000:01:00.0").unwrap().name(), "vfio");
        let e = parse_backend("vfio:0000:01:00.9").unwrap_err();
        assert!(e.to_string().contains("not a PCI address"), "{e}");
        // One NIC is not a testbed; two that this host does not have fail with what to do.
        let one = Testbed::new(
            parse_backend("vfio:01:00.0").unwrap(),
            &TestbedOptions::default(),
        );
        assert!(matches!(one, Err(Error::InvalidArgument(_))));
        let lossy = TestbedOptions {
            loss: 0.1,
            ..TestbedOptions::default()
        };
        let e = Testbed::new(parse_backend("vfio:01:00.0,02:00.0").unwrap(), &lossy).err();
        assert!(e.unwrap().to_string().contains("real cable"));
        let two = parse_backend("vfio:ff:1f.0,ff:1f.1").unwrap();
        let e = Testbed::new(two, &TestbedOptions::default()).err().unwrap();
        assert!(matches!(e, Error::Vfio(_)), "{e}");
        assert_eq!(parse_backend("rtl").unwrap(), BackendKind::Rtl);
        let traced = TestbedOptions {
            trace: Some("a.vcd".into()),
            ..TestbedOptions::default()
        };
        let e = Testbed::new(BackendKind::Model, &traced).err().unwrap();
        assert!(e.to_string().contains("needs --backend rtl"), "{e}");
    }
}
