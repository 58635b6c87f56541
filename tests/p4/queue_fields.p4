/* queue_fields: copies standard_metadata's queue fields into a header so a test can read
 * them on the wire. Every frame from port 1 goes to multicast group 1 (the test makes its
 * replicas all leave by one port); egress writes what the traffic manager set. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* Written by egress: the queue fields and the two global timestamps, byte-aligned. */
header queue_report_t {
    bit<32> enq_timestamp;
    bit<13> pad0;
    bit<19> enq_qdepth;
    bit<32> deq_timedelta;
    bit<13> pad1;
    bit<19> deq_qdepth;
    bit<48> ingress_global_timestamp;
    bit<48> egress_global_timestamp;
    bit<16> egress_rid;
}

struct headers_t {
    ethernet_t     ethernet;
    queue_report_t report;
}

struct metadata_t {
}

parser QueueParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control QueueVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control QueueIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.mcast_grp = 1;
    }
}

control QueueEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        hdr.report.setValid();
        hdr.report.enq_timestamp = standard_metadata.enq_timestamp;
        hdr.report.pad0 = 0;
        hdr.report.enq_qdepth = standard_metadata.enq_qdepth;
        hdr.report.deq_timedelta = standard_metadata.deq_timedelta;
        hdr.report.pad1 = 0;
        hdr.report.deq_qdepth = standard_metadata.deq_qdepth;
        hdr.report.ingress_global_timestamp = standard_metadata.ingress_global_timestamp;
        hdr.report.egress_global_timestamp = standard_metadata.egress_global_timestamp;
        hdr.report.egress_rid = standard_metadata.egress_rid;
    }
}

control QueueComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control QueueDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.report);
    }
}

V1Switch(QueueParser(), QueueVerifyChecksum(), QueueIngress(), QueueEgress(),
         QueueComputeChecksum(), QueueDeparser()) main;
