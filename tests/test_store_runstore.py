"""RunStore: what goes in comes back out of Parquet unchanged, None stays None, resume works."""

import csv

import pyarrow.parquet as pq
import pytest

from dplab.planes.base import SeriesPoint
from dplab.store import RunStore, StoreError
from dplab.workloads.flows import Flow, FlowResult


def tcp_result() -> FlowResult:
    return FlowResult(
        Flow("tcp-h2-h6", "tcp", "h2", "h6", {"duration": 2}),
        ok=True,
        error=None,
        summary={"throughput_bps": 9.4e7, "syn_delay_ms": None, "bytes": 23_500_000.0},
        intervals=[
            {"t_start": 0.0, "t_end": 1.0, "throughput_bps": 9.3e7},
            {"t_start": 1.0, "t_end": 2.0, "throughput_bps": None},
        ],
    )


def failed_ping() -> FlowResult:
    return FlowResult(Flow("icmp-h1-h5", "icmp", "h1", "h5", {"count": 3}), ok=False,
                      error="ping: no reply", summary={"rtt_ms": None, "loss_pct": 100.0},
                      intervals=[])


def add(store: RunStore, run_id: str, status: str = "ok", **kw) -> None:
    args = dict(plane_label="ovs", repetition=1, status=status,
                error=None if status == "ok" else "boom", started=1000.0, duration_s=4.5,
                plane_stats={"packet_ins": 12.0, "setup_ms": None},
                results=[tcp_result(), failed_ping()])
    args.update(kw)
    store.add_run(run_id, **args)


def test_round_trip_keeps_values_and_missing(tmp_path):
    store = RunStore(tmp_path)
    store.write_experiment({"name": "demo", "planes": ["bridge", "ovs"]})
    add(store, "ovs-r1")

    back = RunStore.open(tmp_path)
    assert back.experiment["spec"] == {"name": "demo", "planes": ["bridge", "ovs"]}
    assert back.experiment["dplab_version"]
    assert back.rows("runs") == [{"run_id": "ovs-r1", "plane": "ovs", "repetition": 1,
                                  "status": "ok", "error": None, "started": 1000.0,
                                  "duration_s": 4.5, "cpu_idle": None,
                                  "cpu_wakeup_target_us": None,
                                  "cpu_idle_polled_share": None,
                                  "host_bound": None, "host_bound_reasons": None}]
    summary = {(r["flow_id"], r["metric"]): r["value"] for r in back.rows("summaries")}
    assert summary == {
        ("tcp-h2-h6", "throughput_bps"): 9.4e7,
        ("tcp-h2-h6", "syn_delay_ms"): None,
        ("tcp-h2-h6", "bytes"): 23_500_000.0,
        ("icmp-h1-h5", "rtt_ms"): None,
        ("icmp-h1-h5", "loss_pct"): 100.0,
    }
    intervals = [(r["t_start"], r["t_end"], r["metric"], r["value"])
                 for r in back.rows("intervals")]
    assert intervals == [(0.0, 1.0, "throughput_bps", 9.3e7),
                         (1.0, 2.0, "throughput_bps", None)]
    flows = {r["flow_id"]: (r["ok"], r["error"], r["kind"]) for r in back.rows("flows")}
    assert flows == {"tcp-h2-h6": (True, None, "tcp"),
                     "icmp-h1-h5": (False, "ping: no reply", "icmp")}
    stats = {r["stat"]: r["value"] for r in back.rows("plane_stats")}
    assert stats == {"packet_ins": 12.0, "setup_ms": None}


def test_every_run_is_on_disk_at_once_and_nulls_are_parquet_nulls(tmp_path):
    store = RunStore(tmp_path)
    add(store, "ovs-r1")
    table = pq.read_table(tmp_path / "summaries.parquet")
    assert table.column("value").null_count == 2
    assert not list(tmp_path.glob(".*.tmp"))


def test_resume_skips_ok_runs_and_replaces_a_retried_run(tmp_path):
    store = RunStore(tmp_path)
    add(store, "ovs-r1")
    add(store, "ovs-r2", status="failed", repetition=2, results=[])
    assert RunStore(tmp_path).completed_runs() == {"ovs-r1"}

    resumed = RunStore(tmp_path)
    add(resumed, "ovs-r2", repetition=2)
    again = RunStore.open(tmp_path)
    assert again.completed_runs() == {"ovs-r1", "ovs-r2"}
    assert [r["run_id"] for r in again.rows("runs")] == ["ovs-r1", "ovs-r2"]
    assert sum(r["run_id"] == "ovs-r2" for r in again.rows("summaries")) == 5


def test_csv_export_writes_every_table_with_empty_cells_for_missing(tmp_path):
    store = RunStore(tmp_path / "res")
    add(store, "ovs-r1")
    paths = store.export_csv(tmp_path / "csv")
    assert sorted(p.name for p in paths) == ["fidelity.csv", "flows.csv", "intervals.csv",
                                            "plane_info.csv", "plane_series.csv",
                                            "plane_stats.csv", "run_axes.csv", "runs.csv",
                                            "summaries.csv"]
    with (tmp_path / "csv" / "summaries.csv").open() as f:
        rows = list(csv.DictReader(f))
    syn = next(r for r in rows if r["metric"] == "syn_delay_ms")
    assert syn["value"] == ""
    assert float(next(r for r in rows if r["metric"] == "bytes")["value"]) == 23_500_000.0


def test_bad_input_is_named(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(StoreError, match="status must be one of"):
        add(store, "x", status="maybe")
    with pytest.raises(StoreError, match="needs an error message"):
        add(store, "x", status="failed", error=None)
    bad = tcp_result()
    bad.summary["loss_pct"] = "lots"
    with pytest.raises(StoreError, match=r"run 'x', flow 'tcp-h2-h6', summary metric 'loss_pct'"):
        add(store, "x", results=[bad])
    no_time = tcp_result()
    no_time.intervals = [{"throughput_bps": 1.0}]
    with pytest.raises(StoreError, match="interval 0: t_start is missing"):
        add(store, "x", results=[no_time])
    assert store.rows("runs") == [] and store.rows("summaries") == []


def test_nan_is_stored_as_not_measured(tmp_path):
    store = RunStore(tmp_path)
    result = tcp_result()
    result.summary["throughput_bps"] = float("nan")
    add(store, "ovs-r1", results=[result])
    values = {r["metric"]: r["value"] for r in RunStore.open(tmp_path).rows("summaries")}
    assert values["throughput_bps"] is None


def test_open_refuses_an_empty_directory_and_a_different_experiment(tmp_path):
    with pytest.raises(StoreError, match="no stored experiment"):
        RunStore.open(tmp_path)
    store = RunStore(tmp_path)
    store.write_experiment({"name": "a"})
    store.write_experiment({"name": "a"})  # resuming the same experiment is fine
    with pytest.raises(StoreError, match="different experiment"):
        RunStore(tmp_path).write_experiment({"name": "b"})


SERIES = [SeriesPoint(-0.2, "rate_bps:s3:class1", 1e6),
          SeriesPoint(0.8, "used_bps:s3:class1", 2.5e5),
          SeriesPoint(0.8, "rate_bps:s3:class1", None)]


def test_plane_series_round_trip_and_csv(tmp_path):
    store = RunStore(tmp_path / "res")
    add(store, "p4-r1", plane_label="p4", plane_series=SERIES)
    add(store, "p4-r2", plane_label="p4", repetition=2)  # a plane with no series: no rows
    back = RunStore.open(tmp_path / "res")
    assert back.rows("plane_series") == [
        {"run_id": "p4-r1", "plane": "p4", "repetition": 1, "t": t, "series": name,
         "value": value} for t, name, value in SERIES]
    back.export_csv(tmp_path / "csv")
    with (tmp_path / "csv" / "plane_series.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["t"], r["series"], r["value"]) for r in rows] == [
        ("-0.2", "rate_bps:s3:class1", "1000000"), ("0.8", "used_bps:s3:class1", "250000"),
        ("0.8", "rate_bps:s3:class1", "")]


def test_a_store_from_before_plane_series_opens_and_takes_new_runs(tmp_path):
    store = RunStore(tmp_path)
    store.write_experiment({"name": "old"})
    add(store, "ovs-r1")
    (tmp_path / "plane_series.parquet").unlink()  # the layout stores had before the table

    old = RunStore.open(tmp_path)
    assert old.rows("plane_series") == []
    assert old.completed_runs() == {"ovs-r1"}
    add(old, "ovs-r2", repetition=2, plane_series=SERIES[:1])
    again = RunStore.open(tmp_path)
    assert [r["run_id"] for r in again.rows("runs")] == ["ovs-r1", "ovs-r2"]
    assert [(r["run_id"], r["series"]) for r in again.rows("plane_series")] == [
        ("ovs-r2", "rate_bps:s3:class1")]


def test_bad_series_points_are_named_and_store_nothing(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(StoreError, match=r"run 'x', plane series point 1 \(rate_bps:s1\) "
                                         r"value: expected a number"):
        add(store, "x", plane_series=[SERIES[0], SeriesPoint(1.0, "rate_bps:s1", "fast")])
    with pytest.raises(StoreError, match="point 0 .*t is missing"):
        add(store, "x", plane_series=[SeriesPoint(None, "rate_bps:s1", 1.0)])
    with pytest.raises(StoreError, match="point 0: series must be a non-empty name"):
        add(store, "x", plane_series=[SeriesPoint(1.0, "", 1.0)])
    assert store.rows("runs") == [] and store.rows("plane_series") == []


def test_plane_info_round_trip_and_old_stores_without_it(tmp_path):
    store = RunStore(tmp_path)
    add(store, "ovs-r1", plane_info={"ports": "netdev-tso", "TSO": "on"})
    (tmp_path / "plane_info.parquet").unlink()  # the layout stores had before the table
    old = RunStore.open(tmp_path)
    assert old.rows("plane_info") == []
    add(old, "ovs-r2", repetition=2, plane_info={"ports": "afxdp"})
    assert [(r["run_id"], r["key"], r["value"]) for r in RunStore.open(tmp_path)
            .rows("plane_info")] == [("ovs-r2", "ports", "afxdp")]
    with pytest.raises(StoreError, match="run 'x', plane info: .*'TSO': True"):
        add(old, "x", plane_info={"TSO": True})
