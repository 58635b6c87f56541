// Header stack indices known only at run time and run-time / and %
// (tests/test_p4_stack_index.py). The parser reads s[j] after extracting the whole stack
// (j past it: StackOutOfBounds); the ingress reads s[i], writes s[j], invalidates s[k],
// divides a by b; the egress port is always 2.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ctl_t {
    bit<8> i; bit<8> j; bit<8> k; bit<8> a; bit<8> b;
    bit<8> got; bit<8> valid; bit<8> q; bit<8> r; bit<8> perr; bit<8> pv;
}
header elem_t { bit<8> v; }
struct headers_t { eth_t eth; ctl_t ctl; elem_t[3] s; }
struct meta_t { bit<8> pv; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition read;
    }
    state read {
        meta.pv = hdr.s[hdr.ctl.j].v;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        bit<8> t = hdr.s[hdr.ctl.i].v;
        hdr.ctl.got = t;
        if (hdr.s[hdr.ctl.i].isValid()) {
            hdr.ctl.valid = 1;
        } else {
            hdr.ctl.valid = 2;
        }
        hdr.s[hdr.ctl.j].v = hdr.ctl.a;
        hdr.s[hdr.ctl.k].setInvalid();
        hdr.ctl.q = hdr.ctl.a / hdr.ctl.b;
        hdr.ctl.r = hdr.ctl.a % hdr.ctl.b;
        hdr.ctl.pv = meta.pv;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.ctl.perr = 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.s);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
