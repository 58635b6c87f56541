/* study 003, use case "echo server": the switch answers ICMP echo requests itself.
 *
 * An IPv4 echo request (type 8, code 0; no IPv4 options, not a fragment) goes back out of
 * the port it came in on as the echo reply the addressed host would have sent: Ethernet and
 * IPv4 addresses swapped, a fresh TTL, ICMP type 0. Only the type changed in the ICMP
 * message, so its checksum is corrected incrementally (RFC 1624, eqn. 3): the reply is valid
 * whatever the payload, which the switch never reads. The reply's IPv4 checksum is
 * recomputed. Everything else is forwarded unchanged by table `port_fwd` (ingress port ->
 * egress port), so the hosts on either side of the node still reach each other; counter
 * `echo_replies` counts the answered requests per port.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<8> PROTO_ICMP = 1;
const bit<8> ICMP_ECHO_REQUEST = 8;
const bit<8> ICMP_ECHO_REPLY = 0;
const bit<8> REPLY_TTL = 64;

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

header icmp_t {
    bit<8> type;
    bit<8> code;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
    icmp_t icmp;
}

struct metadata_t {
    bool answered;  // this packet is the switch's echo reply: its IPv4 checksum is redone
}

parser EchoParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        // The ICMP header follows a 20-byte IPv4 header of an unfragmented datagram only
        // (the more-fragments flag is the last of the three flag bits).
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags & 1, hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (4w5, 3w0, 13w0, PROTO_ICMP): parse_icmp;
            default: accept;
        }
    }

    state parse_icmp {
        packet.extract(hdr.icmp);
        transition accept;
    }
}

control EchoVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control EchoIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) echo_replies;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    table port_fwd {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        size = 64;
    }

    action answer_echo() {
        bit<48> mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        bit<32> address = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = address;
        hdr.ipv4.ttl = REPLY_TTL;
        hdr.icmp.type = ICMP_ECHO_REPLY;
        // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding type and code.
        // Code is the same in both words, so ~m + m' = ~(type 8 << 8) + (type 0 << 8).
        bit<16> old_word = ICMP_ECHO_REQUEST ++ hdr.icmp.code;
        bit<16> new_word = ICMP_ECHO_REPLY ++ hdr.icmp.code;
        bit<32> sum = (bit<32>) ~hdr.icmp.checksum + (bit<32>) ~old_word + (bit<32>) new_word;
        sum = (sum & 0xffff) + (sum >> 16);  // end-around carries: twice reaches 16 bits
        sum = (sum & 0xffff) + (sum >> 16);
        hdr.icmp.checksum = ~sum[15:0];
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        meta.answered = true;
        echo_replies.count((bit<32>) standard_metadata.ingress_port);
    }

    apply {
        meta.answered = false;
        if (hdr.icmp.isValid() && hdr.icmp.type == ICMP_ECHO_REQUEST && hdr.icmp.code == 0) {
            answer_echo();
        } else {
            port_fwd.apply();
        }
    }
}

control EchoEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control EchoComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            meta.answered,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control EchoDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.icmp);
    }
}

V1Switch(EchoParser(), EchoVerifyChecksum(), EchoIngress(), EchoEgress(),
         EchoComputeChecksum(), EchoDeparser()) main;
