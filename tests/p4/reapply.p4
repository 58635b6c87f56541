/* reapply: a control instance holding a table, actions, a register and a variable, applied
 * four times (twice directly, twice from an unrolled loop): one table, one set of actions,
 * one register for every apply, as P4 has one per instance (tests/test_p4_sub_blocks.py). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header tag_t {
    bit<8> a;   // the first apply's value
    bit<8> b;   // the second apply's value
    bit<8> c;   // the register as the first apply saw it
    bit<8> d;   // ... the second
    bit<8> e;   // the value of the two applies in the loop
    bit<8> f;   // the register as the last apply saw it
}

struct headers_t {
    ethernet_t ethernet;
    tag_t tag;
}

struct metadata_t {
    bit<8> spare;
}

control Count(inout bit<8> value, out bit<8> seen) {
    bit<8> step = 1;   // initialised again at each apply
    register<bit<8>>(1) calls;

    action bump(bit<8> by) {
        value = value + by + step;
        step = step + 1;
    }
    action keep() {
    }
    table t {
        key = { value: exact; }
        actions = { bump; keep; }
        const entries = {
            1 : bump(0x10);
            2 : bump(0x20);
        }
        default_action = keep();
    }

    apply {
        t.apply();
        calls.read(seen, 0);
        calls.write(0, seen + 1);
    }
}

parser ReParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.tag);
        transition accept;
    }
}

control ReVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ReIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    Count() counter;

    apply {
        standard_metadata.egress_spec = 2;
        counter.apply(hdr.tag.a, hdr.tag.c);
        counter.apply(hdr.tag.b, hdr.tag.d);
        for (bit<8> i in 1 .. 2) {
            counter.apply(hdr.tag.e, hdr.tag.f);
        }
    }
}

control ReEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control ReComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ReDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
    }
}

V1Switch(ReParser(), ReVerifyChecksum(), ReIngress(), ReEgress(), ReComputeChecksum(),
         ReDeparser()) main;
