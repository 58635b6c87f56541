/* flowcache: the p4lang tutorials' flow-cache idea on v1model. A packet of a flow not in
 * flow_cache goes to the controller (packet-in with its ingress port); the controller
 * forwards it by packet-out (its egress port in the packet_out header) and caches the
 * flow with an idle timeout; a cached flow's packets are forwarded; an entry
 * not hit for its idle timeout is reported to the controller (IdleTimeoutNotification),
 * which removes it (tests/test_p4runtime_flowcache.py). */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

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
    packet_in_t packet_in;
    packet_out_t packet_out;
    ethernet_t ethernet;
    ipv4_t ipv4;
}

struct metadata_t {
    bit<1> unused;
}

parser FlowParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
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

control FlowVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FlowIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    action cached(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action to_controller() {
        standard_metadata.egress_spec = CPU_PORT;
    }
    table flow_cache {
        key = {
            hdr.ipv4.protocol: exact;
            hdr.ipv4.src_addr: exact;
            hdr.ipv4.dst_addr: exact;
        }
        actions = { cached; to_controller; }
        default_action = to_controller();
        support_timeout = true;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (hdr.ipv4.isValid()) {
            flow_cache.apply();
        } else {
            mark_to_drop(standard_metadata);
        }
    }
}

control FlowEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control FlowComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FlowDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(FlowParser(), FlowVerifyChecksum(), FlowIngress(), FlowEgress(),
         FlowComputeChecksum(), FlowDeparser()) main;
