//! `Control`: the control plane of the engine as one block — the BAR0 register file
//! ([`RegFile`]) and the command engine with its context tables ([`CmdEngine`]), with the
//! engine top contract's register port. What the rest of the engine gets from it: the
//! port configuration (`mac_*`, `ipv4`, `port_enable`), doorbells (SQ/RQ on `m_db_*`, CQ
//! on `m_cq_db_*`), QP events
//! (`m_qpev_*`) and a read port on every context table (`s_<table>_rd_*`/`m_<table>_rd_*`,
//! see `ctx_tables`), QUERY_QP_COUNTERS's DMA write (`m_wr_*`); what it takes: counter
//! increments (`cnt_*`) and the per-QP counter pulses (`s_qc_*`) for its
//! [`QpCounters`], which the command engine clears (CREATE_QP) and reads.
//!
//! Its bench is differential: random command sequences and register accesses go to this
//! block (RustHDL simulation) and to the behavioural model (`rocenic_model::Nic`), and
//! every value read back must be equal (QUERY_QP_COUNTERS's bytes too).

pub mod cmd;
pub mod ctx_tables;
pub mod leaves;
pub mod mr_check;
pub mod qp_counters;
pub mod regfile;

use crate::control::cmd::CmdEngine;
use crate::control::ctx_tables::*;
use crate::control::qp_counters::QpCounters;
use crate::control::regfile::{CtrlParams, RegFile};
use crate::prelude::*;

/// The control plane over `2^QA` QPs and `2^MA` MRs.
#[derive(LogicBlock)]
pub struct Control<const QA: usize, const MA: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub reg_valid: Signal<In, Bit>,
    pub reg_ready: Signal<Out, Bit>,
    pub reg_write: Signal<In, Bit>,
    pub reg_addr: Signal<In, Bits<17>>,
    pub reg_wdata: Signal<In, Bits<32>>,
    pub reg_rdata_valid: Signal<Out, Bit>,
    pub reg_rdata: Signal<Out, Bits<32>>,
    pub mac_lo: Signal<Out, Bits<32>>,
    pub mac_hi: Signal<Out, Bits<16>>,
    pub ipv4: Signal<Out, Bits<32>>,
    pub port_enable: Signal<Out, Bit>,
    pub cnt_inc: Signal<In, Bits<16>>,
    pub cnt_tx_bytes: Signal<In, Bits<16>>,
    pub cnt_rx_bytes: Signal<In, Bits<16>>,
    pub m_db_valid: Signal<Out, Bit>,
    pub m_db_ready: Signal<In, Bit>,
    pub m_db_kind: Signal<Out, Bits<2>>,
    pub m_db_index: Signal<Out, Bits<16>>,
    pub m_db_value: Signal<Out, Bits<32>>,
    pub m_cq_db_valid: Signal<Out, Bit>,
    pub m_cq_db_ready: Signal<In, Bit>,
    pub m_cq_db_cqn: Signal<Out, Bits<16>>,
    pub m_cq_db_ci: Signal<Out, Bits<32>>,
    pub m_qpev_valid: Signal<Out, Bit>,
    pub m_qpev_ready: Signal<In, Bit>,
    pub m_qpev_kind: Signal<Out, Bits<2>>,
    pub m_qpev_qpn: Signal<Out, Bits<QA>>,
    /// CQ events (CREATE_CQ) for the completion engine (`CmdEngine::m_cqev_*`).
    pub m_cqev_valid: Signal<Out, Bit>,
    pub m_cqev_ready: Signal<In, Bit>,
    pub m_cqev_cqn: Signal<Out, Bits<8>>,
    pub m_cqev_iova64: Signal<Out, Bits<58>>,
    pub m_cqev_log: Signal<Out, Bits<4>>,
    pub s_cq_rd_valid: Signal<In, Bit>,
    pub s_cq_rd_ready: Signal<Out, Bit>,
    pub s_cq_rd_addr: Signal<In, Bits<8>>,
    pub m_cq_rd_valid: Signal<Out, Bit>,
    pub m_cq_rd_data: Signal<Out, CqEntry>,
    pub s_mr_rd_valid: Signal<In, Bit>,
    pub s_mr_rd_ready: Signal<Out, Bit>,
    pub s_mr_rd_addr: Signal<In, Bits<MA>>,
    pub m_mr_rd_valid: Signal<Out, Bit>,
    pub m_mr_rd_data: Signal<Out, MrEntry>,
    pub s_qpc_rd_valid: Signal<In, Bit>,
    pub s_qpc_rd_ready: Signal<Out, Bit>,
    pub s_qpc_rd_addr: Signal<In, Bits<QA>>,
    pub m_qpc_rd_valid: Signal<Out, Bit>,
    pub m_qpc_rd_data: Signal<Out, QpcEntry>,
    pub s_qpa_rd_valid: Signal<In, Bit>,
    pub s_qpa_rd_ready: Signal<Out, Bit>,
    pub s_qpa_rd_addr: Signal<In, Bits<QA>>,
    pub m_qpa_rd_valid: Signal<Out, Bit>,
    pub m_qpa_rd_data: Signal<Out, QpaEntry>,
    pub s_qpr_rd_valid: Signal<In, Bit>,
    pub s_qpr_rd_ready: Signal<Out, Bit>,
    pub s_qpr_rd_addr: Signal<In, Bits<QA>>,
    pub m_qpr_rd_valid: Signal<Out, Bit>,
    pub m_qpr_rd_data: Signal<Out, QprEntry>,
    pub s_qps_rd_valid: Signal<In, Bit>,
    pub s_qps_rd_ready: Signal<Out, Bit>,
    pub s_qps_rd_addr: Signal<In, Bits<QA>>,
    pub m_qps_rd_valid: Signal<Out, Bit>,
    pub m_qps_rd_data: Signal<Out, QpsEntry>,
    /// The responder's write port on `qps`.
    pub s_qps_wr_valid: Signal<In, Bit>,
    pub s_qps_wr_ready: Signal<Out, Bit>,
    pub s_qps_wr_addr: Signal<In, Bits<QA>>,
    pub s_qps_wr_data: Signal<In, QpsEntry>,
    /// The requester's write port on `qpr` (`CmdEngine::s_qpr_wr_*`; refused in the
    /// cycles a command writes `qpr`).
    pub s_qpr_wr_valid: Signal<In, Bit>,
    pub s_qpr_wr_ready: Signal<Out, Bit>,
    pub s_qpr_wr_addr: Signal<In, Bits<QA>>,
    pub s_qpr_wr_data: Signal<In, QprEntry>,
    /// The QP errors of the responder and the requester (`CmdEngine::s_qperr_*`): the QP
    /// to ERR.
    pub s_qperr_valid: Signal<In, Bit>,
    pub s_qperr_ready: Signal<Out, Bit>,
    pub s_qperr_qpn: Signal<In, Bits<QA>>,
    /// The responder's SEND with invalidate (`CmdEngine::s_inv_*`).
    pub s_inv_valid: Signal<In, Bit>,
    pub s_inv_ready: Signal<Out, Bit>,
    pub s_inv_key: Signal<In, Bits<32>>,
    pub s_inv_pdn: Signal<In, Bits<8>>,
    pub s_inv_ok: Signal<Out, Bit>,
    /// Per-QP counter events (`QpCounters::s_*`, the same names after `s_qc_`).
    pub s_qc_resp_valid: Signal<In, Bit>,
    pub s_qc_resp_qpn: Signal<In, Bits<QA>>,
    pub s_qc_resp_dup: Signal<In, Bit>,
    pub s_qc_resp_psn_seq: Signal<In, Bit>,
    pub s_qc_resp_naks: Signal<In, Bit>,
    pub s_qc_resp_rnr_naks: Signal<In, Bit>,
    pub s_qc_resp_unknown_qp: Signal<In, Bit>,
    pub s_qc_resp_dma_faults: Signal<In, Bit>,
    pub s_qc_req_qpn: Signal<In, Bits<QA>>,
    pub s_qc_req_dma_faults: Signal<In, Bit>,
    pub s_qc_req_ack_timeouts: Signal<In, Bit>,
    pub s_qc_rtx_valid: Signal<In, Bit>,
    pub s_qc_rtx_qpn: Signal<In, Bits<QA>>,
    pub s_qc_rx_valid: Signal<In, Bit>,
    pub s_qc_rx_code: Signal<In, Bits<3>>,
    pub s_qc_rx_qpn: Signal<In, Bits<QA>>,
    pub s_qc_tx_valid: Signal<In, Bit>,
    pub s_qc_tx_qpn: Signal<In, Bits<QA>>,
    pub s_qc_tx_bytes: Signal<In, Bits<16>>,
    /// QUERY_QP_COUNTERS's DMA write (`CmdEngine::m_wr_*`, `s_wr_status_*`).
    pub m_wr_req_valid: Signal<Out, Bit>,
    pub m_wr_req_ready: Signal<In, Bit>,
    pub m_wr_req_addr: Signal<Out, Bits<64>>,
    pub m_wr_req_len: Signal<Out, Bits<16>>,
    pub m_wr_data_valid: Signal<Out, Bit>,
    pub m_wr_data_ready: Signal<In, Bit>,
    pub m_wr_data: Signal<Out, Bits<512>>,
    pub m_wr_data_keep: Signal<Out, Bits<64>>,
    pub m_wr_data_last: Signal<Out, Bit>,
    pub s_wr_status_valid: Signal<In, Bit>,
    pub s_wr_status_err: Signal<In, Bit>,
    /// The command engine's `start` and `done` pulses and `busy` (clearing the tables),
    /// for the responder, which keeps nothing it read while a command may write a table.
    pub m_cmd_start: Signal<Out, Bit>,
    pub m_cmd_done: Signal<Out, Bit>,
    pub m_cmd_busy: Signal<Out, Bit>,
    regs: RegFile,
    cmd: CmdEngine<QA, MA>,
    qc: QpCounters<QA>,
}

impl<const QA: usize, const MA: usize> Control<QA, MA> {
    pub fn new() -> Self {
        Control {
            clock: Default::default(),
            reset: Default::default(),
            reg_valid: Default::default(),
            reg_ready: Default::default(),
            reg_write: Default::default(),
            reg_addr: Default::default(),
            reg_wdata: Default::default(),
            reg_rdata_valid: Default::default(),
            reg_rdata: Default::default(),
            mac_lo: Default::default(),
            mac_hi: Default::default(),
            ipv4: Default::default(),
            port_enable: Default::default(),
            cnt_inc: Default::default(),
            cnt_tx_bytes: Default::default(),
            cnt_rx_bytes: Default::default(),
            m_db_valid: Default::default(),
            m_db_ready: Default::default(),
            m_db_kind: Default::default(),
            m_db_index: Default::default(),
            m_db_value: Default::default(),
            m_cq_db_valid: Default::default(),
            m_cq_db_ready: Default::default(),
            m_cq_db_cqn: Default::default(),
            m_cq_db_ci: Default::default(),
            m_qpev_valid: Default::default(),
            m_qpev_ready: Default::default(),
            m_qpev_kind: Default::default(),
            m_qpev_qpn: Default::default(),
            m_cqev_valid: Default::default(),
            m_cqev_ready: Default::default(),
            m_cqev_cqn: Default::default(),
            m_cqev_iova64: Default::default(),
            m_cqev_log: Default::default(),
            s_cq_rd_valid: Default::default(),
            s_cq_rd_ready: Default::default(),
            s_cq_rd_addr: Default::default(),
            m_cq_rd_valid: Default::default(),
            m_cq_rd_data: Default::default(),
            s_mr_rd_valid: Default::default(),
            s_mr_rd_ready: Default::default(),
            s_mr_rd_addr: Default::default(),
            m_mr_rd_valid: Default::default(),
            m_mr_rd_data: Default::default(),
            s_qpc_rd_valid: Default::default(),
            s_qpc_rd_ready: Default::default(),
            s_qpc_rd_addr: Default::default(),
            m_qpc_rd_valid: Default::default(),
            m_qpc_rd_data: Default::default(),
            s_qpa_rd_valid: Default::default(),
            s_qpa_rd_ready: Default::default(),
            s_qpa_rd_addr: Default::default(),
            m_qpa_rd_valid: Default::default(),
            m_qpa_rd_data: Default::default(),
            s_qpr_rd_valid: Default::default(),
            s_qpr_rd_ready: Default::default(),
            s_qpr_rd_addr: Default::default(),
            m_qpr_rd_valid: Default::default(),
            m_qpr_rd_data: Default::default(),
            s_qps_rd_valid: Default::default(),
            s_qps_rd_ready: Default::default(),
            s_qps_rd_addr: Default::default(),
            m_qps_rd_valid: Default::default(),
            m_qps_rd_data: Default::default(),
            s_qps_wr_valid: Default::default(),
            s_qps_wr_ready: Default::default(),
            s_qps_wr_addr: Default::default(),
            s_qps_wr_data: Default::default(),
            s_qpr_wr_valid: Default::default(),
            s_qpr_wr_ready: Default::default(),
            s_qpr_wr_addr: Default::default(),
            s_qpr_wr_data: Default::default(),
            s_qperr_valid: Default::default(),
            s_qperr_ready: Default::default(),
            s_qperr_qpn: Default::default(),
            s_inv_valid: Default::default(),
            s_inv_ready: Default::default(),
            s_inv_key: Default::default(),
            s_inv_pdn: Default::default(),
            s_inv_ok: Default::default(),
            s_qc_resp_valid: Default::default(),
            s_qc_resp_qpn: Default::default(),
            s_qc_resp_dup: Default::default(),
            s_qc_resp_psn_seq: Default::default(),
            s_qc_resp_naks: Default::default(),
            s_qc_resp_rnr_naks: Default::default(),
            s_qc_resp_unknown_qp: Default::default(),
            s_qc_resp_dma_faults: Default::default(),
            s_qc_req_qpn: Default::default(),
            s_qc_req_dma_faults: Default::default(),
            s_qc_req_ack_timeouts: Default::default(),
            s_qc_rtx_valid: Default::default(),
            s_qc_rtx_qpn: Default::default(),
            s_qc_rx_valid: Default::default(),
            s_qc_rx_code: Default::default(),
            s_qc_rx_qpn: Default::default(),
            s_qc_tx_valid: Default::default(),
            s_qc_tx_qpn: Default::default(),
            s_qc_tx_bytes: Default::default(),
            m_wr_req_valid: Default::default(),
            m_wr_req_ready: Default::default(),
            m_wr_req_addr: Default::default(),
            m_wr_req_len: Default::default(),
            m_wr_data_valid: Default::default(),
            m_wr_data_ready: Default::default(),
            m_wr_data: Default::default(),
            m_wr_data_keep: Default::default(),
            m_wr_data_last: Default::default(),
            s_wr_status_valid: Default::default(),
            s_wr_status_err: Default::default(),
            qc: Default::default(),
            m_cmd_start: Default::default(),
            m_cmd_done: Default::default(),
            m_cmd_busy: Default::default(),
            regs: RegFile::new(CtrlParams::new(QA, MA)),
            cmd: CmdEngine::new(),
        }
    }
}

impl<const QA: usize, const MA: usize> Default for Control<QA, MA> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const QA: usize, const MA: usize> Logic for Control<QA, MA> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, regs, cmd, qc);
        self.regs.reset.next = self.reset.val();
        self.cmd.reset.next = self.reset.val();
        self.regs.reg_valid.next = self.reg_valid.val();
        self.regs.reg_write.next = self.reg_write.val();
        self.regs.reg_addr.next = self.reg_addr.val();
        self.regs.reg_wdata.next = self.reg_wdata.val();
        self.reg_ready.next = self.regs.reg_ready.val();
        self.reg_rdata_valid.next = self.regs.reg_rdata_valid.val();
        self.reg_rdata.next = self.regs.reg_rdata.val();
        self.mac_lo.next = self.regs.mac_lo.val();
        self.mac_hi.next = self.regs.mac_hi.val();
        self.ipv4.next = self.regs.ipv4.val();
        self.port_enable.next = self.regs.port_enable.val();
        self.regs.cnt_inc.next = self.cnt_inc.val();
        self.regs.cnt_tx_bytes.next = self.cnt_tx_bytes.val();
        self.regs.cnt_rx_bytes.next = self.cnt_rx_bytes.val();
        self.m_db_valid.next = self.regs.m_db_valid.val();
        self.regs.m_db_ready.next = self.m_db_ready.val();
        self.m_db_kind.next = self.regs.m_db_kind.val();
        self.m_db_index.next = self.regs.m_db_index.val();
        self.m_db_value.next = self.regs.m_db_value.val();
        self.m_cq_db_valid.next = self.regs.m_cq_db_valid.val();
        self.regs.m_cq_db_ready.next = self.m_cq_db_ready.val();
        self.m_cq_db_cqn.next = self.regs.m_cq_db_cqn.val();
        self.m_cq_db_ci.next = self.regs.m_cq_db_ci.val();
        // Register file <-> command engine.
        self.cmd.start.next = self.regs.cmd_start.val();
        self.cmd.opcode.next = self.regs.cmd_opcode.val();
        self.cmd.args.next = self.regs.cmd_args.val();
        self.regs.cmd_busy.next = self.cmd.busy.val();
        self.regs.cmd_done.next = self.cmd.done.val();
        self.m_cmd_start.next = self.regs.cmd_start.val();
        self.m_cmd_done.next = self.cmd.done.val();
        self.m_cmd_busy.next = self.cmd.busy.val();
        self.regs.cmd_status.next = self.cmd.status.val();
        self.regs.cmd_outs.next = self.cmd.outs.val();
        self.m_qpev_valid.next = self.cmd.m_qpev_valid.val();
        self.cmd.m_qpev_ready.next = self.m_qpev_ready.val();
        self.m_qpev_kind.next = self.cmd.m_qpev_kind.val();
        self.m_qpev_qpn.next = self.cmd.m_qpev_qpn.val();
        self.m_cqev_valid.next = self.cmd.m_cqev_valid.val();
        self.cmd.m_cqev_ready.next = self.m_cqev_ready.val();
        self.m_cqev_cqn.next = self.cmd.m_cqev_cqn.val();
        self.m_cqev_iova64.next = self.cmd.m_cqev_iova64.val();
        self.m_cqev_log.next = self.cmd.m_cqev_log.val();
        self.cmd.s_cq_rd_valid.next = self.s_cq_rd_valid.val();
        self.cmd.s_cq_rd_addr.next = self.s_cq_rd_addr.val();
        self.s_cq_rd_ready.next = self.cmd.s_cq_rd_ready.val();
        self.m_cq_rd_valid.next = self.cmd.m_cq_rd_valid.val();
        self.m_cq_rd_data.next = self.cmd.m_cq_rd_data.val();
        self.cmd.s_mr_rd_valid.next = self.s_mr_rd_valid.val();
        self.cmd.s_mr_rd_addr.next = self.s_mr_rd_addr.val();
        self.s_mr_rd_ready.next = self.cmd.s_mr_rd_ready.val();
        self.m_mr_rd_valid.next = self.cmd.m_mr_rd_valid.val();
        self.m_mr_rd_data.next = self.cmd.m_mr_rd_data.val();
        self.cmd.s_qpc_rd_valid.next = self.s_qpc_rd_valid.val();
        self.cmd.s_qpc_rd_addr.next = self.s_qpc_rd_addr.val();
        self.s_qpc_rd_ready.next = self.cmd.s_qpc_rd_ready.val();
        self.m_qpc_rd_valid.next = self.cmd.m_qpc_rd_valid.val();
        self.m_qpc_rd_data.next = self.cmd.m_qpc_rd_data.val();
        self.cmd.s_qpa_rd_valid.next = self.s_qpa_rd_valid.val();
        self.cmd.s_qpa_rd_addr.next = self.s_qpa_rd_addr.val();
        self.s_qpa_rd_ready.next = self.cmd.s_qpa_rd_ready.val();
        self.m_qpa_rd_valid.next = self.cmd.m_qpa_rd_valid.val();
        self.m_qpa_rd_data.next = self.cmd.m_qpa_rd_data.val();
        self.cmd.s_qpr_rd_valid.next = self.s_qpr_rd_valid.val();
        self.cmd.s_qpr_rd_addr.next = self.s_qpr_rd_addr.val();
        self.s_qpr_rd_ready.next = self.cmd.s_qpr_rd_ready.val();
        self.m_qpr_rd_valid.next = self.cmd.m_qpr_rd_valid.val();
        self.m_qpr_rd_data.next = self.cmd.m_qpr_rd_data.val();
        self.cmd.s_qps_rd_valid.next = self.s_qps_rd_valid.val();
        self.cmd.s_qps_rd_addr.next = self.s_qps_rd_addr.val();
        self.s_qps_rd_ready.next = self.cmd.s_qps_rd_ready.val();
        self.m_qps_rd_valid.next = self.cmd.m_qps_rd_valid.val();
        self.m_qps_rd_data.next = self.cmd.m_qps_rd_data.val();
        self.cmd.s_qps_wr_valid.next = self.s_qps_wr_valid.val();
        self.cmd.s_qps_wr_addr.next = self.s_qps_wr_addr.val();
        self.cmd.s_qps_wr_data.next = self.s_qps_wr_data.val();
        self.s_qps_wr_ready.next = self.cmd.s_qps_wr_ready.val();
        self.cmd.s_qpr_wr_valid.next = self.s_qpr_wr_valid.val();
        self.cmd.s_qpr_wr_addr.next = self.s_qpr_wr_addr.val();
        self.cmd.s_qpr_wr_data.next = self.s_qpr_wr_data.val();
        self.s_qpr_wr_ready.next = self.cmd.s_qpr_wr_ready.val();
        self.cmd.s_qperr_valid.next = self.s_qperr_valid.val();
        self.cmd.s_qperr_qpn.next = self.s_qperr_qpn.val();
        self.s_qperr_ready.next = self.cmd.s_qperr_ready.val();
        self.cmd.s_inv_valid.next = self.s_inv_valid.val();
        self.cmd.s_inv_key.next = self.s_inv_key.val();
        self.cmd.s_inv_pdn.next = self.s_inv_pdn.val();
        self.s_inv_ready.next = self.cmd.s_inv_ready.val();
        self.s_inv_ok.next = self.cmd.s_inv_ok.val();
        self.qc.s_resp_valid.next = self.s_qc_resp_valid.val();
        self.qc.s_resp_qpn.next = self.s_qc_resp_qpn.val();
        self.qc.s_resp_dup.next = self.s_qc_resp_dup.val();
        self.qc.s_resp_psn_seq.next = self.s_qc_resp_psn_seq.val();
        self.qc.s_resp_naks.next = self.s_qc_resp_naks.val();
        self.qc.s_resp_rnr_naks.next = self.s_qc_resp_rnr_naks.val();
        self.qc.s_resp_unknown_qp.next = self.s_qc_resp_unknown_qp.val();
        self.qc.s_resp_dma_faults.next = self.s_qc_resp_dma_faults.val();
        self.qc.s_req_qpn.next = self.s_qc_req_qpn.val();
        self.qc.s_req_dma_faults.next = self.s_qc_req_dma_faults.val();
        self.qc.s_req_ack_timeouts.next = self.s_qc_req_ack_timeouts.val();
        self.qc.s_rtx_valid.next = self.s_qc_rtx_valid.val();
        self.qc.s_rtx_qpn.next = self.s_qc_rtx_qpn.val();
        self.qc.s_rx_valid.next = self.s_qc_rx_valid.val();
        self.qc.s_rx_code.next = self.s_qc_rx_code.val();
        self.qc.s_rx_qpn.next = self.s_qc_rx_qpn.val();
        self.qc.s_tx_valid.next = self.s_qc_tx_valid.val();
        self.qc.s_tx_qpn.next = self.s_qc_tx_qpn.val();
        self.qc.s_tx_bytes.next = self.s_qc_tx_bytes.val();
        self.qc.reset.next = self.reset.val();
        self.qc.s_op_valid.next = self.cmd.m_qc_valid.val();
        self.qc.s_op_clear.next = self.cmd.m_qc_clear.val();
        self.qc.s_op_qpn.next = self.cmd.m_qc_qpn.val();
        self.cmd.m_qc_ready.next = self.qc.s_op_ready.val();
        self.cmd.s_qc_done.next = self.qc.m_done.val();
        self.cmd.s_qc_cnt.next = self.qc.m_cnt.val();
        self.m_wr_req_valid.next = self.cmd.m_wr_req_valid.val();
        self.m_wr_req_addr.next = self.cmd.m_wr_req_addr.val();
        self.m_wr_req_len.next = self.cmd.m_wr_req_len.val();
        self.m_wr_data_valid.next = self.cmd.m_wr_data_valid.val();
        self.m_wr_data.next = self.cmd.m_wr_data.val();
        self.m_wr_data_keep.next = self.cmd.m_wr_data_keep.val();
        self.m_wr_data_last.next = self.cmd.m_wr_data_last.val();
        self.cmd.m_wr_req_ready.next = self.m_wr_req_ready.val();
        self.cmd.m_wr_data_ready.next = self.m_wr_data_ready.val();
        self.cmd.s_wr_status_valid.next = self.s_wr_status_valid.val();
        self.cmd.s_wr_status_err.next = self.s_wr_status_err.val();
    }
}

/// The register-port driver of a [`Control`] under RustHDL simulation, shared by the
/// benches here and in `regfile`/`cmd`: register reads and writes as the host does them,
/// with the doorbells and QP events the block hands out collected on the way.
#[cfg(test)]
pub(crate) mod driver {
    use super::*;
    use crate::bench::{Bench, Rng};
    use rocenic_proto::abi::regs;

    pub type Ctl = Control<{ crate::QP_LOG }, { crate::MR_LOG }>;

    /// A doorbell as it left the FIFO: (kind, index, value).
    pub type Db = (u64, u64, u32);

    pub struct Rtl {
        pub bench: Bench<Ctl>,
        rng: Rng,
        /// Percent of cycles the doorbell and event consumers are ready.
        pub ready_pct: u32,
        /// SQ/RQ doorbells, in the order they left.
        pub doorbells: Vec<Db>,
        /// CQ doorbells (kind `DB_CQ`), in the order they left.
        pub cq_doorbells: Vec<Db>,
        pub events: Vec<(u64, u64)>,
        /// Counter increments to apply in the next cycle, then cleared.
        pub inc: u16,
        pub tx_bytes: u16,
        pub rx_bytes: u16,
        /// DMA writes (QUERY_QP_COUNTERS) as they completed: (IOVA, bytes, refused).
        pub dma_writes: Vec<(u64, Vec<u8>, bool)>,
        /// The write whose beats are arriving; statuses due: (cycle, refused).
        wr_cur: Option<(u64, Vec<u8>)>,
        wr_status: std::collections::VecDeque<(u64, bool)>,
        cycle: u64,
    }

    /// IOVAs from here up are refused by the benches' host memory (RTL and model).
    pub const FAULT_IOVA: u64 = 1 << 63;

    impl Rtl {
        /// A block after reset, its tables cleared (CMD_STATUS no longer busy).
        pub fn new(seed: u64, ready_pct: u32) -> Rtl {
            let mut rtl = Rtl {
                bench: Bench::new(Ctl::new(), |u| &mut u.clock),
                rng: Rng::new(seed),
                ready_pct,
                doorbells: vec![],
                cq_doorbells: vec![],
                events: vec![],
                inc: 0,
                tx_bytes: 0,
                rx_bytes: 0,
                dma_writes: vec![],
                wr_cur: None,
                wr_status: Default::default(),
                cycle: 0,
            };
            rtl.reset();
            rtl
        }

        /// Reset for one cycle, then wait for the table clear to finish.
        pub fn reset(&mut self) {
            self.bench.uut.reset.next = true;
            self.step();
            self.bench.uut.reset.next = false;
            let mut n = 0;
            while self.read(regs::CMD_STATUS) & regs::CMD_STATUS_BUSY != 0 {
                n += 1;
                assert!(n < 3000, "table clear never ended");
            }
        }

        /// One cycle: settle, collect what the consumers took, tick.
        pub fn step(&mut self) {
            let ready = self.rng.percent(self.ready_pct);
            let u = &mut self.bench.uut;
            u.m_db_ready.next = ready;
            u.m_cq_db_ready.next = ready;
            u.m_qpev_ready.next = ready;
            u.m_cqev_ready.next = ready;
            u.cnt_inc.next = u64::from(self.inc).into();
            u.cnt_tx_bytes.next = u64::from(self.tx_bytes).into();
            u.cnt_rx_bytes.next = u64::from(self.rx_bytes).into();
            let wr_ready = self.rng.percent(self.ready_pct.max(20));
            u.m_wr_req_ready.next = wr_ready && self.wr_cur.is_none();
            u.m_wr_data_ready.next = wr_ready;
            let st = self
                .wr_status
                .front()
                .filter(|s| s.0 <= self.cycle)
                .copied();
            u.s_wr_status_valid.next = st.is_some();
            u.s_wr_status_err.next = st.is_some_and(|s| s.1);
            if st.is_some() {
                self.wr_status.pop_front();
            }
            self.bench.settle();
            let u = &self.bench.uut;
            if u.m_db_valid.val() && u.m_db_ready.val() {
                self.doorbells.push((
                    u.m_db_kind.val().to_u64(),
                    u.m_db_index.val().to_u64(),
                    u.m_db_value.val().to_u32(),
                ));
            }
            if u.m_cq_db_valid.val() && u.m_cq_db_ready.val() {
                self.cq_doorbells.push((
                    crate::control::regfile::DB_CQ,
                    u.m_cq_db_cqn.val().to_u64(),
                    u.m_cq_db_ci.val().to_u32(),
                ));
            }
            if u.m_qpev_valid.val() && u.m_qpev_ready.val() {
                self.events
                    .push((u.m_qpev_kind.val().to_u64(), u.m_qpev_qpn.val().to_u64()));
            }
            if u.m_wr_req_valid.val() && u.m_wr_req_ready.val() {
                assert_eq!(
                    u.m_wr_req_len.val().to_u64(),
                    128,
                    "QUERY_QP_COUNTERS length"
                );
                self.wr_cur = Some((u.m_wr_req_addr.val().to_u64(), vec![]));
            }
            if u.m_wr_data_valid.val() && u.m_wr_data_ready.val() {
                let (addr, mut bytes) = self.wr_cur.take().expect("data after a request");
                assert_eq!(u.m_wr_data_keep.val().to_u64(), u64::MAX, "whole beats");
                bytes.extend(crate::common::icrc::bytes_from_beat(&u.m_wr_data.val()));
                if u.m_wr_data_last.val() {
                    let refused = addr >= FAULT_IOVA;
                    self.dma_writes.push((addr, bytes, refused));
                    self.wr_status.push_back((self.cycle + 3, refused));
                } else {
                    self.wr_cur = Some((addr, bytes));
                }
            }
            self.bench.tick();
            self.cycle += 1;
            self.inc = 0;
            self.tx_bytes = 0;
            self.rx_bytes = 0;
        }

        /// Offers one access until it is taken; returns the read data for a read.
        fn access(&mut self, write: bool, off: u32, v: u32) -> Option<u32> {
            let u = &mut self.bench.uut;
            u.reg_valid.next = true;
            u.reg_write.next = write;
            u.reg_addr.next = u64::from(off).into();
            u.reg_wdata.next = u64::from(v).into();
            let mut n = 0;
            loop {
                self.bench.settle();
                let taken = self.bench.uut.reg_ready.val();
                self.step();
                if taken {
                    break;
                }
                n += 1;
                assert!(n < 1000, "register access at {off:#x} never taken");
            }
            self.bench.uut.reg_valid.next = false;
            if write {
                return None;
            }
            // The answer comes exactly one cycle after the read is taken.
            self.bench.settle();
            assert!(
                self.bench.uut.reg_rdata_valid.val(),
                "no read data one cycle after the read of {off:#x}"
            );
            Some(self.bench.uut.reg_rdata.val().to_u32())
        }

        pub fn write(&mut self, off: u32, v: u32) {
            self.access(true, off, v);
        }

        pub fn read(&mut self, off: u32) -> u32 {
            self.access(false, off, 0).expect("read data")
        }

        /// Runs a command (arguments already written); returns its status and result words
        /// (all of them, or only word `opcode % 8`, the others left 0).
        pub fn command(&mut self, opcode: u32, all_outs: bool) -> (u32, [u32; 8]) {
            self.write(regs::CMD_OPCODE, opcode);
            let mut n = 0;
            let status = loop {
                let s = self.read(regs::CMD_STATUS);
                if s & regs::CMD_STATUS_BUSY == 0 {
                    break s;
                }
                n += 1;
                assert!(n < 200, "command {opcode} never finished");
            };
            let mut outs = [0; 8];
            for (i, o) in outs.iter_mut().enumerate() {
                if all_outs || i == (opcode as usize) % 8 {
                    *o = self.read(regs::cmd_out(i as u32));
                }
            }
            (status, outs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::driver::{Rtl, FAULT_IOVA};
    use crate::bench::Rng;
    use crate::control::cmd::{QPEV_ACTIVE, QPEV_DESTROYED, QPEV_ERROR, QPEV_RESET};
    use crate::control::regfile::{DB_CQ, DB_RQ, DB_SQ};
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
            assert_eq!(cfg.max_qp, 1 << crate::QP_LOG, "the RTL's QP count");
            assert_eq!(cfg.max_mr, 1 << crate::MR_LOG, "the RTL's MR count");
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
            CmdOpcode::CreatePd
            | CmdOpcode::DestroyPd
            | CmdOpcode::QueryQp
            | CmdOpcode::DestroyQp => 1,
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
}

/// Directed tests of the register file and the engine through the register port.
#[cfg(test)]
mod directed {
    use super::driver::Rtl;
    use crate::bench::Rng;
    use crate::control::regfile::{DB_CQ, DB_RQ, DB_SQ};
    use rocenic_proto::abi::cmd::{CmdOpcode, CmdStatus, CqArgs, CreateQpArgs, PdArgs};
    use rocenic_proto::abi::regs::{self, Counter};

    fn run(rtl: &mut Rtl, op: CmdOpcode, args: [u32; 16]) -> u32 {
        for (w, v) in args.iter().enumerate() {
            rtl.write(regs::cmd_arg(w as u32), *v);
        }
        rtl.command(u32::from(op), false).0
    }

    #[test]
    fn counters_add_their_increments_and_lo_latches_hi() {
        let mut rtl = Rtl::new(7, 100);
        let mut rng = Rng::new(7);
        let mut want = [0u64; Counter::COUNT];
        // Random increments, byte counts near the 16-bit top so the sums cross 2^32.
        for _ in 0..3000 {
            rtl.inc = rng.next_u64() as u16;
            rtl.tx_bytes = 0xff00 | rng.byte() as u16;
            rtl.rx_bytes = rng.next_u64() as u16;
            for (c, w) in want.iter_mut().enumerate() {
                if rtl.inc >> c & 1 != 0 {
                    *w += match c {
                        1 => u64::from(rtl.tx_bytes),
                        3 => u64::from(rtl.rx_bytes),
                        _ => 1,
                    };
                }
            }
            rtl.step();
        }
        // Crossing 2^32 takes 66k cycles here (see the CounterBank leaf test for that);
        // this run checks the sums, carries through the low word and the latch.
        assert!(want[Counter::TxBytes as usize] > 1 << 24);
        for c in Counter::ALL {
            let lo = rtl.read(regs::counter_lo(c));
            // Increments go on between the two reads: HI must be the latched half.
            rtl.inc = 0xffff;
            rtl.tx_bytes = 0xffff;
            rtl.step();
            let hi = rtl.read(regs::counter_hi(c));
            assert_eq!(
                u64::from(hi) << 32 | u64::from(lo),
                want[c as usize],
                "{}",
                c.name()
            );
            for (k, w) in want.iter_mut().enumerate() {
                *w += match k {
                    1 => 0xffff,
                    3 => 0, // rx_bytes was 0 in that cycle
                    _ => 1,
                };
            }
        }
        // One latch for all counters, as in the model: HI of another counter reads it too.
        let lo = rtl.read(regs::counter_lo(Counter::TxBytes));
        let _ = lo;
        let latched = rtl.read(regs::counter_hi(Counter::RxFrames));
        assert_eq!(latched, rtl.read(regs::counter_hi(Counter::TxBytes)));
    }

    #[test]
    fn cycle_counter_runs_and_lo_latches_hi() {
        let mut rtl = Rtl::new(8, 100);
        let a = rtl.read(regs::CYCLE_LO);
        for _ in 0..50 {
            rtl.step();
        }
        let b = rtl.read(regs::CYCLE_LO);
        // 50 idle cycles and the cycle of the first read's transfer.
        assert_eq!(b - a, 51, "one count per cycle");
        assert_eq!(rtl.read(regs::CYCLE_HI), 0, "HI as latched by the LO read");
        let cycles = rtl.bench.cycle();
        assert!(u64::from(b) < cycles, "counts from reset");
    }

    /// Offers a write to `off` for one cycle without a consumer and says whether the
    /// register port would take it.
    fn write_is_taken(rtl: &mut Rtl, off: u32) -> bool {
        let u = &mut rtl.bench.uut;
        u.reg_valid.next = true;
        u.reg_write.next = true;
        u.reg_addr.next = u64::from(off).into();
        u.reg_wdata.next = 7u64.into();
        rtl.bench.settle();
        let taken = rtl.bench.uut.reg_ready.val();
        rtl.bench.uut.reg_valid.next = false;
        taken
    }

    #[test]
    fn doorbells_leave_in_order_and_backpressure_when_full() {
        // Consumers that are never ready: 16 SQ/RQ doorbells fill their FIFO and the 17th
        // write waits, but CQ doorbells still go in (their own FIFO), until 16 of them fill
        // it too.
        let mut rtl = Rtl::new(9, 0);
        let (mut want, mut want_cq) = (vec![], vec![]);
        for i in 0..16u32 {
            let (off, kind, idx) = match i % 2 {
                0 => (regs::sq_doorbell(i), DB_SQ, i),
                _ => (regs::rq_doorbell(255 - i), DB_RQ, 255 - i),
            };
            rtl.write(off, 1000 + i);
            want.push((kind, u64::from(idx), 1000 + i));
        }
        assert!(
            !write_is_taken(&mut rtl, regs::sq_doorbell(3)),
            "an SQ doorbell write waits while the QP doorbell FIFO is full"
        );
        for i in 0..16u32 {
            assert!(
                write_is_taken(&mut rtl, regs::cq_doorbell(i * 7)),
                "CQ doorbell {i} is not held up by the full QP doorbell FIFO"
            );
            rtl.write(regs::cq_doorbell(i * 7), 2000 + i);
            want_cq.push((DB_CQ, u64::from(i * 7), 2000 + i));
        }
        assert!(
            !write_is_taken(&mut rtl, regs::cq_doorbell(1)),
            "a CQ doorbell write waits while the CQ doorbell FIFO is full"
        );
        rtl.bench.uut.reg_addr.next = u64::from(regs::CMD_STATUS).into();
        rtl.bench.uut.reg_write.next = false;
        rtl.bench.uut.reg_valid.next = true;
        rtl.bench.settle();
        assert!(rtl.bench.uut.reg_ready.val(), "other accesses go on");
        rtl.bench.uut.reg_valid.next = false;
        rtl.ready_pct = 100;
        // Out of range (QP 256, CQ 256): no doorbell.
        rtl.write(regs::sq_doorbell(256), 1);
        rtl.write(regs::cq_doorbell(256), 1);
        rtl.write(regs::rq_doorbell(5), 77);
        want.push((DB_RQ, 5, 77));
        for _ in 0..40 {
            rtl.step();
        }
        assert_eq!(rtl.doorbells, want);
        assert_eq!(rtl.cq_doorbells, want_cq);
    }

    #[test]
    fn reset_clears_tables_registers_and_a_running_command() {
        let mut rtl = Rtl::new(10, 100);
        rtl.write(regs::MAC_LO, 0x1234_5678);
        rtl.write(regs::CONTROL, 0xffff_ffff);
        assert_eq!(rtl.read(regs::CONTROL), regs::CONTROL_ENABLE);
        assert!(rtl.bench.uut.port_enable.val());
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 3 }.to_args()),
            0
        );
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 3 }.to_args()),
            u32::from(CmdStatus::InUse)
        );
        // Start a command and reset in the middle of it.
        rtl.write(regs::CMD_OPCODE, u32::from(CmdOpcode::DestroyPd));
        rtl.step();
        rtl.reset();
        assert_eq!(rtl.read(regs::CMD_STATUS), 0);
        assert_eq!(rtl.read(regs::MAC_LO), 0);
        assert_eq!(rtl.read(regs::CONTROL), 0);
        assert_eq!(rtl.read(regs::cmd_arg(0)), 0);
        // The PD is gone: creating it again works.
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 3 }.to_args()),
            0
        );
    }

    #[test]
    fn a_command_written_while_one_runs_is_ignored() {
        let mut rtl = Rtl::new(11, 100);
        for (w, v) in (PdArgs { pdn: 1 }).to_args().iter().enumerate() {
            rtl.write(regs::cmd_arg(w as u32), *v);
        }
        rtl.write(regs::CMD_OPCODE, u32::from(CmdOpcode::CreatePd));
        assert_eq!(rtl.read(regs::CMD_STATUS), regs::CMD_STATUS_BUSY);
        rtl.write(regs::CMD_OPCODE, 200); // would be BAD_OPCODE
        let (status, _) = rtl.command(u32::from(CmdOpcode::Nop), false);
        assert_eq!(status, 0);
        // The PD exists: the first command ran, the second was dropped.
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 1 }.to_args()),
            u32::from(CmdStatus::InUse)
        );
    }

    /// QUERY_QP_COUNTERS writes the QP's counters (events from every source, others'
    /// QPs left out) by DMA; a refused write answers DMA_FAULT; CREATE_QP starts from 0.
    #[test]
    fn cmd_query_qp_counters_writes_the_qps_counters_by_dma() {
        use rocenic_proto::abi::cmd::QpCountersArgs;
        let mut rtl = Rtl::new(13, 60);
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 1 }.to_args()),
            0
        );
        let cq = CqArgs {
            cqn: 3,
            log_size: 6,
            ring_iova: 0x1000,
        };
        assert_eq!(run(&mut rtl, CmdOpcode::CreateCq, cq.to_args()), 0);
        let create = |qpn| CreateQpArgs {
            qpn,
            pdn: 1,
            send_cqn: 3,
            recv_cqn: 3,
            sq_iova: 0x4000,
            sq_log_size: 4,
            rq_iova: 0x8000,
            rq_log_size: 4,
        };
        for q in [5, 6] {
            assert_eq!(run(&mut rtl, CmdOpcode::CreateQp, create(q).to_args()), 0);
        }
        // Events: per QP 5 from every source, some on QP 6, some not counted per QP.
        let pulse = |rtl: &mut Rtl, f: &dyn Fn(&mut super::driver::Ctl)| {
            f(&mut rtl.bench.uut);
            rtl.step();
            let u = &mut rtl.bench.uut;
            u.s_qc_resp_valid.next = false;
            u.s_qc_resp_dup.next = false;
            u.s_qc_resp_naks.next = false;
            u.s_qc_resp_dma_faults.next = false;
            u.s_qc_req_dma_faults.next = false;
            u.s_qc_req_ack_timeouts.next = false;
            u.s_qc_rtx_valid.next = false;
            u.s_qc_rx_valid.next = false;
            u.s_qc_tx_valid.next = false;
        };
        for i in 0..10u64 {
            pulse(&mut rtl, &|u| {
                u.s_qc_resp_valid.next = true;
                u.s_qc_resp_qpn.next = (5 + i % 2).into();
                u.s_qc_resp_dup.next = true;
                u.s_qc_resp_naks.next = i % 5 == 0;
                u.s_qc_resp_dma_faults.next = i % 5 == 0;
                u.s_qc_req_qpn.next = 5u64.into();
                u.s_qc_req_ack_timeouts.next = true;
                u.s_qc_rtx_valid.next = true;
                u.s_qc_rtx_qpn.next = 5u64.into();
                u.s_qc_rx_valid.next = i < 3;
                u.s_qc_rx_qpn.next = 5u64.into();
                u.s_qc_rx_code.next = crate::requester::req_rx_check::CNT_DUP.into();
                u.s_qc_tx_valid.next = i != 4;
                u.s_qc_tx_qpn.next = (6 - i % 2).into();
                u.s_qc_tx_bytes.next = (62 + 100 * i).into();
            });
        }
        // Not per QP: the responder's pulse without its QP valid.
        pulse(&mut rtl, &|u| {
            u.s_qc_resp_qpn.next = 5u64.into();
            u.s_qc_resp_dup.next = true;
        });
        let query = |rtl: &mut Rtl, qpn: u32, iova: u64| {
            let st = run(
                rtl,
                CmdOpcode::QueryQpCounters,
                QpCountersArgs { qpn, iova }.to_args(),
            );
            let w = rtl.dma_writes.last().expect("a DMA write").clone();
            assert_eq!(w.0, iova);
            let c: Vec<u64> =
                w.1.chunks(8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                    .collect();
            (st, c)
        };
        let (st, c) = query(&mut rtl, 5, 0x9000);
        assert_eq!(st, u32::from(CmdStatus::Ok));
        let mut want = [0u64; Counter::COUNT];
        want[Counter::Duplicates as usize] = 5 + 3;
        want[Counter::NaksSent as usize] = 1;
        want[Counter::DmaFaults as usize] = 1;
        want[Counter::AckTimeouts as usize] = 10;
        want[Counter::Retransmits as usize] = 10;
        // TX frames in the odd cycles: 162 + 362 + ... + 962.
        want[Counter::TxFrames as usize] = 5;
        want[Counter::TxBytes as usize] = 5 * 62 + 100 * (1 + 3 + 5 + 7 + 9);
        assert_eq!(c, want, "QP 5");
        let (st, c) = query(&mut rtl, 6, 0xa000);
        assert_eq!(st, u32::from(CmdStatus::Ok));
        let mut want6 = [0u64; Counter::COUNT];
        want6[Counter::Duplicates as usize] = 5;
        want6[Counter::NaksSent as usize] = 1;
        want6[Counter::DmaFaults as usize] = 1;
        // TX frames in the even cycles but 4: 62 + 262 + 662 + 862.
        want6[Counter::TxFrames as usize] = 4;
        want6[Counter::TxBytes as usize] = 4 * 62 + 100 * (2 + 6 + 8);
        assert_eq!(c, want6, "QP 6");
        // A refused write.
        let (st, _) = query(&mut rtl, 5, super::driver::FAULT_IOVA + 0x40);
        assert_eq!(st, u32::from(CmdStatus::DmaFault));
        // Destroyed and created again: zero.
        let mut qpn5 = [0u32; 16];
        qpn5[0] = 5;
        assert_eq!(run(&mut rtl, CmdOpcode::DestroyQp, qpn5), 0);
        assert_eq!(run(&mut rtl, CmdOpcode::CreateQp, create(5).to_args()), 0);
        let (st, c) = query(&mut rtl, 5, 0xb000);
        assert_eq!(st, u32::from(CmdStatus::Ok));
        assert_eq!(c, [0u64; Counter::COUNT], "QP 5 created again");
    }

    #[test]
    fn datapath_reads_a_created_qp_context() {
        let mut rtl = Rtl::new(12, 100);
        assert_eq!(
            run(&mut rtl, CmdOpcode::CreatePd, PdArgs { pdn: 2 }.to_args()),
            0
        );
        let cq = CqArgs {
            cqn: 9,
            log_size: 6,
            ring_iova: 0xabc_0000_1040,
        };
        assert_eq!(run(&mut rtl, CmdOpcode::CreateCq, cq.to_args()), 0);
        let qp = CreateQpArgs {
            qpn: 77,
            pdn: 2,
            send_cqn: 9,
            recv_cqn: 9,
            sq_iova: 0x1_0000_0040,
            sq_log_size: 5,
            rq_iova: 0x2_0000_0080,
            rq_log_size: 7,
        };
        assert_eq!(run(&mut rtl, CmdOpcode::CreateQp, qp.to_args()), 0);
        // Read QP 77's create-time context and CQ 9 on the datapath ports.
        let u = &mut rtl.bench.uut;
        u.s_qpc_rd_valid.next = true;
        u.s_qpc_rd_addr.next = 77u64.into();
        u.s_cq_rd_valid.next = true;
        u.s_cq_rd_addr.next = 9u64.into();
        rtl.bench.settle();
        assert!(rtl.bench.uut.s_qpc_rd_ready.val(), "the engine is idle");
        rtl.step();
        rtl.bench.uut.s_qpc_rd_valid.next = false;
        rtl.bench.uut.s_cq_rd_valid.next = false;
        rtl.bench.settle();
        let u = &rtl.bench.uut;
        assert!(u.m_qpc_rd_valid.val() && u.m_cq_rd_valid.val());
        let e = u.m_qpc_rd_data.val();
        use crate::control::ctx_tables::{cq_layout, qpc_layout};
        let f = |name: &str, w: usize| {
            let at = qpc_layout::offset(name);
            (0..w).fold(0u64, |acc, b| acc | (u64::from(e.get_bit(at + b)) << b))
        };
        assert_eq!(f("present", 1), 1);
        assert_eq!(f("pdn", 8), 2);
        assert_eq!(f("send_cqn", 8), 9);
        assert_eq!(f("recv_cqn", 8), 9);
        assert_eq!(f("sq_log", 4), 5);
        assert_eq!(f("sq_ring", 58), 0x1_0000_0040 >> 6);
        assert_eq!(f("rq_log", 4), 7);
        assert_eq!(f("rq_ring", 58), 0x2_0000_0080 >> 6);
        let c = u.m_cq_rd_data.val();
        let g = |name: &str, w: usize| {
            let at = cq_layout::offset(name);
            (0..w).fold(0u64, |acc, b| acc | (u64::from(c.get_bit(at + b)) << b))
        };
        assert_eq!(g("refs", 10), 2, "the QP uses CQ 9 for both queues");
        assert_eq!(g("log_size", 4), 6);
        assert_eq!(g("ring", 58), 0xabc_0000_1040 >> 6);
    }
}
