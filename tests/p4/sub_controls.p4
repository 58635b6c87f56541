/* sub_controls: one control holding a table, its actions and a register, instantiated
 * twice in the ingress; each instance has its own table (const entries), actions and
 * register, named under the instance's path as p4c names them (Ingress.first.t ...)
 * (tests/test_p4_sub_blocks.py). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header tag_t {
    bit<8> a;   // the first instance's key
    bit<8> b;   // the second instance's key
    bit<8> c;   // the first instance's result
    bit<8> d;   // the second instance's result
    bit<8> e;   // the first instance's result for the packet before
    bit<8> f;   // the second instance's result for the packet before
}

struct headers_t {
    ethernet_t ethernet;
    tag_t tag;
}

struct metadata_t {
    bit<8> spare;
}

control Classify(in bit<8> key, out bit<8> result, out bit<8> previous) {
    register<bit<8>>(1) last;

    action set(bit<8> v) {
        result = v;
    }
    action miss() {
        result = 0xee;
    }
    table t {
        key = { key: exact; }
        actions = { set; miss; }
        const entries = {
            1 : set(0x11);
            2 : set(0x22);
        }
        default_action = miss();
    }

    apply {
        t.apply();
        last.read(previous, 0);
        last.write(0, result);
    }
}

parser SubParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.tag);
        transition accept;
    }
}

control SubVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control Ingress(inout headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    Classify() first;
    Classify() second;

    apply {
        standard_metadata.egress_spec = 2;
        first.apply(hdr.tag.a, hdr.tag.c, hdr.tag.e);
        second.apply(hdr.tag.b, hdr.tag.d, hdr.tag.f);
    }
}

control SubEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control SubComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SubDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
    }
}

V1Switch(SubParser(), SubVerifyChecksum(), Ingress(), SubEgress(), SubComputeChecksum(),
         SubDeparser()) main;
