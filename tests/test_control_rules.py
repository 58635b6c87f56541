"""One controller, identical rules, on every controlled plane (OVS over OpenFlow, the P4
switch over P4Runtime, XDP programs over BPF maps), on real networks.

- Concurrent reactive flows: on ``single`` (4 hosts) two TCP flows start together through
  the one switch; on ``multipath`` more rate-capped TCP flows than switches start together.
  Every flow gets near the rate it could have (the bridge's, measured in the same test;
  the cap on multipath); each flow is set up on its first packet each way and then left to
  the switches (at most a small share of its packets reach the controller).
- Rule-set equality: the same topology under every southbound, the same pings, and the
  path rules read back from the switches (OpenFlow: ``ovs-ofctl dump-flows``; P4Runtime:
  a Read of ``path_rules``; BPF maps: the ``rules`` map, with the timeouts the adapter
  keeps) are the same entry by entry, as are the packet-ins per pair;
  in proactive mode too (every pair's path, permanent).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from dplab import planes
from dplab.control.forwarding import PATH_RULE_PRIORITY, PERMANENT, REACTIVE_IDLE_TIMEOUT_S
from dplab.planes.base import Plane, farthest_hosts
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.workloads.flows import Flow, FlowResult, run_flows

pytestmark = pytest.mark.net
# southbound -> the plane it drives
SOUTHBOUNDS = {"openflow": "ovs", "p4runtime": "p4", "bpf-maps": "xdp"}
READY_S = 60
TCP_S = 2
# The share of a flow's packets that may reach the controller, both directions together:
# its first packet each way and those sent before its rules took effect. Usually a handful
# (1-20 per direction); OVS's datapath cache keeps sending a flow's packets to the
# controller until its revalidators catch up with the rules (docs/architecture.md), some
# hundreds at 95 Mbit/s on a loaded machine. A flow left to the controller sends them all.
MAX_CONTROLLER_SHARE = 0.05
MSS_BYTES = 1448  # data bytes per packet: the flow's packet count from its bytes
NEAR = 0.5  # a flow gets at least this share of the rate it could have
CAP_MBIT = 10  # multipath flows: capped, so that their sum (80 Mbit/s, up to three switches
# each) stays well within what two cores forward through OVS's userspace datapath
# Rules the pings leave: three pairs, each across three switches, both ways.
PINGED_PATH_RULES = 3 * 3 * 2
# Every pair of linear's three hosts, both ways: h1-h2 and h2-h3 cross two switches, h1-h3
# three.
PROACTIVE_PATH_RULES = (2 + 2 + 3) * 2
# 8 flows, 6 switches; none between hosts the pings (tcp pairs) have given rules already,
# so every flow is set up as it starts. Every host sends one and receives one.
MULTIPATH_FLOWS = [("h1", "h6"), ("h2", "h7"), ("h3", "h8"), ("h4", "h5"), ("h5", "h2"),
                   ("h6", "h3"), ("h7", "h4"), ("h8", "h1")]


class Rule(NamedTuple):
    """A path rule as a switch holds it, whatever the southbound."""
    switch: str
    in_port: int
    eth_src: str
    eth_dst: str
    out_port: int
    priority: int
    idle_timeout: int


class Outcome(NamedTuple):
    results: list[FlowResult]
    packet_ins: dict[tuple[str, str], int]  # per (src host, dst host), during the flows


def test_two_flows_through_one_switch_each_get_the_link(single: dict[str, Outcome]) -> None:
    reference = min(_mbit(r) for r in single["bridge"].results)
    for kind in SOUTHBOUNDS.values():
        for result in single[kind].results:
            assert _mbit(result) >= NEAR * reference, (kind, result.flow.flow_id, reference)
        _assert_few_packet_ins(kind, single[kind])


def test_more_flows_than_switches_each_get_their_rate(multipath: dict) -> None:
    for kind in SOUTHBOUNDS.values():
        outcome = multipath[kind]["flows"]
        for result in outcome.results:
            assert _mbit(result) >= NEAR * CAP_MBIT, (kind, result.flow.flow_id)
        _assert_few_packet_ins(kind, outcome)


def test_every_southbound_installs_the_same_rules(multipath: dict) -> None:
    openflow = multipath["ovs"]
    assert len(openflow["rules"]) == PINGED_PATH_RULES
    assert {r.priority for r in openflow["rules"]} == {PATH_RULE_PRIORITY}
    assert {r.idle_timeout for r in openflow["rules"]} == {REACTIVE_IDLE_TIMEOUT_S}
    assert set(openflow["pings"].packet_ins.values()) == {1}  # each direction's first packet
    for kind in SOUTHBOUNDS.values():
        assert sorted(multipath[kind]["rules"]) == sorted(openflow["rules"]), kind
        assert multipath[kind]["pings"].packet_ins == openflow["pings"].packet_ins, kind


def test_every_southbound_installs_the_same_permanent_rules_proactively() -> None:
    topo = catalog.build("linear", switches=3)  # h1-s1-s2-s3-h3, h2 on s2
    rules = {}
    for kind in SOUTHBOUNDS.values():
        with planes.running(kind, {"mode": "proactive"}, topo, READY_S) as (net, plane):
            rules[kind] = sorted(_rules(net, plane))
    assert len(rules["ovs"]) == PROACTIVE_PATH_RULES
    for kind in SOUTHBOUNDS.values():
        assert rules[kind] == rules["ovs"], kind
    assert {(r.priority, r.idle_timeout) for r in rules["ovs"]} == {(PATH_RULE_PRIORITY,
                                                                     PERMANENT)}


def _assert_few_packet_ins(kind: str, outcome: Outcome) -> None:
    """Each flow was set up (a packet-in each way) and left the controller alone after."""
    for result in outcome.results:
        src, dst = result.flow.src, result.flow.dst
        there, back = outcome.packet_ins.get((src, dst), 0), outcome.packet_ins.get((dst, src), 0)
        assert there >= 1 and back >= 1, (kind, result.flow.flow_id, outcome.packet_ins)
        packets = result.summary["bytes"] / MSS_BYTES
        assert there + back <= MAX_CONTROLLER_SHARE * packets, (
            kind, result.flow.flow_id, packets, outcome.packet_ins)


def _mbit(result: FlowResult) -> float:
    assert result.ok, result.error
    return result.summary["throughput_bps"] / 1e6


# -- the runs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def single() -> dict[str, Outcome]:
    topo = catalog.build("single", hosts=4)
    flows = [_tcp(src, dst) for src, dst in topo.pairs["tcp"]]
    outcomes = {}
    for kind in ("bridge", *SOUTHBOUNDS.values()):
        options = {} if kind == "bridge" else {"mode": "reactive"}
        with planes.running(kind, options, topo, READY_S) as (net, plane):
            outcomes[kind] = _measured(net, plane, lambda: run_flows(net, flows))
    return outcomes


@pytest.fixture(scope="module")
def multipath() -> dict[str, dict]:
    """Per plane: the pings of every tcp pair but the farthest (wait_ready set that one up
    already), the path rules they left, then the concurrent flows."""
    topo = catalog.build("multipath")
    flows = [_tcp(src, dst, rate_mbit=CAP_MBIT) for src, dst in MULTIPATH_FLOWS]
    runs = {}
    for kind in SOUTHBOUNDS.values():
        with planes.running(kind, {"mode": "reactive"}, topo, READY_S) as (net, plane):
            pairs = [p for p in topo.pairs["tcp"] if set(p) != set(farthest_hosts(net))]
            pings = _measured(net, plane, partial(_ping_all, net, pairs))
            macs = {net.host_mac(h) for pair in pairs for h in pair}
            rules = [r for r in _rules(net, plane) if {r.eth_src, r.eth_dst} <= macs]
            runs[kind] = {"pings": pings, "rules": rules,
                          "flows": _measured(net, plane, lambda: run_flows(net, flows))}
    return runs


def _tcp(src: str, dst: str, **params) -> Flow:
    return Flow(f"tcp-{src}-{dst}", "tcp", src, dst, {"duration": TCP_S, **params})


def _measured(net: Network, plane: Plane, run) -> Outcome:
    """``run()``'s results and the packet-ins of each host pair while it ran (none for the
    bridge: it has no controller)."""
    before = _pair_packet_ins(net, plane)
    results = run()
    after = _pair_packet_ins(net, plane)
    return Outcome(results, {pair: n - before.get(pair, 0) for pair, n in after.items()
                             if n != before.get(pair, 0)})


def _pair_packet_ins(net: Network, plane: Plane) -> dict[tuple[str, str], int]:
    if plane.kind == "bridge":
        return {}
    if plane.kind == "xdp":  # the controller runs in this process
        counts = plane.controller.pair_packet_ins()
    else:
        plane.stats()  # returns once the controller has written its counters anew
        counts = json.loads(plane.stats_file.read_text())["packet_ins_by_pair"]
    host = {net.host_mac(h): h for h in net.topo.hosts()}
    return {(host[src], host[dst]): n for pair, n in counts.items()
            for src, dst in [pair.split()]}


def _ping_all(net: Network, pairs: list[tuple[str, str]]) -> list[FlowResult]:
    """One ping of each pair, all pairs at once; every one must be answered. One packet
    each way: how many packet-ins it costs does not depend on how loaded the machine is
    (a second packet may beat a slow set-up to a switch on either plane)."""
    with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
        done = list(pool.map(lambda p: net.run(net.host_ns(p[0]), [
            "ping", "-c1", "-W5", "-n", net.host_ip(p[1])], check=False), pairs))
    for pair, ping in zip(pairs, done, strict=True):
        assert ping.returncode == 0, (pair, ping.stdout)
    return []


# -- reading the rules back ----------------------------------------------------------------


def _rules(net: Network, plane: Plane) -> list[Rule]:
    if plane.kind == "xdp":
        return list(_bpf_map_rules(plane))
    read = _openflow_rules if plane.kind == "ovs" else _p4runtime_rules
    return [rule for switch in net.topo.switches() for rule in read(plane, switch)]


def _bpf_map_rules(plane) -> Iterator[Rule]:
    """Every switch's ``rules`` map entries (a hash map: no priority; the program looks it
    up after the traps and before the miss), with the timeouts the adapter enforces."""
    for rule in plane.controller.southbound.path_rules():
        yield Rule(rule.switch, rule.in_port, rule.eth_src, rule.eth_dst, rule.out_port,
                   PATH_RULE_PRIORITY, rule.idle_timeout)


# dump-flows leaves idle_timeout out when it is 0 (permanent)
OVS_FLOW = re.compile(r"^(?:.*idle_timeout=(\d+),)?.*\bpriority=(\d+),in_port=(\d+),"
                      r"dl_src=([0-9a-f:]+),dl_dst=([0-9a-f:]+) actions=output:(\d+)$")


def _openflow_rules(plane, switch: str) -> Iterator[Rule]:
    """The bridge's path rules as ``ovs-ofctl dump-flows`` shows them (the traps and the
    table-miss rule match no MACs and are left out)."""
    mgmt = plane.dir / f"{plane.bridge(switch)}.mgmt"
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "--no-names", "--timeout=10",
                          "dump-flows", f"unix:{mgmt}"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        found = OVS_FLOW.search(line.strip())
        if found:
            idle, priority, in_port, src, dst, out_port = found.groups()
            yield Rule(switch, int(in_port), src, dst, int(out_port), int(priority),
                       int(idle or PERMANENT))


def _p4runtime_rules(plane, switch: str) -> Iterator[Rule]:
    """The switch's ``path_rules`` entries as a P4Runtime Read returns them. The table is
    exact (P4Runtime: no priority, 0); basic_fwd applies it where OpenFlow's priority
    PATH_RULE_PRIORITY puts path rules, between the traps and the miss."""
    info = p4info_pb2.P4Info.FromString(next(plane.dir.glob("*.p4info.bin")).read_bytes())
    table = next(t for t in info.tables if t.preamble.alias == "path_rules")
    fields = {f.id: f.name for f in table.match_fields}
    request = pb.ReadRequest(device_id=int(switch[1:]))
    request.entities.add().table_entry.table_id = table.preamble.id
    with grpc.insecure_channel(f"unix:{plane.dir / switch}.grpc") as channel:
        replies = list(p4runtime_pb2_grpc.P4RuntimeStub(channel).Read(request, timeout=10))
    for reply in replies:
        for entity in reply.entities:
            entry = entity.table_entry
            match = {fields[m.field_id]: int.from_bytes(m.exact.value, "big")
                     for m in entry.match}
            assert entry.priority == 0
            yield Rule(switch, match["in_port"], _mac(match["eth_src"]), _mac(match["eth_dst"]),
                       int.from_bytes(entry.action.action.params[0].value, "big"),
                       PATH_RULE_PRIORITY, entry.idle_timeout_ns // 1_000_000_000)


def _mac(value: int) -> str:
    return value.to_bytes(6, "big").hex(":")
