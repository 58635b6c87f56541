/* One-shot action selector programming (P4Runtime spec 9.2.3): two tables sharing a small
   selector with a max_group_size (ecmp, ecmp_by_src), one with a selector of its own and no
   max_group_size (wide), and one with an action profile without selector (l2). */
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

parser OneShotParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 17: ports; default: accept; }
    }
    state ports { packet.extract(hdr.ports); transition accept; }
}

control OneShotVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control OneShotIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) ecmp_hits;
    @max_group_size(8) action_selector(HashAlgorithm.crc16, 32w16, 32w14) ecmp_sel;
    action_profile(32w8) l2_profile;

    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action drop() { mark_to_drop(standard_metadata); }

    table ecmp {
        key = {
            hdr.ipv4.dst: lpm;
            hdr.ipv4.src: selector;
            hdr.ipv4.dst: selector;
            hdr.ports.src: selector;
            hdr.ports.dst: selector;
        }
        actions = { forward; drop; }
        implementation = ecmp_sel;
        counters = ecmp_hits;
    }

    table ecmp_by_src {
        key = { hdr.ipv4.src: exact; hdr.ports.src: selector; }
        actions = { forward; drop; }
        implementation = ecmp_sel;
    }

    table wide {
        key = { hdr.ipv4.ttl: exact; hdr.ports.src: selector; }
        actions = { forward; drop; }
        // p4c names a profile made in place only by its @name (here its table's)
        @name("OneShotIngress.wide")
        implementation = action_selector(HashAlgorithm.crc16, 32w4096, 32w14);
    }

    table l2 {
        key = { hdr.ethernet.dst: exact; }
        actions = { forward; drop; }
        implementation = l2_profile;
    }

    apply {
        mark_to_drop(standard_metadata);
        if (hdr.ipv4.isValid()) {
            if (!ecmp_by_src.apply().hit) {
                if (!wide.apply().hit) {
                    ecmp.apply();
                }
            }
        } else {
            l2.apply();
        }
    }
}

control OneShotEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) { apply { } }
control OneShotCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control OneShotDeparser(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); packet.emit(hdr.ports); }
}

V1Switch(OneShotParser(), OneShotVerify(), OneShotIngress(), OneShotEgress(),
         OneShotCompute(), OneShotDeparser()) main;
