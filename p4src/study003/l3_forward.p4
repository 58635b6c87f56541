/* study 003, use case "L3 forwarding": an IPv4 router hop.
 *
 * IPv4: a packet whose TTL would reach 0 here (TTL 0 or 1) is dropped and counted in
 * `ttl_expired` (no ICMP time-exceeded, as in the study's XDP program); any other goes to the
 * longest-prefix match of its destination in `ipv4_lpm`, whose entry names the next hop:
 * the Ethernet destination (the host, or the next router), this hop's own Ethernet source
 * and the port. TTL is decremented and the IPv4 checksum recomputed. No route: dropped.
 * ARP: forwarded by a static table `arp_fwd`, the longest-prefix match of the ARP target
 * address (request or reply alike), so hosts that share one subnet across the routers
 * resolve each other directly, and targets behind one port can share an entry as routes
 * do; the router itself answers no ARP. Anything else is dropped.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_ARP = 0x0806;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

// ARP for IPv4 over Ethernet (RFC 826 with 6-byte hardware and 4-byte protocol addresses).
header arp_t {
    bit<16> hw_type;
    bit<16> proto_type;
    bit<8> hw_len;
    bit<8> proto_len;
    bit<16> oper;
    bit<48> sender_hw;
    bit<32> sender_ip;
    bit<48> target_hw;
    bit<32> target_ip;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
    arp_t arp;
}

struct metadata_t {
}

parser L3Parser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TYPE_IPV4: parse_ipv4;
            TYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }
}

control L3VerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control L3Ingress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) ttl_expired;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_next_hop(bit<48> next_hop_mac, bit<48> own_mac, bit<9> port) {
        hdr.ethernet.dst_addr = next_hop_mac;
        hdr.ethernet.src_addr = own_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        standard_metadata.egress_spec = port;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dst_addr: lpm;
        }
        actions = {
            set_next_hop;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table arp_fwd {
        key = {
            hdr.arp.target_ip: lpm;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ttl <= 1) {
                ttl_expired.count((bit<32>) standard_metadata.ingress_port);
                drop();
            } else {
                ipv4_lpm.apply();
            }
        } else if (hdr.arp.isValid()) {
            arp_fwd.apply();
        } else {
            drop();
        }
    }
}

control L3Egress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control L3ComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control L3Deparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.arp);
    }
}

V1Switch(L3Parser(), L3VerifyChecksum(), L3Ingress(), L3Egress(), L3ComputeChecksum(),
         L3Deparser()) main;
