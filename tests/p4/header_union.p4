/* header_union: which member is valid after extract, setValid, setInvalid and assignment
 * (P4_16 8.20), seen in the emitted bytes and in the sel.seen byte (tests/test_p4_unions.py).
 * sel.kind chooses what the parser extracts, sel.op what the ingress does to the union. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header sel_t {
    bit<8> kind;   // 1: one, 2: two, 3: one then two
    bit<8> op;
    bit<8> seen;   // bit 0: u valid after parsing, 1: u.one, 2: u.two; bit 4: u valid at the end
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
    u_t u;
}

struct metadata_t {
    bit<8> spare;
}

parser UnionParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b5: parse_sel;
            default: accept;
        }
    }
    state parse_sel {
        packet.extract(hdr.sel);
        transition select(hdr.sel.kind) {
            1: parse_one;
            2: parse_two;
            3: parse_both;
            default: accept;
        }
    }
    state parse_one {
        packet.extract(hdr.u.one);
        transition accept;
    }
    state parse_two {
        packet.extract(hdr.u.two);
        transition accept;
    }
    state parse_both {
        packet.extract(hdr.u.one);   // consumed, then invalidated by the next extract
        packet.extract(hdr.u.two);
        transition accept;
    }
}

control UnionVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control UnionIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    action restore(inout u_t target, in u_t saved) {
        target = saved;
    }

    apply {
        standard_metadata.egress_spec = 2;
        if (hdr.u.isValid()) {
            hdr.sel.seen = hdr.sel.seen | 1;
        }
        if (hdr.u.one.isValid()) {
            hdr.sel.seen = hdr.sel.seen | 2;
        }
        if (hdr.u.two.isValid()) {
            hdr.sel.seen = hdr.sel.seen | 4;
        }
        if (hdr.sel.op == 1 && hdr.u.one.isValid()) {
            // widen one into two: setValid of two leaves one invalid
            bit<8> v = hdr.u.one.x;
            hdr.u.two.setValid();
            hdr.u.two.y = 0x100 + (bit<16>)v;
        } else if (hdr.sel.op == 2) {
            // a valid header assigned to a member: that member valid, the other not
            one_t t;
            t.setValid();
            t.x = 0x77;
            hdr.u.one = t;
        } else if (hdr.sel.op == 3) {
            // setInvalid invalidates that member only (BMv2; see dplab/p4/unions.py)
            hdr.u.one.setInvalid();
        } else if (hdr.sel.op == 4) {
            // an invalid header assigned to a member: that member invalid, the others kept
            one_t t;
            hdr.u.one = t;
        } else if (hdr.sel.op == 5) {
            // a union copied out and back (a local, an action's in and inout parameters)
            u_t saved = hdr.u;
            hdr.u.two.setValid();
            hdr.u.two.y = 0xbeef;
            restore(hdr.u, saved);
        }
        if (hdr.u.isValid()) {
            hdr.sel.seen = hdr.sel.seen | 0x10;
        }
    }
}

control UnionEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply { }
}

control UnionComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control UnionDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.sel);
        packet.emit(hdr.u);
    }
}

V1Switch(UnionParser(), UnionVerifyChecksum(), UnionIngress(), UnionEgress(),
         UnionComputeChecksum(), UnionDeparser()) main;
