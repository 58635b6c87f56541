"""`dplab calibrate` measures this machine into its per-machine file; `dplab validate`
warns from that file when an experiment asks for more than the machine forwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dplab.fidelity import calibrate, feasibility
from dplab.plan import build_topology, plan_flows
from dplab.spec import parse


def dplab(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPLAB_CALIBRATION_DIR": str(tmp_path / "cal")}
    return subprocess.run([sys.executable, "-m", "dplab.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_calibrate_short_writes_the_machines_figures(tmp_path: Path):
    done = dplab(tmp_path, "calibrate", "--short", "--planes", "bridge")
    assert done.returncode == 0, done.stderr
    path = calibrate.calibration_path(tmp_path / "cal")
    assert f"calibration: {path}" in done.stdout
    figures = json.loads(path.read_text())
    assert figures["mode"] == "short" and figures["kernel"] == os.uname().release
    timer = figures["timer_wakeup_us"]
    assert 0 < timer["p50"] <= timer["p99"] <= timer["max"]
    assert figures["pktblast_max_pps"] > 0
    steps = figures["planes"]["bridge"]["steps"]
    assert steps and steps[0]["target_pps"] == calibrate.SHORT_LADDER[0]
    assert all(s["offered_pps"] > 0 and s["loss_pct"] is not None for s in steps)
    faithful = figures["planes"]["bridge"]["faithful_pps"]
    assert faithful is None or faithful in calibrate.SHORT_LADDER


EXPERIMENT = """
name: ask
topology: {{name: linear, params: {{switches: 2, hosts_per_switch: 1, edge_bw: null,
                                    core_bw: null}}}}
planes: [bridge, ovs]
workloads:
  - {{kind: pps, pairs: [[h1, h2]], pps: {pps}, duration: 1}}
"""


CALIBRATION = {"planes": {"bridge": {"faithful_pps": 400_000}, "ovs": {"faithful_pps": 50_000}},
               "pktblast_max_pps": 500_000}


def _warnings(pps: int) -> list[str]:
    exp = parse(EXPERIMENT.format(pps=pps))
    topo = build_topology(exp)
    return feasibility.warnings(plan_flows(exp, topo), topo.graph, ["bridge", "ovs"],
                                CALIBRATION, "cal.json")


def test_the_load_counts_every_switch_on_the_path_against_each_plane_and_the_sender():
    # 30,000 pps over 2 switches: 60,000 frames/s, over ovs's 50,000 only
    [warning] = _warnings(30_000)
    assert warning.startswith("phase 1 asks ovs to forward 60,000 pps; this machine "
                              "forwards 50,000 pps faithfully on ovs (cal.json)")
    assert len(_warnings(600_000)) == 3  # both planes, and pktblast's ceiling
    assert any("pktblast sends at most 500,000 pps" in w for w in _warnings(600_000))
    assert _warnings(1000) == []


def test_validate_prints_the_warning(tmp_path: Path):
    spec = tmp_path / "ask.yaml"
    spec.write_text(EXPERIMENT.format(pps=30_000))
    calibrate.save(CALIBRATION, calibrate.calibration_path(tmp_path / "cal"))
    done = dplab(tmp_path, "validate", str(spec))
    assert done.returncode == 0, done.stderr
    assert "warning: phase 1 asks ovs to forward 60,000 pps" in done.stderr
