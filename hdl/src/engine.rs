//! `Engine`: the engine top — the block whose Verilog is the device (module `top`), with
//! exactly the ports of the contract at the end of `docs/rtl-architecture.md`.
//!
//! **First version: the control plane and the RX front end.** Wired today:
//!
//! - the BAR0 register port into [`Control`] (register file, command engine, context
//!   tables; held equal to the model by its differential bench), so a driver can open the
//!   device, read its identification and capabilities, program the port and run every
//!   command;
//! - the MAC RX stream into [`RxFifo`] (every check of the parser, the ICRC, store and
//!   forward), whose frame and drop pulses feed the global counters (`RxFrames`,
//!   `RxBytes`, `IcrcDrops`, `MalformedDrops`, `UnknownQpDrops`);
//!
//! `UnknownQpDrops` counts frames for another IPv4 address only: a frame for a QP that
//! does not exist is accepted (`RxFrames`) and discarded uncounted until the responder
//! looks QPs up (the model counts it as `UnknownQpDrops`; `driver/tests/rtl.rs` holds this
//! known difference).
//!
//! Not yet: the responder and requester, so accepted frames are counted and then
//! discarded (their header records and payloads are taken and dropped), doorbells and
//! QP events are taken and dropped, the DMA ports and MAC TX stay idle. The completion
//! engine, TX path, DMA muxes and timers exist as benched blocks (docs/hdl.md) and are
//! wired in with the datapath that feeds them. Frames a MAC flags (`tuser`) and frames
//! the RX buffer cannot hold are counted as `MalformedDrops` (the ABI has no counter of
//! their own; docs/hdl.md).
//!
//! Inputs nothing reads yet go to locals named `unused_*` (the lint convention of
//! `lib.rs`), so the port list is the whole contract from the first version on.

use rocenic_proto::abi::regs::Counter;

use crate::control::Control;
use crate::ctx_tables::*;
use crate::icrc::{BEAT_BYTES, DATA_BITS};
use crate::prelude::*;
use crate::rx_fifo::RxFifo;

/// The engine over `2^QA` QPs and `2^MA` MRs.
#[derive(LogicBlock)]
pub struct Engine<const QA: usize, const MA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub reg_valid: Signal<In, Bit>,
    pub reg_ready: Signal<Out, Bit>,
    pub reg_write: Signal<In, Bit>,
    pub reg_addr: Signal<In, Bits<17>>,
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

    control: Control<QA, MA>,
    rx: RxFifo,
    incs: CounterIncs,
    zero8: Constant<Bits<8>>,
    zero16: Constant<Bits<16>>,
    zero64: Constant<Bits<64>>,
    zero64k: Constant<Bits<64>>,
    zero512: Constant<Bits<512>>,
    /// MAC errors and RX buffer overflows, counted as malformed.
    rx_other_drop: Signal<Local, Bit>,
    unused_in_dma_rd_req_ready: Signal<Local, Bit>,
    unused_in_dma_rd_resp_valid: Signal<Local, Bit>,
    unused_in_dma_rd_resp_data: Signal<Local, Bits<512>>,
    unused_in_dma_rd_resp_tag: Signal<Local, Bits<8>>,
    unused_in_dma_rd_resp_last: Signal<Local, Bit>,
    unused_in_dma_rd_resp_err: Signal<Local, Bit>,
    unused_in_dma_wr_req_ready: Signal<Local, Bit>,
    unused_in_dma_wr_data_ready: Signal<Local, Bit>,
    unused_in_dma_wr_status_valid: Signal<Local, Bit>,
    unused_in_dma_wr_status_err: Signal<Local, Bit>,
    unused_in_mac_tx_tready: Signal<Local, Bit>,
    unused_ctl_m_db_kind: Signal<Local, Bits<2>>,
    unused_ctl_m_db_index: Signal<Local, Bits<16>>,
    unused_ctl_m_db_value: Signal<Local, Bits<32>>,
    unused_ctl_m_qpev_kind: Signal<Local, Bits<2>>,
    unused_ctl_m_qpev_qpn: Signal<Local, Bits<QA>>,
    unused_ctl_mac_lo: Signal<Local, Bits<32>>,
    unused_ctl_mac_hi: Signal<Local, Bits<16>>,
    unused_ctl_m_db_valid: Signal<Local, Bit>,
    unused_ctl_m_qpev_valid: Signal<Local, Bit>,
    unused_ctl_s_cq_rd_ready: Signal<Local, Bit>,
    unused_ctl_m_cq_rd_valid: Signal<Local, Bit>,
    unused_ctl_m_cq_rd_data: Signal<Local, CqEntry>,
    unused_ctl_s_mr_rd_ready: Signal<Local, Bit>,
    unused_ctl_m_mr_rd_valid: Signal<Local, Bit>,
    unused_ctl_m_mr_rd_data: Signal<Local, MrEntry>,
    unused_ctl_s_qpc_rd_ready: Signal<Local, Bit>,
    unused_ctl_m_qpc_rd_valid: Signal<Local, Bit>,
    unused_ctl_m_qpc_rd_data: Signal<Local, QpcEntry>,
    unused_ctl_s_qpa_rd_ready: Signal<Local, Bit>,
    unused_ctl_m_qpa_rd_valid: Signal<Local, Bit>,
    unused_ctl_m_qpa_rd_data: Signal<Local, QpaEntry>,
    unused_ctl_s_qpr_rd_ready: Signal<Local, Bit>,
    unused_ctl_m_qpr_rd_valid: Signal<Local, Bit>,
    unused_ctl_m_qpr_rd_data: Signal<Local, QprEntry>,
    unused_ctl_s_qps_rd_ready: Signal<Local, Bit>,
    unused_ctl_m_qps_rd_valid: Signal<Local, Bit>,
    unused_ctl_m_qps_rd_data: Signal<Local, QpsEntry>,
    unused_ctl_s_qps_wr_ready: Signal<Local, Bit>,
    /// The responder's `qps` write port, idle until it is wired.
    zero_qps: Constant<QpsEntry>,
    unused_rx_m_hdr_opcode: Signal<Local, Bits<8>>,
    unused_rx_m_hdr_solicited: Signal<Local, Bit>,
    unused_rx_m_hdr_migreq: Signal<Local, Bit>,
    unused_rx_m_hdr_pad: Signal<Local, Bits<2>>,
    unused_rx_m_hdr_pkey: Signal<Local, Bits<16>>,
    unused_rx_m_hdr_fecn: Signal<Local, Bit>,
    unused_rx_m_hdr_becn: Signal<Local, Bit>,
    unused_rx_m_hdr_dest_qp: Signal<Local, Bits<24>>,
    unused_rx_m_hdr_ack_req: Signal<Local, Bit>,
    unused_rx_m_hdr_psn: Signal<Local, Bits<24>>,
    unused_rx_m_hdr_src_mac: Signal<Local, Bits<48>>,
    unused_rx_m_hdr_src_ip: Signal<Local, Bits<32>>,
    unused_rx_m_hdr_dst_ip: Signal<Local, Bits<32>>,
    unused_rx_m_hdr_udp_sport: Signal<Local, Bits<16>>,
    unused_rx_m_hdr_reth_va: Signal<Local, Bits<64>>,
    unused_rx_m_hdr_reth_rkey: Signal<Local, Bits<32>>,
    unused_rx_m_hdr_reth_dma_len: Signal<Local, Bits<32>>,
    unused_rx_m_hdr_aeth_syndrome: Signal<Local, Bits<8>>,
    unused_rx_m_hdr_aeth_msn: Signal<Local, Bits<24>>,
    unused_rx_m_hdr_atomic_va: Signal<Local, Bits<64>>,
    unused_rx_m_hdr_atomic_rkey: Signal<Local, Bits<32>>,
    unused_rx_m_hdr_atomic_swap: Signal<Local, Bits<64>>,
    unused_rx_m_hdr_atomic_compare: Signal<Local, Bits<64>>,
    unused_rx_m_hdr_atomic_ack_orig: Signal<Local, Bits<64>>,
    unused_rx_m_hdr_immdt: Signal<Local, Bits<32>>,
    unused_rx_m_hdr_ieth: Signal<Local, Bits<32>>,
    unused_rx_m_hdr_payload_len: Signal<Local, Bits<16>>,
    unused_rx_m_hdr_has_reth: Signal<Local, Bit>,
    unused_rx_m_hdr_has_aeth: Signal<Local, Bit>,
    unused_rx_m_hdr_has_atomic_eth: Signal<Local, Bit>,
    unused_rx_m_hdr_has_atomic_ack_eth: Signal<Local, Bit>,
    unused_rx_m_hdr_has_immdt: Signal<Local, Bit>,
    unused_rx_m_hdr_has_ieth: Signal<Local, Bit>,
    unused_rx_m_hdr_has_payload: Signal<Local, Bit>,
    unused_rx_m_hdr_valid: Signal<Local, Bit>,
    unused_rx_m_payload_tdata: Signal<Local, Bits<DATA_BITS>>,
    unused_rx_m_payload_tkeep: Signal<Local, Bits<BEAT_BYTES>>,
    unused_rx_m_payload_tlast: Signal<Local, Bit>,
    unused_rx_m_payload_tvalid: Signal<Local, Bit>,
}

impl<const QA: usize, const MA: usize> Engine<QA, MA> {
    pub fn new() -> Self {
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
            control: Control::new(),
            rx: RxFifo::new(),
            incs: Default::default(),
            zero8: Constant::new(0u64.to_bits()),
            zero16: Constant::new(0u64.to_bits()),
            zero64: Constant::new(0u64.to_bits()),
            zero64k: Constant::new(0u64.to_bits()),
            zero512: Constant::new(0u64.to_bits()),
            rx_other_drop: Default::default(),
            unused_in_dma_rd_req_ready: Default::default(),
            unused_in_dma_rd_resp_valid: Default::default(),
            unused_in_dma_rd_resp_data: Default::default(),
            unused_in_dma_rd_resp_tag: Default::default(),
            unused_in_dma_rd_resp_last: Default::default(),
            unused_in_dma_rd_resp_err: Default::default(),
            unused_in_dma_wr_req_ready: Default::default(),
            unused_in_dma_wr_data_ready: Default::default(),
            unused_in_dma_wr_status_valid: Default::default(),
            unused_in_dma_wr_status_err: Default::default(),
            unused_in_mac_tx_tready: Default::default(),
            unused_ctl_m_db_kind: Default::default(),
            unused_ctl_m_db_index: Default::default(),
            unused_ctl_m_db_value: Default::default(),
            unused_ctl_m_qpev_kind: Default::default(),
            unused_ctl_m_qpev_qpn: Default::default(),
            unused_ctl_mac_lo: Default::default(),
            unused_ctl_mac_hi: Default::default(),
            unused_ctl_m_db_valid: Default::default(),
            unused_ctl_m_qpev_valid: Default::default(),
            unused_ctl_s_cq_rd_ready: Default::default(),
            unused_ctl_m_cq_rd_valid: Default::default(),
            unused_ctl_m_cq_rd_data: Default::default(),
            unused_ctl_s_mr_rd_ready: Default::default(),
            unused_ctl_m_mr_rd_valid: Default::default(),
            unused_ctl_m_mr_rd_data: Default::default(),
            unused_ctl_s_qpc_rd_ready: Default::default(),
            unused_ctl_m_qpc_rd_valid: Default::default(),
            unused_ctl_m_qpc_rd_data: Default::default(),
            unused_ctl_s_qpa_rd_ready: Default::default(),
            unused_ctl_m_qpa_rd_valid: Default::default(),
            unused_ctl_m_qpa_rd_data: Default::default(),
            unused_ctl_s_qpr_rd_ready: Default::default(),
            unused_ctl_m_qpr_rd_valid: Default::default(),
            unused_ctl_m_qpr_rd_data: Default::default(),
            unused_ctl_s_qps_rd_ready: Default::default(),
            unused_ctl_m_qps_rd_valid: Default::default(),
            unused_ctl_m_qps_rd_data: Default::default(),
            unused_ctl_s_qps_wr_ready: Default::default(),
            zero_qps: Constant::new(QpsEntry::default()),
            unused_rx_m_hdr_opcode: Default::default(),
            unused_rx_m_hdr_solicited: Default::default(),
            unused_rx_m_hdr_migreq: Default::default(),
            unused_rx_m_hdr_pad: Default::default(),
            unused_rx_m_hdr_pkey: Default::default(),
            unused_rx_m_hdr_fecn: Default::default(),
            unused_rx_m_hdr_becn: Default::default(),
            unused_rx_m_hdr_dest_qp: Default::default(),
            unused_rx_m_hdr_ack_req: Default::default(),
            unused_rx_m_hdr_psn: Default::default(),
            unused_rx_m_hdr_src_mac: Default::default(),
            unused_rx_m_hdr_src_ip: Default::default(),
            unused_rx_m_hdr_dst_ip: Default::default(),
            unused_rx_m_hdr_udp_sport: Default::default(),
            unused_rx_m_hdr_reth_va: Default::default(),
            unused_rx_m_hdr_reth_rkey: Default::default(),
            unused_rx_m_hdr_reth_dma_len: Default::default(),
            unused_rx_m_hdr_aeth_syndrome: Default::default(),
            unused_rx_m_hdr_aeth_msn: Default::default(),
            unused_rx_m_hdr_atomic_va: Default::default(),
            unused_rx_m_hdr_atomic_rkey: Default::default(),
            unused_rx_m_hdr_atomic_swap: Default::default(),
            unused_rx_m_hdr_atomic_compare: Default::default(),
            unused_rx_m_hdr_atomic_ack_orig: Default::default(),
            unused_rx_m_hdr_immdt: Default::default(),
            unused_rx_m_hdr_ieth: Default::default(),
            unused_rx_m_hdr_payload_len: Default::default(),
            unused_rx_m_hdr_has_reth: Default::default(),
            unused_rx_m_hdr_has_aeth: Default::default(),
            unused_rx_m_hdr_has_atomic_eth: Default::default(),
            unused_rx_m_hdr_has_atomic_ack_eth: Default::default(),
            unused_rx_m_hdr_has_immdt: Default::default(),
            unused_rx_m_hdr_has_ieth: Default::default(),
            unused_rx_m_hdr_has_payload: Default::default(),
            unused_rx_m_hdr_valid: Default::default(),
            unused_rx_m_payload_tdata: Default::default(),
            unused_rx_m_payload_tkeep: Default::default(),
            unused_rx_m_payload_tlast: Default::default(),
            unused_rx_m_payload_tvalid: Default::default(),
        }
    }
}

impl<const QA: usize, const MA: usize> Default for Engine<QA, MA> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const QA: usize, const MA: usize> Logic for Engine<QA, MA> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, control, rx);
        self.control.reset.next = self.reset.val();
        self.rx.reset.next = self.reset.val();

        // ---- BAR0 ----
        self.control.reg_valid.next = self.reg_valid.val();
        self.control.reg_write.next = self.reg_write.val();
        self.control.reg_addr.next = self.reg_addr.val();
        self.control.reg_wdata.next = self.reg_wdata.val();
        self.reg_ready.next = self.control.reg_ready.val();
        self.reg_rdata_valid.next = self.control.reg_rdata_valid.val();
        self.reg_rdata.next = self.control.reg_rdata.val();

        // ---- MAC RX -> RX front end (records and payloads dropped: no responder yet) ----
        self.rx.enable.next = self.control.port_enable.val();
        self.rx.local_ip.next = self.control.ipv4.val();
        self.rx.s_axis_tdata.next = self.mac_rx_tdata.val();
        self.rx.s_axis_tkeep.next = self.mac_rx_tkeep.val();
        self.rx.s_axis_tlast.next = self.mac_rx_tlast.val();
        self.rx.s_axis_tvalid.next = self.mac_rx_tvalid.val();
        self.rx.s_axis_tuser.next = self.mac_rx_tuser.val();
        self.rx.m_hdr_ready.next = true;
        self.rx.m_payload_tready.next = true;

        // ---- counters ----
        self.rx_other_drop.next = self.rx.m_drop_mac.val() | self.rx.m_drop_overflow.val();
        self.incs.rx_frames.next = self.rx.m_rx_frame.val();
        self.incs.rx_bytes.next = self.rx.m_rx_frame.val();
        self.incs.icrc_drops.next = self.rx.m_drop_icrc.val();
        self.incs.malformed_drops.next = self.rx.m_drop_malformed.val() | self.rx_other_drop.val();
        self.incs.unknown_qp_drops.next = self.rx.m_drop_ip.val();
        self.control.cnt_inc.next = self.incs.y.val();
        self.control.cnt_rx_bytes.next = self.rx.m_rx_bytes.val();
        self.control.cnt_tx_bytes.next = self.zero16.val();

        // ---- taken and dropped until their consumers exist ----
        self.control.m_db_ready.next = true;
        self.control.m_qpev_ready.next = true;
        self.control.s_cq_rd_valid.next = false;
        self.control.s_mr_rd_valid.next = false;
        self.control.s_qpc_rd_valid.next = false;
        self.control.s_qpa_rd_valid.next = false;
        self.control.s_qpr_rd_valid.next = false;
        self.control.s_qps_rd_valid.next = false;
        self.control.s_cq_rd_addr.next = self.zero8.val();
        self.control.s_mr_rd_addr.next = self.zero64.val().get_bits::<MA>(0);
        self.control.s_qpc_rd_addr.next = self.zero64.val().get_bits::<QA>(0);
        self.control.s_qpa_rd_addr.next = self.zero64.val().get_bits::<QA>(0);
        self.control.s_qpr_rd_addr.next = self.zero64.val().get_bits::<QA>(0);
        self.control.s_qps_rd_addr.next = self.zero64.val().get_bits::<QA>(0);
        self.control.s_qps_wr_valid.next = false;
        self.control.s_qps_wr_addr.next = self.zero64.val().get_bits::<QA>(0);
        self.control.s_qps_wr_data.next = self.zero_qps.val();
        self.unused_ctl_m_db_kind.next = self.control.m_db_kind.val();
        self.unused_ctl_m_db_index.next = self.control.m_db_index.val();
        self.unused_ctl_m_db_value.next = self.control.m_db_value.val();
        self.unused_ctl_m_qpev_kind.next = self.control.m_qpev_kind.val();
        self.unused_ctl_m_qpev_qpn.next = self.control.m_qpev_qpn.val();
        self.unused_ctl_mac_lo.next = self.control.mac_lo.val();
        self.unused_ctl_mac_hi.next = self.control.mac_hi.val();
        self.unused_ctl_m_db_valid.next = self.control.m_db_valid.val();
        self.unused_ctl_m_qpev_valid.next = self.control.m_qpev_valid.val();
        self.unused_ctl_s_cq_rd_ready.next = self.control.s_cq_rd_ready.val();
        self.unused_ctl_m_cq_rd_valid.next = self.control.m_cq_rd_valid.val();
        self.unused_ctl_m_cq_rd_data.next = self.control.m_cq_rd_data.val();
        self.unused_ctl_s_mr_rd_ready.next = self.control.s_mr_rd_ready.val();
        self.unused_ctl_m_mr_rd_valid.next = self.control.m_mr_rd_valid.val();
        self.unused_ctl_m_mr_rd_data.next = self.control.m_mr_rd_data.val();
        self.unused_ctl_s_qpc_rd_ready.next = self.control.s_qpc_rd_ready.val();
        self.unused_ctl_m_qpc_rd_valid.next = self.control.m_qpc_rd_valid.val();
        self.unused_ctl_m_qpc_rd_data.next = self.control.m_qpc_rd_data.val();
        self.unused_ctl_s_qpa_rd_ready.next = self.control.s_qpa_rd_ready.val();
        self.unused_ctl_m_qpa_rd_valid.next = self.control.m_qpa_rd_valid.val();
        self.unused_ctl_m_qpa_rd_data.next = self.control.m_qpa_rd_data.val();
        self.unused_ctl_s_qpr_rd_ready.next = self.control.s_qpr_rd_ready.val();
        self.unused_ctl_m_qpr_rd_valid.next = self.control.m_qpr_rd_valid.val();
        self.unused_ctl_m_qpr_rd_data.next = self.control.m_qpr_rd_data.val();
        self.unused_ctl_s_qps_rd_ready.next = self.control.s_qps_rd_ready.val();
        self.unused_ctl_m_qps_rd_valid.next = self.control.m_qps_rd_valid.val();
        self.unused_ctl_m_qps_rd_data.next = self.control.m_qps_rd_data.val();
        self.unused_ctl_s_qps_wr_ready.next = self.control.s_qps_wr_ready.val();
        self.unused_rx_m_hdr_opcode.next = self.rx.m_hdr_opcode.val();
        self.unused_rx_m_hdr_solicited.next = self.rx.m_hdr_solicited.val();
        self.unused_rx_m_hdr_migreq.next = self.rx.m_hdr_migreq.val();
        self.unused_rx_m_hdr_pad.next = self.rx.m_hdr_pad.val();
        self.unused_rx_m_hdr_pkey.next = self.rx.m_hdr_pkey.val();
        self.unused_rx_m_hdr_fecn.next = self.rx.m_hdr_fecn.val();
        self.unused_rx_m_hdr_becn.next = self.rx.m_hdr_becn.val();
        self.unused_rx_m_hdr_dest_qp.next = self.rx.m_hdr_dest_qp.val();
        self.unused_rx_m_hdr_ack_req.next = self.rx.m_hdr_ack_req.val();
        self.unused_rx_m_hdr_psn.next = self.rx.m_hdr_psn.val();
        self.unused_rx_m_hdr_src_mac.next = self.rx.m_hdr_src_mac.val();
        self.unused_rx_m_hdr_src_ip.next = self.rx.m_hdr_src_ip.val();
        self.unused_rx_m_hdr_dst_ip.next = self.rx.m_hdr_dst_ip.val();
        self.unused_rx_m_hdr_udp_sport.next = self.rx.m_hdr_udp_sport.val();
        self.unused_rx_m_hdr_reth_va.next = self.rx.m_hdr_reth_va.val();
        self.unused_rx_m_hdr_reth_rkey.next = self.rx.m_hdr_reth_rkey.val();
        self.unused_rx_m_hdr_reth_dma_len.next = self.rx.m_hdr_reth_dma_len.val();
        self.unused_rx_m_hdr_aeth_syndrome.next = self.rx.m_hdr_aeth_syndrome.val();
        self.unused_rx_m_hdr_aeth_msn.next = self.rx.m_hdr_aeth_msn.val();
        self.unused_rx_m_hdr_atomic_va.next = self.rx.m_hdr_atomic_va.val();
        self.unused_rx_m_hdr_atomic_rkey.next = self.rx.m_hdr_atomic_rkey.val();
        self.unused_rx_m_hdr_atomic_swap.next = self.rx.m_hdr_atomic_swap.val();
        self.unused_rx_m_hdr_atomic_compare.next = self.rx.m_hdr_atomic_compare.val();
        self.unused_rx_m_hdr_atomic_ack_orig.next = self.rx.m_hdr_atomic_ack_orig.val();
        self.unused_rx_m_hdr_immdt.next = self.rx.m_hdr_immdt.val();
        self.unused_rx_m_hdr_ieth.next = self.rx.m_hdr_ieth.val();
        self.unused_rx_m_hdr_payload_len.next = self.rx.m_hdr_payload_len.val();
        self.unused_rx_m_hdr_has_reth.next = self.rx.m_hdr_has_reth.val();
        self.unused_rx_m_hdr_has_aeth.next = self.rx.m_hdr_has_aeth.val();
        self.unused_rx_m_hdr_has_atomic_eth.next = self.rx.m_hdr_has_atomic_eth.val();
        self.unused_rx_m_hdr_has_atomic_ack_eth.next = self.rx.m_hdr_has_atomic_ack_eth.val();
        self.unused_rx_m_hdr_has_immdt.next = self.rx.m_hdr_has_immdt.val();
        self.unused_rx_m_hdr_has_ieth.next = self.rx.m_hdr_has_ieth.val();
        self.unused_rx_m_hdr_has_payload.next = self.rx.m_hdr_has_payload.val();
        self.unused_rx_m_hdr_valid.next = self.rx.m_hdr_valid.val();
        self.unused_rx_m_payload_tdata.next = self.rx.m_payload_tdata.val();
        self.unused_rx_m_payload_tkeep.next = self.rx.m_payload_tkeep.val();
        self.unused_rx_m_payload_tlast.next = self.rx.m_payload_tlast.val();
        self.unused_rx_m_payload_tvalid.next = self.rx.m_payload_tvalid.val();
        self.unused_in_dma_rd_req_ready.next = self.dma_rd_req_ready.val();
        self.unused_in_dma_rd_resp_valid.next = self.dma_rd_resp_valid.val();
        self.unused_in_dma_rd_resp_data.next = self.dma_rd_resp_data.val();
        self.unused_in_dma_rd_resp_tag.next = self.dma_rd_resp_tag.val();
        self.unused_in_dma_rd_resp_last.next = self.dma_rd_resp_last.val();
        self.unused_in_dma_rd_resp_err.next = self.dma_rd_resp_err.val();
        self.unused_in_dma_wr_req_ready.next = self.dma_wr_req_ready.val();
        self.unused_in_dma_wr_data_ready.next = self.dma_wr_data_ready.val();
        self.unused_in_dma_wr_status_valid.next = self.dma_wr_status_valid.val();
        self.unused_in_dma_wr_status_err.next = self.dma_wr_status_err.val();
        self.unused_in_mac_tx_tready.next = self.mac_tx_tready.val();

        // ---- idle until the requester, responder and completion engine are wired ----
        self.dma_rd_req_valid.next = false;
        self.dma_rd_req_addr.next = self.zero64.val();
        self.dma_rd_req_len.next = self.zero16.val();
        self.dma_rd_req_tag.next = self.zero8.val();
        self.dma_rd_resp_ready.next = true;
        self.dma_wr_req_valid.next = false;
        self.dma_wr_req_addr.next = self.zero64.val();
        self.dma_wr_req_len.next = self.zero16.val();
        self.dma_wr_data_valid.next = false;
        self.dma_wr_data.next = self.zero512.val();
        self.dma_wr_data_keep.next = self.zero64k.val();
        self.dma_wr_data_last.next = false;
        self.mac_tx_tdata.next = self.zero512.val();
        self.mac_tx_tkeep.next = self.zero64k.val();
        self.mac_tx_tlast.next = false;
        self.mac_tx_tvalid.next = false;
    }
}

/// The global counters' increment vector (bit `c` = [`Counter`] `c`) from named pulses.
/// Hand-written Verilog: `#[hdl_gen]` cannot build a vector from single bits.
#[derive(LogicBlock, Default)]
pub struct CounterIncs {
    pub rx_frames: Signal<In, Bit>,
    /// Adds the byte count the register file takes beside the vector (`cnt_rx_bytes`).
    pub rx_bytes: Signal<In, Bit>,
    pub icrc_drops: Signal<In, Bit>,
    pub malformed_drops: Signal<In, Bit>,
    pub unknown_qp_drops: Signal<In, Bit>,
    pub y: Signal<Out, Bits<{ Counter::COUNT }>>,
}

impl CounterIncs {
    /// The inputs wired today, with their counters.
    fn inputs(&self) -> [(Counter, bool); 5] {
        [
            (Counter::RxFrames, self.rx_frames.val()),
            (Counter::RxBytes, self.rx_bytes.val()),
            (Counter::IcrcDrops, self.icrc_drops.val()),
            (Counter::MalformedDrops, self.malformed_drops.val()),
            (Counter::UnknownQpDrops, self.unknown_qp_drops.val()),
        ]
    }
}

impl Logic for CounterIncs {
    fn update(&mut self) {
        let mut y = Bits::<{ Counter::COUNT }>::default();
        for (c, v) in self.inputs() {
            y = y.replace_bit(c as usize, v);
        }
        self.y.next = y;
    }

    fn connect(&mut self) {
        self.y.connect();
    }

    fn hdl(&self) -> Verilog {
        let mut v = format!("always @(*) begin\n    y = {}'h0;\n", Counter::COUNT);
        for (c, name) in [
            (Counter::RxFrames, "rx_frames"),
            (Counter::RxBytes, "rx_bytes"),
            (Counter::IcrcDrops, "icrc_drops"),
            (Counter::MalformedDrops, "malformed_drops"),
            (Counter::UnknownQpDrops, "unknown_qp_drops"),
        ] {
            v.push_str(&format!("    y[{}] = {name};\n", c as usize));
        }
        v.push_str("end\n");
        Verilog::Custom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{frame_beats, random_roce_frame, Bench, Rng};
    use crate::{MR_LOG, QP_LOG};
    use rocenic_proto::abi::regs;
    use rocenic_proto::wire::Opcode;

    type Top = Engine<QP_LOG, MR_LOG>;

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

    #[test]
    fn identifies_itself_and_counts_received_frames_by_fate() {
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
        assert_eq!(counter(&mut b, Counter::UnknownQpDrops), 1);
        assert_eq!(counter(&mut b, Counter::MalformedDrops), 0);
        // Nothing leaves the engine yet.
        b.settle();
        assert!(!b.uut.mac_tx_tvalid.val());
        assert!(!b.uut.dma_rd_req_valid.val() && !b.uut.dma_wr_req_valid.val());
    }

    #[test]
    fn counter_inputs_land_on_their_counter_bits() {
        let mut c = CounterIncs::default();
        c.connect_all();
        c.rx_frames.next = true;
        c.unknown_qp_drops.next = true;
        assert!(simulate(&mut c, 10));
        c.rx_bytes.next = true;
        assert!(simulate(&mut c, 10));
        let want = 1u64 << Counter::RxFrames as u32
            | 1u64 << Counter::RxBytes as u32
            | 1u64 << Counter::UnknownQpDrops as u32;
        assert_eq!(c.y.val().to_u64(), want);
    }
}
