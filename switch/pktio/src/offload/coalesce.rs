//! From wire packets back to what a host's stack takes whole: transmit segmentation offload.
//!
//! The pipeline sees every wire packet on its own (segment.rs cuts super-packets apart on
//! receive). On transmit, consecutive packets for one port that are in-order segments of
//! one TCP flow are joined again into one super-packet, sent with a virtio-net header
//! (GSO_TCPV4/TCPV6) so the kernel cuts it (or the receiving stack takes it whole, as on a
//! direct veth): one socket buffer, one veth crossing and one TCP receive instead of one
//! per segment. Which packets may be joined follows the kernel's own GRO rules
//! (inet_gro_receive, ipv6_gro_receive, tcp_gro_receive), so re-cutting the super-packet
//! gives back exactly the packets the pipeline produced:
//!
//! - Ethernet without VLAN tags; IPv4 without options and not fragmented, or IPv6 whose
//!   upper layer is TCP, directly or behind hop-by-hop, routing and destination options
//!   headers (the ones segment.rs copies into every segment, as ipv6_gso_segment does;
//!   ipv6_gro_receive joins packets across them too, when they are equal); each packet's
//!   IPv4 header and TCP checksums valid (over the routing header's final destination);
//! - every header byte identical except IP length, IPv4 id (one more per segment), IPv4
//!   header checksum, TCP sequence number (the previous one plus its payload), TCP
//!   checksum and the flags CWR (first segment only), PSH and FIN (last segment only);
//! - payload: the first segment's length is the segment size, later ones are not longer;
//!   a shorter one, or one with PSH or FIN, ends the run; SYN, RST or URG are never joined.
//!
//! Anything else goes out packet by packet, as it came from the pipeline.

use super::segment::{layout, pseudo_sum, put16, Layout};
use crate::wire::checksum::{fold, sum_bytes};
use crate::wire::ethernet::{EthernetFrame, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use crate::wire::ipv4::PROTO_TCP;
use crate::wire::ipv6;
use crate::wire::tcp::{
    CHECKSUM_AT as TCP_CSUM_OFFSET, CWR as TCP_CWR, FIN as TCP_FIN, PSH as TCP_PSH, RST as TCP_RST,
    SYN as TCP_SYN, URG as TCP_URG,
};
use crate::wire::vnet::{VnetHdr, F_NEEDS_CSUM, GSO_ECN, GSO_TCPV4, GSO_TCPV6, VNET_HDR_LEN};
use crate::wire::{Ipv4Packet, Ipv6Packet, TcpHeader};

/// Most segments in one super-packet (keeps the `sendmsg` I/O vector short).
pub const MAX_SEGMENTS: usize = 64;
/// Largest IP packet (IPv4 total length and IPv6 payload length are 16 bits).
const MAX_IP_LEN: usize = 65_535;
/// Flags that may differ between the segments of one super-packet.
const SEGMENT_FLAGS: u8 = TCP_CWR | TCP_PSH | TCP_FIN;

/// Where a TCP segment's headers are, as segment.rs finds them.
type Tcp = Layout;

impl Tcp {
    /// The headers of a TCP packet that may start or join a super-packet: no VLAN tag,
    /// IPv4 without options (IPv6 extension headers as segment.rs walks them), IP length
    /// as captured, some payload; None for anything else (checksums are checked later,
    /// only for packets that are joined).
    fn parse(p: &[u8]) -> Option<Tcp> {
        let kind = match EthernetFrame::new_checked(p).ok()?.ethertype() {
            ETHERTYPE_IPV4 => GSO_TCPV4,
            ETHERTYPE_IPV6 => GSO_TCPV6,
            _ => return None,
        };
        let at = layout(p, kind).ok()?;
        let ip_len = if at.ipv4 {
            Ipv4Packet::new_checked(&p[at.l3..]).ok()?.total_len() as usize
        } else {
            ipv6::HEADER_LEN + Ipv6Packet::new_checked(&p[at.l3..]).ok()?.payload_len() as usize
        };
        let no_options = !at.ipv4 || at.l4 == at.l3 + 20;
        let plain = no_options && ip_len == p.len() - at.l3;
        (plain && at.payload < p.len()).then_some(at)
    }

    /// The TCP header of `p`, a packet `parse` gave this layout (so it is there whole).
    fn tcp<'p>(&self, p: &'p [u8]) -> TcpHeader<&'p [u8]> {
        TcpHeader::new_checked(&p[self.l4..]).expect("checked by parse")
    }

    fn flags(&self, p: &[u8]) -> u8 {
        self.tcp(p).flags()
    }

    fn seq(&self, p: &[u8]) -> u32 {
        self.tcp(p).seq()
    }

    fn ip_id(&self, p: &[u8]) -> u16 {
        Ipv4Packet::new_checked(&p[self.l3..]).map_or(0, |ip| ip.ident())
    }

    /// Byte ranges of the headers that must be equal in every segment: all but the
    /// lengths, IPv4 id, checksums, sequence number and flags (compared apart).
    fn fixed_ranges(&self) -> [(usize, usize); 6] {
        let (l3, l4) = (self.l3, self.l4);
        let ip = if self.ipv4 {
            // Ethernet, version to TOS; fragment field, TTL, protocol; addresses, ports.
            [(0, l3 + 2), (l3 + 6, l3 + 10), (l3 + 12, l4 + 4)]
        } else {
            // Ethernet, version to flow label; next header to addresses, extension
            // headers, ports.
            [(0, l3 + 4), (l3 + 6, l4 + 4), (l4, l4)]
        };
        [
            ip[0],
            ip[1],
            ip[2],
            (l4 + 8, l4 + 13),       // acknowledgement number, data offset
            (l4 + 14, l4 + 16),      // window
            (l4 + 18, self.payload), // urgent pointer, options
        ]
    }

    /// Whether `next` has the same headers as `first` where segments must agree.
    fn same_headers(&self, first: &[u8], next: &[u8]) -> bool {
        let same = |(from, to): (usize, usize)| first[from..to] == next[from..to];
        self.fixed_ranges().into_iter().all(same)
            && (self.flags(first) ^ self.flags(next)) & !SEGMENT_FLAGS == 0
    }

    /// Whether the packet's IPv4 header checksum and TCP checksum are right.
    fn checksums_ok(&self, p: &[u8]) -> bool {
        let ip = Ipv4Packet::new_checked(&p[self.l3..]);
        if self.ipv4 && !ip.is_ok_and(|ip| ip.verify_checksum()) {
            return false;
        }
        let pseudo = pseudo_sum(p, self, PROTO_TCP, p.len() - self.l4);
        fold(pseudo + sum_bytes(&p[self.l4..])) == 0xffff
    }
}

/// How many packets from the start of `packets` leave as one super-packet: those that
/// join the first, or just the first. Packets longer than `max_len` (what the port takes
/// as a frame) never join, so the kernel refuses them as before.
pub fn run_length(packets: &[Vec<u8>], max_len: usize) -> usize {
    let head = &packets[0];
    let Some(at) = Tcp::parse(head) else {
        return 1;
    };
    let mss = head.len() - at.payload;
    let stops_here = TCP_SYN | TCP_RST | TCP_URG | TCP_PSH | TCP_FIN;
    if at.flags(head) & stops_here != 0 || head.len() > max_len {
        return 1;
    }
    let mut ip_len = head.len() - at.l3;
    let mut count = 1;
    while count < packets.len() && count < MAX_SEGMENTS {
        let (prev, next) = (&packets[count - 1], &packets[count]);
        let len = next.len().saturating_sub(at.payload);
        let joins = next.len() <= max_len
            && len > 0
            && len <= mss
            && ip_len + len <= MAX_IP_LEN
            && Tcp::parse(next) == Some(at)
            && at.same_headers(head, next)
            && at.flags(next) & TCP_CWR == 0
            && at.seq(next) == at.seq(prev).wrapping_add((prev.len() - at.payload) as u32)
            && (!at.ipv4 || at.ip_id(next) == at.ip_id(prev).wrapping_add(1))
            && at.checksums_ok(next)
            && (count > 1 || at.checksums_ok(head));
        if !joins {
            break;
        }
        count += 1;
        ip_len += len;
        if len < mss || at.flags(next) & (TCP_PSH | TCP_FIN) != 0 {
            break;
        }
    }
    count
}

/// Builds the headers of super-packets. Keeps its buffer between batches so the data path
/// allocates nothing once warm.
#[derive(Default)]
pub struct Coalescer {
    header: Vec<u8>,
}

impl Coalescer {
    /// The super-packet joining `segments` (at least two packets, as [`run_length`]
    /// counted them): its virtio-net header and packet headers; its payload is every
    /// segment's payload in turn, from `payload_at` on.
    pub fn super_packet(&mut self, segments: &[Vec<u8>]) -> SuperPacket<'_> {
        let (head, last) = (&segments[0], &segments[segments.len() - 1]);
        let at = Tcp::parse(head).expect("a run starts with a TCP segment");
        let payload: usize = segments.iter().map(|p| p.len() - at.payload).sum();
        let h = &mut self.header;
        h.clear();
        h.extend_from_slice(&head[..at.payload]);
        let ip_len = at.payload - at.l3 + payload;
        // `parse` checked these headers in `head`, whose headers `h` copies.
        if at.ipv4 {
            let mut ip = Ipv4Packet::new_checked(&mut h[at.l3..]).expect("checked by parse");
            ip.set_total_len(ip_len as u16);
            ip.fill_checksum();
        } else {
            let mut ip = Ipv6Packet::new_checked(&mut h[at.l3..]).expect("checked by parse");
            ip.set_payload_len((ip_len - ipv6::HEADER_LEN) as u16);
        }
        let mut th = TcpHeader::new_checked(&mut h[at.l4..]).expect("checked by parse");
        th.set_flags(th.flags() | (at.flags(last) & (TCP_PSH | TCP_FIN)));
        // The field holds the pseudo-header sum over the whole TCP length, as a stack
        // hands a TSO packet over; the kernel derives each segment's checksum from it.
        let pseudo = fold(pseudo_sum(h, &at, PROTO_TCP, ip_len - (at.l4 - at.l3)));
        put16(h, at.l4 + TCP_CSUM_OFFSET, pseudo);
        let mut gso_type = if at.ipv4 { GSO_TCPV4 } else { GSO_TCPV6 };
        if at.flags(head) & TCP_CWR != 0 {
            gso_type |= GSO_ECN;
        }
        let mss = head.len() - at.payload;
        let vnet = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: at.payload as u16,
            gso_size: mss as u16,
            csum_start: at.l4 as u16,
            csum_offset: TCP_CSUM_OFFSET as u16,
        };
        SuperPacket {
            vnet: vnet.emit(),
            header: &self.header,
            payload_at: at.payload,
        }
    }
}

/// A super-packet to send: virtio-net header, packet headers, then the payloads of its
/// segments.
pub struct SuperPacket<'a> {
    pub vnet: [u8; VNET_HDR_LEN],
    pub header: &'a [u8],
    /// Where the payload starts in each segment.
    pub payload_at: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload::segment::Segments;
    use crate::wire::checksum::csum16;

    const MSS: usize = 1448;
    /// Ethernet + IPv4 + TCP with a timestamp option (12 bytes).
    const HDRS4: usize = 14 + 20 + 32;

    /// A TSO super-packet as a host's stack hands it over (IPv4 id 100, seq 1000,
    /// `flags`, `payload` bytes) and its virtio-net header.
    fn tso4(flags: u8, payload: usize) -> (VnetHdr, Vec<u8>) {
        let mut p = vec![0u8; HDRS4 + payload];
        p[..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        p[12..14].copy_from_slice(&[0x08, 0x00]);
        p[14] = 0x45;
        put16(&mut p, 16, (HDRS4 - 14 + payload) as u16);
        put16(&mut p, 18, 100);
        p[20] = 0x40;
        p[22] = 64;
        p[23] = 6;
        p[26..34].copy_from_slice(&[10, 0, 1, 1, 10, 0, 2, 2]);
        put16(&mut p, 34, 40000);
        put16(&mut p, 36, 5001);
        p[38..42].copy_from_slice(&1000u32.to_be_bytes());
        p[42..46].copy_from_slice(&77u32.to_be_bytes());
        p[46] = 8 << 4;
        p[47] = flags;
        put16(&mut p, 48, 502);
        p[54..58].copy_from_slice(&[1, 1, 8, 10]);
        p[58..66].copy_from_slice(&[9, 8, 7, 6, 5, 4, 3, 2]);
        for (i, b) in p[HDRS4..].iter_mut().enumerate() {
            *b = (i * 13 % 251) as u8;
        }
        let vnet = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: HDRS4 as u16,
            gso_size: MSS as u16,
            csum_start: 34,
            csum_offset: 16,
        };
        (vnet, p)
    }

    /// The same as IPv6 (hop limit 64, flow label 0x12345), in segments of 1428 bytes
    /// (the IPv6 header is 20 bytes longer).
    fn tso6(payload: usize) -> (VnetHdr, Vec<u8>) {
        let (_, v4) = tso4(0x10, payload);
        let mut p = v4[..14].to_vec();
        p[12..14].copy_from_slice(&[0x86, 0xdd]);
        p.extend_from_slice(&[0x60, 0x01, 0x23, 0x45, 0, 0, 6, 64]);
        put16(&mut p, 18, (32 + payload) as u16);
        p.extend_from_slice(&[0xfd; 16]);
        p.extend_from_slice(&[0xfe; 16]);
        p.extend_from_slice(&v4[34..]);
        let vnet = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV6,
            hdr_len: (14 + 40 + 32) as u16,
            gso_size: MSS as u16 - 20,
            csum_start: 54,
            csum_offset: 16,
        };
        (vnet, p)
    }

    /// `tso6` with a hop-by-hop header (a PadN option), a type 2 routing header with one
    /// segment left (so the checksum's pseudo-header names its address) and a destination
    /// options header between the IPv6 and TCP headers, in segments of `gso_size`.
    fn tso6_extensions(payload: usize, gso_size: u16) -> (VnetHdr, Vec<u8>) {
        let (vnet, plain) = tso6(payload);
        let (hop_by_hop, destination) = ([43, 0, 1, 4, 0, 0, 0, 0], [6, 0, 1, 4, 0, 0, 0, 0]);
        let mut routing = vec![60, 2, 2, 1, 0, 0, 0, 0];
        routing.extend_from_slice(&[0xfc; 16]);
        let mut p = plain[..54].to_vec();
        p[20] = 0; // next header: hop-by-hop
        p.extend_from_slice(&hop_by_hop);
        p.extend_from_slice(&routing);
        p.extend_from_slice(&destination);
        p.extend_from_slice(&plain[54..]);
        let extensions = 8 + 24 + 8;
        put16(&mut p, 18, (extensions + 32 + payload) as u16);
        let l4 = 54 + extensions;
        let vnet = VnetHdr {
            hdr_len: (l4 + 32) as u16,
            gso_size,
            csum_start: l4 as u16,
            ..vnet
        };
        (vnet, p)
    }

    /// What a NIC's TSO (segment.rs) cuts the super-packet into.
    fn wire(vnet: &VnetHdr, packet: &[u8]) -> Vec<Vec<u8>> {
        let mut segs = Segments::default();
        segs.fill(vnet, packet).unwrap();
        (0..segs.len()).map(|i| segs.get(i).to_vec()).collect()
    }

    /// The super-packet of `run` as sent: its virtio-net header and bytes.
    fn joined(segments: &[Vec<u8>]) -> (VnetHdr, Vec<u8>) {
        let mut c = Coalescer::default();
        let sp = c.super_packet(segments);
        let mut bytes = sp.header.to_vec();
        for p in segments {
            bytes.extend_from_slice(&p[sp.payload_at..]);
        }
        (VnetHdr::parse(&sp.vnet), bytes)
    }

    fn runs(packets: &[Vec<u8>]) -> Vec<usize> {
        let mut counts = Vec::new();
        let mut i = 0;
        while i < packets.len() {
            let count = run_length(&packets[i..], 1514);
            counts.push(count);
            i += count;
        }
        counts
    }

    /// Recomputes the IPv4 header and TCP checksums of a segment after a test edited it.
    fn fix_checksums(p: &mut [u8]) {
        put16(p, 24, 0);
        let sum = csum16(&p[14..34]);
        put16(p, 24, sum);
        put16(p, 50, 0);
        let pseudo = sum_bytes(&p[26..34]) + 6 + (p.len() - 34) as u64;
        put16(p, 50, !fold(pseudo + sum_bytes(&p[34..])));
    }

    #[test]
    fn segments_of_a_tso_packet_join_back_into_it() {
        let (vnet, sup) = tso4(0x10 | TCP_CWR | TCP_PSH, 5 * MSS + 100);
        let segs = wire(&vnet, &sup);
        assert_eq!(runs(&segs), [6]);
        let (back_vnet, back) = joined(&segs[..6]);
        assert_eq!(back_vnet.gso_type, GSO_TCPV4 | GSO_ECN);
        assert_eq!(
            (back_vnet.hdr_len, back_vnet.gso_size, back_vnet.csum_start),
            (HDRS4 as u16, MSS as u16, 34)
        );
        // Same headers as the stack's (flags of first and last merged), IPv4 header
        // checksum valid, TCP field holding the pseudo-header sum of the whole.
        assert_eq!(back[..24], sup[..24]);
        assert_eq!(back[26..50], sup[26..50]);
        assert_eq!(back[52..], sup[52..]);
        assert_eq!(fold(sum_bytes(&back[14..34])), 0xffff);
        let pseudo = fold(sum_bytes(&back[26..34]) + 6 + (back.len() - 34) as u64);
        assert_eq!(u16::from_be_bytes([back[50], back[51]]), pseudo);
        // Cut again, it gives back exactly the wire packets the switch had.
        assert_eq!(wire(&back_vnet, &back), segs);
    }

    #[test]
    fn ipv6_segments_join_back_too() {
        let (vnet, sup) = tso6(3 * (MSS - 20));
        let segs = wire(&vnet, &sup);
        assert_eq!(runs(&segs), [3]);
        let (back_vnet, back) = joined(&segs[..3]);
        assert_eq!(back_vnet.gso_type, GSO_TCPV6);
        assert_eq!(wire(&back_vnet, &back), segs);
    }

    #[test]
    fn ipv6_segments_with_extension_headers_join_back_too() {
        let (vnet, sup) = tso6_extensions(4 * 1000 + 10, 1000);
        let segs = wire(&vnet, &sup);
        assert_eq!(segs.len(), 5);
        assert_eq!(runs(&segs), [5]);
        let (back_vnet, back) = joined(&segs);
        assert_eq!(back_vnet.gso_type, GSO_TCPV6);
        assert_eq!(
            (back_vnet.csum_start, back_vnet.gso_size),
            (vnet.csum_start, 1000)
        );
        assert_eq!(wire(&back_vnet, &back), segs);
        // Extension headers that differ end the run, as in the kernel's GRO.
        let mut changed = segs.clone();
        changed[3][54 + 8 + 8] = 0xfb; // the routing header's address
        assert_eq!(runs(&changed), [3, 1, 1]);
    }

    #[test]
    fn consecutive_super_packets_join_until_a_push() {
        let (vnet, first) = tso4(0x10, 2 * MSS);
        let mut segs = wire(&vnet, &first);
        let (_, mut second) = tso4(0x10 | TCP_PSH, 2 * MSS);
        second[38..42].copy_from_slice(&(1000 + 2 * MSS as u32).to_be_bytes());
        put16(&mut second, 18, 102);
        segs.extend(wire(&vnet, &second));
        segs.extend(wire(&vnet, &first));
        assert_eq!(runs(&segs), [4, 2]);
    }

    #[test]
    fn a_segment_that_differs_beyond_segmentation_is_sent_on_its_own() {
        let (vnet, sup) = tso4(0x10, 4 * MSS);
        let segs = wire(&vnet, &sup);
        type Edit = fn(&mut Vec<u8>);
        let edits: [(&str, Edit); 9] = [
            ("TTL", |p| p[22] = 63),
            ("TOS", |p| p[15] = 2),
            ("window", |p| p[48] = 9),
            ("ack", |p| p[45] = 1),
            ("timestamp option", |p| p[65] = 1),
            ("destination MAC", |p| p[0] = 4),
            ("sequence gap", |p| p[41] = p[41].wrapping_add(1)),
            ("IPv4 id not the next", |p| p[19] = p[19].wrapping_add(1)),
            ("longer than the first", |p| {
                p.push(0);
                let ip_len = (p.len() - 14) as u16;
                put16(p, 16, ip_len);
            }),
        ];
        for (what, edit) in edits {
            let mut changed = segs.clone();
            edit(&mut changed[2]);
            fix_checksums(&mut changed[2]);
            assert_eq!(runs(&changed), [2, 1, 1], "{what}");
        }
        let mut bad_sum = segs.clone();
        bad_sum[2][70] ^= 1;
        assert_eq!(runs(&bad_sum), [2, 1, 1], "TCP checksum wrong");
        let mut bad_ip = segs.clone();
        bad_ip[0][24] ^= 1;
        assert_eq!(runs(&bad_ip), [1, 3], "IPv4 header checksum wrong");
    }

    #[test]
    fn control_packets_and_other_traffic_are_never_joined() {
        let (vnet, sup) = tso4(0x10, 2 * MSS);
        let segs = wire(&vnet, &sup);
        let mut syn = segs.clone();
        syn.iter_mut().for_each(|p| {
            p[47] |= TCP_SYN;
            fix_checksums(p);
        });
        assert_eq!(runs(&syn), [1, 1]);
        let (_, pure_ack) = tso4(0x10, 0);
        assert_eq!(runs(&[pure_ack.clone(), pure_ack]), [1, 1]);
        let mut udp = segs.clone();
        udp.iter_mut().for_each(|p| p[23] = 17);
        assert_eq!(runs(&udp), [1, 1]);
        // Longer than the port's frames: left to the kernel to refuse, one by one.
        assert_eq!(run_length(&segs, 1000), 1);
    }

    #[test]
    fn packets_cut_inside_their_headers_are_sent_on_their_own() {
        let (vnet, sup) = tso4(0x10, 2 * MSS);
        let segs = wire(&vnet, &sup);
        for cut in 0..HDRS4 {
            let mut short = segs[0][..cut].to_vec();
            if cut >= 18 {
                put16(&mut short, 16, (cut - 14) as u16); // IPv4 length as captured
            }
            assert_eq!(runs(&[short, segs[1].clone()]), [1, 1], "cut at {cut}");
        }
    }

    #[test]
    fn a_run_stops_at_the_segment_limit_and_the_ip_length() {
        let (vnet, sup) = tso4(0x10, 30 * MSS);
        let mut segs = wire(&vnet, &sup);
        let (_, more) = tso4(0x10, 30 * MSS);
        let mut more_segs = wire(&vnet, &more);
        for (i, p) in more_segs.iter_mut().enumerate() {
            let seq = (1000 + (30 + i) * MSS) as u32;
            p[38..42].copy_from_slice(&seq.to_be_bytes());
            put16(p, 18, 100 + (segs.len() + i) as u16);
            fix_checksums(p);
        }
        segs.extend(more_segs);
        let counts = runs(&segs);
        assert_eq!(counts.iter().sum::<usize>(), segs.len());
        // 65535 bytes of IP packet hold 45 segments of 1448 bytes.
        assert_eq!(counts[0], (MAX_IP_LEN - 52) / MSS);
        assert!(counts.iter().all(|&n| n <= MAX_SEGMENTS));

        let (vnet, small) = tso4(0x10, 100 * 100);
        let small_vnet = VnetHdr {
            gso_size: 100,
            ..vnet
        };
        assert_eq!(runs(&wire(&small_vnet, &small)), [64, 36]);
    }
}
