//! Minimal reproductions of model bugs the properties found, kept as regression tests. Each
//! names the rule of docs/abi.md it checks.
//!
//! Fixed since they were found: `rnr_wait_does_not_spend_transport_retries`,
//! `ack_passing_lost_read_response_does_not_lose_later_send`,
//! `too_small_receive_completes_once`, `seq_nak_after_lost_read_response_reissues_the_read`,
//! `seq_naks_after_lost_read_response_exhaust_retries`.
//!
//! Open: `retiring_the_op_under_the_tx_cursor_resets_the_packet_index`.

use rocenic_tests::case::*;
use rocenic_tests::wire::BTH_OPCODE_AT;
use rocenic_tests::{run_case, run_case_hook, Outcome};

fn assert_ok(case: &Case, o: &Outcome) {
    assert!(o.failures.is_empty(), "{case:?}\n{}", o.report(&[]));
}

/// abi.md: "`rnr_retry` bounds RNR retries (7 = forever)". A two-packet SEND meets an empty
/// receive queue: the responder answers the FIRST packet with an RNR NAK and the MIDDLE/LAST
/// packet, now out of sequence, with a PSN-sequence-error NAK for the same PSN. The
/// requester must not spend a transport retry (retry_cnt) on that NAK while it waits out the
/// RNR timer: here retry_cnt = 0 and the receive is posted after a few RNR periods, so the
/// SEND must succeed (the model completes it with RETRY_EXC_ERR).
#[test]
fn rnr_wait_does_not_spend_transport_retries() {
    let case = Case {
        pmtu: 256,
        conn: Conn {
            retry_cnt: 0,
            rnr_retry: 7,
            ..Conn::default()
        },
        recv_delay: 10_000,
        ops: vec![Op::Send {
            qp: 0,
            from: Side::A,
            len: Len::Bytes(257),
            local_off: 0,
            remote_off: 0,
            slack: 0,
            extra: SendExtra::None,
            inline: false,
            signaled: true,
        }],
        ..Case::default()
    };
    let o = run_case(&case).unwrap();
    assert_ok(&case, &o);
}

/// abi.md, requester reliability: "when an ACK passes a READ/atomic whose response has not
/// arrived, the requester retransmits from the first unacknowledged PSN". The only response
/// of a READ (or the ATOMIC_ACKNOWLEDGE of a fetch-add) is lost; the ACK of the SEND after
/// it arrives, the request is reissued and answered, and the responder re-ACKs the
/// duplicate SEND. Both must succeed. The model moves its unacknowledged PSN past the SEND
/// on that first ACK (`acknowledge` sets `una_psn = psn + 1` although the loop stopped at
/// the READ/atomic and did not mark the SEND done), so every later ACK of the SEND is
/// ignored as "already acknowledged" and the SEND fails with RETRY_EXC_ERR.
#[test]
fn ack_passing_lost_read_response_does_not_lose_later_send() {
    let read = Op::Read {
        qp: 0,
        from: Side::A,
        len: Len::Bytes(1),
        local_off: 0,
        remote_off: 0,
        after_write: false,
        signaled: true,
    };
    let fetch_add = Op::FetchAdd {
        qp: 0,
        from: Side::A,
        word: Word::Private(0),
        add: 1,
        signaled: true,
    };
    // RDMA_READ_RESPONSE_ONLY = 0x10, ATOMIC_ACKNOWLEDGE = 0x12.
    for (first, response_opcode) in [(read, 0x10u8), (fetch_add, 0x12)] {
        let case = Case {
            ops: vec![
                first,
                Op::Send {
                    qp: 0,
                    from: Side::A,
                    len: Len::Bytes(0),
                    local_off: 0,
                    remote_off: 0,
                    slack: 0,
                    extra: SendExtra::None,
                    inline: false,
                    signaled: true,
                },
            ],
            ..Case::default()
        };
        // Drop the first response of that opcode from B to A.
        let o = run_case_hook(&case, false, |pair| {
            let b = pair.node(Side::B);
            let mut dropped = false;
            pair.world
                .borrow_mut()
                .link_mut(b)
                .unwrap()
                .set_drop_filter(move |f, _| {
                    let hit = !dropped && f.get(BTH_OPCODE_AT) == Some(&response_opcode);
                    dropped |= hit;
                    hit
                });
        })
        .unwrap();
        assert_ok(&case, &o);
    }
}

/// abi.md: "a SEND longer than the receive buffer (that receive completes LOC_LEN_ERR)", and
/// every work request completes exactly once. A two-packet SEND (pmtu + 1 bytes) into a
/// receive buffer of pmtu bytes: the FIRST packet fits, the LAST does not. The receive must
/// complete once, with LOC_LEN_ERR. The model completes it a second time with WR_FLUSH_ERR
/// when the QP enters ERR, because the receive is still recorded as the message in
/// progress. (The same path double-completes a receive that fails LOC_PROT_ERR or a failed
/// invalidation on a later packet of a multi-packet SEND.)
#[test]
fn too_small_receive_completes_once() {
    let case = Case {
        inject: Some((
            0,
            Inject::RecvTooSmall {
                len: Len::Mtu { k: 1, d: 1 },
                short: 0,
            },
        )),
        ..Case::default()
    };
    let o = run_case(&case).unwrap();
    assert_ok(&case, &o);
}

/// abi.md, requester reliability: "on a sequence-error NAK ... the requester retransmits from
/// the first unacknowledged PSN", and "a READ is reissued from its first missing response".
/// A READ (PSN p) whose only response is lost, then a 4-packet WRITE (p+1..p+4) whose
/// packet p+2 is lost: the responder NAKs sequence error p+2, which acknowledges p+1 and so
/// reveals the lost READ response. The first request retransmitted must be the READ (p).
/// The model rewinds to the READ (one transport retry) and then, for the NAK itself, to p+2
/// (a second retry), so the READ is skipped; when NAKs keep coming (a long WRITE on a lossy
/// link) every NAK costs two retries and the READ fails with RETRY_EXC_ERR, see
/// `seq_naks_after_lost_read_response_exhaust_retries`.
#[test]
fn seq_nak_after_lost_read_response_reissues_the_read() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let case = Case {
        pmtu: 256,
        ops: vec![
            Op::Read {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(1),
                local_off: 0,
                remote_off: 0,
                after_write: false,
                signaled: true,
            },
            Op::Write {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(1024),
                local_off: 0,
                remote_off: 0,
                imm: None,
                inline: false,
                signaled: true,
            },
        ],
        ..Case::default()
    };
    let sent: Rc<RefCell<Vec<(u8, u32)>>> = Rc::default();
    let log = sent.clone();
    let o = run_case_hook(&case, false, |pair| {
        let (a, b) = (pair.node(Side::A), pair.node(Side::B));
        let mut w = pair.world.borrow_mut();
        let mut middle_dropped = false;
        w.link_mut(a).unwrap().set_drop_filter(move |f, _| {
            let op = f[BTH_OPCODE_AT];
            let psn = u32::from_be_bytes([
                0,
                f[BTH_OPCODE_AT + 9],
                f[BTH_OPCODE_AT + 10],
                f[BTH_OPCODE_AT + 11],
            ]);
            log.borrow_mut().push((op, psn));
            // The first RDMA_WRITE_MIDDLE (0x07).
            let hit = !middle_dropped && op == 0x07;
            middle_dropped |= hit;
            hit
        });
        let mut response_dropped = false;
        w.link_mut(b).unwrap().set_drop_filter(move |f, _| {
            let hit = !response_dropped && f[BTH_OPCODE_AT] == 0x10;
            response_dropped |= hit;
            hit
        });
    })
    .unwrap();
    assert_ok(&case, &o);
    let sent = sent.borrow();
    let read_psn = sent[0].1;
    let mut seen = std::collections::BTreeSet::new();
    let first_again = sent.iter().find(|(_, psn)| !seen.insert(*psn));
    assert_eq!(
        first_again.map(|x| x.1),
        Some(read_psn),
        "requests A sent (opcode, PSN): {sent:x?}"
    );
}

/// The consequence of the bug above on a lossy link (found by `faults_recovered`, shrunk):
/// the READ fails with RETRY_EXC_ERR after 5 sequence NAKs and no ACK timeout.
#[test]
fn seq_naks_after_lost_read_response_exhaust_retries() {
    let case = Case {
        seed: 655538945,
        pmtu: 2048,
        psn_base: 0xfffff5,
        conn: Conn {
            max_rd_atomic: 1,
            ..Conn::default()
        },
        faults: [
            LinkFaults {
                loss: 7,
                ..LinkFaults::default()
            },
            LinkFaults {
                loss: 42,
                reorder: 26,
                corrupt: 11,
                ..LinkFaults::default()
            },
        ],
        ops: vec![
            Op::CmpSwap {
                qp: 0,
                from: Side::B,
                word: 1,
                hit: false,
                swap: 0xd2ca4ac84aa8a5a2,
                signaled: true,
            },
            Op::Read {
                qp: 0,
                from: Side::B,
                len: Len::Bytes(1),
                local_off: 24,
                remote_off: 31,
                after_write: true,
                signaled: true,
            },
            Op::Send {
                qp: 0,
                from: Side::A,
                len: Len::Mtu { k: 3, d: 0 },
                local_off: 1523,
                remote_off: 3,
                slack: 69,
                extra: SendExtra::Imm(0x1ba53741),
                inline: true,
                signaled: true,
            },
            Op::Write {
                qp: 0,
                from: Side::B,
                len: Len::Bytes(69337),
                local_off: 0,
                remote_off: 44,
                imm: None,
                inline: false,
                signaled: true,
            },
        ],
        ..Case::default()
    };
    let o = run_case(&case).unwrap();
    assert_ok(&case, &o);
}

/// "No DMA outside registered memory" (found by `faults_recovered`, shrunk; deterministic
/// for this seed). B sends a 3-packet SEND and a 0-byte SEND on QP 0 while a long WRITE on
/// QP 1 keeps the shared TX pipeline full; the link B->A reorders a little. A's NAK (PSN
/// sequence error for the SEND's last packet) rewinds QP 0's transmit cursor to that packet
/// (cur_pkt = 2), but the pipeline has no room to rebuild it yet; then the delayed original
/// arrives, A ACKs it, and `retire` pops the SEND and decrements `cur_op` without resetting
/// `cur_pkt`. The cursor now names "packet 2" of the 0-byte SEND: `len - off` underflows and
/// the device DMA-reads 1024 bytes at IOVA 0x800 (an SGE-less WQE has IOVA 0). The IOMMU
/// refuses it here and the SEND fails with LOC_PROT_ERR; with an SGE the read would land
/// past the SGE inside mapped memory and send wrong bytes with a wrong PSN.
#[test]
fn retiring_the_op_under_the_tx_cursor_resets_the_packet_index() {
    let case = Case {
        seed: 2680507823,
        pmtu: 1024,
        conn: Conn {
            max_rd_atomic: 1,
            ..Conn::default()
        },
        faults: [
            LinkFaults::default(),
            LinkFaults {
                reorder: 7,
                ..LinkFaults::default()
            },
        ],
        ops: vec![
            Op::Send {
                qp: 0,
                from: Side::B,
                len: Len::Bytes(2751),
                local_off: 1684,
                remote_off: 13,
                slack: 9,
                extra: SendExtra::None,
                inline: false,
                signaled: true,
            },
            Op::Send {
                qp: 0,
                from: Side::B,
                len: Len::Bytes(0),
                local_off: 0,
                remote_off: 0,
                slack: 0,
                extra: SendExtra::None,
                inline: false,
                signaled: true,
            },
            Op::Write {
                qp: 1,
                from: Side::B,
                len: Len::Bytes(90633),
                local_off: 394,
                remote_off: 27,
                imm: None,
                inline: false,
                signaled: false,
            },
            Op::Write {
                qp: 0,
                from: Side::A,
                len: Len::Bytes(1),
                local_off: 2689,
                remote_off: 272,
                imm: Some(0xc15e3b99),
                inline: false,
                signaled: true,
            },
        ],
        ..Case::default()
    };
    let o = run_case(&case).unwrap();
    assert_ok(&case, &o);
}
