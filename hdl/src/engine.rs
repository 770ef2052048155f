//! `Engine`: the engine top — the block whose Verilog is the device (module `top`), with
//! exactly the ports of the contract at the end of `docs/rtl-architecture.md`.
//!
//! **Fourth version: the control plane, the RX front end, the responder side of the
//! datapath and the requester (its transmit half and its receive half's fault-free
//! path).** Wired today:
//!
//! ```text
//!  BAR0 --> Control (RegFile, CmdEngine, context tables)
//!              | qpc/qpa read ports: Responder first, then Requester (one answer a cycle later,
//!              |   routed to the one served); qps read/write -> Responder; qpr read/write -> Requester
//!              | doorbells: RQ -> Responder, CQ -> Completion, SQ -> Requester
//!              | CQ events (CREATE_CQ) -> Completion; QP events RESET/DESTROYED -> AtomicUnit clear
//!              |   and the Requester's QP clear; ERROR -> Responder flush
//!              | QP errors (qpa.state := ERR) <-- Responder first, then the Requester's pulse (held)
//!              | mr read port <-- MrCheck <-- Responder first, then Requester (lkey checks)
//!  MAC RX --> RxFifo --> dispatch: requests (+ payload) --> Responder --+-- ACK/NAK records --+
//!                                  responses/ACKs (+ payload) --> Requester (receive half)
//!                                                                       +-- READ jobs --> ReadResp --+
//!                                                                       +-- atomic jobs / replays --> AtomicUnit
//!                                                                       (the jobs through RspOrder's gates)
//!                                                                       +-- receive CQEs --> Completion (first)
//!  Requester --+-- request records + payloads --> TxPath's request source
//!              +-- send CQEs (successes, failed WQEs, NAKed ops) --> Completion (after receive CQEs)
//!              +-- READ data / atomic originals --> DMA write (wr_q)
//!  MAC TX <-- TxPath <-- responses: RspOrder(ACK/NAK, READ responses, atomic ACKs) in the
//!                        responder's decision order; then requests
//!  DMA read  <-- rd_top(ReadResp, rd_mid(rd_sub(Responder RQ WQE fetch, AtomicUnit),
//!                                        rd_req(Requester SQ WQE fetch, Segmenter payloads)))
//!  DMA write <-- wr_b(wr_a(Responder payload, AtomicUnit),
//!                     wr_q(wr_c(Completion CQEs, Control's QUERY_QP_COUNTERS), Requester))
//! ```
//!
//! - the BAR0 register port into [`Control`] (register file, command engine, context
//!   tables; held equal to the model by its differential bench);
//! - the MAC RX stream into [`RxFifo`] (every check of the parser, the ICRC, store and
//!   forward), whose frame and drop pulses feed the global counters;
//! - [`RxDispatch`] behind it: request headers (every opcode but the RC responses
//!   0x0D..=0x12) and their payloads go to the [`Responder`]; responses and ACKs (their
//!   BTH QP, opcode, PSN, AETH syndrome, AtomicAckETH original, payload length) and their
//!   payloads to the [`Requester`]'s receive half, with no routing FIFO and no wedge (its
//!   module docs);
//! - the responder's and the requester's MR checks through one [`MrCheck`] on the `mr`
//!   table's read port (the responder first; `MrCheck` answers one request before it takes
//!   the next, so one register says whose answer it is). One shared check rather than a
//!   second `MrCheck` on a second read port: the requester checks once per WQE and the
//!   responder once per message, so they rarely meet, and a second check would add its
//!   64-bit range logic and a second copy (or port) of the `mr` table;
//! - the context reads: `qpc` and `qpa` have one datapath read port each, shared the same
//!   way (the responder first; a register remembers whose request was taken, and the
//!   answer one cycle later is that one's); `qps` read and write are the responder's, `qpr`
//!   read and write the requester's (its writes are refused in the cycles a command writes
//!   `qpr`, as the responder's `qps` writes are);
//! - the responder's jobs to [`ReadResp`] and [`AtomicUnit`], its receive CQEs and the
//!   requester's send CQEs to [`Completion`] (receive CQEs first; `Completion` takes a
//!   CQE in the cycle it is offered, so a plain priority choice is enough), told about
//!   CREATE_CQ by the command engine;
//! - QP errors to the command engine (`qpa.state` to ERR) through a `QpErrShare`
//!   (`bus::ctl`): the responder's handshake first, the requester's pulse held in a
//!   one-entry latch until taken;
//! - QP events through a `QpEvSplit` (`control::qpev_split`): RESET/DESTROYED clear the
//!   QP's replay cache ([`AtomicUnit`]) and the requester's per-QP bookkeeping (`qp_clr`),
//!   taken when the requester can take it; ERROR (MODIFY_QP to ERR) flushes the
//!   responder's receives (`flush`);
//! - MAC TX: the ACK/NAK records, the READ responses and the atomic ACKs through
//!   [`RspOrder`] into [`TxPath`]'s response source, in the order the responder decided
//!   them (the model's one response queue: an ACK never overtakes an earlier READ's
//!   response packets). The READ, atomic and replay job handshakes pass its gates (each
//!   pushes a tag) and a [`JobSlice`] each; ReadResp's records reach it through a
//!   [`ReadSlice`] that carries ReadResp's failure pulses in band (a failure stays in
//!   order with the records: `ro` pops a failed job's tag by it), its output through a
//!   register slice (`sk_rsp`); the READ payloads go to TxPath behind their records through
//!   `sk_pay`. Then the requester's request records and payloads
//!   on its request source (responses first, whole frames, ICRC inserted) through two
//!   register slices (its Segmenter passes DMA read data straight to its payload output,
//!   so TxPath's ready would close a loop through it); a third slice carries its WQE
//!   fetch's DMA responses (the fetch's answer reaches the Segmenter's response ready
//!   inside the requester, and `rd_req` routes both in one `always`);
//! - DMA: every client's reads and writes through [`DmaFabric`] (`dma::fabric`: a tree of
//!   two-client muxes with register slices, one tag bit a read level; the clients keep 5
//!   tag bits, the Segmenter uses 4);
//! - counters: every block's pulses for the global counters through
//!   [`CounterEvents`] (`control::counter_events`: which block counts what, and the
//!   counters several blocks count, none lost when two coincide) into the register file;
//!   the pulses that name a QP also go to the per-QP counters (`QpCounters`, in
//!   `Control`; `TxFrames`/`TxBytes` with TxPath's `tx_cnt.qpn`, the sending QP every TX
//!   record carries as `src_qp`);
//!   QUERY_QP_COUNTERS's DMA write goes through the fabric beside the completion
//!   engine's CQE writes.
//!
//! `UnknownQpDrops` also counts frames for another IPv4 address (the RX front end's
//! verdict) and a QP's requests and responses from an address other than its peer's (the
//! responder's and the requester's).
//!
//! Not yet: the requester's fault paths (its block has only the receive half's fault-free
//! path: no retransmission / go-back-N, no ACK timer (`QpTimers`), no RNR wait, so a lost
//! response or an RNR / sequence-error NAK is not handled as the model does; its
//! `m_sent_*` pulses and op-ring walk port are unused), the send queue's flush on an
//! error. Responses leave in one global order (a QP's
//! READ holds back later responses of every QP; `RspOrder`'s docs). Frames a MAC flags (`tuser`) and
//! frames the RX buffer cannot hold are counted as `MalformedDrops` (the ABI has no
//! counter of their own; docs/hdl.md).
//!
//! Inputs and sub-block outputs nothing reads go to locals named `unused_*` (the lint
//! convention of `lib.rs`).

use crate::bus::cnt::{ReqCntClient, RespCntClient, RxCntClient, TxCntClient};
use crate::bus::cqe::{CqeClient, CqeServer, CqeShare};
use crate::bus::ctl::{
    CqEvClient, InvClient, QpClrClient, QpErrClient, QpErrServer, QpErrShare, QpEvClient,
};
use crate::bus::ctx::{CtxRdClient, CtxRdServer, CtxRdShare, CtxWrClient};
use crate::bus::dma_rd::DmaRdServer;
use crate::bus::dma_wr::DmaWrServer;
use crate::bus::job::{AtomicArgsClient, JobHdrClient, ReadArgsClient};
use crate::bus::mr::{MrClient, MrServer, MrShare};
use crate::bus::record::{PayloadClient, PayloadSlice, RecordClient, RecordSlice};
use crate::bus::reg::{CntIncClient, CqDbClient, QDbClient, REG_ADDR_BITS};
use crate::bus::rx::{ReqHdrClient, RspHdrClient, RxHdrClient, RxPayClient};
use crate::common::cat::Cat;
use crate::common::job_slice::JobSlice;
use crate::completion::Completion;
use crate::control::counter_events::CounterEvents;
use crate::control::ctx_tables::*;
use crate::control::mr_check::MrCheck;
use crate::control::qpev_split::QpEvSplit;
use crate::control::Control;
use crate::dma::fabric::DmaFabric;
use crate::prelude::*;
use crate::requester::Requester;
use crate::responder::atomic_unit::AtomicUnit;
use crate::responder::read_resp::ReadResp;
use crate::responder::read_slice::ReadSlice;
use crate::responder::rsp_order::RspOrder;
use crate::responder::Responder;
use crate::rx::dispatch::RxDispatch;
use crate::rx::rx_fifo::RxFifo;
use crate::tx::tx_path::TxPath;

/// The engine over `2^QA` QPs and `2^MA` MRs; `QS` must be `QA + 4` (the atomic replay
/// cache's address: stable Rust cannot compute it in the type).
#[derive(LogicBlock)]
pub struct Engine<const QA: usize, const MA: usize, const QS: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub reg_valid: Signal<In, Bit>,
    pub reg_ready: Signal<Out, Bit>,
    pub reg_write: Signal<In, Bit>,
    pub reg_addr: Signal<In, Bits<REG_ADDR_BITS>>,
    pub reg_wdata: Signal<In, Bits<32>>,
    pub reg_rdata_valid: Signal<Out, Bit>,
    pub reg_rdata: Signal<Out, Bits<32>>,
    pub dma_rd_req_valid: Signal<Out, Bit>,
    pub dma_rd_req_ready: Signal<In, Bit>,
    pub dma_rd_req_addr: Signal<Out, Bits<64>>,
    pub dma_rd_req_len: Signal<Out, Bits<16>>,
    pub dma_rd_req_tag: Signal<Out, Bits<8>>,
    pub dma_rd_resp_valid: Signal<In, Bit>,
    pub dma_rd_resp_ready: Signal<Out, Bit>,
    pub dma_rd_resp_data: Signal<In, Bits<512>>,
    pub dma_rd_resp_tag: Signal<In, Bits<8>>,
    pub dma_rd_resp_last: Signal<In, Bit>,
    pub dma_rd_resp_err: Signal<In, Bit>,
    pub dma_wr_req_valid: Signal<Out, Bit>,
    pub dma_wr_req_ready: Signal<In, Bit>,
    pub dma_wr_req_addr: Signal<Out, Bits<64>>,
    pub dma_wr_req_len: Signal<Out, Bits<16>>,
    pub dma_wr_data_valid: Signal<Out, Bit>,
    pub dma_wr_data_ready: Signal<In, Bit>,
    pub dma_wr_data: Signal<Out, Bits<512>>,
    pub dma_wr_data_keep: Signal<Out, Bits<64>>,
    pub dma_wr_data_last: Signal<Out, Bit>,
    pub dma_wr_status_valid: Signal<In, Bit>,
    pub dma_wr_status_err: Signal<In, Bit>,
    pub mac_tx_tdata: Signal<Out, Bits<512>>,
    pub mac_tx_tkeep: Signal<Out, Bits<64>>,
    pub mac_tx_tlast: Signal<Out, Bit>,
    pub mac_tx_tvalid: Signal<Out, Bit>,
    pub mac_tx_tready: Signal<In, Bit>,
    pub mac_rx_tdata: Signal<In, Bits<512>>,
    pub mac_rx_tkeep: Signal<In, Bits<64>>,
    pub mac_rx_tlast: Signal<In, Bit>,
    pub mac_rx_tvalid: Signal<In, Bit>,
    pub mac_rx_tuser: Signal<In, Bit>,
    /// Pause request to the MAC (PFC XOFF): the RX buffer is nearly full (`RxFifo`).
    pub mac_rx_pause: Signal<Out, Bit>,

    control: Control<QA, MA>,
    rx: RxFifo,
    /// Requests to the responder, responses and ACKs to the requester.
    disp: RxDispatch,
    resp: Responder<QA>,
    req: Requester<QA, QS>,
    mr: MrCheck<MA>,
    rdr: ReadResp<QA>,
    atom: AtomicUnit<QA, QS>,
    cpl: Completion,
    tx: TxPath,
    /// The responses in the order the responder decided them (ACK/NAK records, READ
    /// responses, atomic ACKs), into TxPath's response source through `sk_rsp`.
    ro: RspOrder,
    /// Register slices on the READ, atomic and replay job handshakes behind `ro`'s gates
    /// (the units' job ready and `ro`'s gate would close loops; see `job_slice`).
    js_read: JobSlice,
    js_atom: JobSlice,
    js_rep: JobSlice,
    /// `ro`'s output into TxPath (TxPath's ready would close a loop through `ro`).
    sk_rsp: RecordSlice,
    /// ReadResp's records and failure pulses into `ro`, in one order.
    rd_slice: ReadSlice,
    sk_pay: PayloadSlice,
    /// Register slices between the requester's records / payloads and TxPath (its
    /// Segmenter passes DMA read data through to its payload output).
    sk_rq_pkt: RecordSlice,
    sk_rq_pay: PayloadSlice,
    /// Our MAC, `{MAC_HI, MAC_LO}`.
    mac_cat: Cat<16, 32, 48>,
    /// Every block's pulses for the global counters (`control::counter_events`).
    gcnt: CounterEvents<QA>,
    /// The command engine's QP events to the blocks that forget a QP's state.
    qpev_split: QpEvSplit<QA>,
    /// The DMA read and write fabric (`dma::fabric`).
    dma: DmaFabric,
    cqe_share: CqeShare,
    qpc_share: CtxRdShare<QA, { qpc_layout::BITS }>,
    qpa_share: CtxRdShare<QA, { qpa_layout::BITS }>,
    /// The shared `MrCheck`'s current request is the requester's (held from the request
    /// taken until its answer is taken).
    mr_share: MrShare,
    /// The responder's (first) and the requester's QP errors into the command engine.
    qe_share: QpErrShare<QA>,
    zero8: Constant<Bits<8>>,
    zero64: Constant<Bits<64>>,
    zero4: Constant<Bits<4>>,
    unused_ctl_s_cq_rd_ready: Signal<Local, Bit>,
    unused_ctl_m_cq_rd_valid: Signal<Local, Bit>,
    unused_ctl_m_cq_rd_data: Signal<Local, CqEntry>,
    /// The requester's per-QP receive counters (per-QP counters are not stored) and what
    /// its receive half does not use yet.
    unused_req_m_op_vendor: Signal<Local, Bits<8>>,
    unused_req_m_sent_valid: Signal<Local, Bit>,
    unused_req_m_sent_qpn: Signal<Local, Bits<QA>>,
    unused_req_m_sent_psn: Signal<Local, Bits<24>>,
    unused_req_m_op_wr_id: Signal<Local, Bits<64>>,
    unused_req_m_op_signaled: Signal<Local, Bits<1>>,
    unused_req_m_op_wc_opcode: Signal<Local, Bits<3>>,
    unused_req_m_op_kind: Signal<Local, Bits<2>>,
    unused_req_m_op_iova: Signal<Local, Bits<64>>,
    unused_req_m_op_len: Signal<Local, Bits<32>>,
    unused_req_m_op_first_psn: Signal<Local, Bits<24>>,
    unused_req_m_op_npsn: Signal<Local, Bits<24>>,
    unused_req_m_op_resp: Signal<Local, Bits<24>>,
    unused_req_m_op_pmtu: Signal<Local, Bits<3>>,
    unused_req_m_op_done: Signal<Local, Bits<1>>,
    unused_req_m_op_status: Signal<Local, Bits<8>>,
    unused_mr_m_res_err: Signal<Local, Bits<2>>,
    unused_tx_m_err_payload: Signal<Local, Bit>,
    unused_tx_m_err_icrc: Signal<Local, Bit>,
}

impl<const QA: usize, const MA: usize, const QS: usize> Engine<QA, MA, QS> {
    pub fn new() -> Self {
        assert_eq!(QS, QA + 4, "Engine<{QA}, {MA}, {QS}>: QS must be QA + 4");
        Engine {
            clock: Default::default(),
            reset: Default::default(),
            reg_valid: Default::default(),
            reg_ready: Default::default(),
            reg_write: Default::default(),
            reg_addr: Default::default(),
            reg_wdata: Default::default(),
            reg_rdata_valid: Default::default(),
            reg_rdata: Default::default(),
            dma_rd_req_valid: Default::default(),
            dma_rd_req_ready: Default::default(),
            dma_rd_req_addr: Default::default(),
            dma_rd_req_len: Default::default(),
            dma_rd_req_tag: Default::default(),
            dma_rd_resp_valid: Default::default(),
            dma_rd_resp_ready: Default::default(),
            dma_rd_resp_data: Default::default(),
            dma_rd_resp_tag: Default::default(),
            dma_rd_resp_last: Default::default(),
            dma_rd_resp_err: Default::default(),
            dma_wr_req_valid: Default::default(),
            dma_wr_req_ready: Default::default(),
            dma_wr_req_addr: Default::default(),
            dma_wr_req_len: Default::default(),
            dma_wr_data_valid: Default::default(),
            dma_wr_data_ready: Default::default(),
            dma_wr_data: Default::default(),
            dma_wr_data_keep: Default::default(),
            dma_wr_data_last: Default::default(),
            dma_wr_status_valid: Default::default(),
            dma_wr_status_err: Default::default(),
            mac_tx_tdata: Default::default(),
            mac_tx_tkeep: Default::default(),
            mac_tx_tlast: Default::default(),
            mac_tx_tvalid: Default::default(),
            mac_tx_tready: Default::default(),
            mac_rx_tdata: Default::default(),
            mac_rx_tkeep: Default::default(),
            mac_rx_tlast: Default::default(),
            mac_rx_tvalid: Default::default(),
            mac_rx_tuser: Default::default(),
            mac_rx_pause: Default::default(),
            control: Control::new(),
            rx: RxFifo::new(),
            disp: Default::default(),
            resp: Default::default(),
            mr: Default::default(),
            rdr: Default::default(),
            atom: Default::default(),
            cpl: Default::default(),
            tx: TxPath::new(),
            ro: RspOrder::new(),
            js_read: Default::default(),
            js_atom: Default::default(),
            js_rep: Default::default(),
            sk_rsp: Default::default(),
            rd_slice: Default::default(),
            sk_pay: Default::default(),
            mac_cat: Default::default(),
            gcnt: Default::default(),
            qpev_split: Default::default(),
            zero8: Constant::new(0u64.to_bits()),
            zero64: Constant::new(0u64.to_bits()),
            zero4: Constant::new(0u64.to_bits()),
            unused_ctl_s_cq_rd_ready: Default::default(),
            unused_ctl_m_cq_rd_valid: Default::default(),
            unused_ctl_m_cq_rd_data: Default::default(),
            unused_mr_m_res_err: Default::default(),
            unused_tx_m_err_payload: Default::default(),
            unused_tx_m_err_icrc: Default::default(),
            req: Default::default(),
            sk_rq_pkt: Default::default(),
            sk_rq_pay: Default::default(),
            dma: Default::default(),
            cqe_share: Default::default(),
            qpc_share: Default::default(),
            qpa_share: Default::default(),
            mr_share: Default::default(),
            qe_share: Default::default(),
            unused_req_m_op_vendor: Default::default(),
            unused_req_m_sent_valid: Default::default(),
            unused_req_m_sent_qpn: Default::default(),
            unused_req_m_sent_psn: Default::default(),
            unused_req_m_op_wr_id: Default::default(),
            unused_req_m_op_signaled: Default::default(),
            unused_req_m_op_wc_opcode: Default::default(),
            unused_req_m_op_kind: Default::default(),
            unused_req_m_op_iova: Default::default(),
            unused_req_m_op_len: Default::default(),
            unused_req_m_op_first_psn: Default::default(),
            unused_req_m_op_npsn: Default::default(),
            unused_req_m_op_resp: Default::default(),
            unused_req_m_op_pmtu: Default::default(),
            unused_req_m_op_done: Default::default(),
            unused_req_m_op_status: Default::default(),
        }
    }
}

impl<const QA: usize, const MA: usize, const QS: usize> Default for Engine<QA, MA, QS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const QA: usize, const MA: usize, const QS: usize> Logic for Engine<QA, MA, QS> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(
            self, clock, control, rx, disp, resp, req, mr, rdr, atom, cpl, qe_share, dma, tx, ro,
            js_read, js_atom, js_rep, sk_rsp, rd_slice, sk_pay, sk_rq_pkt, sk_rq_pay, gcnt
        );
        self.control.reset.next = self.reset.val();
        self.gcnt.reset.next = self.reset.val();
        self.rx.reset.next = self.reset.val();
        self.qe_share.reset.next = self.reset.val();
        self.disp.reset.next = self.reset.val();
        self.resp.reset.next = self.reset.val();
        self.req.reset.next = self.reset.val();
        self.sk_rq_pkt.reset.next = self.reset.val();
        self.sk_rq_pay.reset.next = self.reset.val();
        self.mr.reset.next = self.reset.val();
        self.rdr.reset.next = self.reset.val();
        self.atom.reset.next = self.reset.val();
        self.cpl.reset.next = self.reset.val();
        self.tx.reset.next = self.reset.val();
        self.ro.reset.next = self.reset.val();
        self.js_read.reset.next = self.reset.val();
        self.js_atom.reset.next = self.reset.val();
        self.js_rep.reset.next = self.reset.val();
        self.sk_rsp.reset.next = self.reset.val();
        self.rd_slice.reset.next = self.reset.val();
        self.sk_pay.reset.next = self.reset.val();

        // ---- BAR0 ----
        self.control.bar.valid.next = self.reg_valid.val();
        self.control.bar.write.next = self.reg_write.val();
        self.control.bar.addr.next = self.reg_addr.val();
        self.control.bar.wdata.next = self.reg_wdata.val();
        self.reg_ready.next = self.control.bar.ready.val();
        self.reg_rdata_valid.next = self.control.bar.rdata_valid.val();
        self.reg_rdata.next = self.control.bar.rdata.val();
        self.mac_cat.hi.next = self.control.port.mac_hi.val();
        self.mac_cat.lo.next = self.control.port.mac_lo.val();
        self.resp.local_mac.next = self.mac_cat.y.val();
        self.resp.local_ip.next = self.control.port.ipv4.val();
        self.req.local_mac.next = self.mac_cat.y.val();
        self.req.local_ip.next = self.control.port.ipv4.val();

        // ---- MAC RX -> RX front end ----
        self.rx.enable.next = self.control.port.port_enable.val();
        self.rx.local_ip.next = self.control.port.ipv4.val();
        self.rx.s_axis_tdata.next = self.mac_rx_tdata.val();
        self.rx.s_axis_tkeep.next = self.mac_rx_tkeep.val();
        self.rx.s_axis_tlast.next = self.mac_rx_tlast.val();
        self.rx.s_axis_tvalid.next = self.mac_rx_tvalid.val();
        self.rx.s_axis_tuser.next = self.mac_rx_tuser.val();
        self.mac_rx_pause.next = self.rx.m_pause.val();

        // ---- dispatch: requests to the responder, responses and ACKs to the requester ----
        RxHdrClient::join(&mut self.rx.hdr, &mut self.disp.hdr);
        RxPayClient::join(&mut self.rx.pay, &mut self.disp.pay);
        ReqHdrClient::join(&mut self.disp.req, &mut self.resp.hdr);
        RxPayClient::join(&mut self.disp.req_pay, &mut self.resp.pay);
        RspHdrClient::join(&mut self.disp.rsp, &mut self.req.rsp);
        RxPayClient::join(&mut self.disp.rsp_pay, &mut self.req.rsp_pay);

        // ---- doorbells: RQ -> responder, CQ -> completion engine, SQ -> requester ----
        // CQ doorbells have their own stream: the requester and responder may stall on a
        // full CQ while an SQ/RQ doorbell waits for them.
        QDbClient::<QA>::join(&mut self.control.rq_db, &mut self.resp.rq_db);
        QDbClient::<QA>::join(&mut self.control.sq_db, &mut self.req.sq_db);
        CqDbClient::join(&mut self.control.cq_db, &mut self.cpl.db);

        // ---- command events: CREATE_CQ -> completion engine, QP reset/destroy -> replay cache ----
        CqEvClient::join(&mut self.control.cqev, &mut self.cpl.cfg);
        // MODIFY_QP to ERR: the responder flushes the QP's receives; RESET/DESTROYED: the
        // requester's op-ring bookkeeping and the replay cache are cleared (QpEvSplit).
        QpEvClient::<QA>::join(&mut self.control.qpev, &mut self.qpev_split.s);
        QpClrClient::<QA>::join(&mut self.qpev_split.flush, &mut self.resp.flush);
        QpClrClient::<QA>::join(&mut self.qpev_split.clear, &mut self.req.qp_clr);
        QpClrClient::<QA>::join(&mut self.qpev_split.replay, &mut self.atom.clear);

        // ---- context tables <-> responder ----
        // qpc and qpa: one datapath read port each, shared by the responder (first) and
        // the requester.
        self.qpc_share.clock.next = self.clock.val();
        CtxRdServer::<QA, { qpc_layout::BITS }>::join(
            &mut self.qpc_share.first,
            &mut self.resp.qpc_rd,
        );
        CtxRdServer::<QA, { qpc_layout::BITS }>::join(
            &mut self.qpc_share.second,
            &mut self.req.qpc_rd,
        );
        CtxRdClient::<QA, { qpc_layout::BITS }>::join(
            &mut self.qpc_share.table,
            &mut self.control.ctx.qpc_rd,
        );
        self.qpa_share.clock.next = self.clock.val();
        CtxRdServer::<QA, { qpa_layout::BITS }>::join(
            &mut self.qpa_share.first,
            &mut self.resp.qpa_rd,
        );
        CtxRdServer::<QA, { qpa_layout::BITS }>::join(
            &mut self.qpa_share.second,
            &mut self.req.qpa_rd,
        );
        CtxRdClient::<QA, { qpa_layout::BITS }>::join(
            &mut self.qpa_share.table,
            &mut self.control.ctx.qpa_rd,
        );
        CtxRdClient::<QA, { qps_layout::BITS }>::join(
            &mut self.resp.qps_rd,
            &mut self.control.ctx.qps_rd,
        );
        CtxWrClient::<QA, { qps_layout::BITS }>::join(
            &mut self.resp.qps_wr,
            &mut self.control.ctx.qps_wr,
        );
        // qpr: the requester's read port and write port (writes refused in the cycles a
        // command writes qpr).
        CtxRdClient::<QA, { qpr_layout::BITS }>::join(
            &mut self.req.qpr_rd,
            &mut self.control.ctx.qpr_rd,
        );
        CtxWrClient::<QA, { qpr_layout::BITS }>::join(
            &mut self.req.qpr_wr,
            &mut self.control.ctx.qpr_wr,
        );
        // A table nobody reads yet.
        self.control.ctx.cq_rd.req_valid.next = false;
        self.control.ctx.cq_rd.req_addr.next = self.zero8.val();
        self.unused_ctl_s_cq_rd_ready.next = self.control.ctx.cq_rd.req_ready.val();
        self.unused_ctl_m_cq_rd_valid.next = self.control.ctx.cq_rd.resp_valid.val();
        self.unused_ctl_m_cq_rd_data.next = self.control.ctx.cq_rd.resp_data.val();

        // ---- MR checks: responder (first) and requester -> one MrCheck -> mr table ----
        self.mr_share.clock.next = self.clock.val();
        self.mr_share.reset.next = self.reset.val();
        MrServer::join(&mut self.mr_share.first, &mut self.resp.mr);
        MrServer::join(&mut self.mr_share.second, &mut self.req.mr);
        MrClient::join(&mut self.mr_share.out, &mut self.mr.port);
        self.unused_mr_m_res_err.next = self.mr.m_res_err.val();
        CtxRdClient::<MA, { mr_layout::BITS }>::join(
            &mut self.mr.mr_rd,
            &mut self.control.ctx.mr_rd,
        );

        // ---- jobs: READ -> ReadResp, atomics and replays -> AtomicUnit; their failures ----
        // Each handshake passes `ro`'s gate (which pushes the job's tag) and a JobSlice;
        // the data goes from the responder (which holds it) to the unit directly.
        JobHdrClient::<QA>::join(&mut self.resp.read_hdr, &mut self.rdr.job_hdr);
        ReadArgsClient::join(&mut self.resp.read_args, &mut self.rdr.job_args);
        JobHdrClient::<QA>::join(&mut self.resp.atomic_hdr, &mut self.atom.job_hdr);
        AtomicArgsClient::join(&mut self.resp.atomic_args, &mut self.atom.job_args);
        JobHdrClient::<QA>::join(&mut self.resp.replay_hdr, &mut self.atom.replay_hdr);
        self.ro.s_rjob_valid.next = self.resp.m_read_job_valid.val();
        self.resp.m_read_job_ready.next = self.ro.s_rjob_ready.val();
        self.js_read.s_valid.next = self.ro.m_rjob_valid.val();
        self.ro.m_rjob_ready.next = self.js_read.s_ready.val();
        self.rdr.s_job_valid.next = self.js_read.m_valid.val();
        self.js_read.m_ready.next = self.rdr.s_job_ready.val();
        self.ro.s_ajob_valid.next = self.resp.m_atomic_job_valid.val();
        self.resp.m_atomic_job_ready.next = self.ro.s_ajob_ready.val();
        self.js_atom.s_valid.next = self.ro.m_ajob_valid.val();
        self.ro.m_ajob_ready.next = self.js_atom.s_ready.val();
        self.atom.s_job_valid.next = self.js_atom.m_valid.val();
        self.resp.s_atomic_busy.next = self.atom.m_busy.val();
        self.js_atom.m_ready.next = self.atom.s_job_ready.val();
        self.ro.s_rep_valid.next = self.resp.m_replay_valid.val();
        self.resp.m_replay_ready.next = self.ro.s_rep_ready.val();
        self.js_rep.s_valid.next = self.ro.m_rep_valid.val();
        self.ro.m_rep_ready.next = self.js_rep.s_ready.val();
        self.atom.s_replay_valid.next = self.js_rep.m_valid.val();
        self.js_rep.m_ready.next = self.atom.s_replay_ready.val();
        self.resp.s_read_err_valid.next = self.rdr.m_err_valid.val();
        self.resp.s_read_err_qpn.next = self.rdr.m_err_qpn.val();
        self.resp.s_read_err_psn.next = self.rdr.m_err_psn.val();
        self.resp.s_atomic_err_valid.next = self.atom.m_err_valid.val();
        self.resp.s_atomic_err_qpn.next = self.atom.m_err_qpn.val();
        self.resp.s_atomic_err_psn.next = self.atom.m_err_psn.val();
        // the responder's (first) and the requester's QP errors -> the command engine
        // (qpa.state to ERR)
        QpErrServer::<QA>::join(&mut self.qe_share.first, &mut self.resp.qp_err);
        self.qe_share.pulse_valid.next = self.req.m_qp_err_valid.val();
        self.qe_share.pulse_qpn.next = self.req.m_qp_err_qpn.val();
        QpErrClient::<QA>::join(&mut self.qe_share.out, &mut self.control.qperr);
        // SEND with invalidate -> the command engine (the mr table's write)
        InvClient::join(&mut self.resp.inv, &mut self.control.inv);
        // table writes: the responder keeps nothing read while one may happen
        self.resp.s_cmd_start.next = self.control.m_cmd_start.val();
        self.resp.s_cmd_done.next = self.control.m_cmd_done.val();
        self.resp.s_tbl_wr.next = self.control.m_cmd_busy.val()
            | self.control.qperr.ready.val()
            | self.control.inv.ready.val();

        // ---- receive CQEs (first) and send CQEs -> completion engine ----
        CqeServer::join(&mut self.cqe_share.first, &mut self.resp.cqe);
        CqeServer::join(&mut self.cqe_share.second, &mut self.req.cqe);
        CqeClient::join(&mut self.cqe_share.out, &mut self.cpl.cqe);

        // ---- TX: responses in decision order (RspOrder), into TxPath ----
        RecordClient::join(&mut self.resp.ack_pkt, &mut self.ro.ack);
        RecordClient::join(&mut self.atom.pkt, &mut self.ro.at);
        self.ro.s_at_err.next = self.atom.m_err_valid.val();
        self.ro.s_at_miss.next = self.atom.m_replay_miss.val();
        // ReadResp's records and failure pulses, in one order (a failure pops its job's tag)
        RecordClient::join(&mut self.rdr.pkt, &mut self.rd_slice.s);
        self.rd_slice.s_err.next = self.rdr.m_err_valid.val();
        RecordClient::join(&mut self.rd_slice.m, &mut self.ro.rd);
        self.ro.s_rd_err.next = self.rd_slice.m_err.val();
        PayloadClient::join(&mut self.rdr.pay, &mut self.sk_pay.s);
        RecordClient::join(&mut self.ro.pkt, &mut self.sk_rsp.s);
        RecordClient::join(&mut self.sk_rsp.m, &mut self.tx.rsp_pkt);
        // READ payloads follow their records (only READ records have a payload).
        PayloadClient::join(&mut self.sk_pay.m, &mut self.tx.rsp_pay);
        // The requester's records and payloads: TxPath's request source (after responses).
        RecordClient::join(&mut self.req.pkt, &mut self.sk_rq_pkt.s);
        RecordClient::join(&mut self.sk_rq_pkt.m, &mut self.tx.req_pkt);
        PayloadClient::join(&mut self.req.pay, &mut self.sk_rq_pay.s);
        PayloadClient::join(&mut self.sk_rq_pay.m, &mut self.tx.req_pay);
        // The requester's sent pulses and op-ring walk port (for retransmission, not
        // built) are not used.
        self.unused_req_m_op_vendor.next = self.req.m_op_vendor.val();
        self.unused_req_m_sent_valid.next = self.req.m_sent_valid.val();
        self.unused_req_m_sent_qpn.next = self.req.m_sent_qpn.val();
        self.unused_req_m_sent_psn.next = self.req.m_sent_psn.val();
        self.req.s_op_rd_qpn.next = self.zero64.val().get_bits::<QA>(0);
        self.req.s_op_rd_slot.next = self.zero4.val();
        self.unused_req_m_op_wr_id.next = self.req.m_op_wr_id.val();
        self.unused_req_m_op_signaled.next = self.req.m_op_signaled.val();
        self.unused_req_m_op_wc_opcode.next = self.req.m_op_wc_opcode.val();
        self.unused_req_m_op_kind.next = self.req.m_op_kind.val();
        self.unused_req_m_op_iova.next = self.req.m_op_iova.val();
        self.unused_req_m_op_len.next = self.req.m_op_len.val();
        self.unused_req_m_op_first_psn.next = self.req.m_op_first_psn.val();
        self.unused_req_m_op_npsn.next = self.req.m_op_npsn.val();
        self.unused_req_m_op_resp.next = self.req.m_op_resp.val();
        self.unused_req_m_op_pmtu.next = self.req.m_op_pmtu.val();
        self.unused_req_m_op_done.next = self.req.m_op_done.val();
        self.unused_req_m_op_status.next = self.req.m_op_status.val();
        self.mac_tx_tdata.next = self.tx.m_axis_tdata.val();
        self.mac_tx_tkeep.next = self.tx.m_axis_tkeep.val();
        self.mac_tx_tlast.next = self.tx.m_axis_tlast.val();
        self.mac_tx_tvalid.next = self.tx.m_axis_tvalid.val();
        self.tx.m_axis_tready.next = self.mac_tx_tready.val();
        self.unused_tx_m_err_payload.next = self.tx.m_err_payload.val();
        self.unused_tx_m_err_icrc.next = self.tx.m_err_icrc.val();

        // ---- DMA: every client's reads and writes share the engine's two ports ----
        self.dma.clock.next = self.clock.val();
        self.dma.reset.next = self.reset.val();
        DmaRdServer::join(&mut self.dma.rdr_rd, &mut self.rdr.dma_rd);
        DmaRdServer::join(&mut self.dma.resp_rd, &mut self.resp.dma_rd);
        DmaRdServer::join(&mut self.dma.atom_rd, &mut self.atom.dma_rd);
        DmaRdServer::join(&mut self.dma.wqe_rd, &mut self.req.wqe_rd);
        DmaRdServer::join(&mut self.dma.seg_rd, &mut self.req.seg_rd);
        DmaWrServer::join(&mut self.dma.resp_wr, &mut self.resp.dma_wr);
        DmaWrServer::join(&mut self.dma.atom_wr, &mut self.atom.dma_wr);
        DmaWrServer::join(&mut self.dma.cpl_wr, &mut self.cpl.dma_wr);
        DmaWrServer::join(&mut self.dma.ctl_wr, &mut self.control.dma_wr);
        DmaWrServer::join(&mut self.dma.req_wr, &mut self.req.dma_wr);
        self.dma_rd_req_valid.next = self.dma.port_rd.req_valid.val();
        self.dma_rd_req_addr.next = self.dma.port_rd.req_addr.val();
        self.dma_rd_req_len.next = self.dma.port_rd.req_len.val();
        self.dma_rd_req_tag.next = self.dma.port_rd.req_tag.val();
        self.dma.port_rd.req_ready.next = self.dma_rd_req_ready.val();
        self.dma.port_rd.resp_valid.next = self.dma_rd_resp_valid.val();
        self.dma.port_rd.resp_data.next = self.dma_rd_resp_data.val();
        self.dma.port_rd.resp_tag.next = self.dma_rd_resp_tag.val();
        self.dma.port_rd.resp_last.next = self.dma_rd_resp_last.val();
        self.dma.port_rd.resp_err.next = self.dma_rd_resp_err.val();
        self.dma_rd_resp_ready.next = self.dma.port_rd.resp_ready.val();
        self.dma_wr_req_valid.next = self.dma.port_wr.req_valid.val();
        self.dma_wr_req_addr.next = self.dma.port_wr.req_addr.val();
        self.dma_wr_req_len.next = self.dma.port_wr.req_len.val();
        self.dma_wr_data_valid.next = self.dma.port_wr.data_valid.val();
        self.dma_wr_data.next = self.dma.port_wr.data.val();
        self.dma_wr_data_keep.next = self.dma.port_wr.data_keep.val();
        self.dma_wr_data_last.next = self.dma.port_wr.data_last.val();
        self.dma.port_wr.req_ready.next = self.dma_wr_req_ready.val();
        self.dma.port_wr.data_ready.next = self.dma_wr_data_ready.val();
        self.dma.port_wr.status_valid.next = self.dma_wr_status_valid.val();
        self.dma.port_wr.status_err.next = self.dma_wr_status_err.val();

        // ---- counters: global (CounterEvents) and per QP (QpCounters, in Control) ----
        self.gcnt.rx_frame.next = self.rx.m_rx_frame.val();
        self.gcnt.rx_bytes.next = self.rx.m_rx_bytes.val();
        self.gcnt.drop_icrc.next = self.rx.m_drop_icrc.val();
        self.gcnt.drop_malformed.next = self.rx.m_drop_malformed.val();
        self.gcnt.drop_mac.next = self.rx.m_drop_mac.val();
        self.gcnt.drop_overflow.next = self.rx.m_drop_overflow.val();
        self.gcnt.drop_ip.next = self.rx.m_drop_ip.val();
        TxCntClient::join(&mut self.tx.tx_cnt, &mut self.gcnt.tx);
        TxCntClient::join(&mut self.tx.tx_cnt, &mut self.control.qc_tx);
        self.gcnt.cpl_dma_fault.next = self.cpl.m_dma_fault.val();
        RespCntClient::<QA>::join(&mut self.resp.cnt, &mut self.gcnt.resp);
        ReqCntClient::<QA>::join(&mut self.req.cnt, &mut self.gcnt.req);
        RxCntClient::<QA>::join(&mut self.req.rx_cnt, &mut self.gcnt.rx_cnt);
        CntIncClient::join(&mut self.gcnt.cnt, &mut self.control.cnt);
        RespCntClient::<QA>::join(&mut self.resp.cnt, &mut self.control.qc_resp);
        ReqCntClient::<QA>::join(&mut self.req.cnt, &mut self.control.qc_req);
        RxCntClient::<QA>::join(&mut self.req.rx_cnt, &mut self.control.qc_rx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{frame_beats, random_roce_frame, Bench, Rng};
    use crate::{MR_LOG, QP_LOG};
    use rocenic_proto::abi::regs::{self, Counter};
    use rocenic_proto::wire::Opcode;

    type Top = Engine<QP_LOG, MR_LOG, { QP_LOG + 4 }>;

    /// The engine with its MAC TX ready and the DMA ports answering nothing.
    fn engine() -> Bench<Top> {
        let mut b = Bench::new(Top::new(), |u| &mut u.clock);
        b.uut.mac_tx_tready.next = true;
        b.uut.reset.next = true;
        b.tick();
        b.uut.reset.next = false;
        b
    }

    /// One register access through the contract's register port; a read's data.
    fn access(b: &mut Bench<Top>, write: bool, off: u32, v: u32) -> Option<u32> {
        b.uut.reg_valid.next = true;
        b.uut.reg_write.next = write;
        b.uut.reg_addr.next = u64::from(off).into();
        b.uut.reg_wdata.next = u64::from(v).into();
        let mut n = 0;
        loop {
            b.settle();
            let taken = b.uut.reg_ready.val();
            b.tick();
            if taken {
                break;
            }
            n += 1;
            assert!(n < 5000, "register {off:#x} never taken");
        }
        b.uut.reg_valid.next = false;
        if write {
            return None;
        }
        for _ in 0..100 {
            b.settle();
            let data = b
                .uut
                .reg_rdata_valid
                .val()
                .then(|| b.uut.reg_rdata.val().to_u32());
            b.tick();
            if data.is_some() {
                return data;
            }
        }
        panic!("register {off:#x} never answered");
    }

    fn read(b: &mut Bench<Top>, off: u32) -> u32 {
        access(b, false, off, 0).expect("read")
    }

    fn counter(b: &mut Bench<Top>, c: Counter) -> u64 {
        let lo = read(b, regs::counter_lo(c));
        let hi = read(b, regs::counter_hi(c));
        u64::from(hi) << 32 | u64::from(lo)
    }

    /// Streams a frame into MAC RX at one beat per cycle (the MAC cannot be stalled).
    fn receive(b: &mut Bench<Top>, frame: &[u8]) {
        for beat in frame_beats(frame, || 0xA5) {
            b.uut.mac_rx_tvalid.next = true;
            b.uut.mac_rx_tdata.next = beat.tdata();
            b.uut.mac_rx_tkeep.next = beat.tkeep();
            b.uut.mac_rx_tlast.next = beat.last;
            b.uut.mac_rx_tuser.next = false;
            b.settle();
            b.tick();
        }
        b.uut.mac_rx_tvalid.next = false;
        for _ in 0..40 {
            b.settle();
            b.tick();
        }
    }

    /// Runs `f` on a thread with a stack large enough for the whole engine (RustHDL keeps
    /// every block by value; the default 2 MiB test stack overflows).
    fn big_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn(f)
            .expect("spawning the bench thread")
            .join()
            .expect("the bench panicked");
    }

    #[test]
    fn identifies_itself_and_counts_received_frames_by_fate() {
        big_stack(counts_received_frames_by_fate);
    }

    fn counts_received_frames_by_fate() {
        let mut b = engine();
        assert_eq!(read(&mut b, regs::ID), regs::DEVICE_ID);
        assert_eq!(read(&mut b, regs::MAX_QP), 1 << QP_LOG);
        assert_eq!(read(&mut b, regs::MAX_MR), 1 << MR_LOG);
        let mut rng = Rng::new(0xE461);
        let good = random_roce_frame(&mut rng, Opcode::RdmaWriteOnly, 100);
        let our_ip = u32::from_be_bytes(good[30..34].try_into().expect("dst IP"));
        let other = random_roce_frame(&mut rng, Opcode::SendOnly, 10);
        assert_ne!(other[30..34], good[30..34]);
        let mut bad_icrc = good.clone();
        let last = bad_icrc.len() - 1;
        bad_icrc[last] ^= 1;

        // Port disabled: nothing is counted.
        receive(&mut b, &good);
        assert_eq!(counter(&mut b, Counter::RxFrames), 0);

        access(&mut b, true, regs::IPV4_ADDR, our_ip);
        access(&mut b, true, regs::CONTROL, regs::CONTROL_ENABLE);
        receive(&mut b, &good);
        receive(&mut b, &good);
        receive(&mut b, &bad_icrc);
        receive(&mut b, &other);
        assert_eq!(counter(&mut b, Counter::RxFrames), 2);
        assert_eq!(counter(&mut b, Counter::RxBytes), 2 * good.len() as u64);
        assert_eq!(counter(&mut b, Counter::IcrcDrops), 1);
        // One for another address, two for a QP that does not exist (the responder's).
        assert_eq!(counter(&mut b, Counter::UnknownQpDrops), 3);
        assert_eq!(counter(&mut b, Counter::MalformedDrops), 0);
        // Nothing is answered: no QP exists.
        assert_eq!(counter(&mut b, Counter::TxFrames), 0);
        b.settle();
        assert!(!b.uut.mac_tx_tvalid.val());
        assert!(!b.uut.dma_rd_req_valid.val() && !b.uut.dma_wr_req_valid.val());
    }
}
