//! `MtuShift`: a path MTU code (`abi::verbs::Mtu`, 1 = 256 .. 5 = 4096) as the shift and
//! the mask of its payload size (`2^shift` bytes, `mask = 2^shift - 1`), for dividing a
//! length into packets. A code out of 1..=5 reads as 256 (a QP's stored code is always
//! valid: MODIFY_QP refuses others). Combinational; its outputs depend on `mtu` only.

use crate::prelude::*;
use rocenic_proto::abi::verbs::Mtu;

/// The decoder; see the [module docs](self).
#[derive(LogicBlock)]
pub struct MtuShift {
    pub mtu: Signal<In, Bits<3>>,
    /// log2 of the payload bytes of a packet.
    pub shift: Signal<Out, Bits<5>>,
    /// The payload bytes of a packet, minus 1.
    pub mask: Signal<Out, Bits<32>>,
    k_512: Constant<Bits<3>>,
    k_1024: Constant<Bits<3>>,
    k_2048: Constant<Bits<3>>,
    k_4096: Constant<Bits<3>>,
    sh_256: Constant<Bits<5>>,
    sh_512: Constant<Bits<5>>,
    sh_1024: Constant<Bits<5>>,
    sh_2048: Constant<Bits<5>>,
    sh_4096: Constant<Bits<5>>,
    m_256: Constant<Bits<32>>,
    m_512: Constant<Bits<32>>,
    m_1024: Constant<Bits<32>>,
    m_2048: Constant<Bits<32>>,
    m_4096: Constant<Bits<32>>,
}

impl Default for MtuShift {
    fn default() -> Self {
        let code = |m: Mtu| Constant::new((m as u64).to_bits());
        let shift = |m: Mtu| Constant::new(u64::from(m.bytes().trailing_zeros()).to_bits());
        let mask = |m: Mtu| Constant::new(u64::from(m.bytes() - 1).to_bits());
        MtuShift {
            mtu: Default::default(),
            shift: Default::default(),
            mask: Default::default(),
            k_512: code(Mtu::Mtu512),
            k_1024: code(Mtu::Mtu1024),
            k_2048: code(Mtu::Mtu2048),
            k_4096: code(Mtu::Mtu4096),
            sh_256: shift(Mtu::Mtu256),
            sh_512: shift(Mtu::Mtu512),
            sh_1024: shift(Mtu::Mtu1024),
            sh_2048: shift(Mtu::Mtu2048),
            sh_4096: shift(Mtu::Mtu4096),
            m_256: mask(Mtu::Mtu256),
            m_512: mask(Mtu::Mtu512),
            m_1024: mask(Mtu::Mtu1024),
            m_2048: mask(Mtu::Mtu2048),
            m_4096: mask(Mtu::Mtu4096),
        }
    }
}

impl Logic for MtuShift {
    #[hdl_gen]
    fn update(&mut self) {
        self.shift.next = self.sh_256.val();
        self.mask.next = self.m_256.val();
        if self.mtu.val() == self.k_512.val() {
            self.shift.next = self.sh_512.val();
            self.mask.next = self.m_512.val();
        }
        if self.mtu.val() == self.k_1024.val() {
            self.shift.next = self.sh_1024.val();
            self.mask.next = self.m_1024.val();
        }
        if self.mtu.val() == self.k_2048.val() {
            self.shift.next = self.sh_2048.val();
            self.mask.next = self.m_2048.val();
        }
        if self.mtu.val() == self.k_4096.val() {
            self.shift.next = self.sh_4096.val();
            self.mask.next = self.m_4096.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code: 2^shift is proto's packet size and mask 2^shift - 1; the codes no MTU
    /// has read as 256.
    #[test]
    fn every_code_gives_protos_packet_size() {
        let mut uut = MtuShift::default();
        uut.connect_all();
        for code in 0..8u64 {
            uut.mtu.next = code.to_bits();
            assert!(simulate(&mut uut, 10));
            let bytes = Mtu::from_code(code as u32).unwrap_or(Mtu::Mtu256).bytes();
            let shift = uut.shift.val().index();
            assert_eq!(1u32 << shift, bytes, "code {code}");
            assert_eq!(uut.mask.val().index() as u32, bytes - 1, "code {code}");
        }
    }
}
