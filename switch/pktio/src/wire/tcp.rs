//! TCP headers (RFC 9293).

use super::{get32, need, put32, Error, Result};

pub const MIN_HEADER_LEN: usize = 20;
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const URG: u8 = 0x20;
pub const CWR: u8 = 0x80;
/// Where the checksum is, from the header's start.
pub const CHECKSUM_AT: usize = 16;

mod field {
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
}

/// A TCP header and what follows it.
pub struct TcpHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpHeader<T> {
    /// A view of `buffer`, checked to hold the whole header (its data offset, ≥ 20).
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), MIN_HEADER_LEN)?;
        let tcp = TcpHeader { buffer };
        if tcp.header_len() < MIN_HEADER_LEN {
            return Err(Error::Malformed("TCP data offset below 20"));
        }
        need(tcp.buffer.as_ref(), tcp.header_len())?;
        Ok(tcp)
    }

    pub fn seq(&self) -> u32 {
        get32(self.buffer.as_ref(), field::SEQ)
    }

    pub fn ack(&self) -> u32 {
        get32(self.buffer.as_ref(), field::ACK)
    }

    /// The header's length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        (self.buffer.as_ref()[field::DATA_OFF] >> 4) as usize * 4
    }

    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpHeader<T> {
    pub fn set_seq(&mut self, seq: u32) {
        put32(self.buffer.as_mut(), field::SEQ, seq);
    }

    pub fn set_flags(&mut self, flags: u8) {
        self.buffer.as_mut()[field::FLAGS] = flags;
    }
}
