//! `rocenic replay` on the model backend: a capture of our own `rocenic perf` replayed with
//! the set-up read from it, and a capture built here with one frame mutated per case.

use rocenic_cli::replay::{replay, ReplayArgs};
use rocenic_proto::wire::{
    BthRepr, EtherType, EthernetAddress, EthernetRepr, ExtHeaders, IpProtocol, Ipv4Address,
    Ipv4Repr, Opcode, Psn, RethRepr, RoceRepr,
};
use rocenic_sim::pcap::PcapTap;

mod common;
use common::{rocenic, tmp};

const QPN: u32 = 0x11;
const PEER_QPN: u32 = 0x22;
const PSN0: u32 = 0x100;
const RKEY: u32 = 0x1234;
const VA: u64 = 0x7f00_0000_1000;

/// A request from 10.0.0.1 to 10.0.0.2.
fn request(opcode: Opcode, qpn: u32, psn: u32, ext: ExtHeaders, payload: &[u8]) -> Vec<u8> {
    let repr = RoceRepr {
        eth: EthernetRepr {
            src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
            ethertype: EtherType::Ipv4,
        },
        ip: Ipv4Repr {
            src_addr: Ipv4Address([10, 0, 0, 1]),
            dst_addr: Ipv4Address([10, 0, 0, 2]),
            protocol: IpProtocol::Udp,
            dscp: 0,
            ecn: 0,
            ident: 0,
            dont_frag: true,
            ttl: 64,
        },
        udp_src_port: 0xc011,
        bth: BthRepr {
            opcode,
            solicited: false,
            migreq: false,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: qpn,
            ack_req: true,
            psn: Psn::new(psn),
        },
        ext,
    };
    let mut out = Vec::new();
    repr.emit(payload, &mut out).unwrap();
    out
}

fn write_only(qpn: u32, psn: u32, rkey: u32, off: u64, payload: &[u8]) -> Vec<u8> {
    let ext = ExtHeaders {
        reth: Some(RethRepr {
            va: VA + off,
            rkey,
            dma_len: payload.len() as u32,
        }),
        ..ExtHeaders::default()
    };
    request(Opcode::RdmaWriteOnly, qpn, psn, ext, payload)
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// Three good requests (two WRITEs, a SEND), then `last` (a fourth request); and an ACK
/// the peer got, which the replay must skip.
fn capture(name: &str, last: Vec<u8>) -> std::path::PathBuf {
    let path = tmp(name);
    let mut tap = PcapTap::create(&path).unwrap();
    tap.record(0, &write_only(QPN, PSN0, RKEY, 0, &pattern(1, 300)))
        .unwrap();
    tap.record(10, &write_only(QPN, PSN0 + 1, RKEY, 512, &pattern(2, 200)))
        .unwrap();
    tap.record(
        20,
        &request(
            Opcode::SendOnly,
            QPN,
            PSN0 + 2,
            ExtHeaders::default(),
            &pattern(3, 64),
        ),
    )
    .unwrap();
    // The other direction: not for the NIC.
    let mut ack = request(Opcode::SendOnly, PEER_QPN, 7, ExtHeaders::default(), &[]);
    ack[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    ack[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    ack[26..30].copy_from_slice(&[10, 0, 0, 2]);
    ack[30..34].copy_from_slice(&[10, 0, 0, 1]);
    tap.record(30, &ack).unwrap();
    tap.record(40, &last).unwrap();
    tap.finish().unwrap();
    path
}

fn args(path: &std::path::Path) -> ReplayArgs {
    let mut a = ReplayArgs::new(path);
    a.qpn = vec![QPN];
    a.peer_qpn = vec![PEER_QPN];
    a.epsn = vec![PSN0];
    a.mtu = Some(1024);
    a.mr = vec![
        rocenic_cli::replay::parse_mr(&format!("va={VA:#x},len=4096,rkey={RKEY:#x}")).unwrap(),
    ];
    a
}

/// Replays a capture whose last frame is `last` and checks the first three.
fn replay_with_last(name: &str, last: Vec<u8>) -> rocenic_cli::replay::FrameRecord {
    let path = capture(name, last);
    let mut r = replay(&args(&path)).unwrap();
    let rep = &r.report;
    assert_eq!(rep.totals.frames, 5);
    assert_eq!(rep.totals.fed, 4, "{:#?}", rep.frames);
    assert_eq!(rep.totals.skipped, 1);
    assert_eq!(rep.frames[3].verdict, "skipped");
    for f in &rep.frames[..3] {
        assert_eq!(f.verdict, "accepted", "{f:#?}");
        assert_eq!(f.sent.len(), 1, "one ACK: {f:#?}");
        assert!(f.sent[0].starts_with("ACKNOWLEDGE"), "{f:#?}");
        assert!(f.sent[0].contains(&format!("qp={PEER_QPN:#x}")), "{f:#?}");
    }
    assert_eq!(rep.frames[0].mr_bytes, 300);
    assert_eq!(rep.frames[1].mr_bytes, 200);
    // The SEND lands in a receive buffer and completes.
    assert_eq!(rep.frames[2].mr_bytes, 64);
    assert_eq!(rep.frames[2].completions.len(), 1, "{:#?}", rep.frames[2]);
    assert!(rep.frames[2].completions[0].contains("Success"));
    assert!(rep.frames[2].completions[0].contains("64 B"));
    let mem = r.mr_bytes(0).unwrap();
    assert_eq!(&mem[..300], &pattern(1, 300)[..]);
    assert_eq!(&mem[512..712], &pattern(2, 200)[..]);
    std::fs::remove_file(&path).unwrap();
    r.report.frames[4].clone()
}

#[test]
fn a_good_capture_is_accepted_and_lands() {
    let last = write_only(QPN, PSN0 + 3, RKEY, 1024, &pattern(4, 100));
    let f = replay_with_last("good.pcap", last);
    assert_eq!(f.verdict, "accepted", "{f:#?}");
    assert_eq!(f.mr_bytes, 100);
}

#[test]
fn a_bad_icrc_is_dropped_as_such() {
    let mut last = write_only(QPN, PSN0 + 3, RKEY, 1024, &pattern(4, 100));
    let n = last.len();
    last[n - 1] ^= 0x40;
    let f = replay_with_last("icrc.pcap", last);
    assert_eq!(f.verdict, "dropped", "{f:#?}");
    assert!(
        f.reason.as_deref().unwrap().starts_with("icrc_drops"),
        "{f:#?}"
    );
    assert!(f.sent.is_empty() && f.mr_bytes == 0, "{f:#?}");
}

#[test]
fn a_wrong_rkey_is_naked_with_remote_access_error() {
    let last = write_only(QPN, PSN0 + 3, RKEY + 1, 1024, &pattern(4, 100));
    let f = replay_with_last("rkey.pcap", last);
    assert_eq!(f.verdict, "nak", "{f:#?}");
    assert!(
        f.reason.as_deref().unwrap().contains("remote access error"),
        "{f:#?}"
    );
    assert_eq!(f.mr_bytes, 0);
    assert_eq!(f.counters.get("naks_sent"), Some(&1));
}

#[test]
fn an_unknown_qpn_is_dropped() {
    let last = write_only(0x33, PSN0 + 3, RKEY, 1024, &pattern(4, 100));
    let f = replay_with_last("qpn.pcap", last);
    assert_eq!(f.verdict, "dropped", "{f:#?}");
    assert_eq!(
        f.reason.as_deref(),
        Some("unknown_qp_drops: unknown QPN 0x33"),
        "{f:#?}"
    );
}

#[test]
fn a_psn_out_of_window_is_naked_as_a_sequence_error() {
    let last = write_only(QPN, PSN0 + 0x1000, RKEY, 1024, &pattern(4, 100));
    let f = replay_with_last("psn.pcap", last);
    assert_eq!(f.verdict, "nak", "{f:#?}");
    assert!(
        f.reason.as_deref().unwrap().contains("PSN sequence error"),
        "{f:#?}"
    );
    assert_eq!(f.counters.get("psn_seq_drops"), Some(&1), "{f:#?}");
    assert_eq!(f.mr_bytes, 0);
}

#[test]
fn json_has_the_documented_fields() {
    let last = write_only(0x33, PSN0 + 3, RKEY, 1024, &pattern(4, 100));
    let path = capture("json.pcap", last);
    let p = path.to_str().unwrap();
    let text = rocenic(&[
        "replay",
        p,
        "--qpn",
        "0x11",
        "--peer-qpn",
        "0x22",
        "--epsn",
        "0x100",
        "--mtu",
        "1024",
        "--mr",
        &format!("va={VA:#x},len=4096,rkey={RKEY:#x}"),
        "--json",
    ])
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["backend"], "model");
    assert_eq!(v["setup"]["qps"][0]["qpn"], QPN);
    assert_eq!(v["setup"]["qps"][0]["peer_qpn"], PEER_QPN);
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 5);
    for k in [
        "index",
        "len",
        "frame",
        "verdict",
        "counters",
        "sent",
        "mr_bytes",
        "other_dma_bytes",
        "completions",
    ] {
        assert!(frames[0].get(k).is_some(), "no {k} in {}", frames[0]);
    }
    assert_eq!(frames[4]["verdict"], "dropped");
    assert_eq!(v["totals"]["accepted"], 3);
    assert_eq!(v["totals"]["dropped"], 1);
    assert_eq!(v["totals"]["skipped"], 1);
    assert_eq!(v["totals"]["drops"]["unknown_qp_drops"], 1);
    assert_eq!(v["totals"]["mr_bytes"], 564);
    assert!(v["counters"]["rx_frames"].as_u64().unwrap() >= 3);
    // The table names every frame's verdict.
    let text = rocenic(&["replay", p, "--qpn", "0x11", "--mtu", "1024"]).unwrap();
    assert!(
        text.contains("accepted") && text.contains("skipped"),
        "{text}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_perf_capture_replays_with_the_set_up_read_from_it() {
    let pcap = tmp("perf.pcap");
    let p = pcap.to_str().unwrap();
    rocenic(&[
        "perf", "write", "-s", "2048", "-n", "3", "--mtu", "1024", "--pcap", p,
    ])
    .unwrap();
    let mut r = replay(&ReplayArgs::new(&pcap)).unwrap();
    let rep = &r.report;
    let t = &rep.totals;
    assert!(t.fed >= 6, "{t:?}");
    assert_eq!(t.accepted, t.fed, "{:#?}", rep.frames);
    assert!(t.skipped > 0, "the ACKs of the capture are skipped: {t:?}");
    // Every WRITE byte lands (FIRST and LAST packets of 1024 B each, a warm-up message
    // included), and the LAST packets are acknowledged.
    assert_eq!(t.mr_bytes, 1024 * t.fed as u64, "{t:?}");
    assert!(t.sent >= 3, "{t:?}");
    assert_eq!(rep.setup.mtu, 1024);
    // The capture's ACKs name the peer's QP.
    assert!(rep.setup.inferred.contains(&"peer_qpn".to_string()));
    assert!(rep
        .frames
        .iter()
        .filter(|f| f.verdict == "accepted")
        .all(|f| f
            .sent
            .iter()
            .all(|s| s.contains(&format!("qp={:#x}", rep.setup.qps[0].peer_qpn)))));
    assert!(rep.setup.inferred.contains(&"mr".to_string()));
    let mem = r.mr_bytes(0).unwrap();
    assert!(mem.iter().any(|&b| b != 0));
    std::fs::remove_file(&pcap).unwrap();
}

#[test]
fn bad_input_is_a_clear_error() {
    let junk = tmp("junk.pcap");
    std::fs::write(&junk, b"this is not a capture at all\n").unwrap();
    let e = rocenic(&["replay", junk.to_str().unwrap()]).unwrap_err();
    assert!(format!("{e:#}").contains("not a pcap"), "{e:#}");
    let e = rocenic(&["replay", tmp("missing.pcap").to_str().unwrap()]).unwrap_err();
    assert!(format!("{e:#}").contains("cannot open"), "{e:#}");
    // Runts and frames for someone else: nothing to feed is an error naming the side.
    let runts = tmp("runts.pcap");
    let mut tap = PcapTap::create(&runts).unwrap();
    tap.record(0, &[0u8; 6]).unwrap();
    tap.finish().unwrap();
    let e = rocenic(&["replay", runts.to_str().unwrap()]).unwrap_err();
    assert!(format!("{e:#}").contains("--local-ip"), "{e:#}");
    std::fs::remove_file(&junk).unwrap();
    std::fs::remove_file(&runts).unwrap();
}

#[test]
fn from_picks_the_side_by_source() {
    let last = write_only(QPN, PSN0 + 3, RKEY, 1024, &pattern(4, 100));
    let path = capture("from.pcap", last);
    let mut a = args(&path);
    a.from = Some("10.0.0.1".parse().unwrap());
    let r = replay(&a).unwrap().report;
    assert_eq!((r.totals.fed, r.totals.accepted), (4, 4), "{:?}", r.totals);
    assert_eq!(r.setup.from.as_deref(), Some("10.0.0.1"));
    a.from = Some("10.0.0.9".parse().unwrap());
    let e = replay(&a).err().unwrap();
    assert!(format!("{e:#}").contains("from 10.0.0.9"), "{e:#}");
    std::fs::remove_file(&path).unwrap();
}
