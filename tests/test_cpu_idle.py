"""Experiment field cpu_idle: the PM QoS request is held for the runs, released after, and
every run records under which idle behaviour it was measured."""

from __future__ import annotations

import os
from pathlib import Path
from typing import get_args

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dplab import report
from dplab.runner import ExperimentError, run_matrix
from dplab.spec import SpecError, parse
from dplab.spec.model import CpuIdle
from dplab.store import RunStore
from dplab.substrate import cpu_idle

EXPERIMENT = """
name: idle
topology: {{name: single, params: {{hosts: 2}}}}
planes: [bridge]
workloads:
  - {{kind: icmp, pairs: [[h1, h2]], count: 5, interval: 0.05}}
{cpu_idle}
"""


def holds_pm_qos_file() -> bool:
    """Whether this process has /dev/cpu_dma_latency open (i.e. holds a request)."""
    fds = Path("/proc/self/fd")
    return any(os.path.realpath(fds / fd) == str(cpu_idle.PM_QOS_DEVICE)
               for fd in os.listdir(fds) if (fds / fd).exists())


def test_spec_takes_machine_or_poll_default_machine_and_names_a_bad_value():
    assert parse(EXPERIMENT.format(cpu_idle="")).cpu_idle == "machine"
    assert parse(EXPERIMENT.format(cpu_idle="cpu_idle: poll")).cpu_idle == "poll"
    with pytest.raises(SpecError, match=r"cpu_idle: Input should be 'machine' or 'poll' "
                                        r"\(got 'fast'\)"):
        parse(EXPERIMENT.format(cpu_idle="cpu_idle: fast"))
    assert get_args(CpuIdle) == cpu_idle.SETTINGS


def test_polling_idle_holds_zero_and_releases_the_request_when_the_body_raises():
    before = cpu_idle.wakeup_latency_target_us()
    with pytest.raises(RuntimeError, match="body failed"), cpu_idle.polling_idle():
        assert cpu_idle.wakeup_latency_target_us() == 0
        assert holds_pm_qos_file()
        raise RuntimeError("body failed")
    assert not holds_pm_qos_file()
    assert cpu_idle.wakeup_latency_target_us() == before


def test_machine_holds_nothing():
    with cpu_idle.idle_behaviour("machine"):
        assert not holds_pm_qos_file()


def test_a_request_the_machine_refuses_stops_the_experiment_before_any_run(
        tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_idle, "PM_QOS_DEVICE", tmp_path / "no-such-device")
    exp = parse(EXPERIMENT.format(cpu_idle="cpu_idle: poll"))
    with pytest.raises(ExperimentError, match=r"cpu_idle poll: cannot open .*no-such-device"):
        run_matrix(exp, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_polled_share_is_the_poll_states_share_of_idle_time():
    before = {"POLL": 100, "haltpoll idle": 1000}
    assert cpu_idle.polled_share(before, {"POLL": 400, "haltpoll idle": 1100}) == 0.75
    assert cpu_idle.polled_share(before, before) is None  # no idle time: not measurable
    assert cpu_idle.polled_share({}, {}) is None  # no cpuidle states


def test_report_header_and_runs_table_show_the_idle_behaviour(tmp_path):
    store = RunStore(tmp_path)
    store.write_experiment({"name": "idle", "planes": ["bridge"], "repetitions": 2})
    for rep, share in ((1, 0.97), (2, 0.99)):
        store.add_run(f"bridge-r{rep}", "bridge", rep, "ok", None, 1000.0, 2.0, {}, [],
                      cpu_idle=cpu_idle.IdleRecord("poll", 0, share))
    page = report.build(tmp_path).read_text()
    assert ("<dt>CPU idle</dt><dd>poll: idle CPUs poll instead of halting (0 µs wake-up "
            "latency request held) (wake-up latency target 0 µs; idle time spent polling "
            "97–99 %; 2 runs)</dd>") in page
    assert "<td>bridge-r2</td><td>ok</td><td>2.0</td><td>poll</td><td>0 µs</td><td>99 %" in page


def test_runs_stored_before_the_idle_columns_load_as_not_recorded(tmp_path):
    old = pa.table({"run_id": ["bridge-r1"], "plane": ["bridge"], "repetition": [1],
                    "status": ["ok"], "error": [None], "started": [1.0], "duration_s": [2.0]})
    pq.write_table(old, tmp_path / "runs.parquet")
    [run] = RunStore.open(tmp_path).rows("runs")
    assert run["cpu_idle"] is None and run["cpu_idle_polled_share"] is None
    assert report.cpu_idle.summary([run]) == "not recorded (1 run)"


def run_once(tmp_path: Path, setting: str) -> tuple[dict, list[int | None]]:
    """One tiny run; returns its stored row and the targets read while it ran."""
    exp = parse(EXPERIMENT.format(cpu_idle=f"cpu_idle: {setting}"))
    seen: list[int | None] = []
    store = run_matrix(exp, tmp_path,
                       progress=lambda _msg: seen.append(cpu_idle.wakeup_latency_target_us()))
    [run] = store.rows("runs")
    assert run["status"] == "ok", run["error"]
    summaries = {s["metric"]: s["value"] for s in store.rows("summaries")}
    assert summaries["packets_received"] == 5
    return run, seen


@pytest.mark.net
def test_poll_holds_a_zero_target_for_the_run_and_restores_it_after(tmp_path):
    before = cpu_idle.wakeup_latency_target_us()
    run, seen = run_once(tmp_path, "poll")
    assert seen and set(seen) == {0}
    assert run["cpu_idle"] == "poll" and run["cpu_wakeup_target_us"] == 0
    share = run["cpu_idle_polled_share"]
    assert share is None or share > 0.5
    assert cpu_idle.wakeup_latency_target_us() == before
    assert not holds_pm_qos_file()


@pytest.mark.net
def test_machine_leaves_the_target_as_it_was(tmp_path):
    before = cpu_idle.wakeup_latency_target_us()
    run, seen = run_once(tmp_path, "machine")
    assert set(seen) == {before}
    assert run["cpu_idle"] == "machine" and run["cpu_wakeup_target_us"] == before
    assert cpu_idle.wakeup_latency_target_us() == before
