"""Each metric against an axis' value: a line per plane (and per value of the other axes)
with its 95 % CI band, a subplot per traffic class; a plane's lines have its colour, the
other axes' values a line style each. Numeric axes are drawn to scale
(logarithmic when the values span more than a factor 20), others (topology names, modes) at
even steps."""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dplab.analysis import PLANE, Row
from dplab.analysis.points import AxesAnalysis, PointAnalysis
from dplab.report.colours import PlaneColours
from dplab.report.plots import save_png
from dplab.report.tables import display_value, metric_label

NOTE = (
    "axis_*: each metric against an axis' value, a line per plane (per value of any other "
    "axis too, a line style each): the mean over repetitions, the band its 95 % CI "
    "(Student t; none with one repetition). *_timeseries_<point>: the runs of one axis "
    "point over time. box_*, cdf_* and resources: a row of panels per axis point. A plane "
    "has one colour in every figure. Failed runs are left out."
)


# The other axes' values, one line style each (repeating beyond four).
LINE_STYLES = ("-", "--", ":", "-.")


def axis_curves(axes: AxesAnalysis, out_dir: Path, colours: PlaneColours) -> list[Path]:
    """One PNG per axis and measured metric (plane statistics are left to the tables)."""
    rows = [row for row in dict.fromkeys(r for p in axes.points for r in p.analysis.rows)
            if row.traffic != PLANE]
    paths = []
    for axis in axes.axes:
        for metric in dict.fromkeys(row.metric for row in rows):
            traffics = [row.traffic for row in rows if row.metric == metric]
            if any(_measured(axes, Row(t, metric)) for t in traffics):
                paths.append(_figure(axes, axis, metric, traffics,
                                     Path(out_dir) / f"axis_{axis}_{metric}.png", colours))
    return paths


def _measured(axes: AxesAnalysis, row: Row) -> bool:
    return any(row in p.analysis.rows and p.analysis.result(row, plane).description.mean
               is not None for p in axes.points for plane in p.analysis.planes)


def _figure(axes: AxesAnalysis, axis: str, metric: str, traffics: list[str],
            path: Path, colours: PlaneColours) -> Path:
    fig = Figure(figsize=(1.2 + 4.2 * len(traffics), 3.8))
    subplots = fig.subplots(1, len(traffics), squeeze=False)
    numeric = axis in axes.numeric_axes()
    labels = list(dict.fromkeys(p.point.value(axis)[1] for p in axes.points))
    lines = _lines(axes, axis)
    rests = list(dict.fromkeys(rest for _plane, rest in lines))
    for ax, traffic in zip(subplots[0], traffics, strict=True):
        for (plane, rest), points in lines.items():
            style = {"color": colours[plane],
                     "linestyle": LINE_STYLES[rests.index(rest) % len(LINE_STYLES)]}
            _line(ax, Row(traffic, metric), plane, rest, points, axis, numeric, labels, style)
        ax.set_title(f"{traffic} traffic", fontsize="medium")
        ax.set_xlabel(axis)
        ax.set_ylabel(metric_label(metric))
        if not numeric:
            ax.set_xticks(range(len(labels)), labels, rotation=20)
        else:
            if _spans_decades(axes, axis):
                ax.set_xscale("log")  # 10, 100, 1000 Mbit/s: evenly apart, not two in a corner
            ax.set_xticks(_numbers(axes, axis), labels)  # the values as written, not 10^2
            ax.minorticks_off()
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    return save_png(fig, path)


def _spans_decades(axes: AxesAnalysis, axis: str) -> bool:
    values = _numbers(axes, axis)
    low, high = min(values), max(values)
    return low > 0 and high / low >= 20


def _numbers(axes: AxesAnalysis, axis: str) -> list[float]:
    """The axis' numbers in the order of ``labels`` (first appearance among the points)."""
    return list(dict.fromkeys(p.point.value(axis)[2] for p in axes.points))


def _lines(axes: AxesAnalysis, axis: str) -> dict[tuple[str, str], list[PointAnalysis]]:
    """(plane, the other axes' values) -> its points along ``axis``."""
    lines: dict[tuple[str, str], list[PointAnalysis]] = {}
    for plane in axes.planes:
        for p in axes.points:
            rest = ", ".join(f"{a}={v}" for a, v, _ in p.point.values if a != axis)
            lines.setdefault((plane, rest), []).append(p)
    return lines


def _line(ax: Axes, row: Row, plane: str, rest: str, points: list[PointAnalysis],
          axis: str, numeric: bool, labels: list[str], style: dict[str, str]) -> None:
    xs, ys, lows, highs = [], [], [], []
    for p in points:
        if row not in p.analysis.rows or plane not in p.analysis.planes:
            continue
        d = p.analysis.result(row, plane).description
        if d.mean is None:
            continue
        _axis, label, number = p.point.value(axis)
        xs.append(number if numeric else labels.index(label))
        ys.append(display_value(row.metric, d.mean))
        half = display_value(row.metric, d.ci95) if d.ci95 is not None else 0.0
        lows.append(ys[-1] - half)
        highs.append(ys[-1] + half)
    if not xs:
        return
    order = sorted(range(len(xs)), key=xs.__getitem__)
    xs, ys, lows, highs = ([seq[i] for i in order] for seq in (xs, ys, lows, highs))
    name = f"{plane} ({rest})" if rest else plane
    ax.plot(xs, ys, marker="o", label=name, **style)
    ax.fill_between(xs, lows, highs, color=style["color"], alpha=0.2, linewidth=0)
