"""The forwarding logic against a fake fabric standing in for the southbound (unit test).

The fake fabric is a ring of four switches with one host each. It applies the rules the
logic installs, hands table misses (and all LLDP/ARP, like the trap rules) back as
packet-ins, and records what reaches each host.
"""

from __future__ import annotations

import socket
import struct

import pytest

from dplab.control import packets
from dplab.control.forwarding import PROACTIVE, REACTIVE, Forwarding
from dplab.control.topology_view import PortRef

RING = {  # port 1 faces the host, ports 2 and 3 the neighbours
    PortRef("s1", 2): PortRef("s2", 3), PortRef("s2", 2): PortRef("s3", 3),
    PortRef("s3", 2): PortRef("s4", 3), PortRef("s4", 2): PortRef("s1", 3),
}


def mac(i: int) -> str:
    return f"00:00:00:00:00:{i:02x}"


def ip(i: int) -> str:
    return f"10.0.0.{i}"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeFabric:
    """Southbound that behaves like four OpenFlow switches wired in a ring."""

    def __init__(self) -> None:
        self.wires = {**RING, **{b: a for a, b in RING.items()}}
        self.host_at = {PortRef(f"s{i}", 1): i for i in range(1, 5)}
        self.rules: dict[tuple[str, int, str, str], tuple[int, int]] = {}
        self.received: dict[int, list[bytes]] = {i: [] for i in range(1, 5)}
        self.outs_into_links = 0
        self.logic: Forwarding

    def install_path_rule(self, switch, in_port, eth_src, eth_dst, out_port, idle_timeout):
        self.rules[(switch, in_port, eth_src, eth_dst)] = (out_port, idle_timeout)

    def packet_out(self, switch, ports, data):
        for port in ports:
            self.emit(PortRef(switch, port), data)

    def emit(self, out: PortRef, data: bytes) -> None:
        if out in self.host_at:
            if packets.parse_ethernet(data).ethertype != packets.ETH_LLDP:  # hosts ignore probes
                self.received[self.host_at[out]].append(data)
        elif out in self.wires:
            if packets.parse_ethernet(data).ethertype != packets.ETH_LLDP:
                self.outs_into_links += 1
            self.arrive(self.wires[out], data)

    def arrive(self, at: PortRef, data: bytes) -> None:
        frame = packets.parse_ethernet(data)
        rule = self.rules.get((at.switch, at.port, frame.src, frame.dst))
        if rule is None or frame.ethertype in (packets.ETH_ARP, packets.ETH_LLDP):
            self.logic.packet_in(at.switch, at.port, data)
        else:
            self.emit(PortRef(at.switch, rule[0]), data)

    def host_sends(self, host: int, data: bytes) -> None:
        self.arrive(PortRef(f"s{host}", 1), data)


def arp_request(src: int, dst: int) -> bytes:
    body = struct.pack(
        "!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, packets.ARP_REQUEST,
        packets.mac_to_bytes(mac(src)), socket.inet_aton(ip(src)),
        bytes(6), socket.inet_aton(ip(dst)))
    return packets.build_ethernet(packets.BROADCAST_MAC, mac(src), packets.ETH_ARP, body)


def arp_reply(src: int, dst: int) -> bytes:
    request = packets.parse_arp(packets.parse_ethernet(arp_request(dst, src)).payload)
    return packets.build_arp_reply(request, mac(src))


def ipv4(src: int, dst: int) -> bytes:
    header = bytes(12) + socket.inet_aton(ip(src)) + socket.inet_aton(ip(dst))
    return packets.build_ethernet(mac(dst), mac(src), packets.ETH_IPV4, header + b"payload")


def start(mode: str, discover: bool = True) -> tuple[FakeFabric, Forwarding, FakeClock]:
    fabric, clock = FakeFabric(), FakeClock()
    logic = Forwarding(fabric, mode, clock)
    fabric.logic = logic
    for i in range(1, 5):
        logic.switch_up(f"s{i}", [1, 2, 3])
    if discover:
        clock.now += 1
        logic.tick()
    return fabric, logic, clock


def learn_hosts(fabric: FakeFabric) -> None:
    """Every host resolves its ring successor, as the plane's start-up pings make them do."""
    for i in range(1, 5):
        nxt = i % 4 + 1
        fabric.host_sends(i, arp_request(i, nxt))
        fabric.host_sends(nxt, arp_reply(nxt, i))


def test_lldp_discovers_the_ring_and_host_ports_are_edges():
    _, logic, _ = start(REACTIVE)
    assert logic.counters()["lldp_links"] == 4
    assert logic.topology.edge_ports("s1") == [1]
    assert logic.counters()["packet_ins_lldp"] >= 8


def test_unknown_arp_target_is_flooded_to_edges_only_then_answered_by_controller():
    fabric, logic, _ = start(REACTIVE)
    fabric.host_sends(1, arp_request(1, 3))
    assert [len(fabric.received[i]) for i in (2, 3, 4)] == [1, 1, 1]
    assert fabric.received[1] == []  # not back to the asker
    assert fabric.outs_into_links == 0
    fabric.host_sends(3, arp_reply(3, 1))
    reply = packets.parse_arp(packets.parse_ethernet(fabric.received[1][-1]).payload)
    assert reply.sender_ip == ip(3)

    fabric.host_sends(2, arp_request(2, 1))  # h1 is known now: the controller answers itself
    answer = packets.parse_arp(packets.parse_ethernet(fabric.received[2][-1]).payload)
    assert (answer.op, answer.sender_mac, answer.target_mac) == (packets.ARP_REPLY, mac(1), mac(2))
    assert logic.counters()["arp_replies"] == 1
    assert logic.counters()["hosts"] == 3


def test_reactive_installs_the_shortest_path_and_later_packets_skip_the_controller():
    fabric, logic, _ = start(REACTIVE)
    learn_hosts(fabric)
    before = logic.counters()["packet_ins"]
    seen_by_h2 = len(fabric.received[2])
    fabric.host_sends(1, ipv4(1, 2))
    assert fabric.received[2][-1] == ipv4(1, 2)
    assert fabric.rules == {
        ("s1", 1, mac(1), mac(2)): (2, 10),
        ("s2", 3, mac(1), mac(2)): (1, 10),
    }
    fabric.host_sends(1, ipv4(1, 2))
    counters = logic.counters()
    assert counters["packet_ins"] == before + 1
    assert counters["flow_installs"] == 2
    assert counters["flows_set_up"] == 1
    assert counters["setup_ms_p50"] is not None and counters["setup_ms_max"] >= 0.0
    assert len(fabric.received[2]) == seen_by_h2 + 2  # the second one went by the rules


def test_packets_in_flight_during_a_set_up_are_forwarded_without_a_second_set_up():
    fabric, logic, clock = start(REACTIVE)
    learn_hosts(fabric)
    fabric.host_sends(1, ipv4(1, 3))
    installs = logic.counters()["flow_installs"]
    logic.packet_in("s1", 1, ipv4(1, 3))  # a second packet that beat the rules to s1
    assert fabric.received[3][-2:] == [ipv4(1, 3)] * 2
    assert logic.counters()["flow_installs"] == installs
    assert logic.counters()["flows_set_up"] == 1
    assert logic.pair_packet_ins() == {f"{mac(1)} {mac(3)}": 2}  # ARP not counted
    clock.now += 11  # rules idled out: the next packet-in is a new set-up
    logic.packet_in("s1", 1, ipv4(1, 3))
    assert logic.counters()["flows_set_up"] == 2


def test_proactive_installs_every_pair_before_any_data_packet():
    fabric, logic, _ = start(PROACTIVE)
    learn_hosts(fabric)
    assert logic.counters()["proactive_pairs"] == 12
    assert all(timeout == 0 for _, timeout in fabric.rules.values())
    before = logic.counters()["packet_ins"]
    for src in range(1, 5):
        for dst in range(1, 5):
            if src != dst:
                fabric.host_sends(src, ipv4(src, dst))
                assert fabric.received[dst][-1] == ipv4(src, dst)
    assert logic.counters()["packet_ins"] == before
    assert logic.counters()["setup_ms_mean"] is None


def test_arp_before_discovery_cannot_storm_the_ring():
    fabric, logic, _ = start(REACTIVE, discover=False)
    logic.topology = type(logic.topology)()  # forget the probes of switch_up
    for i in range(1, 5):
        logic.topology.add_switch(f"s{i}", [1, 2, 3])
    fabric.host_sends(1, arp_request(1, 3))
    counters = logic.counters()
    assert counters["arp_floods"] == 1
    assert counters["packet_ins_arp"] <= 9  # at most one copy per fabric port, then it dies
    assert logic.hosts.location == {mac(1): PortRef("s1", 1)}  # copies taught nothing wrong


def test_a_cut_link_ages_out_and_proactive_paths_go_around_it():
    fabric, logic, clock = start(PROACTIVE)
    learn_hosts(fabric)
    del fabric.wires[PortRef("s1", 2)], fabric.wires[PortRef("s2", 3)]
    for _ in range(30):
        clock.now += 0.5
        logic.tick()
    assert logic.counters()["lldp_links"] == 3
    fabric.host_sends(1, ipv4(1, 2))
    assert fabric.received[2][-1] == ipv4(1, 2)
    assert fabric.rules[("s1", 1, mac(1), mac(2))] == (3, 0)


def test_links_stay_while_the_controller_hears_no_probe_at_all():
    fabric, logic, clock = start(REACTIVE)
    fabric.wires.clear()  # as if packet-ins were stuck in a busy controller's queue
    for _ in range(30):
        clock.now += 0.5
        logic.tick()
    assert logic.counters()["lldp_links"] == 4


def test_multicast_other_than_arp_is_dropped():
    fabric, logic, _ = start(REACTIVE)
    frame = packets.build_ethernet("33:33:00:00:00:01", mac(1), 0x86DD, bytes(40))
    fabric.host_sends(1, frame)
    assert logic.counters()["dropped"] == 1
    assert all(not got for got in fabric.received.values())


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="'fast'"):
        Forwarding(FakeFabric(), "fast")


def test_lldp_probe_round_trip_and_bad_frames():
    frame = packets.parse_ethernet(packets.build_lldp("s12", 7, "02:00:00:00:00:01"))
    assert frame.dst == packets.LLDP_MULTICAST_MAC
    assert packets.parse_lldp(frame.payload) == ("s12", 7)
    with pytest.raises(packets.PacketError, match="shorter"):
        packets.parse_ethernet(b"\x00" * 5)
    with pytest.raises(packets.PacketError, match="chassis"):
        packets.parse_lldp(b"\x00\x00")
