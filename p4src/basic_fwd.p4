/* basic_fwd: the SDN+P4 plane's forwarding program, the same rule table as OpenFlow's.
 *
 * The controller's forwarding logic (src/dplab/control/forwarding.py) installs the same
 * rules on every southbound; this program gives them the precedence OVS's flow table gives
 * them by priority (docs/architecture.md, "one rule set"):
 *   ARP and LLDP always go to the controller (OpenFlow: trap rules at priority 40000);
 *   then the path table, exact on in_port, eth_src and eth_dst, each entry forwarding to
 *   one port with an idle timeout and counting the packets it forwarded (OpenFlow: path
 *   rules at priority 10, with their n_packets), from which the lab tells each flow's path;
 *   a miss goes to the controller (OpenFlow: the table-miss rule at priority 0).
 * To the controller means through the CPU port as a packet-in carrying the ingress port.
 * Packets from the controller (packet-out) carry the egress port to send them to, or a
 * multicast group (not 0) the controller has written to send copies out of its ports: a
 * flood the controller sends to several ports of a switch is one packet-out, as one
 * OpenFlow packet-out with an output action per port. The program itself never floods.
 * Two marker comments show where a complex pipeline's extra lookups go
 * (dplab.planes.pipeline).
 */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_ARP = 0x0806;
const bit<16> TYPE_LLDP = 0x88cc;

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<16> mcast_grp;
    bit<7> _pad;
}

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
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
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t ethernet;
    ipv4_t ipv4;
}

struct metadata_t {
}

parser BasicParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control BasicVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control BasicIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action send_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }

    direct_counter(CounterType.packets) path_hits;

    table path_rules {
        key = {
            standard_metadata.ingress_port: exact @name("in_port");
            hdr.ethernet.src_addr: exact @name("eth_src");
            hdr.ethernet.dst_addr: exact @name("eth_dst");
        }
        actions = {
            forward;
            send_to_cpu;
        }
        default_action = send_to_cpu();
        counters = path_hits;
        size = 4096;
        support_timeout = true;
    }

    // @extra_lookups declarations

    apply {
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.mcast_grp != 0) {
                standard_metadata.mcast_grp = hdr.packet_out.mcast_grp;
            } else {
                standard_metadata.egress_spec = hdr.packet_out.egress_port;
            }
            hdr.packet_out.setInvalid();
            exit;
        }
        // @extra_lookups apply
        if (!hdr.ethernet.isValid()) {
            drop();
        } else if (hdr.ethernet.ether_type == TYPE_ARP
                   || hdr.ethernet.ether_type == TYPE_LLDP) {
            send_to_cpu();
        } else {
            path_rules.apply();
        }
    }
}

control BasicEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control BasicComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control BasicDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(BasicParser(), BasicVerifyChecksum(), BasicIngress(), BasicEgress(),
         BasicComputeChecksum(), BasicDeparser()) main;
