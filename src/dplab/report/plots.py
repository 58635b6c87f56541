"""PNG plots from stored data: throughput and jitter over time, per-metric box plots, CDFs of
per-interval values and box plots of the planes' resource use. Box plots, CDFs and resource
use draw a row of panels per ``Group``: the whole experiment, or each axis point of one
(pooling the points would mix them).

Figures are made with ``matplotlib.figure.Figure`` directly (no pyplot): they render to
PNG with the Agg backend, need no display and leave no global figure state behind.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from dplab.analysis import PLANE, Analysis
from dplab.analysis.traffic import traffic_labels
from dplab.report.colours import PlaneColours
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
PANEL_HEIGHT = 3.2  # inches per row of panels
BOX_ALPHA = 0.35  # a box's fill: its plane's colour, light enough to show the runs' dots


@dataclass(frozen=True)
class Group:
    """The runs one row of panels shows: every run of an experiment without axes (label
    ""), or those of one axis point (label e.g. "rate_mbit=10, topology=grid")."""

    label: str
    slug: str  # the label in file names ("" without axes)
    analysis: Analysis
    intervals: list[dict[str, Any]]  # the store's intervals rows of these runs
    flows: list[dict[str, Any]]  # the store's flows rows of these runs
    series: list[dict[str, Any]]  # the store's plane_series rows of these runs


def titled(label: str, title: str) -> str:
    return f"{label}\n{title}" if label else title


def panel_grid(rows: int, columns: int, width: float, height: float = PANEL_HEIGHT,
                **shared: Any) -> tuple[Figure, Any]:
    """A figure of ``rows`` x ``columns`` panels (2-D array of Axes), ``width`` x
    ``height`` inches each."""
    fig = Figure(figsize=(1.2 + width * columns, 0.4 + height * rows))
    return fig, fig.subplots(rows, columns, squeeze=False, **shared)


def timeseries(intervals: list[dict[str, Any]], flows: list[dict[str, Any]],
               analysis: Analysis, metric: str, path: Path, colours: PlaneColours,
               heading: str = "") -> Path | None:
    """Per traffic class a subplot, per plane a line in its colour: the metric over the
    class's flows in each interval (summed for throughput, averaged otherwise), averaged
    over the ok runs; ``heading`` above them all (e.g. the axis point). None when nothing
    was measured."""
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
            ax.plot([(x + 0.5) * width for x in xs], ys, marker=".", label=plane,
                    color=colours[plane])
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


def box_plots(groups: list[Group], out_dir: Path, colours: PlaneColours) -> list[Path]:
    """One PNG per measured metric: per group a row, per traffic class a panel with one box
    of per-run values per plane, in its colour (plane statistics are left to the tables).
    Each panel has its own scale: a row compares the planes at its point."""
    by_metric: dict[str, dict[str, None]] = defaultdict(dict)  # metric -> traffics, ordered
    for group in groups:
        for row in group.analysis.rows:
            if row.traffic != PLANE and has_values(group.analysis, row.traffic, row.metric):
                by_metric[row.metric][row.traffic] = None
    paths = []
    for metric, ordered in by_metric.items():
        traffics = list(ordered)
        mine = [g for g in groups if any(has_values(g.analysis, t, metric) for t in traffics)]
        fig, axes = panel_grid(len(mine), len(traffics), 3.2, 3.6)
        for panels, group in zip(axes, mine, strict=True):
            for ax, traffic in zip(panels, traffics, strict=True):
                if has_values(group.analysis, traffic, metric):
                    _box(ax, group, traffic, metric, colours)
                else:
                    ax.set_visible(False)
        paths.append(save_png(fig, Path(out_dir) / f"box_{metric}.png"))
    return paths


def has_values(analysis: Analysis, traffic: str, metric: str) -> bool:
    return any((r := analysis.results.get((traffic, metric, plane))) is not None
               and r.run_values for plane in analysis.planes)


def _box(ax: Axes, group: Group, traffic: str, metric: str, colours: PlaneColours) -> None:
    analysis = group.analysis
    planes = [p for p in analysis.planes if (traffic, metric, p) in analysis.results]
    data = [[display_value(metric, v)
             for v in analysis.results[(traffic, metric, plane)].run_values]
            for plane in planes]
    _coloured_boxes(ax, data, planes, colours)
    ax.set_title(titled(group.label, f"{traffic} traffic (per run: mean over flows)"),
                 fontsize="medium")
    ax.set_ylabel(metric_label(metric))
    ax.tick_params(axis="x", labelrotation=20)
    ax.grid(axis="y", alpha=0.3)


def _coloured_boxes(ax: Axes, data: list[list[float]], planes: list[str],
                    colours: PlaneColours) -> None:
    """A box per plane, filled with its colour, and every run's value as a dot over it."""
    boxes = ax.boxplot(data, tick_labels=planes, patch_artist=True,
                       medianprops={"color": "black"})
    for box, plane in zip(boxes["boxes"], planes, strict=True):
        box.set_facecolor(to_rgba(colours[plane], BOX_ALPHA))
    # every run's value, not only the box: one artist for the panel (drawing is per artist)
    ax.plot([position for position, values in enumerate(data, start=1) for _ in values],
            [value for values in data for value in values], "k.", alpha=0.6)


def cdf_plots(groups: list[Group], out_dir: Path, colours: PlaneColours) -> list[Path]:
    """One PNG per metric of CDF_METRICS with stored interval values: per group a row, per
    traffic class a panel, per plane (in its colour) the empirical CDF over every interval
    of every flow of its ok runs."""
    # metric -> group index -> traffic -> plane -> values
    samples: dict[str, dict[int, dict[str, dict[str, list[float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    for index, group in enumerate(groups):
        failed = {r["run_id"] for r in group.analysis.failed_runs}
        labels = traffic_labels(group.flows)
        for r in group.intervals:
            if (r["metric"] in CDF_METRICS and r["value"] is not None
                    and r["run_id"] not in failed):
                traffic = labels.get((r["run_id"], r["flow_id"]), r["kind"])
                samples[r["metric"]][index][traffic][r["plane"]].append(
                    display_value(r["metric"], r["value"]))
    return [_cdf_figure(metric, [(groups[i], by_traffic)
                                 for i, by_traffic in sorted(samples[metric].items())],
                        Path(out_dir) / f"cdf_{metric}.png", colours)
            for metric in CDF_METRICS if samples.get(metric)]


def _cdf_figure(metric: str, rows: list[tuple[Group, dict[str, dict[str, list[float]]]]],
                path: Path, colours: PlaneColours) -> Path:
    traffics = list(dict.fromkeys(t for _group, by_traffic in rows for t in by_traffic))
    fig, axes = panel_grid(len(rows), len(traffics), 3.6, 3.6)
    for panels, (group, by_traffic) in zip(axes, rows, strict=True):
        for ax, traffic in zip(panels, traffics, strict=True):
            if traffic in by_traffic:
                _cdf(ax, group, traffic, by_traffic[traffic], metric, colours)
            else:
                ax.set_visible(False)
    return save_png(fig, path)


def _cdf(ax: Axes, group: Group, traffic: str, by_plane: dict[str, list[float]],
         metric: str, colours: PlaneColours) -> None:
    for plane in group.analysis.planes:
        values = sorted(by_plane.get(plane, []))
        if values:
            # from 0 at the smallest value, so even one sample draws a visible step
            fractions = [i / len(values) for i in range(len(values) + 1)]
            ax.step([values[0], *values], fractions, where="post", color=colours[plane],
                    label=f"{plane} (n={len(values)})")
    ax.set_title(titled(group.label, f"{traffic} traffic: per-interval values"),
                 fontsize="medium")
    ax.set_xlabel(metric_label(metric))
    ax.set_ylabel("fraction of intervals ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")


def resource_box_plots(groups: list[Group], path: Path, colours: PlaneColours) -> Path | None:
    """One PNG: per group a row, per resource statistic with any value a panel with a box
    of per-run values per plane. Planes without a value (e.g. no user-space processes) get
    no box. None when no resource use was stored."""
    measured = [stat for stat in RESOURCE_STATS
                if any(has_values(g.analysis, PLANE, stat) for g in groups)]
    if not measured:
        return None
    mine = [g for g in groups if any(has_values(g.analysis, PLANE, s) for s in measured)]
    fig, axes = panel_grid(len(mine), len(measured), 2.8, 3.8)
    for panels, group in zip(axes, mine, strict=True):
        for ax, stat in zip(panels, measured, strict=True):
            _resource_box(ax, group, stat, colours)
    fig.suptitle("resource use during traffic (per run): plane processes "
                 "(cpu_* % of one core, RSS MiB) and whole machine (host_* % of all cores)",
                 fontsize="small")
    return save_png(fig, path)


def _resource_box(ax: Axes, group: Group, stat: str, colours: PlaneColours) -> None:
    results = {p: group.analysis.results.get((PLANE, stat, p)) for p in group.analysis.planes}
    planes = [p for p, r in results.items() if r is not None and r.run_values]
    if planes:
        _coloured_boxes(ax, [list(results[p].run_values) for p in planes], planes, colours)
    ax.set_title(titled(group.label, stat), fontsize="medium")
    ax.set_ylim(bottom=0)
    ax.tick_params(axis="x", labelrotation=20)
    ax.grid(axis="y", alpha=0.3)


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
    # tight_layout leaves a placeholder layout engine on the figure, and savefig draws a
    # figure that has one twice (a layout pass, then the picture): the layout is done, so
    # drop the engine and the figure is drawn once.
    fig.set_layout_engine(None)
    fig.savefig(path, dpi=110)
    return path
