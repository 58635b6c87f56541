// varbit<W> local variables (tests/test_p4_varbit_locals.py): x and y carry a and b bytes;
// the ingress swaps them through a local, and empties x through an uninitialised local
// when b is 4; the egress port is always 2.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header len_t { bit<8> a; bit<8> b; }
header vb_t { varbit<32> d; }
struct headers_t { eth_t eth; len_t len; vb_t x; vb_t y; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.len);
        pkt.extract(hdr.x, (bit<32>)hdr.len.a * 8);
        pkt.extract(hdr.y, (bit<32>)hdr.len.b * 8);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        varbit<32> v = hdr.x.d;
        hdr.x.d = hdr.y.d;
        hdr.y.d = v;
        varbit<32> empty;
        if (hdr.len.b == 4) {
            hdr.x.d = empty;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.len); pkt.emit(hdr.x); pkt.emit(hdr.y); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
