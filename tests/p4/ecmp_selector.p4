/* ECMP over an action selector, and L2 forwarding through a shared action profile: the
   tables a controller like ONOS programs with ActionProfileMember/ActionProfileGroup. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> total_len; bit<16> id;
    bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol; bit<16> checksum;
    bit<32> src; bit<32> dst;
}
header ports_t { bit<16> src; bit<16> dst; }
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; ports_t ports; }
struct metadata_t { }

parser EcmpParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 6: ports; 17: ports; default: accept; }
    }
    state ports { packet.extract(hdr.ports); transition accept; }
}

control EcmpVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control EcmpIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) ecmp_hits;
    action_profile(32w64) l2_profile;

    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action drop() { mark_to_drop(standard_metadata); }

    table ecmp {
        key = {
            hdr.ipv4.dst: lpm;
            hdr.ipv4.src: selector;
            hdr.ipv4.dst: selector;
            hdr.ipv4.protocol: selector;
            hdr.ports.src: selector;
            hdr.ports.dst: selector;
        }
        actions = { forward; drop; }
        // p4c names a profile made in place only by its @name (here its table's)
        @name("EcmpIngress.ecmp")
        implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);
        counters = ecmp_hits;
        size = 256;
    }

    table l2 {
        key = { hdr.ethernet.dst: exact; }
        actions = { forward; drop; }
        implementation = l2_profile;
    }

    apply {
        mark_to_drop(standard_metadata);
        if (hdr.ipv4.isValid()) {
            ecmp.apply();
        } else {
            l2.apply();
        }
    }
}

control EcmpEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) { apply { } }
control EcmpCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control EcmpDeparser(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); packet.emit(hdr.ports); }
}

V1Switch(EcmpParser(), EcmpVerify(), EcmpIngress(), EcmpEgress(), EcmpCompute(),
         EcmpDeparser()) main;
