"""The P4Runtime controller app on one real switch (rig namespaces) running basic_fwd.p4
behind a real P4Runtime server: LLDP probes go out, ARP is flooded and answered by the
controller (a unicast ARP too, even where a path rule would match it; a flood is one
packet-out through a multicast group the controller wrote), a unicast flow gets
a table entry on in_port, eth_src and eth_dst, and later packets of it pass without the
controller."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time

import pytest
from p4runtime_rig import compile_with_info
from switch_rig import udp_frame
from test_p4runtime_server import ROOT, server  # noqa: F401  (fixture)

from dplab.control import packets

pytestmark = pytest.mark.net
A_MAC, B_MAC = "00:00:00:00:00:01", "00:00:00:00:00:02"


def arp(op: int, src_mac: str, src_ip: str, dst_mac: str, dst_ip: str,
        unicast: bool = False) -> bytes:
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, packets.mac_to_bytes(src_mac),
                       bytes(map(int, src_ip.split("."))), packets.mac_to_bytes(dst_mac),
                       bytes(map(int, dst_ip.split("."))))
    eth_dst = packets.BROADCAST_MAC if op == packets.ARP_REQUEST and not unicast else dst_mac
    return packets.build_ethernet(eth_dst, src_mac, packets.ETH_ARP, body)


def ethertypes(frames: list[bytes]) -> set[int]:
    return {int.from_bytes(f[12:14], "big") for f in frames}


def counters(path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(ROOT / "p4src" / "basic_fwd.p4", tmp_path_factory.mktemp("p4"))


@pytest.fixture()
def controller(server, program, tmp_path):  # noqa: F811
    rig, address = server
    config = tmp_path / "controller.json"
    stats = tmp_path / "stats.json"
    p4info = tmp_path / "basic_fwd.p4info.bin"
    p4info.write_bytes(program[1].SerializeToString())
    config.write_text(json.dumps({"ir": str(program[0]), "p4info": str(p4info), "switches": {
        "s1": {"address": address, "device_id": 1, "ports": [1, 2, 3]}}}))
    proc = subprocess.Popen([sys.executable, "-m", "dplab.control.p4runtime_app", "--config",
                             str(config), "--mode", "reactive", "--stats-file", str(stats)])
    try:
        assert wait_for(lambda: counters(stats).get("switches") == 1), "switch never came up"
        yield rig, stats
    finally:
        proc.terminate()
        proc.wait(5)


def test_controller_discovers_floods_arp_and_installs_flows(controller):
    rig, stats = controller
    assert packets.ETH_LLDP in ethertypes(rig.capture(0.5)[1])  # probes via packet-out
    rig.drain()
    rig.send(1, arp(packets.ARP_REQUEST, A_MAC, "10.0.0.1", "00:00:00:00:00:00", "10.0.0.2"))
    flooded = rig.capture(0.5)
    # One packet-out naming a multicast group of the ports but the in-port: one copy each.
    assert [ethertypes([f]) for f in flooded[2] + flooded[3]].count({packets.ETH_ARP}) == 2
    assert packets.ETH_ARP in ethertypes(flooded[2]) and packets.ETH_ARP in ethertypes(flooded[3])
    assert packets.ETH_ARP not in ethertypes(flooded[1])
    groups = rig.client.call("mcast_group_read")["groups"]
    assert [sorted(r["port"] for r in g["replicas"]) for g in groups] == [[2, 3]]
    rig.send(2, arp(packets.ARP_REPLY, B_MAC, "10.0.0.2", A_MAC, "10.0.0.1"))
    assert packets.ETH_ARP in ethertypes(rig.capture(0.5)[1])
    frame = udp_frame(B_MAC, A_MAC, "10.0.0.1", "10.0.0.2")
    rig.send(1, frame)  # first packet: packet-in, rule installed, packet-out
    assert frame in rig.capture(0.5)[2]
    assert wait_for(lambda: counters(stats).get("flow_installs", 0) >= 1)
    before = counters(stats)["packet_ins"]
    rig.send(1, frame)  # now the table forwards it
    assert frame in rig.capture()[2]
    time.sleep(0.6)
    assert counters(stats)["packet_ins"] == before  # the controller never saw it
    entries = rig.client.call("table_read", table="BasicIngress.path_rules")["entries"]
    assert [([m["v"] for m in e["match"]], e["action"]["args"]) for e in entries] == [
        (["0x1", "0x1", "0x2"], ["0x2"])]  # in_port 1, A -> B: out of port 2
    assert entries[0]["packets"] >= 1
    # A unicast ARP matching that rule still goes to the controller, which answers it.
    rig.drain()
    rig.send(1, arp(packets.ARP_REQUEST, A_MAC, "10.0.0.1", B_MAC, "10.0.0.2", unicast=True))
    replies = rig.capture(0.5)
    # Port 2 gets no ARP (the controller's LLDP probes go out of every port at any time).
    assert packets.ETH_ARP in ethertypes(replies[1])
    assert packets.ETH_ARP not in ethertypes(replies[2])
    assert wait_for(lambda: counters(stats)["packet_ins_arp"] >= 3)
