// Headers in the metadata struct (tests/test_p4_meta_headers.py): the parser extracts the
// tag into meta.saved (never emitted itself); the ingress copies it into the headers and a
// nested struct's header, the egress reads that one; the egress port is always 2.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> op; bit<8> val; }
struct headers_t { eth_t eth; tag_t tag; }
struct inner_t { tag_t h; bit<8> n; }
struct meta_t { bit<8> n; inner_t inner; tag_t saved; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: tag; default: accept; }
    }
    state tag {
        pkt.extract(meta.saved);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (meta.saved.isValid()) {
            hdr.tag = meta.saved;
            hdr.tag.val = hdr.tag.val + 1;
            meta.inner.h = meta.saved;
        } else {
            hdr.eth.type = 0x0001;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (meta.inner.h.isValid()) {
            hdr.tag.op = meta.inner.h.op + 0x10;
        }
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.tag);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
