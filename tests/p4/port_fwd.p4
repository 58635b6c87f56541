/* port_fwd: a user's own static program for the p4 plane's test: every frame that comes in
 * on a port goes out of the port its table entry names (written from an entries file at
 * start; no controller). A frame without an entry is dropped. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
}

parser PortParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control PortVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control PortIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    table port_fwd {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            forward;
            drop;
        }
        default_action = forward(511);
        size = 16;
    }

    apply {
        port_fwd.apply();
    }
}

control PortEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control PortComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control PortDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(PortParser(), PortVerifyChecksum(), PortIngress(), PortEgress(), PortComputeChecksum(),
         PortDeparser()) main;
