"""PNG plots from stored data: throughput over time and per-metric box plots.

Figures are made with ``matplotlib.figure.Figure`` directly (no pyplot): they render to
PNG with the Agg backend, need no display and leave no global figure state behind.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dplab.analysis import PLANE, Analysis
from dplab.analysis.traffic import traffic_labels
from dplab.report.tables import display_value, metric_label

THROUGHPUT = "throughput_bps"

# (traffic, plane) -> interval index -> per-run summed throughput values
Series = dict[tuple[str, str], dict[int, list[float]]]


def throughput_timeseries(intervals: list[dict[str, Any]], flows: list[dict[str, Any]],
                          analysis: Analysis, path: Path) -> Path | None:
    """Per traffic class a subplot, per plane a line: throughput summed over the class's
    flows in each interval, averaged over the ok runs. None when nothing was measured.
    """
    failed = {r["run_id"] for r in analysis.failed_runs}
    series, width = throughput_per_interval(intervals, traffic_labels(flows), failed)
    traffics = list(dict.fromkeys(t for t, _ in series))
    if not traffics:
        return None
    fig = Figure(figsize=(9, 3.2 * len(traffics)))
    axes = fig.subplots(len(traffics), 1, squeeze=False, sharex=True)
    for ax, traffic in zip(axes[:, 0], traffics, strict=True):
        top = 0.0
        for plane in analysis.planes:
            buckets = series.get((traffic, plane))
            if not buckets:
                continue
            xs = sorted(buckets)
            ys = [display_value(THROUGHPUT, statistics.fmean(buckets[x])) for x in xs]
            ax.plot([(x + 0.5) * width for x in xs], ys, marker=".", label=plane)
            top = max(top, *ys)
        # From zero: a zoomed axis would make a 1 % difference look dramatic.
        ax.set_ylim(0, top * 1.15 or 1.0)
        ax.set_title(f"{traffic} traffic: throughput summed over flows, mean over runs")
        ax.set_ylabel(metric_label(THROUGHPUT))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    axes[-1, 0].set_xlabel("time since the first interval (s)")
    return _save(fig, path)


def box_plots(analysis: Analysis, out_dir: Path) -> list[Path]:
    """One PNG per measured metric: per traffic class a subplot with one box of per-run
    values per plane (plane statistics are left to the tables)."""
    by_metric: dict[str, list[str]] = defaultdict(list)
    for row in analysis.rows:
        measured = any(analysis.result(row, p).run_values for p in analysis.planes)
        if row.traffic != PLANE and measured:
            by_metric[row.metric].append(row.traffic)
    paths = []
    for metric, traffics in by_metric.items():
        fig = Figure(figsize=(1.2 + 3.2 * len(traffics), 3.6))
        axes = fig.subplots(1, len(traffics), squeeze=False)
        for ax, traffic in zip(axes[0], traffics, strict=True):
            _box(ax, analysis, traffic, metric)
        paths.append(_save(fig, Path(out_dir) / f"box_{metric}.png"))
    return paths


def _box(ax: Axes, analysis: Analysis, traffic: str, metric: str) -> None:
    data = [[display_value(metric, v)
             for v in analysis.results[(traffic, metric, plane)].run_values]
            for plane in analysis.planes]
    ax.boxplot(data, tick_labels=analysis.planes)
    for position, values in enumerate(data, start=1):  # show every run, not only the box
        ax.plot([position] * len(values), values, "k.", alpha=0.6)
    ax.set_title(f"{traffic} traffic (per run: mean over flows)", fontsize="medium")
    ax.set_ylabel(metric_label(metric))
    ax.tick_params(axis="x", labelrotation=20)
    ax.grid(axis="y", alpha=0.3)


def throughput_per_interval(intervals: list[dict[str, Any]],
                            labels: dict[tuple[str, str], str],
                            failed_runs: set[str]) -> tuple[Series, float]:
    """(traffic, plane) -> interval index -> one summed throughput per run, and the interval
    length in seconds.

    Interval times are taken relative to the class's first interval in each run, and
    bucketed by the typical interval length, so flows of one run line up even when their
    clocks started a few milliseconds apart. Flows without a value in an interval add
    nothing to its sum.
    """
    rows = [r for r in intervals if r["metric"] == THROUGHPUT and r["value"] is not None
            and r["run_id"] not in failed_runs]
    if not rows:
        return {}, 1.0
    width = statistics.median(r["t_end"] - r["t_start"] for r in rows) or 1.0
    starts: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["run_id"], labels.get((r["run_id"], r["flow_id"]), r["kind"]))
        starts[key] = min(starts.get(key, r["t_start"]), r["t_start"])
    sums: dict[tuple[str, str, str, int], float] = defaultdict(float)
    for r in rows:
        traffic = labels.get((r["run_id"], r["flow_id"]), r["kind"])
        bucket = round((r["t_start"] - starts[(r["run_id"], traffic)]) / width)
        sums[(traffic, r["plane"], r["run_id"], bucket)] += r["value"]
    series: Series = defaultdict(lambda: defaultdict(list))
    for (traffic, plane, _run, bucket), total in sums.items():
        series[(traffic, plane)][bucket].append(total)
    return series, width


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
