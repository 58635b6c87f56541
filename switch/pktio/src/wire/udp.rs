//! UDP headers (RFC 768).

use super::{get16, need, put16, Result};

pub const HEADER_LEN: usize = 8;
/// Where the checksum is, from the header's start.
pub const CHECKSUM_AT: usize = 6;

/// A UDP header and what follows it.
pub struct UdpHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpHeader<T> {
    /// A view of `buffer`, checked to hold the 8-byte header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), HEADER_LEN)?;
        Ok(UdpHeader { buffer })
    }

    pub fn len(&self) -> u16 {
        get16(self.buffer.as_ref(), 4)
    }

    pub fn is_empty(&self) -> bool {
        self.len() as usize <= HEADER_LEN
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpHeader<T> {
    pub fn set_len(&mut self, len: u16) {
        put16(self.buffer.as_mut(), 4, len);
    }
}
