"""Issue 22's metrics measured on a real Network: h1-h2 unshaped, h3-h4 over a 1 Mbit/s link
whose TBF queue holds ~20 ms (substrate.network.TBF_LATENCY_MS) plus its burst."""

import networkx as nx
import pytest

from dplab.substrate.network import Network
from dplab.topology.model import HOST, Topology
from dplab.workloads.flows import Flow, run_flows

pytestmark = pytest.mark.net

SEGMENT_AT_1_MBIT_MS = 1448 * 8 / 1e6 * 1000  # one full segment's time on the wire


@pytest.fixture(scope="module")
def net():
    graph = nx.Graph()
    for host in ("h1", "h2", "h3", "h4"):
        graph.add_node(host, kind=HOST)
    graph.add_edge("h1", "h2", bw_mbit=None)
    graph.add_edge("h3", "h4", bw_mbit=1.0)
    with Network(Topology("metrics-test", graph)) as network:
        yield network


def test_icmp_throughput_is_answered_payload_over_the_send_span(net):
    params = {"count": 40, "interval": 0.05, "size": 1000}
    [result] = run_flows(net, [Flow("icmp-h1-h2", "icmp", "h1", "h2", params)])
    assert result.ok, result.error
    s = result.summary
    assert s["packets_received"] == 40
    # 40 answers x 1000 B x 8 over the measured send span: at least the 2 s ping's schedule
    # takes (a loaded machine sends late, never early)
    assert 0.5 * 40 * 8000 / 2.0 < s["throughput_bps"] <= 40 * 8000 / 2.0 * 1.01
    *whole, last = result.intervals
    assert whole, result.intervals  # each whole 1 s bin: its answers x 1000 B x 8 / 1 s
    for row in whole:
        assert row["packets_received"] > 0
        assert row["throughput_bps"] == pytest.approx(row["packets_received"] * 8000, rel=0.01)


def test_tcp_over_a_1_mbit_link_with_a_short_queue_retransmits(net):
    [result] = run_flows(net, [Flow("tcp-h3-h4", "tcp", "h3", "h4", {"duration": 3})])
    assert result.ok, result.error
    s = result.summary
    # TCP overfills a ~12-packet queue in slow start: the sender's kernel retransmits
    assert s["retransmits"] > 0
    assert 0 < s["tcp_loss_pct"] < 100
    # the queue is on the path: RTT at least one segment's time on the 1 Mbit/s wire
    assert SEGMENT_AT_1_MBIT_MS < s["srtt_ms"] < 2000
    assert s["throughput_bps"] == pytest.approx(1e6, rel=0.2)
    rows = [row for row in result.intervals if row["retransmits"] is not None]
    assert rows and sum(row["retransmits"] for row in rows) <= s["retransmits"]
