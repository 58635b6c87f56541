"""What a reader wants first: per traffic class, which plane did better than the baseline on
which metric and whether that is significant, in a few lines and one figure.

A finding is one (traffic class, metric, plane, axis point) comparison the analysis made;
metrics without a better side (analysis.metrics.direction) say nothing about better and are
left out. The figure puts every finding on one scale, "times better than the baseline": the
plane's mean over the baseline's for a metric better high, the inverse for one better low, so
right of 1 is better whatever the metric.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from dplab.analysis import PLANE, Analysis
from dplab.analysis.metrics import direction
from dplab.analysis.points import AxesAnalysis
from dplab.report.colours import PlaneColours
from dplab.report.plots import save_png
from dplab.report.tables import change_text, metric_label

NOTE = (
    "Each plane against the baseline, per traffic class: 'better'/'worse' only where the "
    "difference is significant (Welch t-test over repetitions, p < 0.05); with axes, at how "
    "many of the points it was. The figure: times better than the baseline (right of 1 = "
    "better, for lower-is-better metrics the baseline's mean over the plane's), a marker per "
    "axis point, filled where significant."
)


@dataclass(frozen=True)
class Finding:
    traffic: str
    metric: str
    plane: str
    point: str  # the axis point's label; "" without axes
    ratio: float  # the plane's mean / the baseline's
    better: bool
    significant: bool
    p_value: float | None

    @property
    def times_better(self) -> float:
        return self.ratio if direction(self.metric) == "higher" else 1 / self.ratio


def findings(analysis: Analysis, axes: AxesAnalysis | None) -> list[Finding]:
    """Every directed comparison with a ratio, point by point when there are axes."""
    sources = [("", analysis)] if axes is None else [(p.point.label, p.analysis)
                                                     for p in axes.points]
    out = []
    for label, part in sources:
        for row in part.rows:
            if row.traffic == PLANE or direction(row.metric) is None:
                continue
            for plane in part.planes[1:]:
                comparison = part.comparison(row, plane)
                if comparison is None or not comparison.ratio \
                        or comparison.improvement_pct is None:
                    continue
                out.append(Finding(row.traffic, row.metric, plane, label, comparison.ratio,
                                   comparison.improvement_pct > 0, comparison.significant,
                                   comparison.p_value))
    return out


def lines(found: list[Finding], baseline: str) -> list[str]:
    """One line per (traffic class, plane): better on ..., worse on ..., no significant
    difference on ..."""
    groups: dict[tuple[str, str], dict[str, list[Finding]]] = defaultdict(
        lambda: defaultdict(list))
    for f in found:
        groups[(f.traffic, f.plane)][f.metric].append(f)
    out = []
    for (traffic, plane), metrics in groups.items():
        better, worse, same = [], [], []
        for metric, items in metrics.items():
            up = [f for f in items if f.significant and f.better]
            down = [f for f in items if f.significant and not f.better]
            if up:
                better.append(_phrase(metric, up, len(items)))
            if down:
                worse.append(_phrase(metric, down, len(items)))
            if not up and not down:
                same.append(metric_label(metric))
        parts = [f"better on {', '.join(better)}" if better else "",
                 f"worse on {', '.join(worse)}" if worse else "",
                 f"no significant difference on {', '.join(same)}" if same else ""]
        out.append(f"{traffic}: {plane} vs {baseline}: "
                   + "; ".join(p for p in parts if p) + ".")
    return out


def _phrase(metric: str, items: list[Finding], points: int) -> str:
    if points == 1 and not items[0].point:
        return f"{metric_label(metric)} ({_change(items[0])})"
    changes = ", ".join(_change(f) for f in items)
    return f"{metric_label(metric)} (at {len(items)} of {points} points: {changes})"


def _change(finding: Finding) -> str:
    p = f", p={finding.p_value:.2g}" if finding.p_value is not None else ""
    return f"{change_text(finding.ratio)}{p}"


def figure(found: list[Finding], baseline: str, path: Path,
           colours: PlaneColours) -> Path | None:
    """Times better than the baseline per (traffic class, metric) row, each plane in its
    colour, log scale; None when there is nothing to draw."""
    if not found:
        return None
    rows = list(dict.fromkeys((f.traffic, f.metric) for f in found))
    planes = list(dict.fromkeys(f.plane for f in found))
    fig = Figure(figsize=(8, 0.35 * len(rows) + 1.6))
    ax = fig.subplots()
    for f in found:
        y = rows.index((f.traffic, f.metric)) + 0.15 * (planes.index(f.plane)
                                                        - (len(planes) - 1) / 2)
        colour = colours[f.plane]
        ax.plot([f.times_better], [y], "o", markersize=6, color=colour,
                markerfacecolor=colour if f.significant else "none")
    for plane in planes:
        ax.plot([], [], "o", color=colours[plane], label=plane)
    ax.axvline(1, color="#888", linewidth=1)
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), [f"{t}: {metric_label(m)}" for t, m in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"times better than {baseline} (right of 1: better; hollow: not significant)")
    ax.legend(loc="best", fontsize="small")
    return save_png(fig, path)
