//! Counters printed as `rdma statistic show` prints them: one line per device,
//! `link rocenic0/1 <name> <value> ...`, and one per QP, `link rocenic0/1 cntn <qpn> ...`.
//! Host A's NIC is `rocenic0`, host B's `rocenic1`.

use std::fmt::Write as _;

use rocenic_driver::verbs::Counter;

/// The counters of both NICs after a run, and of the QPs still open then.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Device counters of host A's and host B's NIC.
    pub global: [[u64; Counter::COUNT]; 2],
    /// (device 0 or 1, QP number, that QP's counters).
    pub qps: Vec<(usize, u32, [u64; Counter::COUNT])>,
}

fn values(line: &mut String, c: &[u64; Counter::COUNT]) {
    for k in Counter::ALL {
        let _ = write!(line, " {} {}", k.name(), c[k as usize]);
    }
}

impl Stats {
    /// The lines `rdma statistic show` would print.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (dev, c) in self.global.iter().enumerate() {
            let mut l = format!("link rocenic{dev}/1");
            values(&mut l, c);
            out.push(l);
        }
        for (dev, qpn, c) in &self.qps {
            let mut l = format!("link rocenic{dev}/1 cntn {qpn}");
            values(&mut l, c);
            out.push(l);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_shaped_like_rdma_statistic_show() {
        let mut s = Stats::default();
        s.global[1][Counter::TxFrames as usize] = 7;
        let mut q = [0; Counter::COUNT];
        q[Counter::Retransmits as usize] = 3;
        s.qps.push((0, 17, q));
        let l = s.lines();
        assert_eq!(l.len(), 3);
        assert!(
            l[0].starts_with("link rocenic0/1 tx_frames 0 tx_bytes 0"),
            "{}",
            l[0]
        );
        assert!(l[1].starts_with("link rocenic1/1 tx_frames 7 "), "{}", l[1]);
        assert!(
            l[2].starts_with("link rocenic0/1 cntn 17 tx_frames 0"),
            "{}",
            l[2]
        );
        assert!(l[2].contains(" retransmits 3 "), "{}", l[2]);
        assert!(l[2].ends_with("unknown_qp_drops 0"), "{}", l[2]);
    }
}
