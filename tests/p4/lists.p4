/* lists: tuple<...> locals indexed t[i], and list expressions {...} given for struct and
 * tuple `in` parameters of functions and actions (tests/test_p4_lists.py). Each line of
 * the ingress writes the tag fields its comment names. */
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
    bit<16> c;
    bit<8> d;
    bit<8> e;
    bit<8> f;
    bit<8> g;
}

struct headers_t {
    ethernet_t ethernet;
    tag_t tag;
}

struct pair_t {
    bit<8> x;
    bit<8> y;
}

header small_t {
    bit<8> v;
}

struct metadata_t {
    bit<8> spare;
}

bit<8> sum(in tuple<bit<8>, bit<8>> p) {
    return p[0] + p[1];
}

bit<8> mix(in tuple<pair_t, bit<8>> q) {
    return q[0].x ^ q[0].y ^ q[1];
}

bit<8> twice(in small_t h) {
    if (h.isValid()) {   // a header given a list is valid
        return h.v + h.v;
    }
    return 0;
}

parser ListParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.tag);
        transition accept;
    }
}

control ListVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ListIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    action set_pair(in pair_t p) {
        hdr.tag.d = p.x;
        hdr.tag.e = p.y;   // p was copied in: the old d, not the one just written
    }

    apply {
        standard_metadata.egress_spec = 2;
        tuple<bit<8>, bit<16>> t = {hdr.tag.a, hdr.tag.c};
        t[0] = t[0] + 1;
        hdr.tag.c = (bit<16>)t[0];          // c: a + 1
        hdr.tag.a = t[1][7:0];              // a: the low byte of c
        hdr.tag.b = sum({hdr.tag.b, 3});    // b: b + 3
        set_pair({hdr.tag.e, hdr.tag.d});   // d, e: swapped
        hdr.tag.f = mix({{hdr.tag.f, hdr.tag.g}, 0x0f});   // f: f ^ g ^ 0x0f
        hdr.tag.g = twice({hdr.tag.g});     // g: g + g
    }
}

control ListEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control ListComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ListDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
    }
}

V1Switch(ListParser(), ListVerifyChecksum(), ListIngress(), ListEgress(),
         ListComputeChecksum(), ListDeparser()) main;
