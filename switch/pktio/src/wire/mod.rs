//! Wire formats read and written through checked views, after smoltcp's `wire/`: a view
//! wraps a byte buffer (`T: AsRef<[u8]>`, and `AsMut<[u8]>` to write), `new_checked`
//! checks once that the buffer holds the whole header (and what the header says about its
//! own length), and the accessors then read fields by name, never by raw offset.

pub mod checksum;
pub mod ethernet;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;
pub mod vnet;

pub use ethernet::{EthernetFrame, VlanTag};
pub use ipv4::Ipv4Packet;
pub use ipv6::Ipv6Packet;
pub use tcp::TcpHeader;
pub use udp::UdpHeader;

/// Why a buffer is not the header a view expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Shorter than the header (or than the length the header gives itself).
    Truncated,
    /// A field that cannot be: a wrong version, a header length below the minimum.
    Malformed(&'static str),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Truncated => write!(f, "headers cut short"),
            Error::Malformed(why) => write!(f, "{why}"),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A big-endian u16 at `at` of `b` (the view checked the length).
fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Checks that `b` holds at least `len` bytes.
fn need(b: &[u8], len: usize) -> Result<()> {
    if b.len() < len {
        Err(Error::Truncated)
    } else {
        Ok(())
    }
}
