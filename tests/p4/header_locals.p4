// Header- and struct-typed local variables (tests/test_p4_locals.py): a tag header's
// `op` picks what the ingress does with locals; the egress port is always 2.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> op; bit<8> val; }
struct headers_t { eth_t eth; tag_t tag; }
struct pair_t { tag_t h; bit<8> n; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    tag_t peek;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: tag; default: accept; }
    }
    state tag {
        pkt.extract(peek);   // a local header: never emitted ...
        hdr.tag = peek;      // ... unless copied into a real one
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    tag_t saved;

    action swap_macs() {
        eth_t tmp = hdr.eth;
        hdr.eth.dst = tmp.src;
        hdr.eth.src = tmp.dst;
    }

    action add_tag(bit<8> v) {
        tag_t t;
        t.setValid();
        t.op = 9;
        t.val = v;
        hdr.tag = t;
        hdr.eth.type = 0x88b5;
    }

    action copy_in(in tag_t h) {       // an in header: the action works on a copy
        h.val = 0x77;
        hdr.eth.type = (bit<16>)h.val;
    }

    apply {
        sm.egress_spec = 2;
        if (!hdr.tag.isValid()) {
            add_tag(0x42);
            exit;
        }
        if (hdr.tag.op == 1) {
            swap_macs();
        } else if (hdr.tag.op == 2) {
            tag_t gone;                // uninitialised: invalid
            if (gone.isValid()) {
                sm.egress_spec = 3;
            }
            hdr.tag = gone;            // copies the invalidity: the tag leaves the packet
            hdr.eth.type = 0x0800;
        } else if (hdr.tag.op == 3) {
            pair_t p;
            p.h = hdr.tag;
            p.n = p.h.val + 1;
            pair_t q = p;              // a struct copy, header member and all
            q.h.val = q.n;
            p = q;
            hdr.tag = p.h;
        } else if (hdr.tag.op == 4) {
            tag_t l = { 8w5, 8w6 };    // a list makes a header valid
            hdr.tag = l;
        } else if (hdr.tag.op == 5) {
            saved = hdr.tag;
            {
                tag_t saved;           // shadows the control's local
                saved.setValid();
                saved.val = 0xee;
                hdr.eth.type = (bit<16>)saved.val;
            }
            hdr.tag = saved;           // the control's: unchanged
        } else if (hdr.tag.op == 6) {
            copy_in(hdr.tag);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.tag);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
