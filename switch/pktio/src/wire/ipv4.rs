//! IPv4 headers (RFC 791).

use super::checksum::csum16;
use super::{get16, get32, need, put16, Error, Result};

pub const MIN_HEADER_LEN: usize = 20;
pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

mod field {
    pub const VER_IHL: usize = 0;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
}

/// An IPv4 header and what follows it.
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// A view of `buffer`, checked to be version 4 and to hold the whole header (its IHL).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        need(b, MIN_HEADER_LEN)?;
        let packet = Ipv4Packet { buffer };
        if packet.version() != 4 || packet.header_len() < MIN_HEADER_LEN {
            return Err(Error::Malformed("bad IPv4 header"));
        }
        need(packet.buffer.as_ref(), packet.header_len())?;
        Ok(packet)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn version(&self) -> u8 {
        self.b()[field::VER_IHL] >> 4
    }

    /// The header's length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        (self.b()[field::VER_IHL] & 0x0f) as usize * 4
    }

    pub fn total_len(&self) -> u16 {
        get16(self.b(), field::TOTAL_LEN)
    }

    pub fn ident(&self) -> u16 {
        get16(self.b(), field::IDENT)
    }

    /// Whether this is a fragment (more fragments, or a fragment offset).
    pub fn is_fragment(&self) -> bool {
        get16(self.b(), field::FLAGS_FRAG) & 0x3fff != 0
    }

    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }

    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }

    pub fn checksum(&self) -> u16 {
        get16(self.b(), field::CHECKSUM)
    }

    pub fn src_addr(&self) -> [u8; 4] {
        get32(self.b(), field::SRC).to_be_bytes()
    }

    pub fn dst_addr(&self) -> [u8; 4] {
        get32(self.b(), field::DST).to_be_bytes()
    }

    /// The source and destination addresses as they sit in the header (8 bytes), for a
    /// pseudo-header sum.
    pub fn addresses(&self) -> &[u8] {
        &self.b()[field::SRC..field::DST + 4]
    }

    /// Whether the header checksum is right.
    pub fn verify_checksum(&self) -> bool {
        csum16(&self.b()[..self.header_len()]) == 0
    }

    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_total_len(&mut self, len: u16) {
        put16(self.b_mut(), field::TOTAL_LEN, len);
    }

    pub fn set_ident(&mut self, ident: u16) {
        put16(self.b_mut(), field::IDENT, ident);
    }

    pub fn set_ttl(&mut self, ttl: u8) {
        self.b_mut()[field::TTL] = ttl;
    }

    pub fn set_checksum(&mut self, sum: u16) {
        put16(self.b_mut(), field::CHECKSUM, sum);
    }

    /// Computes the header checksum afresh and writes it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let len = self.header_len();
        let sum = csum16(&self.b()[..len]);
        self.set_checksum(sum);
    }

    /// Lowers the TTL by one and updates the checksum incrementally (RFC 1624, eqn. 3),
    /// as a router does.
    pub fn decrement_ttl(&mut self) {
        let old = get16(self.b(), field::TTL);
        self.set_ttl(self.ttl().wrapping_sub(1));
        let new = get16(self.b(), field::TTL);
        let sum = !self.checksum() as u32 + !old as u32 + new as u32;
        let sum = (sum & 0xffff) + (sum >> 16);
        let sum = (sum & 0xffff) + (sum >> 16);
        self.set_checksum(!(sum as u16));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> [u8; 20] {
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        Ipv4Packet::new_checked(&mut h[..]).unwrap().fill_checksum();
        h
    }

    #[test]
    fn checks_version_and_length() {
        let h = header();
        assert!(Ipv4Packet::new_checked(&h[..19]).is_err());
        let mut v6 = h;
        v6[0] = 0x65;
        assert!(Ipv4Packet::new_checked(&v6[..]).is_err());
        let mut long = h;
        long[0] = 0x46; // 24-byte header in 20 bytes
        assert!(Ipv4Packet::new_checked(&long[..]).is_err());
    }

    #[test]
    fn ttl_decrement_keeps_the_checksum_right() {
        let mut h = header();
        assert_eq!(Ipv4Packet::new_checked(&h[..]).unwrap().checksum(), 0xb861);
        for _ in 0..64 {
            let mut p = Ipv4Packet::new_checked(&mut h[..]).unwrap();
            p.decrement_ttl();
            assert!(p.verify_checksum());
        }
        assert_eq!(Ipv4Packet::new_checked(&h[..]).unwrap().ttl(), 0);
    }
}
