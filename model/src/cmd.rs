//! The command mailbox: creating, modifying, querying and destroying device objects.

use crate::nic::Nic;
use crate::qp::{check_modify, ModifyError, Qp, Requester, Responder};
use crate::tables::{Cq, Mr, PdEntry};
use rocenic_proto::abi::cmd::{
    mr_index, qp_attr, CmdOpcode, CmdStatus, CqArgs, CreateQpArgs, ModifyQpArgs, MrArgs, PdArgs,
    QpCountersArgs, QueryQpOut,
};
use rocenic_proto::abi::verbs::{access, QpState};
use rocenic_proto::abi::DESC_SIZE;
use rocenic_proto::device::DmaPort;

type CmdResult = Result<(), CmdStatus>;

/// The slot `i` of an object table; BAD_INDEX outside it.
fn slot<T>(table: &mut [Option<T>], i: u32) -> Result<&mut Option<T>, CmdStatus> {
    table.get_mut(i as usize).ok_or(CmdStatus::BadIndex)
}

/// The live object `i`; NOT_FOUND when the slot is empty.
fn entry<T>(table: &mut [Option<T>], i: u32) -> Result<&mut T, CmdStatus> {
    slot(table, i)?.as_mut().ok_or(CmdStatus::NotFound)
}

/// Creates object `i`; IN_USE when it exists.
fn install<T>(table: &mut [Option<T>], i: u32, v: T) -> CmdResult {
    let s = slot(table, i)?;
    if s.is_some() {
        return Err(CmdStatus::InUse);
    }
    *s = Some(v);
    Ok(())
}

/// Destroys object `i` unless something still refers to it.
fn remove_unreferenced<T>(table: &mut [Option<T>], i: u32, refs: impl Fn(&T) -> u32) -> CmdResult {
    let s = slot(table, i)?;
    match s {
        None => Err(CmdStatus::NotFound),
        Some(v) if refs(v) > 0 => Err(CmdStatus::InUse),
        Some(_) => {
            *s = None;
            Ok(())
        }
    }
}

fn aligned(iova: u64) -> bool {
    iova.is_multiple_of(DESC_SIZE as u64)
}

impl Nic {
    /// Runs one command with the current arguments; results land in `cmd_out`.
    pub(crate) fn execute(&mut self, op: CmdOpcode, dma: &mut dyn DmaPort) -> CmdStatus {
        self.cmd_out = [0; 8];
        let a = self.cmd_args;
        let r = match op {
            CmdOpcode::Nop => Ok(()),
            CmdOpcode::CreatePd => self.create_pd(PdArgs::from_args(&a)),
            CmdOpcode::DestroyPd => self.destroy_pd(PdArgs::from_args(&a)),
            CmdOpcode::CreateCq => self.create_cq(CqArgs::from_args(&a)),
            CmdOpcode::DestroyCq => self.destroy_cq(CqArgs::from_args(&a)),
            CmdOpcode::RegMr => self.reg_mr(MrArgs::from_args(&a)),
            CmdOpcode::DeregMr => self.dereg_mr(MrArgs::from_args(&a)),
            CmdOpcode::CreateQp => self.create_qp(CreateQpArgs::from_args(&a)),
            CmdOpcode::ModifyQp => self.modify_qp(ModifyQpArgs::from_args(&a), dma),
            CmdOpcode::QueryQp => self.query_qp(a[0]),
            CmdOpcode::DestroyQp => self.destroy_qp(a[0]),
            CmdOpcode::QueryQpCounters => {
                self.query_qp_counters(QpCountersArgs::from_args(&a), dma)
            }
            CmdOpcode::Unknown(_) => Err(CmdStatus::BadOpcode),
        };
        r.err().unwrap_or(CmdStatus::Ok)
    }

    fn pd_ref(&mut self, pdn: u32, delta: i32) -> CmdResult {
        let pd = entry(&mut self.tables.pds, pdn)?;
        pd.refs = pd.refs.wrapping_add_signed(delta);
        Ok(())
    }

    fn cq_ref(&mut self, cqn: u32, delta: i32) -> CmdResult {
        let cq = entry(&mut self.tables.cqs, cqn)?;
        cq.refs = cq.refs.wrapping_add_signed(delta);
        Ok(())
    }

    fn create_pd(&mut self, a: PdArgs) -> CmdResult {
        install(&mut self.tables.pds, a.pdn, PdEntry::default())
    }

    fn destroy_pd(&mut self, a: PdArgs) -> CmdResult {
        remove_unreferenced(&mut self.tables.pds, a.pdn, |pd| pd.refs)
    }

    fn create_cq(&mut self, a: CqArgs) -> CmdResult {
        if a.log_size > self.cfg.max_log_ring || !aligned(a.ring_iova) {
            return Err(CmdStatus::BadParam);
        }
        install(
            &mut self.tables.cqs,
            a.cqn,
            Cq::new(a.log_size, a.ring_iova),
        )
    }

    fn destroy_cq(&mut self, a: CqArgs) -> CmdResult {
        remove_unreferenced(&mut self.tables.cqs, a.cqn, |cq| cq.refs)?;
        self.cq_dirty.remove(&a.cqn);
        Ok(())
    }

    fn reg_mr(&mut self, a: MrArgs) -> CmdResult {
        if mr_index(a.key) != a.index || a.access & !access::ALL != 0 {
            return Err(CmdStatus::BadParam);
        }
        if a.va.checked_add(a.length).is_none() || a.iova.checked_add(a.length).is_none() {
            return Err(CmdStatus::BadParam);
        }
        if slot(&mut self.tables.mrs, a.index)?.is_some() {
            return Err(CmdStatus::InUse);
        }
        self.pd_ref(a.pdn, 1)?;
        self.tables.mrs[a.index as usize] = Some(Mr {
            key: a.key,
            pdn: a.pdn,
            access: a.access,
            va: a.va,
            iova: a.iova,
            length: a.length,
            valid: true,
        });
        Ok(())
    }

    fn dereg_mr(&mut self, a: MrArgs) -> CmdResult {
        let mr = slot(&mut self.tables.mrs, a.index)?
            .take()
            .ok_or(CmdStatus::NotFound)?;
        self.pd_ref(mr.pdn, -1)
    }

    fn create_qp(&mut self, a: CreateQpArgs) -> CmdResult {
        if a.qpn < 2 || a.qpn >= self.cfg.max_qp {
            return Err(CmdStatus::BadIndex);
        }
        if self.qps[a.qpn as usize].is_some() {
            return Err(CmdStatus::InUse);
        }
        let max = self.cfg.max_log_ring;
        if a.sq_log_size > max || a.rq_log_size > max || !aligned(a.sq_iova) || !aligned(a.rq_iova)
        {
            return Err(CmdStatus::BadParam);
        }
        // Check every reference before taking any, so a refusal changes nothing.
        self.cq_ref(a.send_cqn, 0)?;
        self.cq_ref(a.recv_cqn, 0)?;
        self.pd_ref(a.pdn, 0)?;
        self.cq_ref(a.send_cqn, 1)?;
        self.cq_ref(a.recv_cqn, 1)?;
        self.pd_ref(a.pdn, 1)?;
        self.qps[a.qpn as usize] = Some(Qp::new(&a));
        Ok(())
    }

    fn destroy_qp(&mut self, qpn: u32) -> CmdResult {
        let qp = entry(&mut self.qps, qpn)?;
        let (pdn, scq, rcq) = (qp.pdn, qp.send_cqn, qp.recv_cqn);
        self.purge_qp_frames(qpn);
        self.qps[qpn as usize] = None;
        self.active.remove(&qpn);
        self.timed.remove(&qpn);
        self.cq_ref(scq, -1)?;
        self.cq_ref(rcq, -1)?;
        self.pd_ref(pdn, -1)
    }

    fn modify_qp(&mut self, m: ModifyQpArgs, dma: &mut dyn DmaPort) -> CmdResult {
        let max_rd = self.cfg.max_rd_atomic;
        let qp = entry(&mut self.qps, m.qpn)?;
        let new = check_modify(qp.state, &m).map_err(|e| match e {
            ModifyError::BadState => CmdStatus::BadState,
            ModifyError::BadParam => CmdStatus::BadParam,
        })?;
        if m.mask & qp_attr::MAX_QP_RD_ATOMIC != 0 && m.max_rd_atomic > max_rd
            || m.mask & qp_attr::MAX_DEST_RD_ATOMIC != 0 && m.max_dest_rd_atomic > max_rd
        {
            return Err(CmdStatus::BadParam);
        }
        let at = &mut qp.attrs;
        if m.mask & qp_attr::ACCESS_FLAGS != 0 {
            at.access = m.access;
        }
        if m.mask & qp_attr::AV != 0 {
            at.dest_mac = m.dest_mac;
            at.dest_ip = m.dest_ip;
            at.udp_sport = m.udp_sport;
        }
        if let Some(mtu) = m.mtu().filter(|_| m.mask & qp_attr::PATH_MTU != 0) {
            at.pmtu = mtu.bytes();
        }
        if m.mask & qp_attr::TIMEOUT != 0 {
            at.timeout = m.timeout;
        }
        if m.mask & qp_attr::RETRY_CNT != 0 {
            at.retry_cnt = m.retry_cnt;
            qp.req.retry_left = m.retry_cnt;
        }
        if m.mask & qp_attr::RNR_RETRY != 0 {
            at.rnr_retry = m.rnr_retry;
            qp.req.rnr_left = m.rnr_retry;
        }
        if m.mask & qp_attr::MIN_RNR_TIMER != 0 {
            at.min_rnr_timer = m.min_rnr_timer;
        }
        if m.mask & qp_attr::MAX_QP_RD_ATOMIC != 0 {
            at.max_rd_atomic = m.max_rd_atomic;
        }
        if m.mask & qp_attr::MAX_DEST_RD_ATOMIC != 0 {
            at.max_dest_rd_atomic = m.max_dest_rd_atomic;
        }
        if m.mask & qp_attr::DEST_QPN != 0 {
            at.dest_qpn = m.dest_qpn;
        }
        if m.mask & qp_attr::RQ_PSN != 0 {
            qp.resp.epsn = m.rq_psn & 0xff_ffff;
        }
        if m.mask & qp_attr::SQ_PSN != 0 {
            let psn = m.sq_psn & 0xff_ffff;
            qp.req.next_psn = psn;
            qp.req.una_psn = psn;
            qp.req.sent_end = psn;
        }
        let old = qp.state;
        qp.state = new;
        let qpn = m.qpn;
        match new {
            QpState::Reset => {
                // Back to a fresh context: no PSN, ring position or op survives.
                let q = self.qps[qpn as usize].as_mut().expect("checked above");
                q.req = Requester::default();
                q.resp = Responder::default();
                q.attrs = Default::default();
                self.purge_qp_frames(qpn);
                self.active.remove(&qpn);
                self.timed.remove(&qpn);
            }
            QpState::Err if old != QpState::Err => {
                self.enter_error(qpn, dma);
            }
            QpState::Rts | QpState::Sqd => {
                self.active.insert(qpn);
            }
            _ => {}
        }
        Ok(())
    }

    fn query_qp(&mut self, qpn: u32) -> CmdResult {
        let qp = entry(&mut self.qps, qpn)?;
        let pmtu = qp.attrs.pmtu;
        self.cmd_out = QueryQpOut {
            state: qp.state,
            sq_psn: qp.req.next_psn,
            rq_psn: qp.resp.epsn,
            dest_qpn: qp.attrs.dest_qpn,
            sq_ci: qp.req.ops.front().map_or(qp.req.sq_fetch, |o| o.index),
            rq_ci: qp.resp.rq_ci,
            path_mtu: if pmtu == 0 {
                0
            } else {
                (pmtu.trailing_zeros() - 7) as u8
            },
            access: qp.attrs.access,
        }
        .to_outs();
        Ok(())
    }

    fn query_qp_counters(&mut self, a: QpCountersArgs, dma: &mut dyn DmaPort) -> CmdResult {
        let qp = entry(&mut self.qps, a.qpn)?;
        let bytes: Vec<u8> = qp
            .counters
            .as_array()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        dma.dma_write(self.now, a.iova, &bytes)
            .map_err(|_| CmdStatus::DmaFault)?;
        Ok(())
    }
}
