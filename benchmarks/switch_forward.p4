/* switch_forward: the floor of the switch benchmark. Every frame leaves by the other one of
 * two ports; nothing is parsed, matched or rewritten, so what the switch spends on it is its
 * own packet I/O (and the interpreter's fixed cost per packet).
 */
#include <core.p4>
#include <v1model.p4>

struct headers_t {
}

struct metadata_t {
}

parser FwdParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        transition accept;
    }
}

control FwdVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FwdIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.ingress_port == 1) {
            standard_metadata.egress_spec = 2;
        } else {
            standard_metadata.egress_spec = 1;
        }
    }
}

control FwdEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control FwdComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FwdDeparser(packet_out packet, in headers_t hdr) {
    apply { }
}

V1Switch(FwdParser(), FwdVerifyChecksum(), FwdIngress(), FwdEgress(), FwdComputeChecksum(),
         FwdDeparser()) main;
