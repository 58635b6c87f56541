"""A study's tables: shaped like the paper's (one traffic class, its metrics as rows, one
table per axis point), our planes' figures first, then the paper's printed figures of the
entries the layout names, each column headed "published (paper, <ref>)"."""

from __future__ import annotations

from dataclasses import dataclass

from dplab.analysis import Analysis, Row
from dplab.analysis.points import AxesAnalysis
from dplab.report.tables import TableData, change_cell, mean_cell, metric_label
from dplab.study.model import Published, PublishedEntry, TableLayout

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class StudyTable:
    """A table with the substitutions that affect it, for the report to print beside it."""

    table: TableData
    substitutions: list[str]


def study_tables(layout: TableLayout, published: Published, analysis: Analysis,
                 axes: AxesAnalysis | None) -> list[StudyTable]:
    """The layout's table at each stored axis point matching its ``where`` (no axes: one)."""
    entries = [published.entry(ref) for ref in layout.published]
    if layout.rows == "axis":
        return [StudyTable(_axis_table(layout, metric, axes, entries), layout.substitutions)
                for metric in layout.metrics] if axes is not None else []
    if axes is None:
        return [StudyTable(_table(layout, layout.title, analysis, entries),
                           layout.substitutions)]
    tables = []
    for point in axes.points:
        labels = {axis: label for axis, label, _n in point.point.values}
        if all(labels.get(axis) == value for axis, value in layout.where.items()):
            tables.append(StudyTable(
                _table(layout, f"{layout.title} ({point.point.label})", point.analysis,
                       entries), layout.substitutions))
    return tables


def _table(layout: TableLayout, title: str, analysis: Analysis,
           entries: list[PublishedEntry]) -> TableData:
    ours = analysis.planes
    others = ours[1:]
    columns = [(entry, name) for entry in entries for name in _paper_columns(entry)]
    header = ["metric", *ours, *(f"{plane} vs {analysis.baseline}" for plane in others),
              *(f"published (paper, {entry.ref}): {name}" for entry, name in columns)]
    body = []
    for metric in layout.metrics:
        row = Row(layout.traffic, metric)
        measured = row in analysis.rows
        cells = [mean_cell(row, analysis.result(row, p)) if measured else NOT_MEASURED
                 for p in ours]
        cells += [change_cell(analysis.comparison(row, p)) if measured else "—"
                  for p in others]
        cells += [_published_cell(entry, metric, name) for entry, name in columns]
        body.append([metric_label(metric), *cells])
    return TableData(title, header, body)


def _axis_table(layout: TableLayout, metric: str, axes: AxesAnalysis,
                entries: list[PublishedEntry]) -> TableData:
    """A row per value of the layout's axis (the paper's rows), a column per plane."""
    row = Row(layout.traffic, metric)
    ours = axes.planes
    columns = [(entry, name) for entry in entries for name in _paper_columns(entry)]
    body = []
    for point in axes.points:
        labels = {axis: label for axis, label, _n in point.point.values}
        if not all(labels.get(axis) == value for axis, value in layout.where.items()):
            continue
        analysis = point.analysis
        measured = row in analysis.rows
        cells = [mean_cell(row, analysis.result(row, p))
                 if measured and p in analysis.planes else NOT_MEASURED for p in ours]
        at = labels.get(layout.axis or "")
        cells += [_published_cell(entry, metric, name, at) for entry, name in columns]
        body.append([at or "—", *cells])
    header = [layout.axis or "", *ours,
              *(f"published (paper, {entry.ref}): {name}" for entry, name in columns)]
    return TableData(f"{layout.title}: {metric_label(metric)}", header, body)


def _paper_columns(entry: PublishedEntry) -> list[str]:
    """The paper's columns in the order it prints them (its planes, its improvement)."""
    return list(dict.fromkeys(name for value in entry.values for name in value.values))


def _published_cell(entry: PublishedEntry, metric: str, column: str,
                    at: str | None = None) -> str:
    """Every figure the entry prints for the metric (a lowest and a highest, say); with
    ``at``, those printed for that axis value."""
    cells = []
    for value in entry.values:
        if value.metric != metric or column not in value.values or value.at != at:
            continue
        printed = value.values[column]
        # Numbers take the entry's unit; text (an improvement "30.14%", a ✓) stands as printed.
        number = f"{printed:.4g} {value.unit}".strip() if isinstance(printed, float | int) \
            else printed
        stat = "" if value.stat == "mean" else f", {value.stat}"
        cells.append(f"{number} ({value.paper_metric}{stat})")
    return "; ".join(cells) or "—"
