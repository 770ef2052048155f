//! Build-time parameters of the device (what the RTL fixes when it is generated).

/// Sizes and limits of one device. `Default` is the configuration the RTL is built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicConfig {
    /// QP contexts (QPNs 2..max_qp are usable).
    pub max_qp: u32,
    /// Completion queues.
    pub max_cq: u32,
    /// Memory-region table entries.
    pub max_mr: u32,
    /// Protection domains.
    pub max_pd: u32,
    /// Largest ring (SQ, RQ, CQ) as log2 of its entries.
    pub max_log_ring: u32,
    /// Outstanding READ/atomic requests per QP, as initiator and as target.
    pub max_rd_atomic: u8,
    /// Packets a QP may have sent and not yet seen acknowledged (the go-back-N window).
    pub max_outstanding_psns: u32,
    /// Frames the requester may have built ahead of the TX port (hides DMA read latency).
    pub tx_pipeline_depth: usize,
    /// Cycles a mailbox command stays busy.
    pub cmd_latency: u64,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            max_qp: 256,
            max_cq: 256,
            max_mr: 1024,
            max_pd: 256,
            max_log_ring: 15,
            max_rd_atomic: 16,
            max_outstanding_psns: 1024,
            tx_pipeline_depth: 64,
            cmd_latency: 4,
        }
    }
}
