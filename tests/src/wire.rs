//! What the harness needs to know about frames: the ACK drop filter, a shadow of the link's
//! fault stream (so a test knows exactly which delivered frames were corrupted, and where),
//! and which bytes of a frame the receiver must protect.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use rocenic_proto::wire::Opcode;
use rocenic_sim::link::FaultInjector;
use rocenic_sim::{FaultConfig, Frame};

use crate::reference::mix;

/// Offset of the BTH opcode in a RoCE v2 frame over IPv4 (Ethernet 14 + IPv4 20 + UDP 8).
pub const BTH_OPCODE_AT: usize = 14 + 20 + 8;
/// Offset of the first byte after the BTH.
pub const EXT_AT: usize = BTH_OPCODE_AT + 12;
/// BTH opcode of an RC ACKNOWLEDGE.
pub const ACK_OPCODE: u8 = 0x11;

/// How far a flipped bit must take the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protect {
    /// Not covered by any check the device must make (MAC addresses, the ICRC-masked UDP
    /// checksum and BTH FECN/BECN/reserved byte): the frame may be accepted, unchanged in
    /// meaning.
    May,
    /// Covered by the IPv4 header checksum or the ICRC: the frame must be dropped.
    Must,
    /// In the payload, pad or the ICRC itself: only the ICRC can catch it, so the drop
    /// must be counted as an ICRC drop.
    OnlyIcrc,
}

/// Where byte `byte` of `frame` lies, for the purpose of [`Protect`].
pub fn protect(frame: &[u8], byte: usize) -> Protect {
    match byte {
        0..=11 => Protect::May,
        // UDP checksum, BTH byte 4 (FECN, BECN, reserved): masked in the ICRC.
        40 | 41 | 46 => Protect::May,
        b if b < EXT_AT => Protect::Must,
        b => {
            let ext = frame
                .get(BTH_OPCODE_AT)
                .map(|&o| Opcode::from(o))
                .filter(|o| o.is_known())
                .map_or(usize::MAX / 2, |o| o.ext_headers_len());
            if b >= EXT_AT + ext {
                Protect::OnlyIcrc
            } else {
                Protect::Must
            }
        }
    }
}

/// Whether a byte may be flipped by a test that requires the frame to be dropped.
pub fn must_protect(byte: usize) -> bool {
    !matches!(byte, 0..=11 | 15 | 22 | 24 | 25 | 40 | 41 | 46)
}

/// A frame the link corrupted and delivered.
#[derive(Clone)]
pub struct Corrupted {
    /// Index of the frame on its link.
    pub index: u64,
    /// The bit flipped (bit `b % 8` of byte `b / 8`).
    pub bit: usize,
    /// How many copies were delivered (2 when also duplicated).
    pub copies: u32,
    /// The frame as sent.
    pub frame: Frame,
}

impl Corrupted {
    pub fn protect(&self) -> Protect {
        protect(&self.frame, self.bit / 8)
    }
}

impl fmt::Debug for Corrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = self
            .frame
            .get(BTH_OPCODE_AT)
            .map(|&o| Opcode::from(o).name())
            .unwrap_or("?");
        write!(
            f,
            "frame #{} ({op}, {} B) bit {} (byte {}) x{} => {:?}",
            self.index,
            self.frame.len(),
            self.bit,
            self.bit / 8,
            self.copies,
            self.protect()
        )
    }
}

/// What a link's filter saw.
#[derive(Default)]
pub struct LinkLog {
    /// Delivered frames with a flipped bit.
    pub corrupted: Vec<Corrupted>,
    /// Every frame sent into the link, when recording.
    pub frames: Vec<Frame>,
    /// ACKs the filter dropped.
    pub acks_dropped: u64,
}

/// Builds the drop filter of a link: drops `ack_drop_permille` of the ACK frames (decided
/// by a hash of the seed and the frame index), and replays the link's own fault stream to
/// log the frames it corrupts and delivers. The link draws the same values for every frame
/// whatever the filter decides, so the shadow injector stays in step with it.
pub fn link_filter(
    faults: &FaultConfig,
    ack_drop_permille: u16,
    seed: u64,
    record_all: bool,
    log: Rc<RefCell<LinkLog>>,
) -> impl FnMut(&[u8], u64) -> bool + 'static {
    let mut shadow = FaultInjector::new(faults.clone());
    move |frame: &[u8], index: u64| {
        let v = shadow.judge(frame);
        let is_ack = frame.get(BTH_OPCODE_AT) == Some(&ACK_OPCODE);
        let drop = is_ack && mix(seed, index) % 1000 < ack_drop_permille as u64;
        let mut log = log.borrow_mut();
        if record_all {
            log.frames.push(frame.to_vec());
        }
        if drop {
            log.acks_dropped += 1;
        } else if v.drop.is_none() {
            if let Some(bit) = v.corrupt_bit {
                log.corrupted.push(Corrupted {
                    index,
                    bit,
                    copies: if v.duplicate { 2 } else { 1 },
                    frame: frame.to_vec(),
                });
            }
        }
        drop
    }
}

/// One line describing a frame: opcode, PSN, AckReq, and the AETH or RETH if any.
pub fn describe_frame(frame: &[u8]) -> String {
    use rocenic_proto::wire::RoceRepr;
    match RoceRepr::parse(frame) {
        Ok((r, payload)) => {
            let mut s = format!(
                "{} qp={:#x} psn={:#x}{}",
                r.bth.opcode.name(),
                r.bth.dest_qp,
                u32::from(r.bth.psn),
                if r.bth.ack_req { " A" } else { "" }
            );
            if let Some(a) = r.ext.aeth {
                s += &format!(" aeth={:?} msn={}", a.syndrome, a.msn);
            }
            if let Some(x) = r.ext.reth {
                s += &format!(" reth(len={})", x.dma_len);
            }
            if !payload.is_empty() {
                s += &format!(" payload={}", payload.len());
            }
            s
        }
        Err(e) => format!("unparsable ({e:?}), {} B", frame.len()),
    }
}
