"""Reactive flow set-up on a chain of P4 switches (real switches, P4Runtime server,
controller): the packet-out of a flow's first packet leaves only once every switch it
will meet holds the flow's rule (its own switch's rule is written after the packet-out,
control/p4runtime_app.py), so the first packet crosses the chain with one packet-in and
is a table hit on every later switch; every switch of the path holds the rule afterwards,
and the flow's later packets are table hits everywhere, with no packet-in."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from dplab import planes
from dplab.planes.base import farthest_hosts
from dplab.substrate import Network
from dplab.topology import catalog

pytestmark = pytest.mark.net
SWITCHES = 3
COUNTERS_WAIT_S = 10.0
LATER_PINGS = 3


def test_a_first_packet_crosses_the_chain_on_rules_already_in_place() -> None:
    topo = catalog.build("linear", switches=SWITCHES, hosts_per_switch=2, core_bw=None,
                         edge_bw=None)
    with planes.running("p4", {"mode": "reactive"}, topo, 60) as (net, plane):
        a, b = _fresh_pair(net)  # wait_ready's ping set up the farthest pair's paths
        before = _settled(plane.stats_file)  # wait_ready's set-ups counted
        ping = net.run(net.host_ns(a), ["ping", "-c1", "-W5", "-n", net.host_ip(b)],
                       check=False)
        assert ping.returncode == 0, ping.stdout  # the first packet there and its reply back
        after = _counters_once(plane.stats_file, lambda c: c["flows_set_up"]
                               >= before["flows_set_up"] + 2)
        # One set-up per direction, each from one packet-in: no switch of the path missed
        # the rule when the packet-out reached it (a miss would be one more packet-in).
        assert after["flows_set_up"] - before["flows_set_up"] == 2
        assert _host_packet_ins(after) - _host_packet_ins(before) == 2
        first = {s: _hits(plane.dir / f"{s}.sock") for s in net.topo.switches()}
        ab, ba = (net.host_mac(a), net.host_mac(b)), (net.host_mac(b), net.host_mac(a))
        for switch, hits in first.items():
            assert {ab, ba} <= hits.keys(), switch
        _assert_first_packets_hit(net, first, a, b)
        ping = net.run(net.host_ns(a), ["ping", "-c", str(LATER_PINGS), "-i", "0.2", "-W5",
                                        "-n", net.host_ip(b)], check=False)
        assert ping.returncode == 0, ping.stdout
        later = _settled(plane.stats_file)
        assert later["flows_set_up"] == after["flows_set_up"]
        assert _host_packet_ins(later) == _host_packet_ins(after)  # no switch missed
        for switch in net.topo.switches():  # and each counted them: every packet, both ways
            hits = _hits(plane.dir / f"{switch}.sock")
            for pair in (ab, ba):
                assert hits[pair] - first[switch][pair] >= LATER_PINGS, (switch, pair)


def _assert_first_packets_hit(net: Network, hits: dict[str, dict[str, int]], a: str,
                              b: str) -> None:
    """The first packet each way left its packet-in's switch as a packet-out (which skips
    that switch's table) and was a table hit on each later switch: its rule was there."""
    switches = net.topo.switches()  # a hangs on the first, b on the last
    ab, ba = (net.host_mac(a), net.host_mac(b)), (net.host_mac(b), net.host_mac(a))
    towards_b = [hits[s][ab] for s in switches]
    towards_a = [hits[s][ba] for s in reversed(switches)]
    assert towards_b == [0] + [1] * (SWITCHES - 1)
    assert towards_a == [0] + [1] * (SWITCHES - 1)


def _fresh_pair(net: Network) -> tuple[str, str]:
    """A host on the first switch and one on the last, neither of the farthest pair."""
    graph, switches = net.topo.graph, net.topo.switches()
    used = set(farthest_hosts(net))
    first = [h for h in net.topo.hosts() if graph.has_edge(h, switches[0]) and h not in used]
    last = [h for h in net.topo.hosts() if graph.has_edge(h, switches[-1]) and h not in used]
    return first[0], last[0]


def _counters(stats_file: Path) -> dict:
    return json.loads(stats_file.read_text())


def _settled(stats_file: Path) -> dict:
    """The counters once the set-ups and host packet-ins stop changing for a while."""
    deadline = time.monotonic() + COUNTERS_WAIT_S
    last = _counters(stats_file)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _counters(stats_file)
        if (now["flows_set_up"], _host_packet_ins(now)) == (last["flows_set_up"],
                                                             _host_packet_ins(last)):
            break
        last = now
    return last


def _counters_once(stats_file: Path, done) -> dict:
    """The counters once ``done`` holds for them (the file is rewritten every 0.1 s)."""
    deadline = time.monotonic() + COUNTERS_WAIT_S
    while not done(_counters(stats_file)) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)  # and a little longer: a late packet-in would be counted by then
    return _counters(stats_file)


def _host_packet_ins(counters: dict) -> float:
    """Packet-ins of host frames other than ARP (ICMP here)."""
    return counters["packet_ins"] - counters["packet_ins_lldp"] - counters["packet_ins_arp"]


def _hits(control_socket: Path) -> dict[tuple[str, str], int]:
    """Packets counted by each of the switch's path_rules entries, by source and
    destination MAC (its control socket)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(control_socket))
        sock.sendall(json.dumps({"id": 1, "cmd": "table_read",
                                 "table": "BasicIngress.path_rules"}).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            assert chunk, "the switch closed its control socket"
            reply += chunk
    entries = json.loads(reply)["result"]["entries"]
    # match: in_port, eth_src, eth_dst
    return {(_mac(e["match"][1]["v"]), _mac(e["match"][2]["v"])): e["packets"] for e in entries}


def _mac(value: str) -> str:
    digits = value.removeprefix("0x").rjust(12, "0")
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))
