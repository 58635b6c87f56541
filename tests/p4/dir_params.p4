/* dir_params: actions with directional parameters (P4_16), called directly and bound in a
 * table's action list. The control plane supplies only the directionless parameters. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header tag_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}

struct headers_t {
    ethernet_t ethernet;
    tag_t tag;
}

struct metadata_t {
    bit<8> x;
}

parser DirParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.tag);
        transition accept;
    }
}

control DirVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

action set_port(inout bit<9> p, bit<9> v) {
    p = v;
}

control DirIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    // `by` is copied in: the body's increment must not reach the caller's field.
    action add_to(inout bit<8> acc, in bit<8> by, bit<8> extra) {
        by = by + 1;
        acc = acc + by + extra;
    }

    action swap_macs(inout ethernet_t eth) {
        bit<48> t = eth.dst_addr;
        eth.dst_addr = eth.src_addr;
        eth.src_addr = t;
    }

    action mark(out bit<8> dst, bit<8> v) {
        dst = v;
    }

    table adder {
        key = {
            hdr.tag.c: exact;
        }
        actions = {
            add_to(hdr.tag.a, hdr.tag.b);
            NoAction;
        }
        default_action = NoAction();
    }

    table marker {
        key = {
            hdr.tag.c: exact;
        }
        actions = {
            mark(meta.x);
        }
        default_action = mark(meta.x, 0x33);
    }

    apply {
        set_port(standard_metadata.egress_spec, 2);
        adder.apply();
        marker.apply();
        add_to(meta.x, 1, 0);
        hdr.tag.d = meta.x;
        swap_macs(hdr.ethernet);
    }
}

control DirEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control DirComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DirDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
    }
}

V1Switch(DirParser(), DirVerifyChecksum(), DirIngress(), DirEgress(), DirComputeChecksum(),
         DirDeparser()) main;
