/* loops: P4_16 1.2.4 for loops, unrolled at compile time (tests/test_p4_loops.py); each
 * loop writes one byte of the tag header so that a packet test sees every result. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header tag_t {
    bit<8> a;   // two loop variables, a non-loop update clause
    bit<8> b;   // nested loops: break on a compile-time test, continue on a run-time one
    bit<8> c;   // break on a run-time test
    bit<8> d;   // a list with run-time items, read before the loop
    bit<8> e;   // continue over that list
    bit<8> f;   // return from a loop in a function; an outer variable as loop variable
    bit<8> g;   // for-in over a header stack (the loop variable is a copy)
    bit<8> h;   // input of b's continue
}

header item_t {
    bit<8> v;
}

struct headers_t {
    ethernet_t ethernet;
    tag_t tag;
    item_t[3] items;
}

struct metadata_t {
    bit<8> spare;
}

bit<8> lowest_set(in bit<8> x) {
    bit<8> i;
    for (i = 0; i < 8; i = i + 1) {
        if (((x >> i) & 1) == 1) {
            return i;
        }
    }
    return i + 0xf7;   // i is 8 after the loop: 0xff
}

parser LoopParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.tag);
        packet.extract(hdr.items.next);
        packet.extract(hdr.items.next);
        packet.extract(hdr.items.next);
        transition accept;
    }
}

control LoopVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control LoopIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    action sum_items() {
        for (item_t it in hdr.items) {
            hdr.tag.g = hdr.tag.g + it.v;
            it.v = 0;   // a copy: the stack keeps its values
        }
    }

    apply {
        standard_metadata.egress_spec = 2;
        for (bit<8> i = 0, bit<8> j = 10; i < j; i = i + 1, j = j - 1,
             hdr.tag.a = hdr.tag.a + 1) {
            hdr.tag.a = hdr.tag.a + i;
        }
        for (bit<8> i = 1; i <= 3; i = i + 1) {
            for (bit<8> j in 1 .. 3) {
                if (j > i) {
                    break;
                }
                if (j == hdr.tag.h) {
                    continue;
                }
                hdr.tag.b = hdr.tag.b + 1;
            }
        }
        bit<8> before = 0;
        for (bit<8> i in 1 .. 8) {
            if (hdr.tag.c == i) {
                break;
            }
            before = before + 1;
        }
        hdr.tag.c = before;
        bit<8> count = 0;
        bit<8> sum = 0;
        for (bit<8> x in {hdr.tag.d, hdr.tag.e, 3}) {
            hdr.tag.e = 0x55;
            if (x == 0) {
                continue;
            }
            count = count + 1;
            sum = sum + x;
        }
        hdr.tag.d = sum;
        hdr.tag.e = count;
        hdr.tag.f = lowest_set(hdr.tag.f);
        sum_items();
    }
}

control LoopEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control LoopComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control LoopDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
        packet.emit(hdr.items);
    }
}

V1Switch(LoopParser(), LoopVerifyChecksum(), LoopIngress(), LoopEgress(),
         LoopComputeChecksum(), LoopDeparser()) main;
