//! `TxPath`: the TX back end of the engine, [`TxArbiter`] feeding [`HdrBuild`]: the
//! responder's and the requester's packet records and payloads in, RoCE v2 frames out on
//! the MAC TX stream, with the TX counter pulses (`tx_cnt`: a frame, its bytes and its
//! sending QP, from the record's `src_qp`). The ports are the arbiter's sources and the
//! builder's MAC and status pins (see those blocks for their rules); this file only
//! wires them, unpacking the record bus into the builder's fields.

use crate::bus::cnt::TxCntClient;
use crate::bus::record::{PayloadClient, PayloadServer, RecordServer};
use crate::prelude::*;

use crate::common::icrc::{BEAT_BYTES, DATA_BITS};
use crate::tx::hdr_build::HdrBuild;
use crate::tx::tx_arbiter::TxArbiter;

/// The TX back end; see the [module docs](self).
#[derive(LogicBlock)]
pub struct TxPath {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub rsp_pkt: RecordServer,
    pub rsp_pay: PayloadServer,
    pub req_pkt: RecordServer,
    pub req_pay: PayloadServer,
    pub m_axis_tdata: Signal<Out, Bits<DATA_BITS>>,
    pub m_axis_tkeep: Signal<Out, Bits<BEAT_BYTES>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    /// A frame sent (Counter::TxFrames, TxBytes), with its sending QP (its record's
    /// `src_qp`) for the per-QP counters.
    pub tx_cnt: TxCntClient,
    pub m_err_payload: Signal<Out, Bit>,
    pub m_err_icrc: Signal<Out, Bit>,
    arbiter: TxArbiter,
    build: HdrBuild,
}

impl Default for TxPath {
    fn default() -> Self {
        TxPath::new()
    }
}

impl TxPath {
    pub fn new() -> TxPath {
        TxPath {
            clock: Default::default(),
            reset: Default::default(),
            rsp_pkt: Default::default(),
            rsp_pay: Default::default(),
            req_pkt: Default::default(),
            req_pay: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            tx_cnt: Default::default(),
            m_err_payload: Default::default(),
            m_err_icrc: Default::default(),
            arbiter: TxArbiter::new(),
            build: HdrBuild::new(),
        }
    }
}

/// Bit offset of each record field as `update` slices it (checked against the arbiter's
/// table in the tests).
pub const UNPACK_OFFSETS: [(&str, usize); 21] = [
    ("dst_mac", 0),
    ("src_mac", 48),
    ("src_ip", 96),
    ("dst_ip", 128),
    ("udp_sport", 160),
    ("opcode", 176),
    ("se", 184),
    ("ack_req", 185),
    ("dest_qp", 186),
    ("psn", 210),
    ("va", 234),
    ("rkey", 298),
    ("dma_len", 330),
    ("swap_add", 362),
    ("compare", 426),
    ("orig", 490),
    ("syndrome", 554),
    ("msn", 562),
    ("imm", 586),
    ("payload_len", 618),
    ("src_qp", 634),
];

impl Logic for TxPath {
    #[hdl_gen]
    fn update(&mut self) {
        self.arbiter.clock.next = self.clock.val();
        self.arbiter.reset.next = self.reset.val();
        self.build.clock.next = self.clock.val();
        self.build.reset.next = self.reset.val();
        RecordServer::link(&mut self.rsp_pkt, &mut self.arbiter.rsp_pkt);
        PayloadServer::link(&mut self.rsp_pay, &mut self.arbiter.rsp_pay);
        RecordServer::link(&mut self.req_pkt, &mut self.arbiter.req_pkt);
        PayloadServer::link(&mut self.req_pay, &mut self.arbiter.req_pay);
        self.build.s_pkt_valid.next = self.arbiter.pkt.valid.val();
        self.arbiter.pkt.ready.next = self.build.s_pkt_ready.val();
        self.build.s_pkt_dst_mac.next = self.arbiter.pkt.data.val().get_bits::<48>(0);
        self.build.s_pkt_src_mac.next = self.arbiter.pkt.data.val().get_bits::<48>(48);
        self.build.s_pkt_src_ip.next = self.arbiter.pkt.data.val().get_bits::<32>(96);
        self.build.s_pkt_dst_ip.next = self.arbiter.pkt.data.val().get_bits::<32>(128);
        self.build.s_pkt_udp_sport.next = self.arbiter.pkt.data.val().get_bits::<16>(160);
        self.build.s_pkt_opcode.next = self.arbiter.pkt.data.val().get_bits::<8>(176);
        self.build.s_pkt_se.next = self.arbiter.pkt.data.val().get_bit(184);
        self.build.s_pkt_ack_req.next = self.arbiter.pkt.data.val().get_bit(185);
        self.build.s_pkt_dest_qp.next = self.arbiter.pkt.data.val().get_bits::<24>(186);
        self.build.s_pkt_psn.next = self.arbiter.pkt.data.val().get_bits::<24>(210);
        self.build.s_pkt_va.next = self.arbiter.pkt.data.val().get_bits::<64>(234);
        self.build.s_pkt_rkey.next = self.arbiter.pkt.data.val().get_bits::<32>(298);
        self.build.s_pkt_dma_len.next = self.arbiter.pkt.data.val().get_bits::<32>(330);
        self.build.s_pkt_swap_add.next = self.arbiter.pkt.data.val().get_bits::<64>(362);
        self.build.s_pkt_compare.next = self.arbiter.pkt.data.val().get_bits::<64>(426);
        self.build.s_pkt_orig.next = self.arbiter.pkt.data.val().get_bits::<64>(490);
        self.build.s_pkt_syndrome.next = self.arbiter.pkt.data.val().get_bits::<8>(554);
        self.build.s_pkt_msn.next = self.arbiter.pkt.data.val().get_bits::<24>(562);
        self.build.s_pkt_imm.next = self.arbiter.pkt.data.val().get_bits::<32>(586);
        self.build.s_pkt_payload_len.next = self.arbiter.pkt.data.val().get_bits::<16>(618);
        self.build.s_pkt_src_qp.next = self.arbiter.pkt.data.val().get_bits::<24>(634);
        PayloadClient::join(&mut self.arbiter.pay, &mut self.build.pay);
        self.m_axis_tdata.next = self.build.m_axis_tdata.val();
        self.m_axis_tkeep.next = self.build.m_axis_tkeep.val();
        self.m_axis_tlast.next = self.build.m_axis_tlast.val();
        self.m_axis_tvalid.next = self.build.m_axis_tvalid.val();
        self.build.m_axis_tready.next = self.m_axis_tready.val();
        TxCntClient::link(&mut self.tx_cnt, &mut self.build.tx_cnt);
        self.m_err_payload.next = self.build.m_err_payload.val();
        self.m_err_icrc.next = self.build.m_err_icrc.val();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use rocenic_proto::wire::Opcode;

    use super::*;
    use crate::bench::{frame_beats, random_payload_len, Beat, Bench, Pattern, Rng};
    use crate::tx::hdr_build::model::Record;
    use crate::tx::tx_arbiter::{field_offset, pack, RECORD_FIELDS};
    use crate::tx::tx_leaves::bytes_from_bits;

    /// One source's records and payload beats, as a bench drives them.
    struct Source {
        recs: VecDeque<Record>,
        beats: VecDeque<Beat>,
        rec_on: bool,
        beat_on: Option<Beat>,
    }

    impl Source {
        fn new(records: &[Record], rng: &mut Rng) -> Source {
            Source {
                recs: records.iter().cloned().collect(),
                beats: records
                    .iter()
                    .filter(|r| !r.payload.is_empty())
                    .flat_map(|r| frame_beats(&r.payload, || rng.byte()))
                    .collect(),
                rec_on: false,
                beat_on: None,
            }
        }
    }

    struct Out {
        /// Frames out, and which source each came from (true = requester).
        frames: Vec<(bool, Vec<u8>)>,
        beat_at: Vec<u64>,
    }

    /// Runs both sources through a `TxPath` under `pattern` until every frame is out; each
    /// frame must be one source's next expected frame, byte for byte.
    fn run(rsp: &[Record], req: &[Record], pattern: Pattern, seed: u64) -> Out {
        let mut rng = Rng::new(seed);
        let mut bench = Bench::new(TxPath::new(), |u| &mut u.clock);
        bench.uut.reset.next = true;
        bench.tick();
        bench.tick();
        bench.uut.reset.next = false;
        let mut src = [Source::new(rsp, &mut rng), Source::new(req, &mut rng)];
        // Each source's frames and their sending QPs, in order.
        let mut want: [VecDeque<(Vec<u8>, u32)>; 2] = [
            rsp.iter().map(|r| (r.frame(), r.src_qp)).collect(),
            req.iter().map(|r| (r.frame(), r.src_qp)).collect(),
        ];
        let total = rsp.len() + req.len();
        let beats: usize = want.iter().flatten().map(|f| f.0.len().div_ceil(64)).sum();
        let limit = 200 + 150 * beats as u64;
        let mut out = Out {
            frames: vec![],
            beat_at: vec![],
        };
        let mut partial = vec![];
        while out.frames.len() < total {
            assert!(bench.cycle() < limit, "no progress (seed {seed})");
            for (i, s) in src.iter_mut().enumerate() {
                if !s.rec_on && !s.recs.is_empty() && rng.percent(pattern.valid_pct) {
                    s.rec_on = true;
                    let data = pack(&s.recs[0].fields());
                    if i == 0 {
                        bench.uut.rsp_pkt.data.next = data;
                    } else {
                        bench.uut.req_pkt.data.next = data;
                    }
                }
                if s.beat_on.is_none() && !s.beats.is_empty() && rng.percent(pattern.valid_pct) {
                    s.beat_on = s.beats.pop_front();
                    let b = s.beat_on.as_ref().expect("beat");
                    if i == 0 {
                        bench.uut.rsp_pay.tdata.next = b.tdata();
                        bench.uut.rsp_pay.tlast.next = b.last;
                    } else {
                        bench.uut.req_pay.tdata.next = b.tdata();
                        bench.uut.req_pay.tlast.next = b.last;
                    }
                }
            }
            bench.uut.rsp_pkt.valid.next = src[0].rec_on;
            bench.uut.req_pkt.valid.next = src[1].rec_on;
            bench.uut.rsp_pay.tvalid.next = src[0].beat_on.is_some();
            bench.uut.req_pay.tvalid.next = src[1].beat_on.is_some();
            bench.uut.m_axis_tready.next = rng.percent(pattern.ready_pct);
            bench.settle();
            let u = &bench.uut;
            assert!(
                !u.m_err_payload.val() && !u.m_err_icrc.val(),
                "error pin (seed {seed})"
            );
            let taken = [
                u.rsp_pkt.valid.val() && u.rsp_pkt.ready.val(),
                u.req_pkt.valid.val() && u.req_pkt.ready.val(),
            ];
            assert!(!(taken[0] && taken[1]), "one record per cycle");
            let beat_taken = [
                u.rsp_pay.tvalid.val() && u.rsp_pay.tready.val(),
                u.req_pay.tvalid.val() && u.req_pay.tready.val(),
            ];
            if u.m_axis_tvalid.val() && u.m_axis_tready.val() {
                let data = bytes_from_bits(u.m_axis_tdata.val());
                let n = u.m_axis_tkeep.val().to_u64().trailing_ones() as usize;
                partial.extend_from_slice(&data[..n]);
                out.beat_at.push(bench.cycle());
                if u.m_axis_tlast.val() {
                    let f = std::mem::take(&mut partial);
                    let from = (0..2)
                        .find(|&i| want[i].front().is_some_and(|w| w.0 == f))
                        .unwrap_or_else(|| {
                            panic!(
                                "frame {} matches neither source's next frame (seed {seed})",
                                out.frames.len()
                            )
                        });
                    assert_eq!(u.tx_cnt.bytes.val().to_u64(), f.len() as u64);
                    assert!(
                        u.tx_cnt.frame.val(),
                        "tx_cnt.frame with tlast (seed {seed})"
                    );
                    assert_eq!(
                        u.tx_cnt.qpn.val().to_u64(),
                        u64::from(want[from][0].1),
                        "tx_cnt.qpn of frame {} (seed {seed})",
                        out.frames.len()
                    );
                    want[from].pop_front();
                    out.frames.push((from == 1, f));
                }
            }
            for i in 0..2 {
                if taken[i] {
                    src[i].rec_on = false;
                    src[i].recs.pop_front();
                }
                if beat_taken[i] {
                    src[i].beat_on = None;
                }
            }
            bench.tick();
        }
        out
    }

    fn responses(rng: &mut Rng, n: usize) -> Vec<Record> {
        let ops = [
            Opcode::Acknowledge,
            Opcode::AtomicAcknowledge,
            Opcode::RdmaReadResponseFirst,
            Opcode::RdmaReadResponseMiddle,
            Opcode::RdmaReadResponseLast,
            Opcode::RdmaReadResponseOnly,
        ];
        (0..n)
            .map(|_| {
                let op = ops[rng.below(ops.len() as u64) as usize];
                let len = random_payload_len(rng) % 700;
                Record::random(rng, op, len)
            })
            .collect()
    }

    fn requests(rng: &mut Rng, n: usize) -> Vec<Record> {
        let ops: Vec<Opcode> = Opcode::all().filter(|op| op.is_request()).collect();
        (0..n)
            .map(|_| {
                let op = ops[rng.below(ops.len() as u64) as usize];
                let len = random_payload_len(rng) % 700;
                Record::random(rng, op, len)
            })
            .collect()
    }

    #[test]
    fn unpack_offsets_match_the_record_table() {
        assert_eq!(UNPACK_OFFSETS.len(), RECORD_FIELDS.len());
        for ((name, at), &(field, _)) in UNPACK_OFFSETS.iter().zip(RECORD_FIELDS) {
            assert_eq!(*name, field);
            assert_eq!(*at, field_offset(field), "{name}");
        }
    }

    /// Both sources at once under every pattern: every frame byte-exact, each source's
    /// frames in its own order, payloads never mixed between frames.
    #[test]
    fn two_sources_under_every_pattern() {
        for (k, pattern) in Pattern::SWEEP.into_iter().enumerate() {
            let seed = 300 + k as u64;
            let mut rng = Rng::new(seed);
            let rsp = responses(&mut rng, 8);
            let req = requests(&mut rng, 8);
            let out = run(&rsp, &req, pattern, seed);
            assert_eq!(out.frames.len(), 16);
        }
    }

    /// Responses go first: with both sources full of records from the start, every
    /// response leaves before any request, and the stream has no bubble.
    #[test]
    fn responses_first_and_no_bubbles() {
        let mut rng = Rng::new(310);
        let rsp: Vec<Record> = (0..12)
            .map(|i| {
                let op = [Opcode::Acknowledge, Opcode::RdmaReadResponseOnly][i % 2];
                Record::random(&mut rng, op, 30 * i)
            })
            .collect();
        let req: Vec<Record> = (0..8)
            .map(|i| Record::random(&mut rng, Opcode::RdmaWriteOnly, 50 * i + 1))
            .collect();
        let out = run(&rsp, &req, Pattern::SWEEP[0], 310);
        let order: Vec<bool> = out.frames.iter().map(|f| f.0).collect();
        let first_req = order.iter().position(|&r| r).expect("requests");
        assert_eq!(first_req, 12, "responses first: {order:?}");
        let n = out.beat_at.len() as u64;
        assert_eq!(out.beat_at[out.beat_at.len() - 1] - out.beat_at[0] + 1, n);
    }
}
