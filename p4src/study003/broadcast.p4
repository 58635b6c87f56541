/* study 003, use case "broadcast": Ethernet broadcast (ARP requests among it) is replicated
 * to every other port; unicast is forwarded by a table.
 *
 * A frame to ff:ff:ff:ff:ff:ff goes to multicast group 1, which the entries file sets up
 * with every port of the switch; egress drops the copy for the port the frame came in on
 * (that port travels from ingress in the metadata), so no host hears its own broadcast and
 * no frame returns into the link it came from. Unicast frames go by table `mac_fwd`
 * (destination MAC -> port); an unknown destination is dropped.
 *
 * A wireless access point's wlan port is a shared medium: every station behind it hears
 * what goes out of it, so a broadcast that came in there must go back out there. Table
 * `shared_medium` names such ports (the wireless entries file); their copy is kept.
 */
#include <core.p4>
#include <v1model.p4>

const bit<48> BROADCAST_MAC = 0xffffffffffff;
const bit<16> BROADCAST_GROUP = 1;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<9> ingress_port;  // where the frame came in, for the egress prune of its copies
    bit<1> shared;        // it came in on a shared medium: its own port gets a copy too
}

parser BcastParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control BcastVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control BcastIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action keep_own_copy() {
        meta.shared = 1;
    }

    table shared_medium {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            keep_own_copy;
            NoAction;
        }
        default_action = NoAction();
        size = 64;
    }

    table mac_fwd {
        key = {
            hdr.ethernet.dst_addr: exact;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    apply {
        meta.ingress_port = standard_metadata.ingress_port;
        if (hdr.ethernet.dst_addr == BROADCAST_MAC) {
            standard_metadata.mcast_grp = BROADCAST_GROUP;
            shared_medium.apply();
        } else {
            mac_fwd.apply();
        }
    }
}

control BcastEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.mcast_grp == BROADCAST_GROUP && meta.shared == 0
                && standard_metadata.egress_port == meta.ingress_port) {
            mark_to_drop(standard_metadata);
        }
    }
}

control BcastComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control BcastDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(BcastParser(), BcastVerifyChecksum(), BcastIngress(), BcastEgress(),
         BcastComputeChecksum(), BcastDeparser()) main;
