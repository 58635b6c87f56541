//! Ethernet II frames (IEEE 802.3) and 802.1Q / 802.1ad tags.

use super::{get16, need, put16, Error, Result};

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

    /// The VLAN id: the tag control's low 12 bits.
    pub fn vid(&self) -> u16 {
        self.tci() & VID_MASK
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    pub fn set_tci(&mut self, tci: u16) {
        put16(self.buffer.as_mut(), 0, tci);
    }

    pub fn set_ethertype(&mut self, ethertype: u16) {
        put16(self.buffer.as_mut(), 2, ethertype);
    }
}

/// The VLAN id's bits in a tag's control information.
pub const VID_MASK: u16 = 0x0fff;

/// Makes the frame in `buf` an 802.1Q-tagged one: the tag (control information `tci`, then
/// the frame's own EtherType) goes in after the addresses, the EtherType becomes 0x8100.
pub fn push_vlan(buf: &mut Vec<u8>, tci: u16) -> Result<()> {
    let inner = EthernetFrame::new_checked(&buf[..])?.ethertype();
    // Room for the tag where the EtherType stood; the EtherType moves behind it.
    let at = field::ETHERTYPE;
    buf.splice(at..at, [0; VlanTag::<&[u8]>::LEN]);
    let mut frame = EthernetFrame::new_checked(&mut buf[..])?;
    frame.set_ethertype(ETHERTYPE_VLAN);
    let mut tag = VlanTag::new_checked(frame.payload_mut())?;
    tag.set_tci(tci);
    tag.set_ethertype(inner);
    Ok(())
}

/// Takes the outer 802.1Q tag out of the frame in `buf` (its EtherType becomes the one the
/// tag carried) and gives the tag's control information; Malformed if it has no such tag.
pub fn pop_vlan(buf: &mut Vec<u8>) -> Result<u16> {
    let frame = EthernetFrame::new_checked(&buf[..])?;
    if frame.ethertype() != ETHERTYPE_VLAN {
        return Err(Error::Malformed("no 802.1Q tag"));
    }
    let tci = VlanTag::new_checked(frame.payload())?.tci();
    // The tag's EtherType slides into the frame's EtherType field.
    let at = field::ETHERTYPE;
    buf.drain(at..at + VlanTag::<&[u8]>::LEN);
    Ok(tci)
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

    #[test]
    fn pushes_and_pops_a_tag() {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f[14] = 0x45;
        let untagged = f.clone();
        push_vlan(&mut f, 0x2000 | 100).unwrap();
        assert_eq!(f.len(), 64);
        let frame = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(frame.ethertype(), ETHERTYPE_VLAN);
        assert_eq!(frame.src_addr(), [2, 0, 0, 0, 0, 1]);
        let tag = VlanTag::new_checked(frame.payload()).unwrap();
        assert_eq!((tag.vid(), tag.ethertype()), (100, ETHERTYPE_IPV4));
        assert_eq!(frame.inner_ethertype(), Ok((ETHERTYPE_IPV4, 18)));
        assert_eq!(f[18], 0x45);
        assert_eq!(pop_vlan(&mut f), Ok(0x2000 | 100));
        assert_eq!(f, untagged);
        assert_eq!(pop_vlan(&mut f), Err(Error::Malformed("no 802.1Q tag")));
        assert_eq!(push_vlan(&mut vec![0u8; 13], 1), Err(Error::Truncated));
    }
}
