"""The p4 plane's ``qos`` option on study 004's spine-leaf fabric: the plane starts the
QoS loop with the switches, the loop turns on real counters while EF pings cross the
fabric and writes the rates eq. 1 gives, its turns reach the store as the run's time
series, and stopping the plane leaves nothing behind."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from net_checks import leftovers

from dplab.planes import create
from dplab.store import RunStore
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


def test_the_qos_option_runs_the_loop_on_the_switches_and_stop_removes_it(tmp_path):
    plane = create("p4", {"program": str(STUDY / "dmbrl.p4"),
                          "entries": str(STUDY / "dmbrl_spineleaf_entries.yaml"), "qos": QOS})
    topo = catalog.build("spineleaf", spines=2, leaves=2, hosts_per_leaf=1)
    with Network(topo, addressing="l2", shared_switch_ns=False) as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            plane.wait_ready(40)
            assert len(loop_pids(run_dir)) == 1
            traffic_began = time.monotonic()
            deadline = traffic_began + PATIENCE_S
            while not ef_samples(plane.qos_samples_file):
                assert time.monotonic() < deadline, "no EF bytes counted by the loop"
                net.run(net.host_ns("h1"), ["ping", "-Q", "184", "-c", "10", "-i", "0.05",
                                            "-n", net.host_ip("h2")], check=False)
            for row in ef_samples(plane.qos_samples_file):
                assert row["rate_bps"] == min(max(row["used_bps"], RMIN), RMAX)
                assert row["interval_s"] == 0.5  # a few kbit/s: below θlow, doubled
            stats = plane.stats()
            assert stats["qos_turns"] >= 1 and stats["qos_rate_changes"] >= 1
            series = plane.series(traffic_began)
            elapsed = time.monotonic() - traffic_began
            turns_after = plane.qos_samples_file.read_text().count("\n")  # the loop goes on
            store = RunStore(tmp_path)
            store.add_run("p4-r1", "dmbrl", 1, "ok", None, 0.0, elapsed, stats, [],
                          plane_series=series)
        finally:
            plane.stop()
    rows = RunStore.open(tmp_path).rows("plane_series")
    check_stored_series(rows, (stats["qos_turns"], turns_after), elapsed)
    assert loop_pids(run_dir) == []
    assert leftovers(prefix, run_dir) == []


def check_stored_series(rows: list[dict], turns: tuple[int, int], elapsed: float) -> None:
    """Every turn the loop took by stats() (and none it had not taken after series()) is in
    the store, once per metric,
    with the loop's measured values inside the option's bounds; EF bytes (pings sent only
    after the traffic began) are counted only in turns after t = 0."""
    by_metric: dict[str, list[dict]] = {}
    for row in rows:
        by_metric.setdefault(row["series"].partition(":")[0], []).append(row)
    assert sorted(by_metric) == ["interval_s", "rate_bps", "used_bps"]
    assert all(1 <= turns[0] <= len(found) <= turns[1] for found in by_metric.values())
    assert all(row["t"] <= elapsed for row in rows)
    subjects = {row["series"].partition(":")[2] for row in rows}
    assert "s3:class1" in subjects
    assert subjects <= {f"s{s}:class{c}" for s in range(1, 5) for c in (0, 1, 2)}
    assert all(RMIN <= row["value"] <= RMAX for row in by_metric["rate_bps"])
    assert all(0.125 <= row["value"] <= 0.5 for row in by_metric["interval_s"])
    ef_counted = [row for row in by_metric["used_bps"]
                  if row["series"] == "used_bps:s3:class1" and row["value"] > 0]
    assert ef_counted and all(row["t"] > 0 for row in ef_counted)
