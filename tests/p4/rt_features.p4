/* rt_features: a v1model program with one of each P4Runtime entity, for the P4Runtime
 * server tests (tests/test_p4runtime_entities.py, tests/test_p4runtime_shell.py).
 *
 * Every frame counts in port_counter[ingress_port]; IPv4 packets add one to scratch[0] and
 * run through port_meter[ingress_port] (RED drops). TTL 2 sends a learn_t digest.
 * fwd_lpm (lpm on the IPv4 destination, direct counter) picks the egress port or a
 * multicast group; acl (ternary source, range TTL, priorities, direct meter) may override
 * the port, drop, or clone to a session.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
}

struct metadata_t {
    bit<2> port_color;
    bit<2> acl_color;
}

struct learn_t {
    bit<48> src_addr;
    bit<9> port;
}

parser RtParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control RtVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RtIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    counter(8, CounterType.packets_and_bytes) port_counter;
    meter(8, MeterType.packets) port_meter;
    register<bit<32>>(4) scratch;
    direct_counter(CounterType.packets_and_bytes) lpm_hits;
    direct_meter<bit<2>>(MeterType.packets) acl_meter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
        lpm_hits.count();
    }

    action multicast(bit<16> group) {
        standard_metadata.mcast_grp = group;
        lpm_hits.count();
    }

    action lpm_drop() {
        mark_to_drop(standard_metadata);
        lpm_hits.count();
    }

    table fwd_lpm {
        key = {
            hdr.ipv4.dst_addr: lpm;
        }
        actions = {
            forward;
            multicast;
            lpm_drop;
            drop;
        }
        default_action = drop();
        counters = lpm_hits;
        size = 64;
    }

    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
        acl_meter.read(meta.acl_color);
    }

    action mirror(bit<32> session) {
        clone(CloneType.I2E, session);
        acl_meter.read(meta.acl_color);
    }

    action police() {
        acl_meter.read(meta.acl_color);
    }

    table acl {
        key = {
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.ttl: range;
        }
        actions = {
            set_port;
            mirror;
            police;
            NoAction;
        }
        default_action = NoAction();
        meters = acl_meter;
        size = 64;
    }

    apply {
        port_counter.count((bit<32>)standard_metadata.ingress_port);
        if (!hdr.ipv4.isValid()) {
            drop();
            exit;
        }
        bit<32> seen;
        scratch.read(seen, 0);
        scratch.write(0, seen + 1);
        port_meter.execute_meter((bit<32>)standard_metadata.ingress_port, meta.port_color);
        if (meta.port_color == 2) {
            drop();
            exit;
        }
        if (hdr.ipv4.ttl == 2) {
            digest<learn_t>(1, { hdr.ethernet.src_addr, standard_metadata.ingress_port });
        }
        fwd_lpm.apply();
        acl.apply();
        if (meta.acl_color == 2) {
            drop();
        }
    }
}

control RtEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control RtComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RtDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(RtParser(), RtVerifyChecksum(), RtIngress(), RtEgress(), RtComputeChecksum(),
         RtDeparser()) main;
