/* study 003, use case "drop": every packet is dropped, and counted per ingress port.
 *
 * The P4 counterpart of an XDP program returning XDP_DROP. Counter `dropped` (indexed by
 * the ingress port) holds packets and bytes, so a run can show what reached the switch.
 * No table: nothing to configure.
 */
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

parser DropParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control DropVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DropIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets_and_bytes) dropped;

    apply {
        dropped.count((bit<32>) standard_metadata.ingress_port);
        mark_to_drop(standard_metadata);
    }
}

control DropEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control DropComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DropDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(DropParser(), DropVerifyChecksum(), DropIngress(), DropEgress(),
         DropComputeChecksum(), DropDeparser()) main;
