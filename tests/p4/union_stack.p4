/* union_stack: a stack of two header unions filled by extract(hdr.us.next.<member>) in
 * the parser (sel.kind chooses the members; kind 4 extracts a third element, past the
 * stack: StackOutOfBounds), read by constant index in the ingress into sel.seen
 * (tests/test_p4_unions.py). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header sel_t {
    bit<8> kind;
    bit<8> seen;   // bit 0: us[0] valid, 1: us[0].one, 2: us[1] valid, 3: us[1].two, 7: error
}

header one_t {
    bit<8> x;
}

header two_t {
    bit<16> y;
}

header_union u_t {
    one_t one;
    two_t two;
}

struct headers_t {
    ethernet_t ethernet;
    sel_t sel;
    u_t[2] us;
}

struct metadata_t {
    bit<8> spare;
}

parser StackParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.sel);
        transition select(hdr.sel.kind) {
            1: one_one;
            2: one_two;
            3: two_one;
            4: three;
            default: accept;
        }
    }
    state one_one {
        packet.extract(hdr.us.next.one);
        packet.extract(hdr.us.next.one);
        transition accept;
    }
    state one_two {
        packet.extract(hdr.us.next.one);
        packet.extract(hdr.us.next.two);
        transition accept;
    }
    state two_one {
        packet.extract(hdr.us.next.two);
        packet.extract(hdr.us.next.one);
        transition accept;
    }
    state three {
        packet.extract(hdr.us.next.one);
        packet.extract(hdr.us.next.one);
        packet.extract(hdr.us.next.one);
        transition accept;
    }
}

control StackVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control StackIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 2;
        if (hdr.us[0].isValid()) {
            hdr.sel.seen = hdr.sel.seen | 1;
        }
        if (hdr.us[0].one.isValid()) {
            hdr.sel.seen = hdr.sel.seen | 2;
        }
        if (hdr.us[1].isValid()) {
            hdr.sel.seen = hdr.sel.seen | 4;
        }
        if (hdr.us[1].two.isValid()) {
            hdr.sel.seen = hdr.sel.seen | 8;
        }
        if (standard_metadata.parser_error == error.StackOutOfBounds) {
            hdr.sel.seen = hdr.sel.seen | 0x80;
        }
    }
}

control StackEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply { }
}

control StackComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control StackDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.sel);
        packet.emit(hdr.us);
    }
}

V1Switch(StackParser(), StackVerifyChecksum(), StackIngress(), StackEgress(),
         StackComputeChecksum(), StackDeparser()) main;
