"""Comparison tables shaped like the studies': one per traffic class, a row per metric,
a "mean ± 95% CI" column per plane and an improvement column per plane over the baseline.
Rendered as a ``rich`` table for the terminal and as HTML for the report."""

from __future__ import annotations

import html
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from dplab.analysis import PLANE, Analysis, Comparison, PlaneResult, Row
from dplab.analysis.points import AxesAnalysis
from dplab.report.fidelity import MARK

NOTES = (
    "Cells: mean ± 95% CI half-width (Student t) over repetitions; n = ok runs that measured "
    "the metric; a run's value is the mean over its flows; missing = flow values not "
    "measured or from failed flows. Failed runs are left out (counted in the plane's "
    "header). 'X vs B': X's mean against the baseline B's, as a change of the value "
    "(-35 % = 35 % lower than B) or, from twice B on, a ratio (2.1× = 2.1 times B); better/"
    "worse says which way is good for the metric (higher throughput/bytes, lower delay/loss/"
    "jitter); n.s. = not significant (Welch t-test p ≥ 0.05, or no test possible with n < 2 "
    "or no variance)."
)

# Metrics shown in friendlier units: metric -> (label, scale applied to stored values).
DISPLAY_UNITS: dict[str, tuple[str, float]] = {
    "throughput_bps": ("throughput (Mbit/s)", 1e-6),
    "bytes": ("data transmitted (MB)", 1e-6),
}


@dataclass
class TableData:
    """A rendered-neutral table: title, header, body cells as text."""

    title: str
    header: list[str]
    body: list[list[str]]


def comparison_tables(analysis: Analysis, marked: frozenset[str] | set[str] = frozenset(),
                      ) -> list[TableData]:
    """One table per traffic class, plane statistics last; the mean cells of the planes in
    ``marked`` (those with host-bound runs, ``report.fidelity``) carry its mark."""
    traffics = list(dict.fromkeys(row.traffic for row in analysis.rows))
    return [_table(analysis, t, marked) for t in traffics]


def to_rich(table: TableData) -> Table:
    """Every string as rich Text, not markup: plane labels and errors are the user's text."""
    out = Table(title=Text(table.title), title_justify="left")
    for index, name in enumerate(table.header):
        out.add_column(Text(name), justify="left" if index == 0 else "right", overflow="fold")
    for cells in table.body:
        out.add_row(*map(Text, cells))
    return out


def to_html(table: TableData) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = "".join(
        "<tr>" + "".join(_html_cell(c) for c in cells) + "</tr>" for cells in table.body
    )
    return (f"<table><caption>{html.escape(table.title)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _html_cell(text: str) -> str:
    css = ' class="ns"' if "n.s." in text else ""
    return f"<td{css}>{html.escape(text)}</td>"


def axis_tables(axes: AxesAnalysis, marked: frozenset[str] | set[str] = frozenset(),
                ) -> list[TableData]:
    """Tables pivoted on the axes: per traffic class and metric one table, a row per axis
    point, a column per plane, then each plane against the baseline; the mean cells of the
    planes in ``marked`` carry the host-bound mark."""
    others = axes.planes[1:]
    rows = list(dict.fromkeys(row for p in axes.points for row in p.analysis.rows))
    traffics = list(dict.fromkeys(row.traffic for row in rows))
    ordered = [row for t in traffics for row in rows if row.traffic == t]
    return [TableData(
        f"{_traffic_title(row.traffic)}: {metric_label(row.metric)}",
        [*axes.axes, *axes.planes, *(f"{plane} vs {axes.baseline}" for plane in others)],
        [[*(label for _axis, label, _n in p.point.values),
          *(_point_mean(p.analysis, row, plane) + _mark(plane, marked)
            for plane in axes.planes),
          *(_point_change(p.analysis, row, plane, axes.baseline) for plane in others)]
         for p in axes.points])
        for row in ordered]


def _point_mean(analysis: Analysis, row: Row, plane: str) -> str:
    if plane not in analysis.planes or row not in analysis.rows:
        return "—"
    return mean_cell(row, analysis.result(row, plane))


def _point_change(analysis: Analysis, row: Row, plane: str, baseline: str) -> str:
    """Only against the experiment's baseline: a point without its runs shows none."""
    if analysis.planes[:1] != [baseline] or plane not in analysis.planes \
            or row not in analysis.rows:
        return "—"
    return change_cell(analysis.comparison(row, plane))


def _traffic_title(traffic: str) -> str:
    return "plane statistics" if traffic == PLANE else f"{traffic} traffic"


def _mark(plane: str, marked: frozenset[str] | set[str]) -> str:
    return f" {MARK}" if plane in marked else ""


def _table(analysis: Analysis, traffic: str, marked: frozenset[str] | set[str]
           ) -> TableData:
    others = analysis.planes[1:]
    header = ["metric", *(_plane_header(analysis, p) for p in analysis.planes),
              *(f"{plane} vs {analysis.baseline}" for plane in others)]
    rows = [row for row in analysis.rows if row.traffic == traffic]
    body = [
        [metric_label(row.metric),
         *(mean_cell(row, analysis.result(row, p)) + _mark(p, marked)
           for p in analysis.planes),
         *(change_cell(analysis.comparison(row, p)) for p in others)]
        for row in rows
    ]
    return TableData(_traffic_title(traffic), header, body)


def _plane_header(analysis: Analysis, plane: str) -> str:
    failed = sum(r["plane"] == plane for r in analysis.failed_runs)
    return f"{plane} (failed runs: {failed})" if failed else plane


def metric_label(metric: str) -> str:
    return DISPLAY_UNITS.get(metric, (metric, 1.0))[0]


def display_value(metric: str, value: float) -> float:
    return value * DISPLAY_UNITS.get(metric, (metric, 1.0))[1]


def mean_cell(row: Row, result: PlaneResult) -> str:
    d = result.description
    if d.mean is None:
        text = "—"
    else:
        text = format_number(display_value(row.metric, d.mean))
        if d.ci95 is not None:
            text += f" ± {format_number(display_value(row.metric, d.ci95))}"
    notes = [f"n={d.n}"]
    if result.missing:
        notes.append(f"{result.missing} missing")
    return f"{text} ({', '.join(notes)})"


def change_cell(comparison: Comparison | None) -> str:
    """A plane against the baseline as people read it: "-35.0 % (better, p=0.02)" or
    "2.1× (worse, n.s., p=0.3)"; the change is of the value, better/worse its meaning."""
    if comparison is None or comparison.ratio is None:
        return "—"
    text = change_text(comparison.ratio)
    notes = []
    if comparison.improvement_pct is not None and text.strip("+-") != "0.0 %":
        notes.append("better" if comparison.improvement_pct > 0 else "worse")
    if comparison.p_value is None:
        notes.append("n.s., no test")
    else:
        p = f"p={comparison.p_value:.2g}"
        notes.append(p if comparison.significant else f"n.s., {p}")
    return f"{text} ({', '.join(notes)})"


def change_text(ratio: float) -> str:
    """-35.0 % for a change within a factor 2 up, 2.1× from twice the baseline on (a
    "+2114 %" is read more easily as 22×)."""
    if ratio >= 2:
        return f"{ratio:.2g}×" if ratio < 10 else f"{ratio:.0f}×"
    return f"{(ratio - 1) * 100:+.1f} %"


def format_number(value: float) -> str:
    """Enough digits to compare planes, no more: 1234.5 -> 1234, 94.13, 0.0123."""
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:.0f}"
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"
