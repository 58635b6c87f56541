"""Comparison tables shaped like the studies': one per traffic class, a row per metric,
a "mean ± 95% CI" column per plane and an improvement column per plane over the baseline.
Rendered as a ``rich`` table for the terminal and as HTML for the report."""

from __future__ import annotations

import html
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from dplab.analysis import PLANE, Analysis, Comparison, PlaneResult, Row

NOTES = (
    "Cells: mean ± 95% CI half-width (Student t) over repetitions; n = ok runs that measured "
    "the metric; a run's value is the mean over its flows; missing = flow values not "
    "measured or from failed flows. Failed runs are left out (counted in the plane's "
    "header). Improvement: positive = better than the baseline (higher throughput/bytes, "
    "lower delay/loss/jitter); n.s. = not significant (Welch t-test p ≥ 0.05, or no test "
    "possible with n < 2 or no variance)."
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


def comparison_tables(analysis: Analysis) -> list[TableData]:
    """One table per traffic class, plane statistics last."""
    traffics = list(dict.fromkeys(row.traffic for row in analysis.rows))
    return [_table(analysis, t) for t in traffics]


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


def _table(analysis: Analysis, traffic: str) -> TableData:
    others = analysis.planes[1:]
    header = ["metric", *(_plane_header(analysis, p) for p in analysis.planes),
              *(f"{plane} vs {analysis.baseline}" for plane in others)]
    rows = [row for row in analysis.rows if row.traffic == traffic]
    body = [
        [metric_label(row.metric),
         *(_mean_cell(row, analysis.result(row, p)) for p in analysis.planes),
         *(_improvement_cell(analysis.comparison(row, p)) for p in others)]
        for row in rows
    ]
    title = "plane statistics" if traffic == PLANE else f"{traffic} traffic"
    return TableData(title, header, body)


def _plane_header(analysis: Analysis, plane: str) -> str:
    failed = sum(r["plane"] == plane for r in analysis.failed_runs)
    return f"{plane} (failed runs: {failed})" if failed else plane


def metric_label(metric: str) -> str:
    return DISPLAY_UNITS.get(metric, (metric, 1.0))[0]


def display_value(metric: str, value: float) -> float:
    return value * DISPLAY_UNITS.get(metric, (metric, 1.0))[1]


def _mean_cell(row: Row, result: PlaneResult) -> str:
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


def _improvement_cell(comparison: Comparison | None) -> str:
    if comparison is None or comparison.improvement_pct is None:
        return "—"
    text = f"{comparison.improvement_pct:+.1f}%"
    if comparison.p_value is None:
        return f"{text} (n.s., no test)"
    p = f"p={comparison.p_value:.2g}"
    return f"{text} ({p})" if comparison.significant else f"{text} (n.s., {p})"


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
