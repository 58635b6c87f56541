/* Exercises many features of the subset: stacks, lpm/ternary/range keys, const entries,
 * externs, hash, checksums, switch on action_run, hit/miss. */
#include <core.p4>
#include <v1model.p4>

#define N_PORTS 64
#ifdef NOT_DEFINED
#error this must not be compiled
#endif

typedef bit<32> ip4_t;
const bit<16> ETH_IPV4 = 16w0x0800;
const bit<16> ETH_MPLS = 0x8847;
error { BadVersion }
enum bit<8> Proto { TCP = 6, UDP = 17 }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; ip4_t src; ip4_t dst;
}
struct headers_t { ethernet_t eth; mpls_t[3] mpls; ipv4_t ipv4; }
struct learn_t { bit<48> src; bit<9> port; }
struct meta_t { @field_list(1) bit<16> flow; bit<2> color; bit<32> seen; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            ETH_MPLS: parse_mpls;
            ETH_IPV4: parse_ipv4;
            0x9000 &&& 0xF000: accept;
            0x0600 .. 0x06FF: reject;
            default: accept;
        }
    }
    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        transition select(hdr.mpls[0].bos) { 1: parse_ipv4; default: parse_mpls; }
    }
    state parse_ipv4 {
        transition select(pkt.lookahead<bit<4>>()) { 4: ipv4_ok; default: reject; }
    }
    state ipv4_ok {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.BadVersion);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(), { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos,
            hdr.ipv4.len, hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl,
            hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst }, hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(N_PORTS, CounterType.packets_and_bytes) port_pkts;
    direct_counter(CounterType.packets) route_hits;
    meter(16, MeterType.bytes) tos_meter;
    register<bit<32>>(128) last_seen;
    bit<8> tmp = 3;

    action drop() { mark_to_drop(sm); }
    action route(bit<9> port, bit<48> mac) {
        sm.egress_spec = port;
        hdr.eth.dst = mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action learn() { digest<learn_t>(1, { hdr.eth.src, sm.ingress_port }); }

    table routes {
        key = { hdr.ipv4.dst: lpm; }
        actions = { route; drop; NoAction; }
        default_action = drop();
        counters = route_hits;
    }
    table acl {
        key = { hdr.ipv4.src: ternary; hdr.ipv4.proto: range; sm.ingress_port: optional; }
        actions = { drop; NoAction; }
        const entries = {
            (0x0A000000 &&& 0xFF000000, 6 .. 17, _): drop();
            (_, _, 3): NoAction();
        }
    }
    table smac {
        key = { hdr.eth.src: exact; }
        actions = { learn; NoAction; }
        const default_action = learn();
    }

    apply {
        port_pkts.count((bit<32>) sm.ingress_port);
        if (!smac.apply().hit) { tmp = tmp |+| 8w250; }
        if (hdr.ipv4.isValid()) {
            tos_meter.execute_meter((bit<32>) hdr.ipv4.tos[7:4], meta.color);
            switch (routes.apply().action_run) {
                route: { acl.apply(); }
                default: { }
            }
            last_seen.read(meta.seen, (bit<32>) hdr.ipv4.dst[6:0]);
            last_seen.write((bit<32>) hdr.ipv4.dst[6:0], sm.ingress_global_timestamp[31:0]);
            hash(meta.flow, HashAlgorithm.crc16, 16w0,
                 { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.proto }, 32w65536);
            if (hdr.ipv4.proto == (bit<8>) Proto.UDP && meta.color == 2) {
                clone_preserving_field_list(CloneType.I2E, 5, 1);
            }
        }
        if (hdr.mpls[0].isValid()) {
            hdr.mpls[0].ttl = hdr.mpls[0].ttl ++ 8w0 == 16w0 ? 8w1 : (hdr.mpls[0].ttl >> 1);
            hdr.mpls.pop_front(1);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) { recirculate_preserving_field_list(1); }
        log_msg("egress port {}", { sm.egress_port });
    }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(), { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos,
            hdr.ipv4.len, hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl,
            hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst }, hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.mpls); pkt.emit(hdr.ipv4); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
