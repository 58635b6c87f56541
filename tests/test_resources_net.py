"""The resource sampler on real namespaces: a CPU-burning process in a switch namespace."""

import sys
import time

import networkx as nx
import pytest

from dplab.measure.resources import ResourceSampler
from dplab.substrate.network import Network
from dplab.topology.model import HOST, SWITCH, Topology

pytestmark = pytest.mark.net

BURN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def topology() -> Topology:
    graph = nx.Graph()
    graph.add_node("h1", kind=HOST)
    graph.add_node("s1", kind=SWITCH)
    graph.add_edge("h1", "s1", bw_mbit=None)
    return Topology("resources-test", graph)


def test_a_busy_process_in_a_switch_namespace_is_measured():
    with Network(topology()) as net:
        ns = net.switch_ns("s1")
        with ResourceSampler([ns]) as idle:
            pass
        burner = net.popen(ns, [sys.executable, "-c", BURN])
        try:
            with ResourceSampler([ns]) as busy:
                time.sleep(1.6)  # several samples while the burner spins
        finally:
            burner.kill()
            burner.wait()
    stats = busy.stats()
    assert len(busy.snapshots) >= 4
    # one spinning thread: most of one core (the machine is shared, so not all of it)
    assert 30.0 < stats["cpu_user_pct"] + stats["cpu_sys_pct"] < 110.0
    assert stats["cpu_user_pct"] > 20.0
    assert 3.0 < stats["mem_rss_mb"] < 200.0  # a Python interpreter's resident memory
    assert stats["host_user_pct"] > 10.0  # the burner shows up machine-wide too
    assert idle.stats()["cpu_user_pct"] is None  # nothing ran there before: missing, not 0
