//! IPv6 headers (RFC 8200), with the extension headers segmentation walks.

use super::{get16, need, put16, Error, Result};

pub const HEADER_LEN: usize = 40;
pub const HOP_BY_HOP: u8 = 0;
pub const ROUTING: u8 = 43;
pub const DEST_OPTIONS: u8 = 60;

mod field {
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
}

/// Where, from the start of an IPv6 header, its source and destination addresses are.
pub const SRC_AT: usize = field::SRC;
pub const DST_AT: usize = field::DST;

/// An IPv6 header and what follows it.
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// A view of `buffer`, checked to be version 6 and to hold the 40-byte header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN || b[0] >> 4 != 6 {
            return Err(Error::Malformed("bad IPv6 header"));
        }
        Ok(Ipv6Packet { buffer })
    }

    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }

    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    pub fn payload_len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::PAYLOAD_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    pub fn set_payload_len(&mut self, len: u16) {
        put16(self.buffer.as_mut(), field::PAYLOAD_LEN, len);
    }
}

/// An IPv6 extension header (hop-by-hop, routing, destination options: RFC 8200, 4):
/// next header, length in 8-byte units beyond the first 8, then its data.
pub struct ExtensionHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ExtensionHeader<T> {
    /// A view of `buffer`, checked to hold the whole header its length field gives.
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), 2)?;
        let ext = ExtensionHeader { buffer };
        need(ext.buffer.as_ref(), ext.len())?;
        Ok(ext)
    }

    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[0]
    }

    /// The header's whole length in bytes.
    pub fn len(&self) -> usize {
        (self.buffer.as_ref()[1] as usize + 1) * 8
    }

    pub fn is_empty(&self) -> bool {
        false // every extension header is at least 8 bytes
    }

    /// The header's bytes, all of them.
    pub fn bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.len()]
    }
}

/// A routing header (RFC 8200, 4.4): where in it the packet's final destination is (RFC
/// 8200, 8.1), or None when no segments are left (the IPv6 header's destination is the
/// final one).
pub fn final_destination(rh: &[u8]) -> Result<Option<usize>> {
    need(rh, 8)?;
    let (kind, segments_left) = (rh[2], rh[3]);
    if segments_left == 0 {
        return Ok(None);
    }
    let addresses = (rh.len() - 8) / 16;
    match kind {
        // Type 0 (deprecated) and 2 (mobility): the last address listed.
        0 | 2 if addresses > 0 => Ok(Some(8 + 16 * (addresses - 1))),
        // Type 4 (segment routing): segment list[0] is the last segment.
        4 if addresses > 0 => Ok(Some(8)),
        _ => Err(Error::Malformed(
            "IPv6 routing header whose final destination is not known",
        )),
    }
}
