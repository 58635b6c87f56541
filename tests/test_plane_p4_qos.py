"""The p4 plane's ``qos`` option on study 004's spine-leaf fabric: the plane starts the
QoS loop with the switches, the loop turns on real counters while EF pings cross the
fabric and writes the rates eq. 1 gives, and stopping the plane leaves nothing behind."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from net_checks import leftovers

from dplab.planes import create
from dplab.substrate.network import Network
from dplab.topology import catalog

pytestmark = pytest.mark.net
STUDY = Path(__file__).resolve().parents[1] / "p4src" / "study004"
RMIN, RMAX = 0.5e6, 8e6
QOS = {"policy": "dmbrl", "rmin_mbit": RMIN / 1e6, "rmax_mbit": RMAX / 1e6,
       "interval_ms": 250, "interval_min_ms": 125, "interval_max_ms": 500}
PATIENCE_S = 30  # a bound for a loaded machine, not a measured figure


def loop_pids(run_dir: Path) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"dplab.qos.dmbrl_loop" in argv and any(str(run_dir).encode() in a for a in argv):
            found.append(int(cmdline.parent.name))
    return found


def ef_samples(samples: Path) -> list[dict]:
    """The loop's turns on leaf s3 (h1's) for EF (class 1) that counted some bytes."""
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    return [r for r in rows if r["switch"] == "s3" and r["class"] == 1 and r["used_bps"] > 0]


def test_the_qos_option_runs_the_loop_on_the_switches_and_stop_removes_it():
    plane = create("p4", {"program": str(STUDY / "dmbrl.p4"),
                          "entries": str(STUDY / "dmbrl_spineleaf_entries.yaml"), "qos": QOS})
    topo = catalog.build("spineleaf", spines=2, leaves=2, hosts_per_leaf=1)
    with Network(topo, addressing="l2", shared_switch_ns=False) as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            plane.wait_ready(40)
            assert len(loop_pids(run_dir)) == 1
            deadline = time.monotonic() + PATIENCE_S
            while not ef_samples(plane.qos_samples_file):
                assert time.monotonic() < deadline, "no EF bytes counted by the loop"
                net.run(net.host_ns("h1"), ["ping", "-Q", "184", "-c", "10", "-i", "0.05",
                                            "-n", net.host_ip("h2")], check=False)
            for row in ef_samples(plane.qos_samples_file):
                assert row["rate_bps"] == min(max(row["used_bps"], RMIN), RMAX)
                assert row["interval_s"] == 0.5  # a few kbit/s: below θlow, doubled
            stats = plane.stats()
            assert stats["qos_turns"] >= 1 and stats["qos_rate_changes"] >= 1
        finally:
            plane.stop()
    assert loop_pids(run_dir) == []
    assert leftovers(prefix, run_dir) == []
