"""Plots of the planes' own time series (the store's ``plane_series`` table): one PNG per
plane that recorded any, a subplot per subject (e.g. ``s3:class1``: one class's meter on
one switch), a line per bit-rate metric (e.g. the rate written and the load measured) and
repetition. Every repetition is drawn as it was measured: turns of different runs fall at
different times, so averaging them would invent values between turns."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dplab.analysis import Analysis
from dplab.report.plots import save_png

BITRATE_SUFFIX = "_bps"  # plotted in Mbit/s; other series (e.g. interval_s) stay in the data
# Every link end's counters (fidelity.FidelityMonitor.series): one subplot per interface
# would bury the plane's own series on a large topology; they stay in plane_series.csv.
INTERFACE_METRICS = ("rx_bps", "tx_bps")
MAX_COLUMNS = 4
# How a metric is drawn: a rate holds from its turn to the next (steps), drawn wide under
# the load so that a rate equal to the load (DMB-RL's usual case) stays visible.
STYLES: dict[str, dict[str, Any]] = {
    "rate_bps": {"drawstyle": "steps-post", "linewidth": 2.5, "zorder": 1},
    "used_bps": {"linestyle": "--", "marker": ".", "markersize": 4, "linewidth": 1,
                 "zorder": 2},
}
DEFAULT_STYLE: dict[str, Any] = {"marker": ".", "markersize": 3, "linewidth": 1}
NOTE = (
    "Per plane that recorded values over time (the p4 plane's QoS loop): per subject "
    "<switch>:class<id> the rate the loop wrote to the class's meter (rate_bps, held until "
    "the class's next turn) and the class's load it measured over the interval before "
    "(used_bps, from the class's byte counter, one point per turn); every ok repetition "
    "drawn; t = 0 is when the run's traffic began (the grey line). All series, interval_s "
    "too, are in plane_series.csv, with every link end's rx/tx bit and frame rates per "
    "second and the controller's packet-ins, flow installs, packet-outs and CPU per second "
    "(plotted as controller_series and link_rx)."
)

# subject -> metric -> run_id -> [(t, value)]
BySubject = dict[str, dict[str, dict[str, list[tuple[float, float]]]]]


def plane_series_plots(rows: list[dict[str, Any]], analysis: Analysis,
                       out_dir: Path) -> list[Path]:
    """One PNG per plane with bit-rate series in its ok runs, in the planes' order."""
    failed = {r["run_id"] for r in analysis.failed_runs}
    by_plane = _group(rows, failed)
    planes = [p for p in analysis.planes if p in by_plane]
    planes += sorted(set(by_plane) - set(planes))
    return [_figure(plane, by_plane[plane], Path(out_dir) / f"plane_series_{_safe(plane)}.png")
            for plane in planes]


def _group(rows: list[dict[str, Any]], failed: set[str]) -> dict[str, BySubject]:
    grouped: dict[str, BySubject] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    for row in rows:
        metric, _, subject = row["series"].partition(":")
        if (row["run_id"] in failed or row["value"] is None
                or not metric.endswith(BITRATE_SUFFIX) or metric in INTERFACE_METRICS):
            continue
        grouped[row["plane"]][subject or metric][metric][row["run_id"]].append(
            (row["t"], row["value"]))
    return grouped


def _figure(plane: str, by_subject: BySubject, path: Path) -> Path:
    subjects = sorted(by_subject, key=_subject_order)
    columns = min(MAX_COLUMNS, len({s.split(":")[0] for s in subjects}) or 1, len(subjects))
    rows = -(-len(subjects) // columns)
    fig = Figure(figsize=(1.0 + 3.4 * columns, 0.8 + 2.6 * rows))
    axes = fig.subplots(rows, columns, squeeze=False, sharex=True)
    for ax, subject in zip(axes.flat, subjects, strict=False):
        _subplot(ax, subject, by_subject[subject])
    # One legend for the figure: the same metrics in every subplot, and none covers a line.
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize="small", ncols=len(labels))
    for ax in list(axes.flat)[len(subjects):]:
        ax.set_visible(False)
    runs = len({run for metrics in by_subject.values() for by_run in metrics.values()
                for run in by_run})
    fig.suptitle(f"{plane}: plane time series ({runs} run(s), every run drawn)",
                 fontsize="medium", x=0.02, ha="left")
    for ax in axes[-1]:
        ax.set_xlabel("time since traffic began (s)")
    return save_png(fig, path)


def _subplot(ax: Axes, subject: str,
             by_metric: dict[str, dict[str, list[tuple[float, float]]]]) -> None:
    top = 0.0
    for colour, metric in enumerate(sorted(by_metric)):
        for index, run in enumerate(sorted(by_metric[metric])):
            points = sorted(by_metric[metric][run])
            ys = [v / 1e6 for _, v in points]
            ax.plot([t for t, _ in points], ys, color=f"C{colour}", alpha=0.75,
                    label=metric if index == 0 else None,
                    **STYLES.get(metric, DEFAULT_STYLE))
            top = max(top, *ys)
    ax.axvline(0.0, color="0.5", linestyle=":", linewidth=1)
    ax.set_ylim(0, top * 1.15 or 1.0)  # from zero, as the other time series
    ax.set_title(subject, fontsize="small")
    ax.set_ylabel("Mbit/s")
    ax.grid(alpha=0.3)


def _subject_order(subject: str) -> tuple[str, ...]:
    """``s3:class1`` sorts by class, then switch: a row of subplots per class."""
    return tuple(reversed(subject.split(":")))


def _safe(label: str) -> str:
    return re.sub(r"[^\w.-]", "_", label)

