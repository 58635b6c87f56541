"""PNG plots from stored data: throughput and jitter over time, per-metric box plots, CDFs of
per-interval values and box plots of the planes' resource use.

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
# Time series drawn in every report; flows' values add up for these, average for the rest.
TIMESERIES_METRICS = ("throughput_bps", "jitter_ms")
SUMMED = ("throughput_bps", "throughput_pps", "bytes")
# Per-interval metrics worth a distribution: each interval of each flow is one sample.
CDF_METRICS = ("throughput_bps", "rtt_ms", "owd_ms", "jitter_ms")
# Plane statistics of dplab.measure.resources, in display order.
RESOURCE_STATS = ("cpu_user_pct", "cpu_sys_pct", "mem_rss_mb", "host_user_pct",
                  "host_sys_pct", "host_softirq_pct")

# (traffic, plane) -> interval index -> one value per run
Series = dict[tuple[str, str], dict[int, list[float]]]


def timeseries(intervals: list[dict[str, Any]], flows: list[dict[str, Any]],
               analysis: Analysis, metric: str, path: Path, heading: str = "") -> Path | None:
    """Per traffic class a subplot, per plane a line: the metric over the class's flows in
    each interval (summed for throughput, averaged otherwise), averaged over the ok runs;
    ``heading`` above them all (e.g. the axis point). None when nothing was measured."""
    failed = {r["run_id"] for r in analysis.failed_runs}
    series, width = metric_per_interval(intervals, traffic_labels(flows), failed, metric)
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
            ys = [display_value(metric, statistics.fmean(buckets[x])) for x in xs]
            ax.plot([(x + 0.5) * width for x in xs], ys, marker=".", label=plane)
            top = max(top, *ys)
        # From zero: a zoomed axis would make a 1 % difference look dramatic.
        ax.set_ylim(0, top * 1.15 or 1.0)
        how = "summed over flows" if metric in SUMMED else "mean over flows"
        ax.set_title(f"{traffic} traffic: {metric_label(metric)} {how}, mean over runs")
        ax.set_ylabel(metric_label(metric))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    axes[-1, 0].set_xlabel("time since the first interval (s)")
    if heading:
        fig.suptitle(heading)
    return save_png(fig, path)


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
        paths.append(save_png(fig, Path(out_dir) / f"box_{metric}.png"))
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


def cdf_plots(intervals: list[dict[str, Any]], flows: list[dict[str, Any]],
              analysis: Analysis, out_dir: Path) -> list[Path]:
    """One PNG per metric of CDF_METRICS with stored interval values: per traffic class a
    subplot, per plane the empirical CDF over every interval of every flow of its ok runs."""
    failed = {r["run_id"] for r in analysis.failed_runs}
    labels = traffic_labels(flows)
    samples: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))  # metric -> traffic -> plane -> values
    for r in intervals:
        if r["metric"] in CDF_METRICS and r["value"] is not None and r["run_id"] not in failed:
            traffic = labels.get((r["run_id"], r["flow_id"]), r["kind"])
            samples[r["metric"]][traffic][r["plane"]].append(display_value(r["metric"],
                                                                           r["value"]))
    paths = []
    for metric in CDF_METRICS:
        if samples.get(metric):
            paths.append(_cdf_figure(metric, samples[metric], analysis.planes,
                                     Path(out_dir) / f"cdf_{metric}.png"))
    return paths


def _cdf_figure(metric: str, by_traffic: dict[str, dict[str, list[float]]],
                planes: list[str], path: Path) -> Path:
    fig = Figure(figsize=(1.2 + 3.6 * len(by_traffic), 3.6))
    axes = fig.subplots(1, len(by_traffic), squeeze=False)
    for ax, (traffic, by_plane) in zip(axes[0], by_traffic.items(), strict=True):
        for plane in planes:
            values = sorted(by_plane.get(plane, []))
            if values:
                # from 0 at the smallest value, so even one sample draws a visible step
                fractions = [i / len(values) for i in range(len(values) + 1)]
                ax.step([values[0], *values], fractions, where="post",
                        label=f"{plane} (n={len(values)})")
        ax.set_title(f"{traffic} traffic: per-interval values", fontsize="medium")
        ax.set_xlabel(metric_label(metric))
        ax.set_ylabel("fraction of intervals ≤ x")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    return save_png(fig, path)


def resource_box_plots(analysis: Analysis, path: Path) -> Path | None:
    """One PNG, a subplot per resource statistic with any value: a box of per-run values
    per plane. Planes without a value (e.g. no user-space processes) get no box. None when
    no resource use was stored."""
    measured = [stat for stat in RESOURCE_STATS
                if any(r.run_values for (t, s, _p), r in analysis.results.items()
                       if t == PLANE and s == stat)]
    if not measured:
        return None
    fig = Figure(figsize=(1.2 + 2.8 * len(measured), 3.8))
    axes = fig.subplots(1, len(measured), squeeze=False)
    for ax, stat in zip(axes[0], measured, strict=True):
        results = {p: analysis.results.get((PLANE, stat, p)) for p in analysis.planes}
        planes = [p for p, r in results.items() if r is not None and r.run_values]
        data = [list(results[p].run_values) for p in planes]
        ax.boxplot(data, tick_labels=planes)
        for position, values in enumerate(data, start=1):
            ax.plot([position] * len(values), values, "k.", alpha=0.6)
        ax.set_title(stat, fontsize="medium")
        ax.set_ylim(bottom=0)
        ax.tick_params(axis="x", labelrotation=20)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("resource use during traffic (per run): plane processes "
                 "(cpu_* % of one core, RSS MiB) and whole machine (host_* % of all cores)",
                 fontsize="small")
    return save_png(fig, path)


def metric_per_interval(intervals: list[dict[str, Any]],
                        labels: dict[tuple[str, str], str],
                        failed_runs: set[str], metric: str = THROUGHPUT) -> tuple[Series, float]:
    """(traffic, plane) -> interval index -> one value per run (the flows' sum for
    throughput, their mean otherwise), and the interval length in seconds.

    Interval times are taken relative to the class's first interval in each run, and
    bucketed by the typical interval length, so flows of one run line up even when their
    clocks started a few milliseconds apart. Flows without a value in an interval add
    nothing to it.
    """
    rows = [r for r in intervals if r["metric"] == metric and r["value"] is not None
            and r["run_id"] not in failed_runs]
    if not rows:
        return {}, 1.0
    width = statistics.median(r["t_end"] - r["t_start"] for r in rows) or 1.0
    starts: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["run_id"], labels.get((r["run_id"], r["flow_id"]), r["kind"]))
        starts[key] = min(starts.get(key, r["t_start"]), r["t_start"])
    values: dict[tuple[str, str, str, int], list[float]] = defaultdict(list)
    for r in rows:
        traffic = labels.get((r["run_id"], r["flow_id"]), r["kind"])
        bucket = round((r["t_start"] - starts[(r["run_id"], traffic)]) / width)
        values[(traffic, r["plane"], r["run_id"], bucket)].append(r["value"])
    combine = sum if metric in SUMMED else statistics.fmean
    series: Series = defaultdict(lambda: defaultdict(list))
    for (traffic, plane, _run, bucket), found in values.items():
        series[(traffic, plane)][bucket].append(combine(found))
    return series, width


def save_png(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
