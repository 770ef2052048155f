//! The context tables of the engine in block RAM: QP contexts (split by user), CQs, MRs
//! and PDs; their record layouts, and [`CtxTable`], one table with a command port and a
//! read port for the datapath blocks.
//!
//! # Layouts (bit 0 first; widths from what the model keeps per object)
//!
//! | table | entries | bits | fields |
//! |---|---|---|---|
//! | PD `pd` | 256 | 26 | `present` 1, `refs` 25 (MRs + QPs in it: up to 2^24 + 2^12, the largest configuration `CmdEngine` accepts) |
//! | CQ `cq` | 256 | 77 | `present` 1, `refs` 14 (QPs using it, twice if for both queues: up to 2 x 2^12), `log_size` 4, `ring` 58 (IOVA bits 63:6; rings are 64-byte aligned) |
//! | MR `mr` | 2^MA | 214 | `present` 1, `valid` 1 (cleared by SEND_WITH_INV), `tag` 8 (key = index << 8 \| tag), `pdn` 8, `access` 4, `va` 64, `iova` 64, `length` 64 |
//! | QP create-time `qpc` | 2^QA | 149 | `present` 1, `pdn` 8, `send_cqn` 8, `recv_cqn` 8, `sq_log` 4, `sq_ring` 58, `rq_log` 4, `rq_ring` 58 |
//! | QP attributes `qpa` | 2^QA | 156 | `state` 3, `pmtu` 3 (ibv_mtu code, 0 = unset), `dest_qpn` 24, `dest_mac` 48 (`MAC_HI << 32 \| MAC_LO`), `dest_ip` 32, `udp_sport` 16, `access` 4, `timeout` 5, `retry_cnt` 3, `rnr_retry` 3, `min_rnr_timer` 5, `max_rd_atomic` 5, `max_dest_rd_atomic` 5 |
//! | QP requester `qpr` | 2^QA | 174 | `sq_pi` 32, `sq_fetch` 32, `sq_ci` 32 (oldest WQE not retired), `next_psn` 24, `una_psn` 24, `sent_end` 24, `retry_left` 3, `rnr_left` 3 |
//! | QP responder `qps` | 2^QA | 371 | `rq_pi` 32, `rq_ci` 32, `epsn` 24, `msn` 24, `nak_sent` 1, `prog` 2 (message in progress: none / SEND / WRITE), `msg_va` 64, `msg_key` 32, `msg_len` 32, `msg_off` 32, `rqe_wr_id` 64, `rqe_index` 32 |
//!
//! Who uses what: the command engine (`cmd.rs`) creates, modifies and destroys every
//! entry; `qpc`/`qpa` are read by the requester, responder and completion engine, `qpr`
//! belongs to the requester (which also writes it through the datapath write port:
//! doorbells land in `sq_pi`), `qps`
//! to the responder (which writes it through the datapath write port), `cq` to the
//! completion engine, `mr` to both DMA users for the protection check. The responder's
//! replay cache (in the atomic unit) and the
//! requester's outstanding READ/atomic PSN ranges are not here yet: they come with those
//! blocks (docs/rtl-architecture.md). The CQ producer/consumer indices likewise live in
//! the completion engine's own table.
//!
//! At 256 QPs / 1024 MRs that is 256 x (149 + 156 + 174 + 113) bits of QP state, 1024 x
//! 214 of MR, 256 x 77 of CQ and 256 x 26 of PD: about 17 BRAM36 as yosys packs them
//! (see docs/hdl.md for the synthesised figures).
//!
//! # `CtxTable`
//!
//! A simple dual-port RAM (one write port, one synchronous read port, data one cycle after
//! the address) with the read port shared: the command port (`cmd_rd_en`) has priority,
//! the datapath port (`rd`, a `CtxRdServer`: answer on `rd.resp_valid` / `rd.resp_data`
//! one cycle after the request) is refused (`rd.req_ready` low) in the cycles the command
//! engine reads. Commands are rare and a few cycles long, so the datapath loses little.

use crate::bus::ctx::{CtxRdServer, CtxWrServer};
use crate::prelude::*;

crate::packed_layout!(
    /// A protection domain.
    pd_layout, PdPack; present: 1, refs: 25
);
crate::packed_layout!(
    /// A completion queue (the command engine's view).
    cq_layout, CqPack; present: 1, refs: 14, log_size: 4, ring: 58
);
crate::packed_layout!(
    /// A memory region.
    mr_layout, MrPack; present: 1, valid: 1, tag: 8, pdn: 8, access: 4, va: 64, iova: 64,
    length: 64
);
crate::packed_layout!(
    /// A QP's create-time configuration.
    qpc_layout, QpcPack; present: 1, pdn: 8, send_cqn: 8, recv_cqn: 8, sq_log: 4,
    sq_ring: 58, rq_log: 4, rq_ring: 58
);
crate::packed_layout!(
    /// A QP's state and MODIFY_QP attributes.
    qpa_layout, QpaPack; state: 3, pmtu: 3, dest_qpn: 24, dest_mac: 48, dest_ip: 32,
    udp_sport: 16, access: 4, timeout: 5, retry_cnt: 3, rnr_retry: 3, min_rnr_timer: 5,
    max_rd_atomic: 5, max_dest_rd_atomic: 5
);
crate::packed_layout!(
    /// A QP's requester state.
    qpr_layout, QprPack; sq_pi: 32, sq_fetch: 32, sq_ci: 32, next_psn: 24, una_psn: 24,
    sent_end: 24, retry_left: 3, rnr_left: 3
);
crate::packed_layout!(
    /// A QP's responder state, with the message in progress (`prog`: 0 none, 1 SEND,
    /// 2 WRITE; SEND: the receive's `rqe_wr_id`, `rqe_index`, buffer `msg_va` / `msg_key`
    /// (lkey) / `msg_len`, bytes written `msg_off`; WRITE: `msg_va` / `msg_key` (rkey) /
    /// `msg_len` (DMA length) from the RETH, `msg_off`).
    qps_layout, QpsPack; rq_pi: 32, rq_ci: 32, epsn: 24, msn: 24, nak_sent: 1, prog: 2,
    msg_va: 64, msg_key: 32, msg_len: 32, msg_off: 32, rqe_wr_id: 64, rqe_index: 32
);

pub type PdEntry = Bits<{ pd_layout::BITS }>;
pub type CqEntry = Bits<{ cq_layout::BITS }>;
pub type MrEntry = Bits<{ mr_layout::BITS }>;
pub type QpcEntry = Bits<{ qpc_layout::BITS }>;
pub type QpaEntry = Bits<{ qpa_layout::BITS }>;
pub type QprEntry = Bits<{ qpr_layout::BITS }>;
pub type QpsEntry = Bits<{ qps_layout::BITS }>;

/// One context table: `2^N` entries of `W` bits in block RAM; see the [module docs](self).
#[derive(LogicBlock, Default)]
pub struct CtxTable<const W: usize, const N: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Command port: read `cmd_rd_addr` (data on `rd_data` next cycle).
    pub cmd_rd_en: Signal<In, Bit>,
    pub cmd_rd_addr: Signal<In, Bits<N>>,
    /// Write port (the command engine's).
    pub wr_en: Signal<In, Bit>,
    pub wr_addr: Signal<In, Bits<N>>,
    pub wr_data: Signal<In, Bits<W>>,
    /// Datapath write (the responder's on `qps`, the requester's on `qpr`), refused in a
    /// cycle the command port writes.
    pub wr: CtxWrServer<N, W>,
    /// Datapath read, refused in a cycle the command port reads; the answer is `rd_data`
    /// (also on `rd.resp_data`) one cycle after the request.
    pub rd: CtxRdServer<N, W>,
    /// The entry read in the previous cycle, by either port.
    pub rd_data: Signal<Out, Bits<W>>,
    ram: RAM<Bits<W>, N>,
    dp_read: DFF<Bit>,
}

impl<const W: usize, const N: usize> Logic for CtxTable<W, N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, dp_read);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.rd.req_ready.next = !self.cmd_rd_en.val();
        self.ram.read_address.next = self.rd.req_addr.val();
        if self.cmd_rd_en.val() {
            self.ram.read_address.next = self.cmd_rd_addr.val();
        }
        self.wr.ready.next = !self.wr_en.val();
        self.ram.write_enable.next = self.wr_en.val() | self.wr.valid.val();
        self.ram.write_address.next = self.wr.addr.val();
        self.ram.write_data.next = self.wr.data.val();
        if self.wr_en.val() {
            self.ram.write_address.next = self.wr_addr.val();
            self.ram.write_data.next = self.wr_data.val();
        }
        self.dp_read.d.next = self.rd.req_valid.val() & !self.cmd_rd_en.val();
        self.rd.resp_valid.next = self.dp_read.q.val();
        self.rd_data.next = self.ram.read_data.val();
        self.rd.resp_data.next = self.ram.read_data.val();
        if self.reset.val() {
            self.dp_read.d.next = false;
        }
    }
}
