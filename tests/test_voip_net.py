"""VoIP over a real network: linear topology (2 switches) on Linux bridges."""

import pytest

from dplab import planes
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.workloads.flows import Flow, run_flows

pytestmark = pytest.mark.net


@pytest.fixture(scope="module")
def net():
    plane = planes.create("bridge", {})
    topo = catalog.build("linear", switches=2)
    with Network(topo, addressing=plane.addressing) as network:
        plane.start(network)
        plane.wait_ready(timeout=20)
        yield network
        plane.stop()


def test_a_clean_voip_stream_scores_above_mos_4(net):
    hosts = net.topo.hosts()
    src, dst = hosts[0], hosts[-1]
    [result] = run_flows(net, [Flow(f"voip-{src}-{dst}", "voip", src, dst, {"duration": 3})])
    assert result.ok, result.error
    s = result.summary
    assert s["packets_sent"] == 150  # 3 s of 20 ms packets
    assert s["packets_received"] == 150
    assert s["loss_pct"] == 0.0
    assert s["out_of_order"] == 0.0
    # Delays are what the machine gives (a loaded one took 34 ms at the worst); the bounds
    # catch a unit or clock mistake, which would be 1000 times off. Within them and without
    # loss, the mouth-to-ear delay (20 ms + mean + 2 x jitter) stays under G.107's 100 ms.
    assert 0 < s["owd_p50_ms"] <= s["owd_p99_ms"] <= s["owd_max_ms"] < 150
    assert 0 < s["owd_ms"] < 50
    assert 0 <= s["jitter_ms"] < 15
    assert s["r_factor"] > 90 and s["mos"] > 4
    assert [row["t_start"] for row in result.intervals] == [0.0, 1.0, 2.0]
    assert [row["packets_received"] for row in result.intervals] == [50.0, 50.0, 50.0]


def test_voip_runs_alongside_ping_and_keeps_its_identity(net):
    flows = [
        Flow("icmp-h1-h2", "icmp", "h1", "h2", {"count": 5, "interval": 0.2}),
        Flow("voip-h2-h1", "voip", "h2", "h1", {"duration": 1}),
    ]
    icmp, voice = run_flows(net, flows)
    assert icmp.flow.kind == "icmp" and icmp.ok and icmp.summary["packets_received"] == 5
    assert voice.flow.kind == "voip" and voice.ok and voice.summary["packets_received"] == 50


def test_a_stream_to_an_unreachable_host_fails_without_made_up_values(net):
    hosts = net.topo.hosts()
    dst = hosts[-1]
    net.run(net.host_ns(dst), ["ip", "link", "set", "eth0", "down"])
    [result] = run_flows(net, [Flow("voip-dead", "voip", hosts[0], dst, {"duration": 1})])
    assert not result.ok
    assert "no RTP packet arrived" in result.error
    s = result.summary
    for metric in ("owd_ms", "owd_p99_ms", "jitter_ms", "r_factor", "mos", "out_of_order"):
        assert s[metric] is None, metric
    assert s["packets_received"] == 0 and s["loss_pct"] == 100.0
    assert result.intervals == []
