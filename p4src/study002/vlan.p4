/* study 002, workload "VLAN tagging": hosts send and receive untagged frames; the switch a
 * host is attached to pushes an 802.1Q tag on what the host sends, switches forward tagged
 * frames by (VLAN id, destination MAC), and the host's own switch pops the tag again.
 *
 * Ingress: an untagged frame gets the tag of its ingress port from `access_port` (only ports
 * facing hosts have an entry; an untagged frame on any other port is dropped). A tagged
 * frame goes by `vlan_fwd` to one port, or, unknown or broadcast, to multicast group 1
 * (every port of the switch on the spanning tree). Egress drops a flooded copy on the port it
 * came in on, and `access_egress` pops the tag on ports facing hosts.
 * The entries are derived from the topology by the p4 plane (option `vlan`). Two marker
 * comments show where a complex pipeline's extra lookups go (dplab.planes.pipeline).
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_VLAN = 0x8100;
const bit<16> FLOOD_GROUP = 1;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header vlan_t {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
    vlan_t vlan;
}

struct metadata_t {
    bit<9> ingress_port;  // where the frame came in, for the egress prune of flooded copies
}

parser VlanParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TYPE_VLAN: parse_vlan;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition accept;
    }
}

control VlanVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control VlanIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action push_tag(bit<12> vid) {
        hdr.vlan.setValid();
        hdr.vlan.pcp = 0;
        hdr.vlan.dei = 0;
        hdr.vlan.vid = vid;
        hdr.vlan.ether_type = hdr.ethernet.ether_type;
        hdr.ethernet.ether_type = TYPE_VLAN;
    }

    table access_port {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            push_tag;
            drop;
        }
        default_action = drop();
        size = 512;
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action flood() {
        standard_metadata.mcast_grp = FLOOD_GROUP;
    }

    table vlan_fwd {
        key = {
            hdr.vlan.vid: exact;
            hdr.ethernet.dst_addr: exact;
        }
        actions = {
            forward;
            flood;
            drop;
        }
        default_action = flood();
        size = 4096;
    }

    // @extra_lookups declarations

    apply {
        // @extra_lookups apply
        meta.ingress_port = standard_metadata.ingress_port;
        if (!hdr.vlan.isValid()) {
            access_port.apply();
        }
        if (hdr.vlan.isValid()) {
            vlan_fwd.apply();
        }
    }
}

control VlanEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    action pop_tag() {
        hdr.ethernet.ether_type = hdr.vlan.ether_type;
        hdr.vlan.setInvalid();
    }

    table access_egress {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            pop_tag;
            NoAction;
        }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (standard_metadata.mcast_grp == FLOOD_GROUP
                && standard_metadata.egress_port == meta.ingress_port) {
            mark_to_drop(standard_metadata);
        } else {
            access_egress.apply();
        }
    }
}

control VlanComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control VlanDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
    }
}

V1Switch(VlanParser(), VlanVerifyChecksum(), VlanIngress(), VlanEgress(),
         VlanComputeChecksum(), VlanDeparser()) main;
