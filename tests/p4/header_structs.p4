/* header_structs: struct-typed header fields (P4_16 8.2), flattened onto the header's own
 * fields (tests/test_p4_header_structs.py). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct pair_t {
    bit<4> hi;
    bit<4> lo;
}

struct inner_t {
    bit<8> v;
    pair_t p;
}

header rec_t {
    bit<8> kind;
    pair_t a;
    inner_t b;
    bit<16> tail;
}

struct headers_t {
    ethernet_t ethernet;
    rec_t rec;
}

struct metadata_t {
    bit<8> spare;
}

void swap(inout pair_t p) {
    bit<4> t = p.hi;
    p.hi = p.lo;
    p.lo = t;
}

parser RecParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.rec);
        transition accept;
    }
}

control RecVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RecIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    action set_tail(bit<16> v) {
        hdr.rec.tail = v;
    }

    table by_lo {
        key = {
            hdr.rec.a.lo: exact;
        }
        actions = {
            set_tail;
            NoAction;
        }
        const entries = {
            4w5 : set_tail(0xabcd);
        }
        default_action = NoAction();
    }

    apply {
        standard_metadata.egress_spec = 2;
        inner_t before = hdr.rec.b;   // a copy of the struct field
        swap(hdr.rec.b.p);
        hdr.rec.b.v = before.p.hi ++ before.p.lo;
        hdr.rec.a.hi = hdr.rec.a.lo;
        by_lo.apply();
    }
}

control RecEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control RecComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RecDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.rec);
    }
}

V1Switch(RecParser(), RecVerifyChecksum(), RecIngress(), RecEgress(),
         RecComputeChecksum(), RecDeparser()) main;
