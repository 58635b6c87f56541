// dplab's own rewrite of p4lang/p4c testdata/p4_16_samples/saturated-bmv2.p4: saturating
// |+| and |-| on bit<8> and on int<16>, the operation chosen by a const-entries table on
// the first byte; the same wire layout, so p4c's packet test's frames apply unchanged.
#include <core.p4>
#include <v1model.p4>

header ops_t {
    bit<8> op;      // 1: u8 |+|, 2: u8 |-|, 3: s16 |+|, 4: s16 |-|
    bit<8> u_a;
    bit<8> u_b;
    bit<8> u_res;
    int<16> s_a;
    int<16> s_b;
    int<16> s_res;
}

struct headers_t {
    ops_t ops;
}

struct meta_t {
}

parser SatParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ops);
        transition accept;
    }
}

control SatVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control SatIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action unsigned_add() { hdr.ops.u_res = hdr.ops.u_a |+| hdr.ops.u_b; }
    action unsigned_sub() { hdr.ops.u_res = hdr.ops.u_a |-| hdr.ops.u_b; }
    action signed_add() { hdr.ops.s_res = hdr.ops.s_a |+| hdr.ops.s_b; }
    action signed_sub() { hdr.ops.s_res = hdr.ops.s_a |-| hdr.ops.s_b; }
    action discard() { mark_to_drop(sm); }

    table by_op {
        key = { hdr.ops.op: exact; }
        actions = { unsigned_add; unsigned_sub; signed_add; signed_sub; discard; }
        default_action = discard();
        const entries = {
            1 : unsigned_add();
            2 : unsigned_sub();
            3 : signed_add();
            4 : signed_sub();
        }
    }

    apply {
        sm.egress_spec = 0;   // BMv2's port 0, as p4c's test expects
        by_op.apply();
    }
}

control SatEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control SatCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control SatDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ops); }
}

V1Switch(SatParser(), SatVerify(), SatIngress(), SatEgress(), SatCompute(),
         SatDeparser()) main;
