"""A stored experiment with axes, analysed point by point: one Analysis per axis point.

A run's point is read from the store's ``run_axes`` table. Points are ordered as the
experiment file lists the axes' values (numbers ascending when the file is not stored);
planes keep one order (baseline first) over all points.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from dplab.analysis.compare import (
    Analysis,
    analyse_rows,
    ordered_planes,
    spec_axes,
    spec_plane_order,
)
from dplab.spec.axes import AxisPoint, Point, param_name
from dplab.spec.model import value_label
from dplab.store import RunStore

AxisValue = tuple[str, str, float | None]  # (axis, value label, number)


@dataclass(frozen=True)
class StoredPoint:
    values: tuple[AxisValue, ...]

    @property
    def label(self) -> str:
        return ", ".join(f"{axis}={value}" for axis, value, _ in self.values)

    def value(self, axis: str) -> AxisValue:
        return next(v for v in self.values if v[0] == axis)

    @property
    def slug(self) -> str:
        """The point in file names, as in its runs' ids: rate_mbit=10-topology=grid."""
        return Point(tuple(AxisPoint(*v) for v in self.values)).slug


@dataclass
class PointAnalysis:
    point: StoredPoint
    analysis: Analysis
    run_ids: frozenset[str]  # the point's stored runs, ok or failed


@dataclass
class AxesAnalysis:
    axes: list[str]  # in the experiment file's order
    planes: list[str]  # baseline first, over all points
    points: list[PointAnalysis]

    @property
    def baseline(self) -> str:
        return self.planes[0]

    def numeric_axes(self) -> list[str]:
        """Axes whose every value is a number: they get curves against the value."""
        return [axis for axis in self.axes
                if all(p.point.value(axis)[2] is not None for p in self.points)]


def analyse_points(store: RunStore, baseline: str | None = None) -> AxesAnalysis | None:
    """Per axis point an Analysis; None when the experiment has no axes."""
    axis_rows = store.rows("run_axes")
    if not axis_rows:
        return None
    runs = store.rows("runs")
    spec = store.experiment.get("spec", {})
    axes = _axis_order(spec, axis_rows)
    by_run: dict[str, dict[str, AxisValue]] = defaultdict(dict)
    for row in axis_rows:
        by_run[row["run_id"]][row["axis"]] = (row["axis"], row["value"], row["number"])
    point_of = {run: StoredPoint(tuple(values[a] for a in axes if a in values))
                for run, values in by_run.items()}
    planes = ordered_planes(runs, spec_plane_order(store.experiment), baseline)
    tables = {name: store.rows(name) for name in ("flows", "summaries", "plane_stats")}
    varied = spec_axes(store.experiment) | {param_name(a) for a in axes}
    points = []
    for point in _ordered_points(set(point_of.values()), spec):
        members = {run for run, p in point_of.items() if p == point}
        here = [r for r in runs if r["run_id"] in members]
        subset = {name: [r for r in rows if r["run_id"] in members]
                  for name, rows in tables.items()}
        analysis = analyse_rows(here, subset["flows"], subset["summaries"],
                                subset["plane_stats"], plane_order=planes,
                                axes=frozenset(varied))
        points.append(PointAnalysis(point, analysis, frozenset(members)))
    return AxesAnalysis(axes, planes, points)


def _axis_order(spec: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    stored = list(dict.fromkeys(r["axis"] for r in rows))
    listed = [a for a in spec.get("axes") or {} if a in stored]
    return listed + [a for a in stored if a not in listed]


def _ordered_points(points: set[StoredPoint], spec: dict[str, Any]) -> list[StoredPoint]:
    listed = {name: [value_label(v) for v in (axis or {}).get("values", [])]
              for name, axis in (spec.get("axes") or {}).items()}

    def key(point: StoredPoint) -> tuple:
        parts = []
        for axis, label, number in point.values:
            order = listed.get(axis, [])
            parts.append((order.index(label) if label in order else len(order),
                          number if number is not None else 0.0, label))
        return tuple(parts)

    return sorted(points, key=key)
