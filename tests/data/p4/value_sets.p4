/* Parser value sets and explicit entry priorities (P4_16 1.2.4, P4Runtime ValueSetEntry).
 * An Ethernet frame goes on to port 2 only if its EtherType is in `allowed_types`, or if
 * its (EtherType, tag byte) pair is in `tagged` (a value set of a sub-parser instance,
 * named P.pairs_of.tagged as p4c names it); anything else goes to port 3. Frames
 * with tag 1 go where table `classify` says: explicit priorities on overlapping keys. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> kind; }
struct headers_t { ethernet_t eth; tag_t tag; }
struct meta_t { bit<1> allowed; }
struct pair_t { bit<16> etype; @match(ternary) bit<8> kind; }

parser Pairs(packet_in pkt, in bit<16> etype, in bit<8> kind, inout meta_t meta) {
    value_set<pair_t>(2) tagged;
    state start {
        transition select(etype, kind) {
            tagged: mark;
            default: accept;
        }
    }
    state mark {
        meta.allowed = 1;
        transition accept;
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    value_set<bit<16>>(4) allowed_types;
    Pairs() pairs_of;
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.tag);
        transition select(hdr.eth.etype) {
            allowed_types: mark;
            default: pairs;
        }
    }
    state pairs {
        pairs_of.apply(pkt, hdr.eth.etype, hdr.tag.kind, meta);
        transition accept;
    }
    state mark {
        meta.allowed = 1;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table classify {
        key = { hdr.eth.dst: ternary; hdr.tag.kind: exact; }
        actions = { to; drop; }
        priority_delta = 10;
        entries = {
            priority = 50: (48w0x020000000000 &&& 48w0xff0000000000, 8w1) : to(2);
                           (_, 8w1) : to(3);                     // priority 40
            priority = 45: (48w0x060000000001, 8w1) : drop();    // beats the entry of 40
        }
    }
    apply {
        if (meta.allowed == 1) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }
        if (hdr.tag.kind == 1) {
            classify.apply();
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
