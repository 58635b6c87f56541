"""A plane whose daemon dies or stops answering mid-run: the run is stored failed with the
reason, keeps the flows measured before, points to logs that outlive it, and the next
run works. The daemons are really killed (or stopped) while the runner's traffic runs;
the p4 plane's stopped daemons one by one on one plane."""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from dplab import planes, runner
from dplab.control.forwarding import Forwarding
from dplab.planes import PlaneError, controlled, liveness, ovs, p4
from dplab.spec import parse
from dplab.store import RunStore
from dplab.topology import catalog

EXPERIMENT = """
name: liveness
topology: {{name: single, params: {{hosts: 2}}}}
planes: [{planes}]
workloads:
  - {{kind: icmp, pairs: [[h1, h2]], count: 3, interval: 0.05}}
  - {{kind: icmp, pairs: [[h2, h1]], count: 3, interval: 0.05}}
repetitions: {reps}
"""


def _daemon_pid(run_dir: str, name: str) -> int:
    """The process of this run whose command line names ``name`` (its program or module)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(run_dir in a for a in argv) and any(a.endswith(name) for a in argv[:3]):
            return int(cmdline.parent.name)
    raise AssertionError(f"no {name} process in {run_dir}")


def _signal_at_phase_2(faults: dict[str, tuple[str, signal.Signals]],
                       said: list[str]) -> Callable[[str], None]:
    """The runner's progress callback: as run ``run_id`` announces its second traffic phase,
    send ``faults[run_id]`` = (daemon, signal) to that run's daemon."""
    run_dirs: dict[str, str] = {}

    def progress(msg: str) -> None:
        said.append(msg)
        run_id = msg.split(":", 1)[0]
        up = re.search(r"network up \((dl[0-9a-f]+)\)", msg)
        if up:
            run_dirs[run_id] = f"/run/dplab/{up.group(1)}/"
        if msg.startswith(f"{run_id}: traffic phase 2/2") and run_id in faults:
            daemon, sig = faults.pop(run_id)
            os.kill(_daemon_pid(run_dirs[run_id], daemon), sig)

    return progress


def _run(tmp_path: Path, planes: str, reps: int,
         faults: dict[str, tuple[str, signal.Signals]]) -> tuple[dict, list[dict], list[str]]:
    said: list[str] = []
    exp = parse(EXPERIMENT.format(planes=planes, reps=reps))
    store = runner.run_matrix(exp, tmp_path / "results", _signal_at_phase_2(faults, said))
    store = RunStore.open(tmp_path / "results")
    return {r["run_id"]: r for r in store.rows("runs")}, store.rows("flows"), said


def _flows_of(flows: list[dict], run_id: str) -> list[tuple[str, bool]]:
    return [(f["flow_id"], f["ok"]) for f in flows if f["run_id"] == run_id]


def _kept_log(error: str, results: Path) -> Path:
    """The log a failed run's error points to: in the results, not the run directory."""
    log = Path(re.search(r"log (\S+\.log)", error).group(1))
    assert log.is_relative_to(results / "logs") and log.is_file(), error
    return log


@pytest.mark.net
def test_ovs_daemons_that_die_or_stop_fail_their_run_and_the_next_run_works(
        tmp_path: Path, monkeypatch) -> None:
    # Short deadlines (still far above a live daemon's milliseconds) keep the test short.
    monkeypatch.setattr(ovs, "OFCTL_TIMEOUT_S", 2)
    faults = {"ovs-r1": ("ovs-vswitchd", signal.SIGKILL),
              "ovs-r2": ("controller_main", signal.SIGKILL),
              "ovs-r3": ("ovs-vswitchd", signal.SIGSTOP)}
    runs, flows, said = _run(tmp_path, "ovs", 4, faults)
    results = tmp_path / "results"
    assert [runs[f"ovs-r{i}"]["status"] for i in range(1, 5)] == \
        ["failed", "failed", "failed", "ok"], said
    first, second = "w0-icmp-h1-h2", "w1-icmp-h2-h1"
    for run_id in ("ovs-r1", "ovs-r2"):  # phase 1 kept as measured; phase 2 marked
        assert _flows_of(flows, run_id) == [(first, True), (second, False)]
    killed = runs["ovs-r1"]["error"]
    assert "ovs-vswitchd was killed by SIGKILL" in killed
    assert "during traffic phase 2/2" in killed
    assert _kept_log(killed, results).name == "ovs-vswitchd.log"
    controller = runs["ovs-r2"]["error"]
    assert "controller was killed by SIGKILL" in controller
    assert _kept_log(controller, results).name == "controller.log"
    stopped = runs["ovs-r3"]["error"]
    # the first call after the stop meets the deadline (the flows' paths, or stats())
    assert re.search(r"ovs-vswitchd did not answer ovs-ofctl [a-z-]+ within 2 s", stopped)
    assert (results / "logs" / "ovs-r3" / "ovs" / "ovs-vswitchd.log").is_file()
    assert f"(the run's logs: {results / 'logs' / 'ovs-r3'})" in stopped
    assert _flows_of(flows, "ovs-r3")[0] == (first, True)
    assert _flows_of(flows, "ovs-r4") == [(first, True), (second, True)]


@pytest.mark.net
def test_a_p4_switch_that_dies_fails_its_run_keeping_its_flows(tmp_path: Path,
                                                                capsys) -> None:
    runs, flows, said = _run(tmp_path, "p4", 2, {"p4-r1": ("dplab-switch", signal.SIGKILL)})
    assert [runs["p4-r1"]["status"], runs["p4-r2"]["status"]] == ["failed", "ok"], said
    error = runs["p4-r1"]["error"]
    assert "switch-s1 was killed by SIGKILL" in error and "during traffic phase 2/2" in error
    assert _kept_log(error, tmp_path / "results").name == "switch-s1.log"
    assert _flows_of(flows, "p4-r1") == [("w0-icmp-h1-h2", True), ("w1-icmp-h2-h1", False)]
    assert "Traceback" not in capsys.readouterr().err  # a plane's failure is no bug


@pytest.mark.net
def test_each_p4_daemon_that_stops_answering_fails_stats_naming_it(monkeypatch) -> None:
    """A stopped (SIGSTOP) daemon has not exited: the deadline of the call into it finds it.
    Each is stopped in turn on one plane, and answers again once continued."""
    monkeypatch.setattr(p4, "ANSWER_TIMEOUT_S", 2)
    monkeypatch.setattr(controlled, "CONTROLLER_ANSWER_S", 2)
    stopped = {"dplab-switch": r"switch-s1: switch did not answer ping within 2 s",
               "dplab.p4runtime": r"the P4Runtime servers did not answer Capabilities "
                                  r"within 2 s \(DEADLINE_EXCEEDED\)",
               "p4runtime_app": r"the controller wrote no counters within 2 s"}
    with planes.running("p4", {}, catalog.build("single", hosts=2), 60) as (net, plane):
        for daemon, failure in stopped.items():
            pid = _daemon_pid(f"{net.run_dir}/", daemon)
            os.kill(pid, signal.SIGSTOP)
            try:
                with pytest.raises(PlaneError, match=failure):
                    plane.stats()
            finally:
                os.kill(pid, signal.SIGCONT)
        assert plane.stats()["switches"] == 1 and plane.failures() == []


def test_a_failed_runs_logs_are_kept_and_its_error_names_the_copies(tmp_path: Path,
                                                                    monkeypatch) -> None:
    monkeypatch.setattr(liveness, "KEPT_LOG_BYTES", 10)
    run_dir, kept = tmp_path / "run", tmp_path / "results" / "logs" / "ovs-r1"
    (run_dir / "ovs").mkdir(parents=True)
    (run_dir / "ovs" / "controller.log").write_text("0123456789 last words\n")
    (run_dir / "ovs" / "conf.db").write_text("not a log")
    failed = liveness.failed_run(PlaneError(f"ovs: controller exited; log {run_dir}/ovs/"
                                            "controller.log"), run_dir, kept)
    assert str(failed) == f"PlaneError: ovs: controller exited; log {kept}/ovs/controller.log"
    assert failed.expected
    assert (kept / "ovs" / "controller.log").read_text() == "ast words\n"  # its end
    assert not (kept / "ovs" / "conf.db").exists()
    other = liveness.failed_run(ValueError("no path here"), run_dir, kept)
    assert str(other) == f"ValueError: no path here (the run's logs: {kept})"
    assert not other.expected


@pytest.mark.net
def test_an_xdp_controller_thread_that_dies_fails_its_run(tmp_path: Path, monkeypatch) -> None:
    """The xdp plane's controller is a thread of the runner's process: an error that ends
    it (made here in its periodic tick) fails the run at the end of that phase."""
    crash = threading.Event()
    tick = Forwarding.tick

    def failing_tick(self: Forwarding) -> None:
        if crash.is_set():
            raise RuntimeError("tick failed")
        tick(self)

    monkeypatch.setattr(Forwarding, "tick", failing_tick)

    def progress(msg: str) -> None:
        if msg.startswith("xdp-r1: traffic phase 2/2"):
            crash.set()
            for thread in threading.enumerate():
                if thread.name == "xdp-controller":
                    thread.join(10)
            crash.clear()

    xdp = "{kind: xdp, label: xdp, options: {mode: reactive}}"
    exp = parse(EXPERIMENT.format(planes=xdp, reps=2))
    runner.run_matrix(exp, tmp_path / "results", progress)
    store = RunStore.open(tmp_path / "results")
    runs = {r["run_id"]: r for r in store.rows("runs")}
    assert runs["xdp-r1"]["status"] == "failed" and runs["xdp-r2"]["status"] == "ok"
    assert "xdp: the controller thread failed: RuntimeError('tick failed') (during traffic " \
           "phase 2/2)" in runs["xdp-r1"]["error"]
    assert _flows_of(store.rows("flows"), "xdp-r1") == [("w0-icmp-h1-h2", True),
                                                        ("w1-icmp-h2-h1", False)]
