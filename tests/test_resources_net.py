"""The resource sampler on real namespaces: a CPU-burning process in a switch namespace."""

import os
import sys
import time

import networkx as nx
import pytest

from dplab.measure.resources import ResourceSampler
from dplab.substrate.network import Network
from dplab.topology.model import HOST, SWITCH, Topology

pytestmark = pytest.mark.net

BURN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def burner_ticks(pid: int) -> int:
    """utime + stime of a process, in clock ticks (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


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
            before, started = burner_ticks(burner.pid), time.monotonic()
            with ResourceSampler([ns]) as busy:
                time.sleep(1.6)  # several samples while the burner spins
            after, elapsed = burner_ticks(burner.pid), time.monotonic() - started
        finally:
            burner.kill()
            burner.wait()
    stats = busy.stats()
    assert len(busy.snapshots) >= 4
    # What the kernel charged the burner over (a little more than) the sampler's window; on
    # a shared machine that is anything up to one core, so compare with it, not a constant.
    truth = 100.0 * (after - before) / os.sysconf("SC_CLK_TCK") / elapsed
    measured = stats["cpu_user_pct"] + stats["cpu_sys_pct"]
    assert truth > 5.0, "the burner hardly ran: nothing to measure"
    assert measured == pytest.approx(truth, abs=15.0)
    assert stats["cpu_user_pct"] > stats["cpu_sys_pct"]  # a Python loop spins in user mode
    assert 3.0 < stats["mem_rss_mb"] < 200.0  # a Python interpreter's resident memory
    assert stats["host_user_pct"] > 10.0  # the burner shows up machine-wide too
    assert idle.stats()["cpu_user_pct"] is None  # nothing ran there before: missing, not 0
