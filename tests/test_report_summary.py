"""The report's opening summary (report.summary): which plane did better on which metric,
from rows shaped like the store's, and where it is not significant, saying so."""

from __future__ import annotations

import json

from dplab.analysis.compare import analyse_rows
from dplab.report import html, summary
from dplab.report.colours import plane_colours


def _rows(values: dict[str, dict[str, list[float]]]):
    """plane -> metric -> one tcp flow's value per repetition, as the store keeps them."""
    runs, flows, summaries = [], [], []
    for plane, metrics in values.items():
        repetitions = len(next(iter(metrics.values())))
        for rep in range(repetitions):
            run_id = f"{plane}-r{rep}"
            runs.append({"run_id": run_id, "plane": plane, "repetition": rep, "status": "ok",
                         "error": None})
            flows.append({"run_id": run_id, "flow_id": "f", "kind": "tcp", "ok": True,
                          "params": json.dumps({"duration": 5}), "plane": plane})
            summaries += [{"run_id": run_id, "flow_id": "f", "kind": "tcp", "plane": plane,
                           "metric": metric, "value": series[rep]}
                          for metric, series in metrics.items()]
    return analyse_rows(runs, flows, summaries, [], plane_order=list(values))


def test_lines_say_better_worse_and_not_significant(tmp_path):
    analysis = _rows({
        "bridge": {"throughput_bps": [100, 101, 99], "rtt_ms": [1.0, 1.1, 0.9],
                   "loss_pct": [1.0, 3.0, 2.0]},
        "ovs": {"throughput_bps": [150, 151, 149], "rtt_ms": [3.0, 3.1, 2.9],
                "loss_pct": [2.0, 1.0, 3.0]},
    })
    found = summary.findings(analysis, None)
    (line,) = summary.lines(found, "bridge")
    assert line.startswith("tcp: ovs vs bridge: better on throughput (Mbit/s) (+50.0 %, p=")
    assert "worse on rtt_ms (3×, p=" in line or "worse on rtt_ms (3.0×, p=" in line
    assert line.endswith("no significant difference on loss_pct.")
    path = summary.figure(found, "bridge", tmp_path / "summary.png",
                          plane_colours(["bridge", "ovs"]))
    assert path is not None and path.stat().st_size > 0
    # right of 1 is better whatever the metric's direction
    times = {f.metric: f.times_better for f in found}
    assert times["throughput_bps"] > 1 > times["rtt_ms"]


def test_one_plane_has_nothing_to_summarise(tmp_path):
    analysis = _rows({"bridge": {"throughput_bps": [100, 101]}})
    assert summary.findings(analysis, None) == []
    assert summary.figure([], "bridge", tmp_path / "s.png", {}) is None


def test_plots_are_grouped_under_the_metric_they_show():
    metrics = ["throughput_bps", "throughput_pps", "rtt_ms", "jitter_ms"]
    assert html._plot_metric("throughput_timeseries_rate_mbit=10", metrics) == "throughput_bps"
    assert html._plot_metric("axis_rate_mbit_throughput_pps", metrics) == "throughput_pps"
    assert html._plot_metric("cdf_rtt_ms", metrics) == "rtt_ms"
    assert html._plot_metric("resources", metrics) == html.OTHER_PLOTS
