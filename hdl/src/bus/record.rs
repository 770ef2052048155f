//! A TX packet: its record ([`record_layout`], packed) and its
//! payload stream, each with a valid/ready handshake. The blocks that send (the
//! requester's Segmenter, ReadResp, AtomicUnit, the responder's ACKs, RspOrder) are
//! clients; [`TxPath`](crate::tx::tx_path::TxPath) serves a response and a request source.
//! A record whose `payload_len` is not zero is followed by that many bytes on its
//! payload stream, the last beat with `tlast`.

use crate::common::icrc::DATA_BITS;
use crate::common::skid::Skid;
use crate::prelude::*;

crate::packed_layout!(
    /// A TX packet record, the fields from bit 0 up: the Ethernet, IPv4 and UDP addressing,
    /// the BTH (`opcode`, `se`, `ack_req`, `dest_qp`, `psn`), RETH (`va`, `rkey`,
    /// `dma_len`), AtomicETH (`swap_add`, `compare`), AtomicAckETH (`orig`), AETH
    /// (`syndrome`, `msn`), ImmDt or IETH (`imm`), the payload's length and the sending QP.
    record_layout, RecordPack; dst_mac: 48, src_mac: 48, src_ip: 32, dst_ip: 32,
    udp_sport: 16, opcode: 8, se: 1, ack_req: 1, dest_qp: 24, psn: 24, va: 64, rkey: 32,
    dma_len: 32, swap_add: 64, compare: 64, orig: 64, syndrome: 8, msn: 24, imm: 32,
    payload_len: 16, src_qp: 24
);

/// Bits of a packed record.
pub const RECORD_BITS: usize = record_layout::BITS;

port_group! {
    /// A block that sends packet records.
    client RecordClient = "RecordClient";
    /// The side that takes [`RecordClient`]s' records.
    server RecordServer = "RecordServer";
    out {
        valid: Bit,
        data: Bits<RECORD_BITS>,
    }
    in {
        ready: Bit,
    }
}

port_group! {
    /// A block that sends the payloads of its records: 64-byte beats, lane 0 first, every
    /// beat full but a packet's last (whose length the record gives).
    client PayloadClient = "PayloadClient";
    /// The side that takes [`PayloadClient`]s' payloads.
    server PayloadServer = "PayloadServer";
    out {
        tdata: Bits<DATA_BITS>,
        tlast: Bit,
        tvalid: Bit,
    }
    in {
        tready: Bit,
    }
}

/// A register slice on a record channel: a [`Skid`] (a beat a cycle, one cycle of
/// latency, no combinational path through it).
#[derive(LogicBlock, Default)]
pub struct RecordSlice {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s: RecordServer,
    pub m: RecordClient,
    sk: Skid<RECORD_BITS>,
    unused_last: Signal<Local, Bit>,
    unused_err: Signal<Local, Bit>,
}

impl Logic for RecordSlice {
    #[hdl_gen]
    fn update(&mut self) {
        self.sk.clock.next = self.clock.val();
        self.sk.reset.next = self.reset.val();
        self.sk.s_valid.next = self.s.valid.val();
        self.sk.s_data.next = self.s.data.val();
        self.sk.s_last.next = false;
        self.sk.s_err.next = false;
        self.s.ready.next = self.sk.s_ready.val();
        self.m.valid.next = self.sk.m_valid.val();
        self.m.data.next = self.sk.m_data.val();
        self.sk.m_ready.next = self.m.ready.val();
        self.unused_last.next = self.sk.m_last.val();
        self.unused_err.next = self.sk.m_err.val();
    }
}

/// A register slice on a payload stream: a [`Skid`] carrying `tlast` in its `last` lane.
#[derive(LogicBlock, Default)]
pub struct PayloadSlice {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s: PayloadServer,
    pub m: PayloadClient,
    sk: Skid<DATA_BITS>,
    unused_err: Signal<Local, Bit>,
}

impl Logic for PayloadSlice {
    #[hdl_gen]
    fn update(&mut self) {
        self.sk.clock.next = self.clock.val();
        self.sk.reset.next = self.reset.val();
        self.sk.s_valid.next = self.s.tvalid.val();
        self.sk.s_data.next = self.s.tdata.val();
        self.sk.s_last.next = self.s.tlast.val();
        self.sk.s_err.next = false;
        self.s.tready.next = self.sk.s_ready.val();
        self.m.tvalid.next = self.sk.m_valid.val();
        self.m.tdata.next = self.sk.m_data.val();
        self.m.tlast.next = self.sk.m_last.val();
        self.sk.m_ready.next = self.m.tready.val();
        self.unused_err.next = self.sk.m_err.val();
    }
}
