//! struct virtio_net_hdr: the offload metadata a packet socket with PACKET_VNET_HDR puts
//! in front of every packet (and takes in front of every packet sent).

/// flags, gso_type (u8 each), hdr_len, gso_size, csum_start, csum_offset (u16, in the
/// host's byte order: little-endian here, as the kernel writes it for a packet socket).
pub const VNET_HDR_LEN: usize = 10;
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
pub const GSO_UDP_L4: u8 = 5;
/// Set with TCP GSO types when the flow uses ECN; segmentation is the same.
pub const GSO_ECN: u8 = 0x80;

/// The virtio-net header the kernel wrote in front of a received packet.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(raw: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let word = |i: usize| u16::from_le_bytes([raw[i], raw[i + 1]]);
        VnetHdr {
            flags: raw[0],
            gso_type: raw[1],
            hdr_len: word(2),
            gso_size: word(4),
            csum_start: word(6),
            csum_offset: word(8),
        }
    }

    pub fn emit(&self) -> [u8; VNET_HDR_LEN] {
        let mut raw = [0u8; VNET_HDR_LEN];
        raw[0] = self.flags;
        raw[1] = self.gso_type;
        for (i, w) in [
            self.hdr_len,
            self.gso_size,
            self.csum_start,
            self.csum_offset,
        ]
        .into_iter()
        .enumerate()
        {
            raw[2 + 2 * i..4 + 2 * i].copy_from_slice(&w.to_le_bytes());
        }
        raw
    }
}
