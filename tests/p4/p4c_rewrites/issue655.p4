// dplab's own rewrite of p4lang/p4c testdata/p4_16_samples/issue655-bmv2.p4: a 16-bit
// counter incremented by ingress and guarded by a csum16 over it, verified on the way in
// and recomputed on the way out.
#include <core.p4>
#include <v1model.p4>

header H {
    bit<16> d;  // the counter
    bit<16> c;  // its csum16
}

struct Parsed_packet { H h; }

struct Metadata { }

parser parserI(packet_in pkt, out Parsed_packet hdr, inout Metadata meta,
               inout standard_metadata_t stdmeta) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control vc(inout Parsed_packet hdr, inout Metadata meta) {
    apply { verify_checksum(true, { hdr.h.d }, hdr.h.c, HashAlgorithm.csum16); }
}

control cIngress(inout Parsed_packet hdr, inout Metadata meta,
                 inout standard_metadata_t stdmeta) {
    apply {
        hdr.h.d = hdr.h.d + 1;
        // Added for our rig: back out of the port it came in on. The original leaves
        // egress_spec 0, the port p4c's test sends on; our ports start at 1.
        stdmeta.egress_spec = stdmeta.ingress_port;
    }
}

control cEgress(inout Parsed_packet hdr, inout Metadata meta,
                inout standard_metadata_t stdmeta) {
    apply { }
}

control uc(inout Parsed_packet hdr, inout Metadata meta) {
    apply { update_checksum(true, { hdr.h.d }, hdr.h.c, HashAlgorithm.csum16); }
}

control DeparserI(packet_out packet, in Parsed_packet hdr) {
    apply { packet.emit(hdr.h); }
}

V1Switch(parserI(), vc(), cIngress(), cEgress(), uc(), DeparserI()) main;
