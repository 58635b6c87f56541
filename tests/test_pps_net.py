"""pps flows over real planes: dplab-pktblast sends a counted number of frames from h1, and
what h2 (and for echo requests, h1) counts is asserted, frame for frame. Rates are low
(1000 pps): what is asserted is delivery and accounting, never speed."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from dplab import planes
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.workloads.flows import Flow, run_flows

pytestmark = pytest.mark.net

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "p4src" / "study003"
COUNT = 1000
RATE = 1000


@contextmanager
def plane_net(kind: str, options: dict, topology: str, **params):
    plane = planes.create(kind, options)
    with Network(catalog.build(topology, **params), addressing=plane.addressing) as net:
        plane.start(net)
        try:
            plane.wait_ready(timeout=30)
            yield net
        finally:
            plane.stop()


def pps_flow(protocol: str, size: int = 64, src: str = "h1", dst: str = "h2") -> Flow:
    params = {"size": size, "pps": RATE, "count": COUNT, "protocol": protocol}
    return Flow(f"pps-{protocol}-{src}-{dst}", "pps", src, dst, params)


def assert_all_sent(summary: dict) -> None:
    assert summary["frames_offered"] == COUNT  # --count: exactly what was asked for
    assert summary["frames_not_sent"] == 0
    assert summary["target_pps"] == RATE and summary["offered_pps"] > 0


@pytest.fixture(scope="module")
def bridge():
    with plane_net("bridge", {}, "single", hosts=2) as net:
        yield net


def test_udp_over_the_bridge_delivers_every_frame(bridge):
    [udp] = run_flows(bridge, [pps_flow("udp", size=1500)])
    assert udp.ok, udp.error
    assert_all_sent(udp.summary)
    assert udp.summary["frames_received"] == COUNT
    assert udp.summary["loss_pct"] == 0
    assert udp.summary["replies_received"] is None


def test_echo_requests_over_the_bridge_are_answered_by_the_destination(bridge):
    [icmp] = run_flows(bridge, [pps_flow("icmp")])
    assert icmp.ok, icmp.error
    assert_all_sent(icmp.summary)
    assert icmp.summary["frames_received"] == COUNT
    assert icmp.summary["replies_received"] == COUNT


def test_two_flows_are_counted_apart(bridge):
    flows = [pps_flow("udp"), pps_flow("udp", src="h2", dst="h1")]
    results = run_flows(bridge, flows)
    assert [r.summary["frames_received"] for r in results] == [COUNT, COUNT]


def test_a_bad_size_is_refused_before_anything_starts(bridge):
    bad = Flow("pps-bad", "pps", "h1", "h2", {"size": 40, "pps": RATE, "count": 10})
    with pytest.raises(ValueError, match=r"flow 'pps-bad': size must be an integer 64\.\.1500"):
        run_flows(bridge, [bad])


def test_udp_over_the_p4_plane_delivers_every_frame():
    options = {"program": str(STUDY / "l3_forward.p4"),
               "entries": str(STUDY / "l3_forward_entries.yaml")}
    with plane_net("p4", options, "linear", switches=2, hosts_per_switch=1) as net:
        [udp] = run_flows(net, [pps_flow("udp")])
    assert udp.ok, udp.error
    assert_all_sent(udp.summary)
    assert udp.summary["frames_received"] == COUNT


def test_echo_requests_are_answered_by_the_p4_echo_server_not_the_host():
    options = {"program": str(STUDY / "echo.p4"), "entries": str(STUDY / "echo_entries.yaml")}
    with plane_net("p4", options, "single", hosts=2) as net:
        [icmp] = run_flows(net, [pps_flow("icmp")])
    assert icmp.ok, icmp.error
    assert_all_sent(icmp.summary)
    assert icmp.summary["frames_received"] == 0  # the switch answered every one itself
    assert icmp.summary["loss_pct"] == 100
    assert icmp.summary["replies_received"] == COUNT
