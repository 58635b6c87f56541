// dplab's own rewrite of p4lang/p4c testdata/p4_16_samples/flowlet_switching-bmv2.p4:
// ECMP over TCP flows, re-hashed when a flow pauses long enough to start a new flowlet.
// As there, egress is declared before ingress (P4Info still lists ingress's actions first).
#include <core.p4>
#include <v1model.p4>

struct ingress_metadata_t {
    bit<32> flow_ipg;           // time since this flow's last packet
    bit<13> flowlet_map_index;  // the flow's register slot
    bit<16> flowlet_id;
    bit<32> flowlet_lasttime;
    bit<14> ecmp_offset;
    bit<32> nhop_ipv4;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<3>  res;
    bit<3>  ecn;
    bit<6>  ctrl;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

struct metadata {
    ingress_metadata_t ingress_metadata;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    tcp_t      tcp;
}

parser ParserImpl(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            6: parse_tcp;
            default: accept;
        }
    }
    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }
}

control egress(inout headers hdr, inout metadata meta,
               inout standard_metadata_t standard_metadata) {
    action rewrite_mac(bit<48> smac) {
        hdr.ethernet.srcAddr = smac;
    }
    action _drop() {
        mark_to_drop(standard_metadata);
    }

    table send_frame {
        key = { standard_metadata.egress_port : exact; }
        actions = { rewrite_mac; _drop; NoAction; }
        size = 256;
        default_action = NoAction();
    }

    apply {
        send_frame.apply();
    }
}

control ingress(inout headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    register<bit<16>>(32w8192) flowlet_id;        // each slot's current flowlet number
    register<bit<32>>(32w8192) flowlet_lasttime;  // each slot's last arrival time

    action _drop() {
        mark_to_drop(standard_metadata);
    }

    // the next hop: ecmp_base + hash(flow, flowlet) mod ecmp_count
    action set_ecmp_select(bit<8> ecmp_base, bit<8> ecmp_count) {
        hash(meta.ingress_metadata.ecmp_offset, HashAlgorithm.crc16, (bit<10>)ecmp_base,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.tcp.srcPort, hdr.tcp.dstPort, meta.ingress_metadata.flowlet_id },
             (bit<20>)ecmp_count);
    }

    action set_nhop(bit<32> nhop_ipv4, bit<9> port) {
        meta.ingress_metadata.nhop_ipv4 = nhop_ipv4;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    // finds the flow's slot, reads its flowlet and the gap since its last packet,
    // and stamps this packet's arrival
    action lookup_flowlet_map() {
        hash(meta.ingress_metadata.flowlet_map_index, HashAlgorithm.crc16, (bit<13>)0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.tcp.srcPort, hdr.tcp.dstPort },
             (bit<26>)13);
        bit<32> slot = (bit<32>)meta.ingress_metadata.flowlet_map_index;
        bit<32> now = (bit<32>)standard_metadata.ingress_global_timestamp;
        flowlet_id.read(meta.ingress_metadata.flowlet_id, slot);
        flowlet_lasttime.read(meta.ingress_metadata.flowlet_lasttime, slot);
        meta.ingress_metadata.flow_ipg = now - meta.ingress_metadata.flowlet_lasttime;
        flowlet_lasttime.write(slot, now);
    }

    action set_dmac(bit<48> dmac) {
        hdr.ethernet.dstAddr = dmac;
    }

    action update_flowlet_id() {
        meta.ingress_metadata.flowlet_id = meta.ingress_metadata.flowlet_id + 1;
        flowlet_id.write((bit<32>)meta.ingress_metadata.flowlet_map_index,
                         meta.ingress_metadata.flowlet_id);
    }

    table ecmp_group {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { _drop; set_ecmp_select; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    table ecmp_nhop {
        key = { meta.ingress_metadata.ecmp_offset : exact; }
        actions = { _drop; set_nhop; NoAction; }
        size = 16384;
        default_action = NoAction();
    }

    table flowlet {
        actions = { lookup_flowlet_map; NoAction; }
        default_action = NoAction();
    }

    table forward {
        key = { meta.ingress_metadata.nhop_ipv4 : exact; }
        actions = { set_dmac; _drop; NoAction; }
        size = 512;
        default_action = NoAction();
    }

    table new_flowlet {
        actions = { update_flowlet_id; NoAction; }
        default_action = NoAction();
    }

    apply {
        @atomic {
            flowlet.apply();
            if (meta.ingress_metadata.flow_ipg > 50000) {
                new_flowlet.apply();  // a pause this long: a new flowlet, maybe a new path
            }
        }
        ecmp_group.apply();
        ecmp_nhop.apply();
        forward.apply();
    }
}

control DeparserImpl(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
    }
}

control verifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control computeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
