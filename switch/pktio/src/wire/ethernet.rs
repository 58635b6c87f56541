//! Ethernet II frames (IEEE 802.3) and 802.1Q / 802.1ad tags.

use super::{get16, need, put16, Result};

pub const HEADER_LEN: usize = 14;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_QINQ: u16 = 0x88a8;

pub type MacAddr = [u8; 6];

mod field {
    use std::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: usize = 12;
}

/// An Ethernet frame: destination, source, EtherType, payload.
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// A view of `buffer`, checked to hold the 14-byte header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), HEADER_LEN)?;
        Ok(EthernetFrame { buffer })
    }

    pub fn dst_addr(&self) -> MacAddr {
        self.buffer.as_ref()[field::DST]
            .try_into()
            .expect("6 bytes")
    }

    pub fn src_addr(&self) -> MacAddr {
        self.buffer.as_ref()[field::SRC]
            .try_into()
            .expect("6 bytes")
    }

    pub fn ethertype(&self) -> u16 {
        get16(self.buffer.as_ref(), field::ETHERTYPE)
    }

    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// The EtherType behind any 802.1Q / 802.1ad tags, and where the payload after them
    /// starts (from the frame's start).
    pub fn inner_ethertype(&self) -> Result<(u16, usize)> {
        let (mut ethertype, mut at) = (self.ethertype(), HEADER_LEN);
        while ethertype == ETHERTYPE_VLAN || ethertype == ETHERTYPE_QINQ {
            let tag = VlanTag::new_checked(&self.buffer.as_ref()[at..])?;
            ethertype = tag.ethertype();
            at += VlanTag::<&[u8]>::LEN;
        }
        Ok((ethertype, at))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    pub fn set_dst_addr(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&mac);
    }

    pub fn set_src_addr(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&mac);
    }

    pub fn set_ethertype(&mut self, ethertype: u16) {
        put16(self.buffer.as_mut(), field::ETHERTYPE, ethertype);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

/// Whether `mac` is a group (multicast or broadcast) address.
pub fn is_group(mac: &MacAddr) -> bool {
    mac[0] & 1 != 0
}

/// The 4 bytes after an 802.1Q / 802.1ad EtherType: tag control, then the next EtherType.
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    pub const LEN: usize = 4;

    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), Self::LEN)?;
        Ok(VlanTag { buffer })
    }

    /// Tag control information: priority, drop eligible, VLAN id.
    pub fn tci(&self) -> u16 {
        get16(self.buffer.as_ref(), 0)
    }

    pub fn ethertype(&self) -> u16 {
        get16(self.buffer.as_ref(), 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tagged_frames_and_refuses_short_ones() {
        let mut f = [0u8; 22];
        f[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        f[14..16].copy_from_slice(&7u16.to_be_bytes());
        f[16..18].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let frame = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(frame.inner_ethertype(), Ok((ETHERTYPE_IPV4, 18)));
        assert!(EthernetFrame::new_checked(&f[..13]).is_err());
        assert!(EthernetFrame::new_checked(&f[..15])
            .unwrap()
            .inner_ethertype()
            .is_err());
    }
}
