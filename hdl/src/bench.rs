//! Test-bench helpers shared by the blocks' benches: a cycle driver over RustHDL's
//! simulator, frame streams cut into 512-bit beats, and idle/backpressure patterns.
//!
//! A bench cycle goes: set the block's inputs (`.next`), [`Bench::settle`], read the outputs
//! (a handshake happens where `valid && ready` now), then [`Bench::tick`] for the rising
//! and falling clock edge. Patterns are seeded and deterministic: a failure reproduces from
//! the seed it prints.

use crate::prelude::*;

use rocenic_proto::wire::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, EtherType, EthernetAddress, EthernetRepr,
    ExtHeaders, IpProtocol, Ipv4Address, Ipv4Repr, Opcode, RethRepr, RoceRepr, Syndrome,
    DEFAULT_PKEY,
};

use crate::common::icrc::{beat_from_bytes, BEAT_BYTES, DATA_BITS};

/// Drives one block, cycle by cycle, with RustHDL's settle-until-stable simulator.
pub struct Bench<T: Block> {
    /// The block under test.
    pub uut: T,
    clock: fn(&mut T) -> &mut Signal<In, Clock>,
    cycle: u64,
}

impl<T: Block> Bench<T> {
    /// Connects the block, runs RustHDL's structural checks and settles it with the clock
    /// low. `clock` picks the block's clock input.
    pub fn new(mut uut: T, clock: fn(&mut T) -> &mut Signal<In, Clock>) -> Bench<T> {
        uut.connect_all();
        check_all(&uut).expect("RustHDL structural check");
        let mut bench = Bench {
            uut,
            clock,
            cycle: 0,
        };
        bench.settle();
        bench
    }

    /// Propagates input changes through the combinational logic.
    pub fn settle(&mut self) {
        assert!(
            simulate(&mut self.uut, 100),
            "logic did not settle at cycle {}",
            self.cycle
        );
    }

    /// One clock cycle: rising edge (registers load), then falling edge.
    pub fn tick(&mut self) {
        for level in [true, false] {
            (self.clock)(&mut self.uut).next = Clock { clk: level };
            self.settle();
        }
        self.cycle += 1;
    }

    /// Cycles ticked so far.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
}

/// A small seeded generator (xorshift64*) for patterns; no dependencies, stable streams.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn percent(&mut self, percent: u32) -> bool {
        self.below(100) < u64::from(percent)
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// How often a source offers data (`valid`) and a sink accepts it (`ready`), in percent.
/// 100/100 is a stream at full rate; lower values insert idle cycles and backpressure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub valid_pct: u32,
    pub ready_pct: u32,
}

impl Pattern {
    /// Full rate, a slow source, a slow sink, both slow, and a nearly stalled sink.
    pub const SWEEP: [Pattern; 5] = [
        Pattern {
            valid_pct: 100,
            ready_pct: 100,
        },
        Pattern {
            valid_pct: 40,
            ready_pct: 100,
        },
        Pattern {
            valid_pct: 100,
            ready_pct: 50,
        },
        Pattern {
            valid_pct: 70,
            ready_pct: 70,
        },
        Pattern {
            valid_pct: 100,
            ready_pct: 10,
        },
    ];
}

/// One beat of a frame stream, in bytes (lane `i` is `data[i]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Beat {
    pub data: [u8; BEAT_BYTES],
    /// Bit `i` set when lane `i` holds a frame byte.
    pub keep: u64,
    pub last: bool,
}

impl Beat {
    pub fn tdata(&self) -> Bits<DATA_BITS> {
        beat_from_bytes(&self.data)
    }

    pub fn tkeep(&self) -> Bits<BEAT_BYTES> {
        self.keep.into()
    }
}

/// Cuts a frame into beats. Lanes past the end of the frame in the last beat hold `filler`
/// bytes (random in benches: a block must not look at them).
pub fn frame_beats(frame: &[u8], mut filler: impl FnMut() -> u8) -> Vec<Beat> {
    assert!(!frame.is_empty(), "a frame has at least one byte");
    let count = frame.len().div_ceil(BEAT_BYTES);
    frame
        .chunks(BEAT_BYTES)
        .enumerate()
        .map(|(i, chunk)| {
            let mut data = [0u8; BEAT_BYTES];
            for (lane, byte) in data.iter_mut().enumerate() {
                *byte = chunk.get(lane).copied().unwrap_or_else(&mut filler);
            }
            let keep = if chunk.len() == BEAT_BYTES {
                u64::MAX
            } else {
                (1u64 << chunk.len()) - 1
            };
            Beat {
                data,
                keep,
                last: i + 1 == count,
            }
        })
        .collect()
}

/// A random RoCE v2 frame of `opcode` with `payload_len` bytes of payload (0 for opcodes
/// without payload), built by the reference encoder.
pub fn random_roce_frame(rng: &mut Rng, opcode: Opcode, payload_len: usize) -> Vec<u8> {
    let mut addr = |n: usize| rng.bytes(n);
    let eth = EthernetRepr {
        src_addr: EthernetAddress(addr(6).try_into().expect("6")),
        dst_addr: EthernetAddress(addr(6).try_into().expect("6")),
        ethertype: EtherType::Ipv4,
    };
    let ip = Ipv4Repr {
        src_addr: Ipv4Address(rng.bytes(4).try_into().expect("4")),
        dst_addr: Ipv4Address(rng.bytes(4).try_into().expect("4")),
        protocol: IpProtocol::Udp,
        dscp: rng.byte() & 0x3F,
        ecn: rng.byte() & 3,
        ident: rng.next_u64() as u16,
        dont_frag: rng.percent(50),
        ttl: rng.byte(),
    };
    let bth = BthRepr {
        opcode,
        solicited: rng.percent(50),
        migreq: rng.percent(50),
        pkey: if rng.percent(80) {
            DEFAULT_PKEY
        } else {
            rng.next_u64() as u16
        },
        fecn: rng.percent(50),
        becn: rng.percent(50),
        dest_qp: rng.below(1 << 24) as u32,
        ack_req: rng.percent(50),
        psn: (rng.below(1 << 24) as u32).into(),
    };
    let ext = ExtHeaders {
        reth: opcode.has_reth().then(|| RethRepr {
            va: rng.next_u64(),
            rkey: rng.next_u64() as u32,
            dma_len: rng.next_u64() as u32,
        }),
        atomic_eth: opcode.has_atomic_eth().then(|| AtomicEthRepr {
            va: rng.next_u64(),
            rkey: rng.next_u64() as u32,
            swap_add: rng.next_u64(),
            compare: rng.next_u64(),
        }),
        immdt: opcode.has_immdt().then(|| rng.next_u64() as u32),
        ieth: opcode.has_ieth().then(|| rng.next_u64() as u32),
        aeth: opcode.has_aeth().then(|| AethRepr {
            syndrome: Syndrome::Ack {
                credits: rng.byte() & 0x1F,
            },
            msn: rng.below(1 << 24) as u32,
        }),
        atomic_ack_eth: opcode.has_atomic_ack_eth().then(|| AtomicAckEthRepr {
            orig_remote_data: rng.next_u64(),
        }),
        deth: None,
    };
    let repr = RoceRepr {
        eth,
        ip,
        udp_src_port: rng.next_u64() as u16,
        bth,
        ext,
    };
    let payload_len = if opcode.has_payload() { payload_len } else { 0 };
    let payload = rng.bytes(payload_len);
    let mut frame = Vec::new();
    repr.emit(&payload, &mut frame).expect("emit");
    frame
}

/// A payload length: mostly small, sometimes up to a 4096 PMTU and past it.
pub fn random_payload_len(rng: &mut Rng) -> usize {
    match rng.below(4) {
        0 => rng.below(64) as usize,
        1 => rng.below(300) as usize,
        2 => rng.below(4200) as usize,
        _ => 4096 + rng.below(200) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_cover_the_frame_and_mark_the_tail() {
        let frame: Vec<u8> = (0..130).map(|i| i as u8).collect();
        let beats = frame_beats(&frame, || 0xEE);
        assert_eq!(beats.len(), 3);
        assert_eq!(beats[0].keep, u64::MAX);
        assert!(!beats[1].last);
        assert_eq!(beats[2].keep, 0b11);
        assert!(beats[2].last);
        assert_eq!(&beats[2].data[..3], &[128, 129, 0xEE]);
        let exact = frame_beats(&frame[..64], || 0);
        assert_eq!(exact.len(), 1);
        assert_eq!(exact[0].keep, u64::MAX);
        assert!(exact[0].last);
    }

    #[test]
    fn beat_bits_put_byte_zero_in_the_low_lane() {
        let mut data = [0u8; BEAT_BYTES];
        data[0] = 0xA5;
        data[63] = 0x81;
        let b = Beat {
            data,
            keep: u64::MAX,
            last: true,
        }
        .tdata();
        assert_eq!(b.get_bits::<8>(0), bits::<8>(0xA5));
        assert_eq!(b.get_bits::<8>(504), bits::<8>(0x81));
    }
}
