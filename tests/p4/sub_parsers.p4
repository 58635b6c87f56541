/* sub_parsers: a parser instantiated in the parser and applied from two states (each
 * apply its own copy of its states); its accept goes on in the calling state, its
 * reject rejects the packet: parsing stops, so no trailer is added
 * (tests/test_p4_sub_blocks.py). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header item_t {
    bit<8> kind;    // 0: the last item; 0xff: malformed (the sub-parser rejects)
    bit<8> value;
}

header trailer_t {
    bit<8> count;   // how many items the parser saw, written by the parser
}

struct headers_t {
    ethernet_t ethernet;
    item_t first;
    item_t second;
    trailer_t trailer;
}

struct metadata_t {
    bit<8> items;
}

parser ItemParser(packet_in packet, out item_t item, inout bit<8> seen) {
    state start {
        packet.extract(item);
        seen = seen + 1;
        transition select(item.kind) {
            0xff: reject;
            default: accept;
        }
    }
}

parser MainParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    ItemParser() items;

    state start {
        packet.extract(hdr.ethernet);
        meta.items = 0;
        items.apply(packet, hdr.first, meta.items);
        transition select(hdr.first.kind) {
            0: finish;
            default: parse_second;
        }
    }
    state parse_second {
        items.apply(packet, hdr.second, meta.items);
        transition finish;
    }
    state finish {
        hdr.trailer.setValid();
        hdr.trailer.count = meta.items;
        transition accept;
    }
}

control SubVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SubIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 2;   // a rejected packet too: it shows what was parsed
    }
}

control SubEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control SubComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SubDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.first);
        packet.emit(hdr.second);
        packet.emit(hdr.trailer);
    }
}

V1Switch(MainParser(), SubVerifyChecksum(), SubIngress(), SubEgress(), SubComputeChecksum(),
         SubDeparser()) main;
