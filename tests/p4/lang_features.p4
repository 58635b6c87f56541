/* lang_features: the P4_16 language features of issue 23, each writing one byte of the
 * tag header so that a packet test sees every result (tests/test_p4_lang_features.py). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header tag_t {
    bit<8> a;   // a function with a default parameter
    bit<8> b;   // inout copy-back over a direct write
    bit<8> c;   // a function returning early
    bit<8> d;   // a void function with an inout parameter, called twice
    bit<8> e;   // compound assignment
    bit<8> f;   // a negative literal against a run-time bit<8>; _ for an out argument
    bit<8> g;   // @priority on const entries
    bit<8> h;   // switch on an enum; slices of slices; % and / by powers of two
}

struct headers_t {
    ethernet_t ethernet;
    tag_t tag;
}

enum Kind { Low, Mid, High }

struct metadata_t {
    bit<8> spare;
}

const bit<8> STEP = 3;

bit<8> add(in bit<8> x, in bit<8> y = STEP) {
    return x + y;
}

bit<8> clamp(in bit<8> x) {
    if (x > 100) {
        return 100;
    }
    return x;
}

void bump(inout bit<8> v) {
    v += 1;
}

bool all_ones(in bit<8> x) {
    return x == -1;   // -1 as a bit<8> is 255
}

void pair(out bit<8> first, out bit<8> second) {
    first = 0x5a;
    second = 0xa5;
}

Kind kind_of(in bit<8> x) {
    if (x < 0x40) {
        return Kind.Low;
    } else if (x < 0x80) {
        return Kind.Mid;
    }
    return Kind.High;
}

parser LangParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.tag);
        transition accept;
    }
}

control LangVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control LangIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    // P4 copies `v` out at the end: the direct write of hdr.tag.b is overwritten.
    action keep(inout bit<8> v) {
        hdr.tag.b = 77;
        v = v + 1;
    }

    action set_g(bit<8> value) {
        hdr.tag.g = value;
    }

    table prio {
        key = {
            hdr.tag.g: ternary;
        }
        actions = {
            set_g;
        }
        const entries = {
            @priority(5) 8w0x00 &&& 8w0x00 : set_g(0x11);
            @priority(1) 8w0x10 &&& 8w0xf0 : set_g(0x22);
        }
    }

    apply {
        standard_metadata.egress_spec = 2;
        hdr.tag.a = add(hdr.tag.a);
        hdr.tag.c = clamp(hdr.tag.c);
        bump(hdr.tag.d);
        bump(hdr.tag.d);
        keep(hdr.tag.b);
        hdr.tag.e |= 0x0f;
        hdr.tag.e >>= 1;
        hdr.tag.e -= 2;
        if (all_ones(hdr.tag.f) && 8w255 == -1) {
            pair(_, hdr.tag.f);
        } else {
            hdr.tag.f = hdr.tag.f % 16 + hdr.tag.f / 64;
        }
        prio.apply();
        switch (kind_of(hdr.tag.h)) {
            Kind.Low: { hdr.tag.h[7:4][1:0] = 2w3; }
            Kind.Mid:
            Kind.High: { hdr.tag.h = 0xee; }
        }
    }
}

control LangEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control LangComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control LangDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
    }
}

V1Switch(LangParser(), LangVerifyChecksum(), LangIngress(), LangEgress(),
         LangComputeChecksum(), LangDeparser()) main;
