// Signed int<W> arithmetic (tests/test_p4_signed.py): the ingress reads a and b as int<8>
// and writes the results into the same header; the egress port is always 2.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header nums_t {
    bit<8> a; bit<8> b; bit<8> sh;
    bit<8> sum; bit<8> diff; bit<8> prod; bit<8> flags;
    bit<8> shr; bit<8> shr2; bit<16> ext; bit<8> neg; bit<8> lit; bit<16> acc;
    bit<8> ssum; bit<8> sdiff;
}
struct headers_t { eth_t eth; nums_t n; }
struct meta_t { int<16> acc; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.n);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        int<8> x = (int<8>)hdr.n.a;
        int<8> y = (int<8>)hdr.n.b;
        int<8> m = -3;
        hdr.n.sum = (bit<8>)(x + y);
        hdr.n.diff = (bit<8>)(x - y);
        hdr.n.prod = (bit<8>)(x * y);
        hdr.n.flags = 3w0 ++ (bit<1>)(x < -1) ++ (bit<1>)(x < y) ++ (bit<1>)(x <= y)
                      ++ (bit<1>)(x > y) ++ (bit<1>)(x >= y);
        hdr.n.shr = (bit<8>)(x >> hdr.n.sh);
        hdr.n.shr2 = (bit<8>)(x >> 2);
        hdr.n.ext = (bit<16>)(int<16>)x;
        hdr.n.neg = (bit<8>)(-x);
        hdr.n.lit = (bit<8>)(x * m);
        meta.acc = (int<16>)x;
        meta.acc = meta.acc - 16s300;
        hdr.n.acc = (bit<16>)meta.acc;
        hdr.n.ssum = (bit<8>)(x |+| y);
        // the constants fold to 127 |-| 127 = 0 (a fold without the clamp would not)
        hdr.n.sdiff = (bit<8>)((x |-| y) |+| (8s100 |+| 8s100 |-| 8s127));
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.n);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
