"""run_flows on a real Network: h1-h2 on one veth, h3-h4 on another (unreachable from h1)."""

import networkx as nx
import pytest

from dplab.substrate.network import Network
from dplab.topology.model import HOST, Topology
from dplab.workloads.flows import Flow, run_flows

pytestmark = pytest.mark.net


@pytest.fixture(scope="module")
def net():
    graph = nx.Graph()
    for host in ("h1", "h2", "h3", "h4"):
        graph.add_node(host, kind=HOST)
    graph.add_edge("h1", "h2", bw_mbit=None)
    graph.add_edge("h3", "h4", bw_mbit=None)
    with Network(Topology("workloads-test", graph)) as network:
        yield network


def test_tcp_delivers_and_throughput_matches_bytes_over_time(net):
    [result] = run_flows(net, [Flow("tcp-h1-h2", "tcp", "h1", "h2", {"duration": 2})])
    assert result.ok, result.error
    s = result.summary
    assert s["bytes"] > 0
    assert s["transmission_time_s"] == pytest.approx(2.0, abs=0.3)
    assert s["throughput_bps"] == pytest.approx(s["bytes"] * 8 / s["transmission_time_s"], rel=0.01)
    # SYN delay from the client-side capture: a real handshake on a veth takes µs, and the
    # application's connect() (iperf ct=) can only be as fast or slower.
    assert 0 < s["syn_delay_ms"] < 100
    assert s["syn_delay_ms"] <= s["connect_ms"] + 0.01
    assert len(result.intervals) == 2
    assert sum(row["bytes"] for row in result.intervals) <= s["bytes"]


def test_udp_at_10_mbit_arrives_at_10_mbit_without_loss(net):
    params = {"duration": 2, "rate_mbit": 10}
    [result] = run_flows(net, [Flow("udp-h1-h2", "udp", "h1", "h2", params)])
    assert result.ok, result.error
    s = result.summary
    assert s["throughput_bps"] == pytest.approx(10e6, rel=0.05)
    assert s["loss_pct"] <= 1.0
    assert s["packets_received"] > 0.95 * s["packets_sent"]
    assert s["jitter_ms"] is not None and s["owd_ms"] is not None
    assert [row["t_start"] for row in result.intervals] == [0.0, 1.0]


def test_ping_all_answered(net):
    params = {"count": 10, "interval": 0.05}
    [result] = run_flows(net, [Flow("icmp-h1-h2", "icmp", "h1", "h2", params)])
    assert result.ok, result.error
    s = result.summary
    assert (s["packets_sent"], s["packets_received"], s["loss_pct"]) == (10, 10, 0.0)
    assert 0 < s["rtt_min_ms"] <= s["rtt_ms"] <= s["rtt_max_ms"]


def test_flows_run_together_on_separate_ports(net):
    flows = [
        Flow("tcp-a", "tcp", "h1", "h2", {"duration": 1}),
        Flow("udp-b", "udp", "h2", "h1", {"duration": 1, "rate_mbit": 5}),
        Flow("icmp-c", "icmp", "h1", "h2", {"count": 5, "interval": 0.1}),
    ]
    results = run_flows(net, flows)
    assert [r.flow.flow_id for r in results] == ["tcp-a", "udp-b", "icmp-c"]
    assert all(r.ok for r in results), [r.error for r in results]
    assert results[0].summary["bytes"] > 0
    assert results[1].summary["throughput_bps"] == pytest.approx(5e6, rel=0.1)


def test_unreachable_destination_gives_failed_flows_with_missing_values(net):
    flows = [
        Flow("tcp-h1-h3", "tcp", "h1", "h3", {"duration": 1}),
        Flow("udp-h1-h3", "udp", "h1", "h3", {"duration": 1, "rate_mbit": 1}),
        Flow("icmp-h1-h3", "icmp", "h1", "h3", {"count": 3, "interval": 0.2}),
    ]
    tcp, udp, icmp = run_flows(net, flows)
    for result in (tcp, udp):
        assert not result.ok and "no final summary" in result.error
        assert all(value is None for value in result.summary.values())
        assert result.intervals == []
    # ARP gives up after ~3 s ("No route to host"), unless the flow's timeout comes first
    assert "No route to host" in tcp.error or "timed out" in tcp.error
    assert not icmp.ok and "no echo reply" in icmp.error
    assert icmp.summary["rtt_ms"] is None and icmp.summary["loss_pct"] == 100.0
