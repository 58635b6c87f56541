"""Plots of the counters sampled through every run that the store's ``plane_series`` holds
beside the planes' own series: the controller's work per second
(``planes.controlled.ControlledPlane.series``) and every link end's receive rate
(``fidelity.FidelityMonitor.series``). A row of panels per ``plots.Group`` (the experiment,
or each axis point); failed runs left out."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dplab.report.colours import PlaneColours
from dplab.report.plots import Group, panel_grid, save_png, titled

CONTROLLER = "controller"  # the subject of the controller's series
# metric -> what its panel is titled
CONTROL_METRICS = {
    "packet_ins_per_s": "packet-ins per second",
    "flow_installs_per_s": "flow installs per second",
    "packet_outs_per_s": "packet-outs per second",
    "cpu_pct": "controller CPU (% of one core)",
}
LINK_METRIC = "rx_bps"  # a link end's tx is its peer's rx: one of the two is enough
# A topology has tens of link ends; a panel shows the busiest (by mean rate over the
# point's ok runs), the rest stay in plane_series.csv.
BUSIEST_LINK_ENDS = 6
NOTE = (
    "controller_series: per axis point (a row), the controller's packet-ins, flow installs "
    "and packet-outs per second and its CPU per sample interval, a line per ok run, a "
    "colour per plane. link_rx: per axis point and plane, the receive rate of the "
    f"{BUSIEST_LINK_ENDS} busiest link ends (named as in plane_series.csv) per sample "
    "interval, the mean over ok runs; each panel has its own scale. t = 0 is when the "
    "run's traffic began (the grey line)."
)

# run_id -> [(t, value)]
ByRun = dict[str, list[tuple[float, float]]]


def counter_series_plots(groups: list[Group], planes: list[str], out_dir: Path,
                         colours: PlaneColours) -> list[Path]:
    """The controller's figure (each plane in its colour) and the link ends' figure (a
    column per plane, in ``planes``' order: the report's, the baseline first), each when
    anything was stored."""
    out = [_controller_figure(groups, colours, Path(out_dir) / "controller_series.png"),
           _link_figure(groups, planes, Path(out_dir) / "link_rx.png")]
    return [path for path in out if path is not None]


def _ok_rows(group: Group) -> list[dict[str, Any]]:
    failed = {r["run_id"] for r in group.analysis.failed_runs}
    return [r for r in group.series if r["run_id"] not in failed and r["value"] is not None]


def _controller_series(group: Group) -> dict[str, dict[str, ByRun]]:
    """metric -> plane -> run -> its points."""
    found: dict[str, dict[str, ByRun]] = defaultdict(lambda: defaultdict(lambda: defaultdict(
        list)))
    for row in _ok_rows(group):
        metric, _, subject = row["series"].partition(":")
        if subject == CONTROLLER and metric in CONTROL_METRICS:
            found[metric][row["plane"]][row["run_id"]].append((row["t"], row["value"]))
    return found


def _controller_figure(groups: list[Group], colours: PlaneColours, path: Path) -> Path | None:
    rows = [(g, series) for g in groups if (series := _controller_series(g))]
    if not rows:
        return None
    metrics = [m for m in CONTROL_METRICS if any(m in series for _g, series in rows)]
    fig, axes = panel_grid(len(rows), len(metrics), 3.4, 2.8, sharex=True)
    for panels, (group, series) in zip(axes, rows, strict=True):
        for ax, metric in zip(panels, metrics, strict=True):
            for plane, by_run in series.get(metric, {}).items():
                _runs(ax, by_run, colours[plane], plane)
            _finish(ax, titled(group.label, f"{CONTROL_METRICS[metric]} (every ok run)"), "")
    # One legend, in the first panel: the planes are the same in every panel.
    labels = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            labels.setdefault(label, handle)
    axes[0, 0].legend(list(labels.values()), list(labels), loc="upper right",
                      fontsize="x-small")
    return _save(fig, axes, path)


def _runs(ax: Axes, by_run: ByRun, colour: str, plane: str) -> None:
    for index, run in enumerate(sorted(by_run)):
        points = sorted(by_run[run])
        ax.plot([t for t, _ in points], [v for _, v in points], color=colour, alpha=0.75,
                marker=".", markersize=3, linewidth=1, label=plane if index == 0 else None)


def _finish(ax: Axes, title: str, ylabel: str) -> None:
    ax.axvline(0.0, color="0.5", linestyle=":", linewidth=1)
    ax.set_ylim(bottom=0)  # from zero, as the other time series
    ax.set_title(title, fontsize="small")
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def _link_rates(group: Group, plane: str) -> dict[str, list[tuple[float, float]]]:
    """link end -> (t, mean over the plane's ok runs) per sample interval. Runs sample at
    their own moments: each point goes to the interval (of the typical length) it ends."""
    by_end: dict[str, ByRun] = defaultdict(lambda: defaultdict(list))
    for row in _ok_rows(group):
        metric, _, subject = row["series"].partition(":")
        if metric == LINK_METRIC and row["plane"] == plane:
            by_end[subject][row["run_id"]].append((row["t"], row["value"]))
    steps = [b - a for by_run in by_end.values() for points in by_run.values()
             for (a, _), (b, _) in zip(sorted(points), sorted(points)[1:], strict=False)]
    width = statistics.median(steps) if steps else 1.0
    means = {}
    for end, by_run in by_end.items():
        buckets: dict[int, list[float]] = defaultdict(list)
        for points in by_run.values():
            for t, value in points:
                buckets[round(t / width)].append(value)
        means[end] = [(b * width, statistics.fmean(v)) for b, v in sorted(buckets.items())]
    return means


def _link_figure(groups: list[Group], planes: list[str], path: Path) -> Path | None:
    cells = {(i, plane): rates for i, g in enumerate(groups) for plane in planes
             if (rates := _link_rates(g, plane))}
    if not cells:
        return None
    rows = sorted({i for i, _ in cells})
    columns = [p for p in planes if any((i, p) in cells for i in rows)]
    fig, axes = panel_grid(len(rows), len(columns), 4.2, 3.0, sharex=True)
    for panels, i in zip(axes, rows, strict=True):
        for ax, plane in zip(panels, columns, strict=True):
            rates = cells.get((i, plane))
            if rates is None:
                ax.set_visible(False)
                continue
            busiest = sorted(rates, key=lambda e: -statistics.fmean(v for _, v in rates[e]))
            for end in busiest[:BUSIEST_LINK_ENDS]:
                ax.plot([t for t, _ in rates[end]], [v / 1e6 for _, v in rates[end]],
                        marker=".", markersize=3, linewidth=1, label=end)
            shown = min(BUSIEST_LINK_ENDS, len(rates))
            _finish(ax, titled(groups[i].label, f"{plane}: the {shown} busiest of "
                                                f"{len(rates)} link ends (mean over ok "
                                                "runs)"), "rx Mbit/s")
            ax.legend(loc="best", fontsize="x-small")
    return _save(fig, axes, path)


def _save(fig: Figure, axes: Any, path: Path) -> Path:
    for ax in axes[-1]:
        ax.set_xlabel("time since traffic began (s)")
    return save_png(fig, path)
