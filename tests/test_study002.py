"""Study 002's baselines and workloads on real namespaces: the direct and loopback planes
carry TCP and the frame-size latency workload, a direct veth pair is faster than a path
through switches, jumbo frames need the link MTU, a TCP window is reported as the kernel
granted it, and OVS and P4 route (MACs rewritten, TTL decremented)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from dplab import planes
from dplab.planes import l3_routes
from dplab.planes.base import PlaneError
from dplab.planes.baseline import path_link
from dplab.runner import run_matrix
from dplab.spec import parse
from dplab.substrate.network import Network
from dplab.topology import catalog
from dplab.workloads import tcp_window
from dplab.workloads.capture import CapturePoint, Captures
from dplab.workloads.flows import Flow, run_flows

READY_S = 30.0


def _two_switches(**params: object):
    return catalog.build("linear", switches=2, hosts_per_switch=1, edge_bw=None,
                         core_bw=None, **params)


def test_baselines_need_two_hosts_and_keep_the_path() -> None:
    topo = catalog.build("linear", switches=2, hosts_per_switch=1, edge_bw=50,
                         core_bw=None, mtu=2000)
    assert path_link(topo, "h1", "h2") == {"bw_mbit": 50.0, "delay_ms": 0.0,
                                           "loss_pct": 0.0, "mtu": 2000}
    for kind in ("direct", "loopback"):
        with pytest.raises(PlaneError, match="exactly two hosts"):
            planes.create(kind).network(catalog.build("single", hosts=3))


@pytest.mark.parametrize("kind", ["direct", "loopback"])
def test_baseline_carries_tcp_and_latency(kind: str) -> None:
    with planes.running(kind, {}, _two_switches(mtu=9000), READY_S) as (net, _):
        assert (net.host_ns("h1") == net.host_ns("h2")) == (kind == "loopback")
        tcp, small, jumbo = run_flows(net, [
            Flow("tcp", "tcp", "h1", "h2", {"duration": 1}),
            Flow("lat64", "latency", "h1", "h2", {"size": 64, "duration": 0.5}),
            Flow("lat9018", "latency", "h2", "h1", {"size": 9018, "duration": 0.5}),
        ])
    assert tcp.ok, tcp.error
    assert tcp.summary["throughput_bps"] > 1e6
    for flow in (small, jumbo):
        assert flow.ok, flow.error
        assert flow.summary["packets_received"] == flow.summary["packets_sent"] > 10
        s = flow.summary
        assert 0 < s["owd_min_ms"] <= s["owd_p50_ms"] <= s["owd_p99_ms"] <= s["owd_max_ms"]
        assert s["pdv_ms"] == pytest.approx(s["owd_p99_ms"] - s["owd_min_ms"])
        assert s["ipdv_ms"] is not None and s["ipdv_ms"] >= 0


def test_direct_is_faster_than_switches_and_mtu_bounds_frames() -> None:
    """Median one-way delay of the same frames: one veth pair against three veth pairs and
    two Open vSwitch bridges (standalone learning switches). A 2018 B frame (2000 B IP
    packet) leaves over MTU 2000 links, and is refused (don't-fragment) over the default
    1500."""
    latency = {"size": 2018, "duration": 1.0, "interval_ms": 5}
    p50 = {}
    for kind, options in (("direct", {}), ("ovs", {"controller": False})):
        with planes.running(kind, options, _two_switches(mtu=2000), READY_S) as (net, _):
            (result,) = run_flows(net, [Flow("lat", "latency", "h1", "h2", latency)])
        assert result.ok, result.error
        p50[kind] = result.summary["owd_p50_ms"]
    assert p50["direct"] < p50["ovs"], p50
    with planes.running("direct", {}, _two_switches(), READY_S) as (net, _):
        (too_big,) = run_flows(net, [Flow("lat", "latency", "h1", "h2", latency)])
    assert not too_big.ok
    assert "Message too long" in too_big.error


def test_tcp_window_of_10_mb_is_granted_and_used() -> None:
    """1 MB goes by iperf -w (under the machine's rmem_max/wmem_max); 10 MB, above them on
    this machine, by the hosts' tcp_rmem/tcp_wmem, put back afterwards. Both are granted as
    asked, and the receiver offers at least the window asked (its rcv_ssthresh, read with ss
    while the flow runs) and at most its buffer, twice the window as -w's doubling makes it."""
    limit = tcp_window.setsockopt_limit()
    asked = [1_000_000, 10_000_000]
    with planes.running("direct", {}, _two_switches(), READY_S) as (net, _):
        before = net.run(net.host_ns("h1"), ["sysctl", "-n", "net.ipv4.tcp_rmem"]).stdout
        results = run_flows(net, [Flow(f"w{w}", "tcp", "h1", "h2", {"duration": 2,
                                                                   "window": w})
                                  for w in asked])
        after = net.run(net.host_ns("h1"), ["sysctl", "-n", "net.ipv4.tcp_rmem"]).stdout
    assert after == before
    for window, result in zip(asked, results, strict=True):
        assert result.ok, result.error
        s = result.summary
        assert s["window_asked_bytes"] == window
        assert s["window_by_sysctl"] == float(window > limit)
        assert s["window_granted_bytes"] == window
        assert s["window_clamped"] == 0.0
        assert window <= s["window_used_bytes"] <= 2 * window, s
        assert s["window_advertised_max_bytes"] > 0


BASELINE_EXPERIMENT = """
name: baselines
topology: {name: linear, params: {switches: 2, hosts_per_switch: 1, mtu: 2000}}
planes: [direct, loopback]
workloads:
  - {kind: tcp, pairs: [[h1, h2]], duration: 1, window: 100000}
  - {kind: latency, pairs: [[h2, h1]], size: 2000, duration: 0.5}
capture: [h1, s1]
"""


def test_runner_stores_baseline_rows(tmp_path: Path) -> None:
    """Through the runner, as an experiment file runs them: the baselines have no switch,
    so no switch is sampled or captured, and every row is measured."""
    store = run_matrix(parse(BASELINE_EXPERIMENT), tmp_path / "results")
    assert {r["status"] for r in store.rows("runs")} == {"ok"}
    values = {(s["plane"], s["kind"], s["metric"]): s["value"]
              for s in store.rows("summaries")}
    for plane in ("direct", "loopback"):
        assert values[(plane, "tcp", "window_granted_bytes")] == 100000
        assert values[(plane, "tcp", "window_used_bytes")] > 0
        assert values[(plane, "latency", "packets_received")] > 10
        assert values[(plane, "latency", "owd_p50_ms")] > 0


@pytest.mark.parametrize(("kind", "options"), [("ovs", {"forwarding": "l3"}),
                                               ("p4", {"program": "l3"})])
def test_routing_rewrites_macs_and_decrements_ttl(kind: str, options: dict, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Two router hops: at the far host an echo request arrives with TTL 64 - 2, from the
    last router's MAC to the host's own, and TCP gets through. The p4 plane's routes from
    the topology go in from memory, past the size limit of a user's entries file (a
    fat-tree's outgrow it): a limit of 100 bytes here stops nothing."""
    monkeypatch.setattr("dplab.p4runtime.entries.MAX_FILE_BYTES", 100)
    pcap = tmp_path / "h2.pcap"
    with planes.running(kind, options, _two_switches(), READY_S) as (net, _):
        with Captures(net, [CapturePoint(net.host_ns("h2"), "eth0", pcap)], "icmp"):
            ping, tcp = run_flows(net, [
                Flow("ping", "icmp", "h1", "h2", {"count": 3, "interval": 0.05}),
                Flow("tcp", "tcp", "h1", "h2", {"duration": 1})])
        s2_mac = l3_routes.router_mac(net, "s2")
        h2_mac = net.host_mac("h2")
    assert ping.ok and tcp.ok, (ping.error, tcp.error)
    requests = [p for p in rdpcap(str(pcap)) if p.haslayer(ICMP) and p[ICMP].type == 8]
    assert requests  # the capture may miss a frame at its start or end; ping saw all
    for frame in requests:
        assert (frame[Ether].src, frame[Ether].dst, frame[IP].ttl) == (s2_mac, h2_mac, 62)


def test_l3_routes_reach_every_host_over_loops() -> None:
    """On a grid (loops), following the next hops from any switch reaches the host, and
    the MACs are the next router's until the last hop, which hands to the host."""
    net = Network(catalog.build("grid", rows=3, cols=3))
    routes = {(h.switch, h.host_ip): h for h in l3_routes.hops(net)}
    neighbour = {(s, p): n for (s, n), p in net.topo.port_numbers().items()}
    for host in net.topo.hosts():
        for switch in net.topo.switches():
            node = switch
            for _ in net.topo.switches():
                hop = routes[(node, net.host_ip(host))]
                after = neighbour[(node, hop.port)]
                assert hop.own_mac == l3_routes.router_mac(net, node)
                assert hop.next_mac == (net.host_mac(host) if after == host
                                        else l3_routes.router_mac(net, after))
                node = after
                if node == host:
                    break
            assert node == host
