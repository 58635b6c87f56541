// IPv4 with options in a varbit (tests/test_p4_varbit.py): forwards to port 2 with the
// options intact, TTL decremented and the checksum recomputed over header and options.
// A parser error goes out on port 3 with its code (as an index into the IR's errors) in the Ethernet type.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len;
    bit<16> id; bit<3> flags; bit<13> frag;
    bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst;
}
header ipv4_opts_t { varbit<320> options; }
struct headers_t { eth_t eth; ipv4_t ipv4; ipv4_opts_t opts; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.opts, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            hdr.eth.type = 0xeeee;   // errors cannot be cast: name the ones tested
            if (sm.parser_error == error.PacketTooShort) { hdr.eth.type = 1; }
            if (sm.parser_error == error.HeaderTooShort) { hdr.eth.type = 4; }
            if (sm.parser_error == error.ParserInvalidArgument) { hdr.eth.type = 6; }
            // a failed extract leaves its header invalid, as BMv2
            if (hdr.opts.isValid()) { hdr.eth.type = hdr.eth.type + 0x10; }
            hdr.ipv4.setInvalid();
            hdr.opts.setInvalid();
            sm.egress_spec = 3;
            exit;
        }
        sm.egress_spec = 2;
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto,
              hdr.ipv4.src, hdr.ipv4.dst, hdr.opts.options },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv4); pkt.emit(hdr.opts); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
