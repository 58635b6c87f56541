// dplab's own rewrite of the p4lang/tutorials exercise solution exercises/qos/solution/qos.p4
// (Apache-2.0, as read from the fork zxc308/P4-tutorials at 658c6743ac7efa05c05e1acda1af7b4efc157f26):
// basic's forwarding; UDP gets DSCP 46 (expedited forwarding), TCP DSCP 44 (voice admit).
// Same headers, tables, actions and control flow, so p4c's P4Info names and ids apply.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x800;
const bit<8> IP_PROTOCOLS_ICMP = 1;
const bit<8> IP_PROTOCOLS_TCP  = 6;
const bit<8> IP_PROTOCOLS_UDP  = 17;

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<6>    diffserv;
    bit<2>    ecn;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    ipv4_t ipv4;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action ipv4_forward(macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action default_forwarding() { hdr.ipv4.diffserv = 0; }
    action expedited_forwarding() { hdr.ipv4.diffserv = 46; }
    action voice_admit() { hdr.ipv4.diffserv = 44; }
    action af_11() { hdr.ipv4.diffserv = 10; }
    action af_12() { hdr.ipv4.diffserv = 12; }
    action af_13() { hdr.ipv4.diffserv = 14; }
    action af_21() { hdr.ipv4.diffserv = 18; }
    action af_22() { hdr.ipv4.diffserv = 20; }
    action af_23() { hdr.ipv4.diffserv = 22; }
    action af_31() { hdr.ipv4.diffserv = 26; }
    action af_32() { hdr.ipv4.diffserv = 28; }
    action af_33() { hdr.ipv4.diffserv = 30; }
    action af_41() { hdr.ipv4.diffserv = 34; }
    action af_42() { hdr.ipv4.diffserv = 36; }
    action af_43() { hdr.ipv4.diffserv = 38; }

    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.protocol == IP_PROTOCOLS_UDP) {
                expedited_forwarding();
            } else if (hdr.ipv4.protocol == IP_PROTOCOLS_TCP) {
                voice_admit();
            }
            ipv4_lpm.apply();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.ecn, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
