// dplab's own rewrite of p4lang/p4c testdata/p4_16_samples/header-stack-ops-bmv2.p4:
// three one-byte operations per packet on a 5-deep header stack (push_front, pop_front,
// setValid with fields, setInvalid), then a bitmap of the stack's valid entries.
// Kept from there: verify in the parser, `.next`/`.last` in a parser loop, a
// statements-only control applied three times from ingress, emit of a whole stack.
#include <core.p4>
#include <v1model.p4>

header h1_t {
    bit<8> hdr_type;       // 1
    bit<8> op1;            // high nibble: the operation, low nibble: its count or index
    bit<8> op2;
    bit<8> op3;
    bit<8> h2_valid_bits;  // written by ingress: bit i set when h2[i] is valid
    bit<8> next_hdr_type;
}

header h2_t {
    bit<8> hdr_type;       // 2
    bit<8> f1;
    bit<8> f2;
    bit<8> next_hdr_type;
}

header h3_t {
    bit<8> hdr_type;       // 3
    bit<8> data;
}

struct headers {
    h1_t    h1;
    h2_t[5] h2;
    h3_t    h3;
}

struct metadata { }

error { BadHeaderType }

parser parserI(packet_in pkt, out headers hdr, inout metadata meta,
               inout standard_metadata_t stdmeta) {
    state start {
        pkt.extract(hdr.h1);
        verify(hdr.h1.hdr_type == 1, error.BadHeaderType);
        transition select(hdr.h1.next_hdr_type) {
            2: parse_h2;
            3: parse_h3;
            default: accept;
        }
    }
    state parse_h2 {
        pkt.extract(hdr.h2.next);
        verify(hdr.h2.last.hdr_type == 2, error.BadHeaderType);
        transition select(hdr.h2.last.next_hdr_type) {
            2: parse_h2;
            3: parse_h3;
            default: accept;
        }
    }
    state parse_h3 {
        pkt.extract(hdr.h3);
        verify(hdr.h3.hdr_type == 3, error.BadHeaderType);
        transition accept;
    }
}

// Operation 0x1n: push_front(n); 0x2n: pop_front(n); 0x3i: h2[i] valid, filled with
// (2, 0xai, 0xia, 9); 0x4i: h2[i] invalid. Anything else does nothing.
control cDoOneOp(inout headers hdr, in bit<8> op) {
    apply {
        bit<4> kind = op[7:4];
        bit<4> n = op[3:0];
        if (kind == 1) {
            if (n == 1) { hdr.h2.push_front(1); }
            else if (n == 2) { hdr.h2.push_front(2); }
            else if (n == 3) { hdr.h2.push_front(3); }
            else if (n == 4) { hdr.h2.push_front(4); }
            else if (n == 5) { hdr.h2.push_front(5); }
            else if (n == 6) { hdr.h2.push_front(6); }
        } else if (kind == 2) {
            if (n == 1) { hdr.h2.pop_front(1); }
            else if (n == 2) { hdr.h2.pop_front(2); }
            else if (n == 3) { hdr.h2.pop_front(3); }
            else if (n == 4) { hdr.h2.pop_front(4); }
            else if (n == 5) { hdr.h2.pop_front(5); }
            else if (n == 6) { hdr.h2.pop_front(6); }
        } else if (kind == 3) {
            if (n == 0) {
                hdr.h2[0].setValid();
                hdr.h2[0].hdr_type = 2;
                hdr.h2[0].f1 = 0xa0;
                hdr.h2[0].f2 = 0x0a;
                hdr.h2[0].next_hdr_type = 9;
            } else if (n == 1) {
                hdr.h2[1].setValid();
                hdr.h2[1].hdr_type = 2;
                hdr.h2[1].f1 = 0xa1;
                hdr.h2[1].f2 = 0x1a;
                hdr.h2[1].next_hdr_type = 9;
            } else if (n == 2) {
                hdr.h2[2].setValid();
                hdr.h2[2].hdr_type = 2;
                hdr.h2[2].f1 = 0xa2;
                hdr.h2[2].f2 = 0x2a;
                hdr.h2[2].next_hdr_type = 9;
            } else if (n == 3) {
                hdr.h2[3].setValid();
                hdr.h2[3].hdr_type = 2;
                hdr.h2[3].f1 = 0xa3;
                hdr.h2[3].f2 = 0x3a;
                hdr.h2[3].next_hdr_type = 9;
            } else if (n == 4) {
                hdr.h2[4].setValid();
                hdr.h2[4].hdr_type = 2;
                hdr.h2[4].f1 = 0xa4;
                hdr.h2[4].f2 = 0x4a;
                hdr.h2[4].next_hdr_type = 9;
            }
        } else if (kind == 4) {
            if (n == 0) { hdr.h2[0].setInvalid(); }
            else if (n == 1) { hdr.h2[1].setInvalid(); }
            else if (n == 2) { hdr.h2[2].setInvalid(); }
            else if (n == 3) { hdr.h2[3].setInvalid(); }
            else if (n == 4) { hdr.h2[4].setInvalid(); }
        }
    }
}

control cIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t stdmeta) {
    cDoOneOp() do_one_op;
    apply {
        do_one_op.apply(hdr, hdr.h1.op1);
        do_one_op.apply(hdr, hdr.h1.op2);
        do_one_op.apply(hdr, hdr.h1.op3);
        hdr.h1.h2_valid_bits = 0;
        if (hdr.h2[0].isValid()) { hdr.h1.h2_valid_bits[0:0] = 1; }
        if (hdr.h2[1].isValid()) { hdr.h1.h2_valid_bits[1:1] = 1; }
        if (hdr.h2[2].isValid()) { hdr.h1.h2_valid_bits[2:2] = 1; }
        if (hdr.h2[3].isValid()) { hdr.h1.h2_valid_bits[3:3] = 1; }
        if (hdr.h2[4].isValid()) { hdr.h1.h2_valid_bits[4:4] = 1; }
        // Added for our rig: back out of the port it came in on. The original leaves
        // egress_spec 0, the port p4c's test sends on; our ports start at 1.
        stdmeta.egress_spec = stdmeta.ingress_port;
    }
}

control cEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t stdmeta) {
    apply { }
}

control vc(inout headers hdr, inout metadata meta) { apply { } }

control uc(inout headers hdr, inout metadata meta) { apply { } }

control DeparserI(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.h1);
        packet.emit(hdr.h2);
        packet.emit(hdr.h3);
    }
}

V1Switch(parserI(), vc(), cIngress(), cEgress(), uc(), DeparserI()) main;
