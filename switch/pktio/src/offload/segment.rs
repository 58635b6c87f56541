//! From what a host's stack handed over to what a wire would carry.
//!
//! Hosts keep their checksum and segmentation offloads on (far cheaper for their stacks),
//! so the receive ring hands over packets with a virtio-net header (PACKET_VNET_HDR):
//! a checksum still to be finished (`NEEDS_CSUM`) or a TCP/UDP super-packet to be cut
//! into `gso_size` segments. The pipeline must see every packet exactly as a wire would
//! carry it, so this module finishes checksums and segments here, as a NIC's TSO would:
//! each segment gets its own IP length, IPv4 id and header checksum, TCP sequence number
//! and flags (FIN/PSH on the last segment only, CWR on the first only) and a complete
//! L4 checksum. IPv6 hop-by-hop, routing and destination options headers are copied into
//! every segment, as the kernel's own segmentation does (ipv6_gso_segment); the checksum's
//! pseudo-header then names the final destination of a routing header (RFC 8200, 8.1).
//! Metadata that does not describe the packet is refused, never trusted.

use crate::wire::checksum::{csum16, fold, sum_bytes};
use crate::wire::ethernet::{EthernetFrame, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use crate::wire::ipv4::{PROTO_TCP, PROTO_UDP};
use crate::wire::ipv6::{self, ExtensionHeader};
use crate::wire::tcp::{self, TcpHeader};
use crate::wire::udp::{self, UdpHeader};
use crate::wire::vnet::{
    VnetHdr, F_NEEDS_CSUM, GSO_ECN, GSO_NONE, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4,
};
use crate::wire::{self, Ipv4Packet, Ipv6Packet};

/// More extension headers than this in one packet are refused (the kernel's GSO stops too).
const MAX_IPV6_EXTENSIONS: usize = 8;

/// Why a packet's offload metadata could not be turned into wire packets.
#[derive(Debug, PartialEq)]
pub enum Malformed {
    /// The checksum position lies outside the packet.
    ChecksumOutside,
    /// A GSO type this switch does not segment (UFO, tunnels, unknown).
    UnsupportedGso(u8),
    /// GSO with a segment size of 0.
    ZeroGsoSize,
    /// hdr_len longer than the packet.
    HeaderLength,
    /// The headers do not match the GSO type (wrong protocol, IPv4 or IPv6 fragments,
    /// IPv6 extension headers that cannot be repeated per segment, truncated headers, no
    /// payload).
    Headers(&'static str),
}

/// The wire packets made from one received packet. Buffers are kept between packets so
/// the data path allocates nothing once warm.
#[derive(Default)]
pub struct Segments {
    bufs: Vec<Vec<u8>>,
    count: usize,
}

/// Where a GSO packet's headers are.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Layout {
    pub l3: usize,
    /// Start of the L4 header (behind IPv6 extension headers, if any).
    pub l4: usize,
    /// Where the destination address of the L4 checksum's pseudo-header starts: the IP
    /// header's, or a routing header's final destination.
    pub pseudo_dst: usize,
    /// Start of the payload (end of the L4 header).
    pub payload: usize,
    pub ipv4: bool,
    pub tcp: bool,
}

impl Segments {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn get(&self, i: usize) -> &[u8] {
        &self.bufs[i]
    }

    /// Total length of the packets: the bytes a wire would carry.
    pub fn wire_bytes(&self) -> u64 {
        self.bufs[..self.count].iter().map(|b| b.len() as u64).sum()
    }

    /// Replaces the contents with the wire packets `packet` stands for under `vnet`.
    /// On error the set is empty.
    pub fn fill(&mut self, vnet: &VnetHdr, packet: &[u8]) -> Result<(), Malformed> {
        self.count = 0;
        let result = if vnet.gso_type == GSO_NONE {
            self.single(vnet, packet)
        } else {
            self.segment(vnet, packet)
        };
        if result.is_err() {
            self.count = 0;
        }
        result
    }

    fn next_buf(&mut self) -> &mut Vec<u8> {
        if self.count == self.bufs.len() {
            self.bufs.push(Vec::with_capacity(2048));
        }
        self.count += 1;
        let buf = &mut self.bufs[self.count - 1];
        buf.clear();
        buf
    }

    /// A packet that is already wire-sized: at most its checksum is still to be finished.
    fn single(&mut self, vnet: &VnetHdr, packet: &[u8]) -> Result<(), Malformed> {
        let buf = self.next_buf();
        buf.extend_from_slice(packet);
        if vnet.flags & F_NEEDS_CSUM != 0 {
            finish_checksum(buf, vnet.csum_start as usize, vnet.csum_offset as usize)?;
        }
        Ok(())
    }

    fn segment(&mut self, vnet: &VnetHdr, packet: &[u8]) -> Result<(), Malformed> {
        let kind = vnet.gso_type & !GSO_ECN;
        if !matches!(kind, GSO_TCPV4 | GSO_TCPV6 | GSO_UDP_L4) {
            return Err(Malformed::UnsupportedGso(vnet.gso_type));
        }
        if vnet.gso_size == 0 {
            return Err(Malformed::ZeroGsoSize);
        }
        if vnet.hdr_len as usize > packet.len() {
            return Err(Malformed::HeaderLength);
        }
        let at = layout(packet, kind)?;
        if vnet.flags & F_NEEDS_CSUM != 0 && vnet.csum_start as usize != at.l4 {
            return Err(Malformed::Headers("csum_start is not the L4 header"));
        }
        let payload_len = packet.len() - at.payload;
        if payload_len == 0 {
            return Err(Malformed::Headers("no payload to segment"));
        }
        let size = vnet.gso_size as usize;
        let segments = payload_len.div_ceil(size);
        for i in 0..segments {
            let chunk =
                &packet[at.payload + i * size..(at.payload + (i + 1) * size).min(packet.len())];
            let buf = self.next_buf();
            buf.extend_from_slice(&packet[..at.payload]);
            buf.extend_from_slice(chunk);
            fix_segment(buf, &at, i, segments, size);
        }
        Ok(())
    }
}

/// Finds the L3 and L4 headers of a GSO packet of type `kind` and checks they fit it.
pub fn layout(packet: &[u8], kind: u8) -> Result<Layout, Malformed> {
    let (ethertype, l3) = EthernetFrame::new_checked(packet)?.inner_ethertype()?;
    let (ipv4, l4, proto, pseudo_dst) = match ethertype {
        ETHERTYPE_IPV4 => {
            let ip = Ipv4Packet::new_checked(&packet[l3..])?;
            if ip.is_fragment() {
                return Err(Malformed::Headers("IPv4 fragment"));
            }
            (true, l3 + ip.header_len(), ip.protocol(), l3 + 16)
        }
        ETHERTYPE_IPV6 => ipv6_upper_layer(packet, l3)?,
        _ => return Err(Malformed::Headers("not IPv4 or IPv6")),
    };
    let tcp = kind != GSO_UDP_L4;
    let fits = match kind {
        GSO_TCPV4 => ipv4 && proto == PROTO_TCP,
        GSO_TCPV6 => !ipv4 && proto == PROTO_TCP,
        _ => proto == PROTO_UDP,
    };
    if !fits {
        return Err(Malformed::Headers(
            "the L4 protocol does not match the GSO type",
        ));
    }
    let l4_len = if tcp {
        TcpHeader::new_checked(&packet[l4..])?.header_len()
    } else {
        UdpHeader::new_checked(&packet[l4..])?;
        udp::HEADER_LEN
    };
    Ok(Layout {
        l3,
        l4,
        pseudo_dst,
        payload: l4 + l4_len,
        ipv4,
        tcp,
    })
}

/// Walks the IPv6 extension headers of the packet whose IPv6 header is at `l3`: where
/// the upper-layer header starts, its protocol, and where the pseudo-header's destination
/// address is. Headers other than hop-by-hop, routing and destination options (fragment,
/// AH, ESP) end the walk: the upper layer is then not TCP/UDP, and the packet is refused.
fn ipv6_upper_layer(p: &[u8], l3: usize) -> Result<(bool, usize, u8, usize), Malformed> {
    let ip = Ipv6Packet::new_checked(&p[l3..])?;
    let (mut next, mut at, mut dst) = (ip.next_header(), l3 + ipv6::HEADER_LEN, l3 + ipv6::DST_AT);
    for _ in 0..MAX_IPV6_EXTENSIONS {
        if !matches!(next, ipv6::HOP_BY_HOP | ipv6::ROUTING | ipv6::DEST_OPTIONS) {
            return Ok((false, at, next, dst));
        }
        let ext = ExtensionHeader::new_checked(&p[at..])?;
        if next == ipv6::ROUTING {
            if let Some(offset) = ipv6::final_destination(ext.bytes())? {
                dst = at + offset;
            }
        }
        next = ext.next_header();
        at += ext.len();
    }
    Err(Malformed::Headers("too many IPv6 extension headers"))
}

impl From<wire::Error> for Malformed {
    fn from(e: wire::Error) -> Malformed {
        match e {
            wire::Error::Truncated => Malformed::Headers("headers cut short"),
            wire::Error::Malformed(why) => Malformed::Headers(why),
        }
    }
}

/// Writes big-endian `v` at `at` of `b` (a checksum field a view located).
pub(crate) fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// The unfolded pseudo-header sum of an L4 segment of `l4_len` bytes of protocol `proto`
/// in `p`, whose headers are at `at`.
pub fn pseudo_sum(p: &[u8], at: &Layout, proto: u8, l4_len: usize) -> u64 {
    let (src, addr_len) = if at.ipv4 {
        (at.l3 + 12, 4)
    } else {
        (at.l3 + 8, 16)
    };
    let dst = at.pseudo_dst;
    sum_bytes(&p[src..src + addr_len])
        + sum_bytes(&p[dst..dst + addr_len])
        + proto as u64
        + l4_len as u64
}

/// Makes segment `index` of `count` (headers copied from the super-packet) what a wire
/// carries: lengths, IPv4 id and checksum, TCP sequence and flags, L4 checksum.
fn fix_segment(seg: &mut [u8], at: &Layout, index: usize, count: usize, size: usize) {
    let l4_len = seg.len() - at.l4;
    let l3_len = (seg.len() - at.l3) as u16;
    // `layout` checked these headers in the super-packet the segment copies.
    if at.ipv4 {
        let mut ip = Ipv4Packet::new_checked(&mut seg[at.l3..]).expect("checked by layout");
        ip.set_total_len(l3_len);
        ip.set_ident(ip.ident().wrapping_add(index as u16));
        ip.fill_checksum();
    } else {
        let mut ip = Ipv6Packet::new_checked(&mut seg[at.l3..]).expect("checked by layout");
        ip.set_payload_len(l3_len - ipv6::HEADER_LEN as u16);
    }
    let csum_at = if at.tcp {
        let mut th = TcpHeader::new_checked(&mut seg[at.l4..]).expect("checked by layout");
        th.set_seq(th.seq().wrapping_add((index * size) as u32));
        let mut flags = th.flags();
        if index + 1 < count {
            flags &= !(tcp::FIN | tcp::PSH);
        }
        if index > 0 {
            flags &= !tcp::CWR;
        }
        th.set_flags(flags);
        at.l4 + tcp::CHECKSUM_AT
    } else {
        let mut uh = UdpHeader::new_checked(&mut seg[at.l4..]).expect("checked by layout");
        uh.set_len(l4_len as u16);
        at.l4 + udp::CHECKSUM_AT
    };
    put16(seg, csum_at, 0);
    let proto = if at.tcp { PROTO_TCP } else { PROTO_UDP };
    let pseudo = pseudo_sum(seg, at, proto, l4_len);
    let sum = !fold(pseudo + sum_bytes(&seg[at.l4..]));
    // UDP sends a computed 0 as 0xffff (0 means "no checksum"); for TCP both are equal.
    put16(seg, csum_at, if sum == 0 { 0xffff } else { sum });
}

/// Completes a partial checksum as the NIC would: the field at `start + offset` holds the
/// pseudo-header sum; the checksum covers everything from `start` on.
fn finish_checksum(packet: &mut [u8], start: usize, offset: usize) -> Result<(), Malformed> {
    let field = start + offset;
    if field + 2 > packet.len() {
        return Err(Malformed::ChecksumOutside);
    }
    let sum = csum16(&packet[start..]);
    put16(packet, field, if sum == 0 { 0xffff } else { sum });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv6::{
        DEST_OPTIONS as IPV6_DEST_OPTIONS, HOP_BY_HOP as IPV6_HOP_BY_HOP, ROUTING as IPV6_ROUTING,
    };
    use crate::wire::tcp::{CWR as TCP_CWR, FIN as TCP_FIN, PSH as TCP_PSH};
    use crate::wire::vnet::VNET_HDR_LEN;

    fn be16(b: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
    }

    const PAYLOAD: usize = 4000;
    const MSS: u16 = 1448;

    /// Ethernet + IPv4 (id 100) + TCP (seq 1000, flags `flags`) + PAYLOAD bytes, as a
    /// host's stack hands it to a TSO device: total length of the whole, checksums as
    /// the NIC would find them (IP header complete, TCP field holding the pseudo sum).
    fn tcp4_super(flags: u8) -> Vec<u8> {
        let mut p = vec![0u8; 14 + 20 + 32 + PAYLOAD];
        p[12..14].copy_from_slice(&[0x08, 0x00]);
        p[14] = 0x45;
        put16(&mut p, 16, (20 + 32 + PAYLOAD) as u16);
        put16(&mut p, 18, 100);
        p[20] = 0x40; // DF
        p[22] = 64;
        p[23] = 6;
        p[26..30].copy_from_slice(&[10, 0, 0, 1]);
        p[30..34].copy_from_slice(&[10, 0, 0, 2]);
        put16(&mut p, 34, 5001);
        put16(&mut p, 36, 40000);
        p[38..42].copy_from_slice(&1000u32.to_be_bytes());
        p[46] = 8 << 4;
        p[47] = flags;
        for (i, b) in p[66..].iter_mut().enumerate() {
            *b = (i * 7 % 251) as u8;
        }
        p
    }

    fn tso(gso_type: u8) -> VnetHdr {
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: 66,
            gso_size: MSS,
            csum_start: 34,
            csum_offset: 16,
        }
    }

    fn tcp4_checksum_ok(seg: &[u8]) -> bool {
        let l4_len = seg.len() - 34;
        fold(sum_bytes(&seg[26..34]) + 6 + l4_len as u64 + sum_bytes(&seg[34..])) == 0xffff
    }

    #[test]
    fn tcpv4_super_packet_becomes_mss_segments_with_valid_headers() {
        let sup = tcp4_super(TCP_PSH | TCP_FIN | TCP_CWR | 0x10);
        let mut segs = Segments::default();
        segs.fill(&tso(GSO_TCPV4), &sup).unwrap();
        assert_eq!(segs.len(), 3);
        let mut payload = Vec::new();
        for i in 0..3 {
            let s = segs.get(i);
            let data_len = if i < 2 {
                MSS as usize
            } else {
                PAYLOAD - 2 * MSS as usize
            };
            assert_eq!(s.len(), 66 + data_len);
            assert_eq!(be16(s, 16).unwrap() as usize, s.len() - 14);
            assert_eq!(be16(s, 18).unwrap(), 100 + i as u16);
            assert_eq!(fold(sum_bytes(&s[14..34])), 0xffff, "IPv4 header checksum");
            let seq = u32::from_be_bytes(s[38..42].try_into().unwrap());
            assert_eq!(seq, 1000 + (i * MSS as usize) as u32);
            let flags = s[47];
            assert_eq!(flags & TCP_CWR != 0, i == 0);
            assert_eq!(flags & (TCP_FIN | TCP_PSH) != 0, i == 2);
            assert_eq!(flags & 0x10, 0x10, "ACK kept everywhere");
            assert!(tcp4_checksum_ok(s));
            payload.extend_from_slice(&s[66..]);
        }
        assert_eq!(payload, sup[66..]);
        assert_eq!(segs.wire_bytes(), (3 * 66 + PAYLOAD) as u64);
    }

    #[test]
    fn payload_within_one_segment_stays_one_packet() {
        let sup = tcp4_super(TCP_PSH);
        let mut segs = Segments::default();
        let vnet = VnetHdr {
            gso_size: 9000,
            ..tso(GSO_TCPV4 | GSO_ECN)
        };
        segs.fill(&vnet, &sup).unwrap();
        assert_eq!(segs.len(), 1);
        assert_eq!(segs.get(0)[47], TCP_PSH);
        assert!(tcp4_checksum_ok(segs.get(0)));
    }

    #[test]
    fn partial_checksum_is_finished_like_a_nic() {
        let mut p = tcp4_super(0x10);
        p.truncate(66 + 100);
        put16(&mut p, 16, (20 + 32 + 100) as u16);
        // Seed the field with the pseudo-header sum, as the stack does.
        let seed = fold(sum_bytes(&p[26..34]) + 6 + (32 + 100) as u64);
        put16(&mut p, 50, seed);
        let mut segs = Segments::default();
        let vnet = VnetHdr {
            gso_type: GSO_NONE,
            gso_size: 0,
            ..tso(GSO_NONE)
        };
        segs.fill(&vnet, &p).unwrap();
        assert_eq!(segs.len(), 1);
        assert!(tcp4_checksum_ok(segs.get(0)));
        assert_eq!(segs.get(0)[..50], p[..50]);
    }

    #[test]
    fn without_metadata_the_packet_passes_unchanged() {
        let p = tcp4_super(0);
        let mut segs = Segments::default();
        segs.fill(&VnetHdr::default(), &p).unwrap();
        assert_eq!((segs.len(), segs.get(0)), (1, &p[..]));
    }

    #[test]
    fn tcpv6_and_udp_l4_segment_with_lengths_and_checksums() {
        // IPv6 + UDP, 3000 bytes payload in 1000-byte segments.
        let mut p = vec![0u8; 14 + 40 + 8 + 3000];
        p[12..14].copy_from_slice(&[0x86, 0xdd]);
        p[14] = 0x60;
        p[20] = 17;
        p[22..38].copy_from_slice(&[0xfd; 16]);
        p[38..54].copy_from_slice(&[0xfe; 16]);
        for (i, b) in p[62..].iter_mut().enumerate() {
            *b = i as u8;
        }
        let vnet = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_UDP_L4,
            hdr_len: 62,
            gso_size: 1000,
            csum_start: 54,
            csum_offset: 6,
        };
        let mut segs = Segments::default();
        segs.fill(&vnet, &p).unwrap();
        assert_eq!(segs.len(), 3);
        for i in 0..3 {
            let s = segs.get(i);
            assert_eq!(be16(s, 18).unwrap(), 1008, "IPv6 payload length");
            assert_eq!(be16(s, 58).unwrap(), 1008, "UDP length");
            let sum = sum_bytes(&s[22..54]) + 17 + 1008 + sum_bytes(&s[54..]);
            assert_eq!(fold(sum), 0xffff);
        }
    }

    /// Ethernet + IPv6 (destination fd..fe) + `extensions` (as given, the first one's
    /// type in `first`) + TCP (seq 1000, ACK|PSH) + PAYLOAD bytes, as a TSO super-packet.
    fn tcp6_super(first: u8, extensions: &[u8]) -> (VnetHdr, Vec<u8>) {
        let l4 = 14 + 40 + extensions.len();
        let mut p = vec![0u8; l4 + 20 + PAYLOAD];
        p[12..14].copy_from_slice(&[0x86, 0xdd]);
        p[14] = 0x60;
        put16(&mut p, 18, (extensions.len() + 20 + PAYLOAD) as u16);
        p[20] = first;
        p[21] = 64;
        p[22..38].copy_from_slice(&[0xfd; 16]);
        p[38..54].copy_from_slice(&[0xfe; 16]);
        p[54..l4].copy_from_slice(extensions);
        p[l4 + 4..l4 + 8].copy_from_slice(&1000u32.to_be_bytes());
        p[l4 + 12] = 5 << 4;
        p[l4 + 13] = TCP_PSH | 0x10;
        for (i, b) in p[l4 + 20..].iter_mut().enumerate() {
            *b = (i * 11 % 253) as u8;
        }
        let vnet = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV6,
            hdr_len: (l4 + 20) as u16,
            gso_size: MSS,
            csum_start: l4 as u16,
            csum_offset: 16,
        };
        (vnet, p)
    }

    /// Hop-by-hop (PadN), routing type 2 with one segment left (final destination
    /// 0xaa..), destination options (PadN), then TCP.
    fn three_extensions() -> Vec<u8> {
        let mut ext = vec![IPV6_ROUTING, 0, 1, 4, 0, 0, 0, 0];
        ext.extend_from_slice(&[IPV6_DEST_OPTIONS, 2, 2, 1, 0, 0, 0, 0]);
        ext.extend_from_slice(&[0xaa; 16]);
        ext.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        ext
    }

    #[test]
    fn tcpv6_extension_headers_are_repeated_in_every_segment() {
        let ext = three_extensions();
        let (vnet, sup) = tcp6_super(IPV6_HOP_BY_HOP, &ext);
        let l4 = 54 + ext.len();
        let mut segs = Segments::default();
        segs.fill(&vnet, &sup).unwrap();
        assert_eq!(segs.len(), 3);
        let mut payload = Vec::new();
        for i in 0..3 {
            let s = segs.get(i);
            // Headers copied, but for the payload length.
            assert_eq!((&s[..18], &s[20..l4 + 4]), (&sup[..18], &sup[20..l4 + 4]));
            assert_eq!(
                be16(s, 18).unwrap() as usize,
                s.len() - 54,
                "IPv6 payload length"
            );
            let seq = u32::from_be_bytes(s[l4 + 4..l4 + 8].try_into().unwrap());
            assert_eq!(seq, 1000 + (i * MSS as usize) as u32);
            assert_eq!(s[l4 + 13] & TCP_PSH != 0, i == 2);
            // The pseudo-header names the routing header's final destination.
            let pseudo = sum_bytes(&s[22..38]) + sum_bytes(&[0xaa; 16]) + 6;
            assert_eq!(
                fold(pseudo + (s.len() - l4) as u64 + sum_bytes(&s[l4..])),
                0xffff
            );
            payload.extend_from_slice(&s[l4 + 20..]);
        }
        assert_eq!(payload, sup[l4 + 20..]);
    }

    #[test]
    fn a_routing_header_without_segments_left_keeps_the_header_destination() {
        let mut ext = three_extensions();
        ext[11] = 0; // the routing header's segments left
        let (vnet, sup) = tcp6_super(IPV6_HOP_BY_HOP, &ext);
        let l4 = 54 + ext.len();
        let mut segs = Segments::default();
        segs.fill(&vnet, &sup).unwrap();
        let s = segs.get(0);
        let pseudo = sum_bytes(&s[22..54]) + 6 + (s.len() - l4) as u64;
        assert_eq!(fold(pseudo + sum_bytes(&s[l4..])), 0xffff);
    }

    #[test]
    fn ipv6_headers_that_cannot_be_repeated_are_refused() {
        let mut segs = Segments::default();
        // A fragment header (44) in front of TCP.
        let (vnet, sup) = tcp6_super(44, &[6, 0, 0, 1, 0, 0, 0, 7]);
        assert!(matches!(segs.fill(&vnet, &sup), Err(Malformed::Headers(_))));
        // A routing header of a type whose final destination is not known (RPL, 3).
        let mut ext = three_extensions();
        ext[10] = 3; // the routing header's type
        let (vnet, sup) = tcp6_super(IPV6_HOP_BY_HOP, &ext);
        assert!(matches!(segs.fill(&vnet, &sup), Err(Malformed::Headers(_))));
        // Destination options pointing at each other forever.
        let looped = [IPV6_DEST_OPTIONS, 0, 1, 4, 0, 0, 0, 0].repeat(9);
        let (vnet, sup) = tcp6_super(IPV6_DEST_OPTIONS, &looped);
        assert!(matches!(segs.fill(&vnet, &sup), Err(Malformed::Headers(_))));
        // An extension header longer than the packet.
        let (vnet, sup) = tcp6_super(IPV6_HOP_BY_HOP, &three_extensions());
        assert!(segs.fill(&vnet, &sup[..60]).is_err());
        assert_eq!(segs.len(), 0);
    }

    #[test]
    fn malformed_metadata_is_refused_and_leaves_nothing() {
        let sup = tcp4_super(0);
        let mut segs = Segments::default();
        let cases = [
            (
                VnetHdr {
                    gso_size: 0,
                    ..tso(GSO_TCPV4)
                },
                Malformed::ZeroGsoSize,
            ),
            (
                VnetHdr {
                    hdr_len: 60000,
                    ..tso(GSO_TCPV4)
                },
                Malformed::HeaderLength,
            ),
            (tso(3), Malformed::UnsupportedGso(3)),
            (tso(0x42), Malformed::UnsupportedGso(0x42)),
        ];
        for (vnet, expected) in cases {
            assert_eq!(segs.fill(&vnet, &sup), Err(expected));
            assert_eq!(segs.len(), 0);
        }
        // TCP GSO types on a packet that is not that TCP.
        assert!(matches!(
            segs.fill(&tso(GSO_TCPV6), &sup),
            Err(Malformed::Headers(_))
        ));
        assert!(matches!(
            segs.fill(&tso(GSO_UDP_L4), &sup),
            Err(Malformed::Headers(_))
        ));
        let wrong_start = VnetHdr {
            csum_start: 20,
            ..tso(GSO_TCPV4)
        };
        assert!(matches!(
            segs.fill(&wrong_start, &sup),
            Err(Malformed::Headers(_))
        ));
        // Headers only, or cut inside them.
        assert!(segs.fill(&tso(GSO_TCPV4), &sup[..66]).is_err());
        for cut in [0, 10, 20, 40, 50] {
            assert!(
                segs.fill(&tso(GSO_TCPV4), &sup[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let outside = VnetHdr {
            csum_start: 4000,
            ..tso(GSO_NONE)
        };
        assert_eq!(
            segs.fill(&outside, &sup[..100]),
            Err(Malformed::ChecksumOutside)
        );
        let far = VnetHdr {
            csum_start: u16::MAX,
            csum_offset: u16::MAX,
            ..tso(GSO_NONE)
        };
        assert_eq!(segs.fill(&far, &sup), Err(Malformed::ChecksumOutside));
    }

    #[test]
    fn random_metadata_never_panics() {
        let sup = tcp4_super(0);
        let mut segs = Segments::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..5_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let raw: [u8; VNET_HDR_LEN] = state.to_le_bytes()[..].repeat(2)[..VNET_HDR_LEN]
                .try_into()
                .unwrap();
            let mut vnet = VnetHdr::parse(&raw);
            vnet.gso_type =
                [GSO_NONE, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4, 0x81, 3][vnet.gso_type as usize % 6];
            vnet.gso_size %= 2000; // keep the work per case small
            let cut = (state >> 40) as usize % (sup.len() + 1);
            let _ = segs.fill(&vnet, &sup[..cut]);
        }
    }
}
