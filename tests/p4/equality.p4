/* equality: == and != on a header union, tuples, structs and headers (P4_16 8.12, 8.17,
 * 8.20), each setting one bit of in.res (tests/test_p4_equality.py). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header in_t {
    bit<8> kind;   // 1: u.one follows, 2: u.two follows, else nothing
    bit<8> a;
    bit<8> b;
    bit<8> res;
}

header one_t {
    bit<8> x;
}

header two_t {
    bit<8> y;
}

header_union u_t {
    one_t one;
    two_t two;
}

struct pair_t {
    bit<8> first;
    bit<8> second;
}

struct headers_t {
    ethernet_t ethernet;
    in_t in;
    u_t u;
}

struct metadata_t {
    bit<8> spare;
}

parser EqParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.in);
        transition select(hdr.in.kind) {
            1: parse_one;
            2: parse_two;
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
}

control EqVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control EqIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 2;
        u_t v;   // all members invalid
        u_t none;
        v.one.setValid();
        v.one.x = hdr.in.a;
        tuple<bit<8>, bit<8>> t1 = {hdr.in.a, hdr.in.b};
        tuple<bit<8>, bit<8>> t2 = {hdr.in.b, hdr.in.a};
        pair_t s1 = {hdr.in.a, 1};
        pair_t s2 = {hdr.in.b, 1};
        two_t h;   // invalid
        hdr.in.res = 0;
        if (hdr.u == v) {
            hdr.in.res = hdr.in.res | 1;    // u.one valid, its x == a
        }
        if (t1 == t2) {
            hdr.in.res = hdr.in.res | 2;    // a == b
        }
        if (s1 != s2) {
            hdr.in.res = hdr.in.res | 4;    // a != b
        }
        if (h == hdr.u.two) {
            hdr.in.res = hdr.in.res | 8;    // both invalid: u.two not parsed
        }
        if (hdr.u == none) {
            hdr.in.res = hdr.in.res | 16;   // no member parsed
        }
    }
}

control EqEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control EqComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control EqDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.in);
        packet.emit(hdr.u);
    }
}

V1Switch(EqParser(), EqVerifyChecksum(), EqIngress(), EqEgress(), EqComputeChecksum(),
         EqDeparser()) main;
