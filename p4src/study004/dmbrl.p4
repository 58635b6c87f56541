/* study 004 (DMB-RL), data plane: ToS classes, an indirect meter per class, a second look
 * for high-priority packets the meter marks RED, low priority spread over N routes.
 *
 * - `tos_class` (ternary on the IPv4 diffserv byte and on whether this is the packet's
 *   second pass) runs `set_class(class_id, meter_index)`, which executes the indirect meter
 *   `class_meter` (bytes: the study's rates are bandwidths) at the class's cell. A miss is
 *   best effort: class 0, meter cell 0. Class 0 is the low-priority class; every other
 *   class is high priority.
 * - High priority marked RED on its first pass is not dropped but recirculated once
 *   (its class and a `recirculated` flag kept in field list 0) and metered again on the
 *   second pass; RED again: dropped. Low priority marked RED: dropped at once.
 * - Forwarding: high priority (and anything not metered RED) by `ipv4_lpm`; low priority
 *   by `low_routes`, keyed on the destination and a crc16 hash of the 5-tuple modulo
 *   N_ROUTES (so one flow keeps one route); non-IPv4 frames (ARP) by `port_fwd`.
 * - Counters: `class_bytes` (per class, first pass only: the arrival load the control loop
 *   reads as C_curr - C_prev) and `colour_packets` (cell pass * 3 + colour, pass 0 or 1).
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<8> PROTO_TCP = 6;
const bit<8> PROTO_UDP = 17;
const bit<8> CLASS_LOW = 0;
const bit<16> N_ROUTES = 3;
// v1model's meter colours (p4c's v1model.p4 has them as V1MODEL_METER_COLOR_*; ours not).
const bit<2> COLOUR_RED = 2;

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

// The first four bytes of TCP and UDP alike: the two ports the route hash reads.
header ports_t {
    bit<16> src_port;
    bit<16> dst_port;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
    ports_t ports;
}

struct metadata_t {
    @field_list(0)
    bit<8> class_id;
    @field_list(0)
    bit<1> recirculated;
    bit<1> to_recirculate;
    bit<2> colour;
    bit<16> route;
}

parser DmbParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, PROTO_TCP): parse_ports;
            (5, 0, PROTO_UDP): parse_ports;
            default: accept;
        }
    }

    state parse_ports {
        packet.extract(hdr.ports);
        transition accept;
    }
}

control DmbVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DmbIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    meter(64, MeterType.bytes) class_meter;
    counter(64, CounterType.bytes) class_bytes;
    counter(6, CounterType.packets) colour_packets;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action set_class(bit<8> class_id, bit<32> meter_index) {
        meta.class_id = class_id;
        class_meter.execute_meter(meter_index, meta.colour);
    }

    table tos_class {
        key = {
            hdr.ipv4.diffserv: ternary;
            meta.recirculated: ternary;
        }
        actions = {
            set_class;
        }
        default_action = set_class(CLASS_LOW, 0);
        size = 64;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dst_addr: lpm;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    table low_routes {
        key = {
            hdr.ipv4.dst_addr: lpm;
            meta.route: exact;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    table port_fwd {
        key = {
            standard_metadata.ingress_port: exact;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        size = 512;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            port_fwd.apply();
            return;
        }
        tos_class.apply();
        if (meta.recirculated == 0) {
            class_bytes.count((bit<32>) meta.class_id);
        }
        colour_packets.count((bit<32>) meta.recirculated * 3 + (bit<32>) meta.colour);
        if (meta.colour == COLOUR_RED) {
            if (meta.class_id != CLASS_LOW && meta.recirculated == 0) {
                // Recirculation happens after egress; the port only has to be a real one.
                meta.to_recirculate = 1;
                standard_metadata.egress_spec = standard_metadata.ingress_port;
            } else {
                drop();
            }
        } else if (meta.class_id == CLASS_LOW) {
            hash(meta.route, HashAlgorithm.crc16, (bit<16>) 0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                   hdr.ports.src_port, hdr.ports.dst_port },
                 N_ROUTES);
            low_routes.apply();
        } else {
            ipv4_lpm.apply();
        }
    }
}

control DmbEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (meta.to_recirculate == 1) {
            meta.recirculated = 1;
            recirculate_preserving_field_list(0);
        }
    }
}

control DmbComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DmbDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ports);
    }
}

V1Switch(DmbParser(), DmbVerifyChecksum(), DmbIngress(), DmbEgress(), DmbComputeChecksum(),
         DmbDeparser()) main;
