/* switch_features: one v1model program that exercises the switch's features.
 * Frames with ether_type 0x88b5 carry a test tag whose `kind` picks the feature; the
 * switch test (tests/test_switch_packets.py) sends them and checks what comes out.
 */
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

header tag_t {
    bit<8> kind;
    bit<8> value;
    bit<32> hash_value;
    bit<8> color;
    bit<8> instance;
}

struct headers_t {
    packet_in_t packet_in;
    packet_out_t packet_out;
    ethernet_t ethernet;
    tag_t tag;
}

struct metadata_t {
    @field_list(1)
    bit<8> marker;
}

struct learn_t {
    bit<48> src_addr;
    bit<9> port;
}

parser FeatParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
            0x88b5: parse_tag;
            default: accept;
        }
    }

    state parse_tag {
        packet.extract(hdr.tag);
        transition accept;
    }
}

control FeatVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FeatIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(8, CounterType.packets_and_bytes) port_counter;
    register<bit<8>>(4) accumulator;
    meter(4, MeterType.packets) rate_meter;

    action set_color(bit<8> color) {
        hdr.tag.color = color;
    }

    table classify {
        key = {
            hdr.tag.value: ternary;
        }
        actions = {
            set_color;
            NoAction;
        }
        default_action = NoAction();
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        if (!hdr.tag.isValid()) {
            mark_to_drop(standard_metadata);
            exit;
        }
        standard_metadata.egress_spec = 2;
        if (hdr.tag.kind == 1) {
            port_counter.count((bit<32>)standard_metadata.ingress_port);
        } else if (hdr.tag.kind == 2) {
            bit<8> total;
            accumulator.read(total, 0);
            total = total + hdr.tag.value;
            accumulator.write(0, total);
            hdr.tag.value = total;
        } else if (hdr.tag.kind == 3) {
            rate_meter.execute_meter((bit<32>)0, hdr.tag.color);
        } else if (hdr.tag.kind == 4) {
            hash(hdr.tag.hash_value, HashAlgorithm.crc32, 32w0, { hdr.ethernet.src_addr }, 32w65536);
        } else if (hdr.tag.kind == 5) {
            standard_metadata.mcast_grp = 1;
        } else if (hdr.tag.kind == 6) {
            clone(CloneType.I2E, 32w5);
        } else if (hdr.tag.kind == 7) {
            if (standard_metadata.instance_type == 0) {
                meta.marker = 0x5a;
                resubmit_preserving_field_list(1);
            } else {
                hdr.tag.instance = (bit<8>)standard_metadata.instance_type;
                hdr.tag.value = meta.marker;
            }
        } else if (hdr.tag.kind == 8) {
            if (standard_metadata.instance_type == 4) {
                hdr.tag.instance = 4;
                hdr.tag.value = meta.marker;
            }
        } else if (hdr.tag.kind == 9) {
            digest<learn_t>(1, { hdr.ethernet.src_addr, standard_metadata.ingress_port });
            mark_to_drop(standard_metadata);
        } else if (hdr.tag.kind == 10) {
            standard_metadata.egress_spec = CPU_PORT;
        } else if (hdr.tag.kind == 11) {
            classify.apply();
        } else {
            mark_to_drop(standard_metadata);
        }
    }
}

control FeatEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == 1) {
            hdr.tag.instance = 1;
        }
        if (standard_metadata.instance_type == 5) {
            hdr.tag.instance = 5;
            hdr.tag.value = (bit<8>)standard_metadata.egress_rid;
        }
        if (hdr.tag.isValid() && hdr.tag.kind == 8 && standard_metadata.instance_type == 0) {
            meta.marker = 0x77;
            recirculate_preserving_field_list(1);
        }
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control FeatComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FeatDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
    }
}

V1Switch(FeatParser(), FeatVerifyChecksum(), FeatIngress(), FeatEgress(), FeatComputeChecksum(),
         FeatDeparser()) main;
