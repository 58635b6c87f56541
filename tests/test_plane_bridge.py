"""Bridge plane: Linux bridges (loops broken by a spanning tree or kernel STP) carry real
traffic."""

from __future__ import annotations

import re

import networkx as nx
import pytest
from net_checks import tcp_received

from dplab import planes
from dplab.planes import PlaneError
from dplab.planes.bridge import off_tree_links
from dplab.substrate import Network
from dplab.topology import catalog


def test_unknown_option_is_named():
    with pytest.raises(PlaneError, match="'colour'"):
        planes.create("bridge", {"colour": "red"})
    with pytest.raises(PlaneError, match="'stp' must be"):
        planes.create("bridge", {"stp": "sometimes"})
    with pytest.raises(PlaneError, match="'rx' must be one of auto, napi, backlog, not 'ring'"):
        planes.create("bridge", {"rx": "ring"})


def test_unknown_plane_is_named():
    with pytest.raises(PlaneError, match="'frobnicator'"):
        planes.create("frobnicator", {})


def test_tree_cuts_the_links_stp_would_block():
    # a square s1-s2-s3-s4-s1 plus the diagonal s2-s4: root s1 reaches s2 and s4 first
    square = nx.Graph([("s1", "s2"), ("s2", "s3"), ("s3", "s4"), ("s4", "s1"), ("s2", "s4")])
    cut = off_tree_links(square, ["s1", "s2", "s3", "s4"])
    assert cut == {frozenset(("s3", "s4")), frozenset(("s2", "s4"))}


def run_bridge(topo_name: str, src: str, dst: str,
               options: dict | None = None) -> tuple[dict, int, str]:
    """The plane's stats, the bytes a 1 s TCP stream src -> dst delivered, ping's output;
    stats["ring_frames"]: the frames dst's eth0 took from its own veth NAPI ring."""
    plane = planes.create("bridge", options or {})
    with Network(catalog.build(topo_name), addressing=plane.addressing) as net:
        plane.start(net)
        plane.wait_ready(timeout=20)
        ping = net.run(net.host_ns(src), ["ping", "-c3", "-i0.2", "-W1", net.host_ip(dst)])
        received, _ = tcp_received(net, src, dst, seconds=1)
        stats = plane.stats()
        ring = net.run(net.host_ns(dst), ["ethtool", "-S", "eth0"]).stdout
        stats["ring_frames"] = int(re.search(r"rx_queue_0_xdp_packets: (\d+)", ring)[1])
        plane.stop()
    return stats, received, ping.stdout


@pytest.mark.net
def test_bridge_forwards_across_a_line_without_stp():
    stats, received, ping = run_bridge("linear", "h1", "h4")
    assert " 0% packet loss" in ping
    assert received > 1_000_000
    assert stats["blocked_ports"] == 0
    assert stats["ready_s"] is not None and stats["ready_s"] < 5
    # rx auto: a broadcast crosses 7 links, far below any backlog: veth's default path
    assert stats["veth_napi"] == 0 and stats["ring_frames"] == 0


@pytest.mark.net
def test_bridge_receives_through_veth_napi_when_asked():
    stats, received, ping = run_bridge("linear", "h1", "h4", {"rx": "napi"})
    assert " 0% packet loss" in ping
    assert received > 1_000_000
    assert stats["veth_napi"] == 1
    assert stats["ring_frames"] > 100  # the TCP stream reached h4 through its ring


@pytest.mark.net
def test_bridge_breaks_loops_with_a_precomputed_tree_and_forwards():
    stats, received, ping = run_bridge("multipath", "h1", "h8")
    assert " 0% packet loss" in ping
    assert received > 1_000_000
    topo = catalog.build("multipath")
    switches = topo.graph.subgraph(topo.switches())
    loops = switches.number_of_edges() - switches.number_of_nodes() + 1
    assert stats["blocked_ports"] == loops > 0


@pytest.mark.net
def test_bridge_with_kernel_stp_blocks_loops_and_forwards():
    stats, received, ping = run_bridge("multipath", "h1", "h8", {"stp": "kernel"})
    assert " 0% packet loss" in ping
    assert received > 1_000_000
    assert stats["blocked_ports"] > 0  # multipath has loops: STP must cut some

