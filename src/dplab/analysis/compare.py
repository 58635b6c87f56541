"""From stored rows to per-plane results and plane-vs-baseline comparisons.

How a number in a table comes about, for one (traffic class, metric, plane):

1. Failed runs are left out entirely (counted in ``failed_runs``, never averaged).
2. In each ok run, the run's value is the mean over its flows of that class. Values that
   were not measured (None) and values of failed flows are left out and counted in
   ``missing``; a run with no value left contributes nothing.
3. Over the runs (repetitions): n, mean, sd, 95% CI (``stats.describe``).
4. Each plane is compared with the baseline (the first plane of the experiment): Welch's
   t-test on the per-run values and the improvement % of the plane's mean over the
   baseline's, flagged not significant when p ≥ 0.05 or no test was possible.

Plane statistics (packet_ins, flow_installs, ...) take one value per run and go through
steps 1, 3 and 4 the same way, under the traffic class ``PLANE``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from dplab.analysis.metrics import metric_sort_key
from dplab.analysis.stats import (
    Description,
    describe,
    improvement_pct,
    is_significant,
    ratio,
    welch_p,
)
from dplab.analysis.traffic import traffic_labels
from dplab.spec.axes import param_name
from dplab.spec.model import PlaneSpec
from dplab.store import RunStore, StoreError

PLANE = "plane"

Key = tuple[str, str, str]  # (traffic, metric, plane)


@dataclass(frozen=True)
class Row:
    """One row of a comparison table."""

    traffic: str
    metric: str


@dataclass(frozen=True)
class PlaneResult:
    """One plane's figures for one row, over its ok repetitions."""

    description: Description
    run_values: tuple[float, ...]
    missing: int
    failed_runs: int


@dataclass(frozen=True)
class Comparison:
    """One plane against the baseline plane for one row."""

    improvement_pct: float | None
    p_value: float | None
    significant: bool
    ratio: float | None = None  # the plane's mean / the baseline's (None: either missing or 0)


@dataclass
class Analysis:
    planes: list[str]  # baseline first
    rows: list[Row]  # traffic rows, then plane-statistic rows (traffic == PLANE)
    results: dict[Key, PlaneResult]
    comparisons: dict[Key, Comparison]  # for every plane but the baseline
    failed_runs: list[dict[str, Any]] = field(default_factory=list)
    failed_flows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return self.planes[0]

    def result(self, row: Row, plane: str) -> PlaneResult:
        return self.results[(row.traffic, row.metric, plane)]

    def comparison(self, row: Row, plane: str) -> Comparison | None:
        return self.comparisons.get((row.traffic, row.metric, plane))


def analyse(store: RunStore, baseline: str | None = None) -> Analysis:
    """Analyse a stored experiment; planes keep the experiment file's order. (With axes,
    every point pooled: ``analysis.points`` keeps them apart.)"""
    return analyse_rows(
        runs=store.rows("runs"),
        flows=store.rows("flows"),
        summaries=store.rows("summaries"),
        plane_stats=store.rows("plane_stats"),
        plane_order=spec_plane_order(store.experiment),
        baseline=baseline,
        axes=spec_axes(store.experiment),
    )


def spec_axes(experiment: dict[str, Any]) -> frozenset[str]:
    """The parameters the stored experiment's axes vary (none for experiments without)."""
    return frozenset(param_name(a) for a in experiment.get("spec", {}).get("axes") or {})


def analyse_rows(
    runs: list[dict[str, Any]],
    flows: list[dict[str, Any]],
    summaries: list[dict[str, Any]],
    plane_stats: list[dict[str, Any]],
    plane_order: list[str] | None = None,
    baseline: str | None = None,
    axes: frozenset[str] = frozenset(),
) -> Analysis:
    """The analysis of rows shaped like the store's tables (see ``dplab.store.runstore``);
    ``axes``: parameters the experiment varies, left out of traffic class names."""
    planes = ordered_planes(runs, plane_order or [], baseline)
    ok_runs = {r["run_id"] for r in runs if r["status"] == "ok"}
    failed = _count_failed(runs)
    samples = _flow_samples(summaries, flows, ok_runs, axes)
    samples.update(_stat_samples(plane_stats, ok_runs))
    rows = _ordered_rows(samples)
    keys = [(row.traffic, row.metric, plane) for row in rows for plane in planes]
    results = {key: _plane_result(samples.get(key), failed.get(key[2], 0)) for key in keys}
    return Analysis(
        planes=planes,
        rows=rows,
        results=results,
        comparisons=_compare_all(rows, planes, results),
        failed_runs=[r for r in runs if r["status"] != "ok"],
        failed_flows=[f for f in flows if f["run_id"] in ok_runs and not f["ok"]],
    )


def spec_plane_order(experiment: dict[str, Any]) -> list[str]:
    """Plane column names in the order the stored experiment spec lists them ([] if unknown)."""
    order = []
    for raw in experiment.get("spec", {}).get("planes", []):
        try:
            order.append(PlaneSpec.model_validate(raw).column)
        except ValidationError:
            return []
    return order


@dataclass
class _Sample:
    """Raw material of one PlaneResult: values per ok run, and what was left out."""

    per_run: dict[str, list[float]] = field(default_factory=dict)
    missing: int = 0


def _flow_samples(summaries: list[dict[str, Any]], flows: list[dict[str, Any]],
                  ok_runs: set[str], axes: frozenset[str]) -> dict[Key, _Sample]:
    labels = traffic_labels(flows, axes)
    flow_ok = {(f["run_id"], f["flow_id"]): f["ok"] for f in flows}
    samples: dict[Key, _Sample] = defaultdict(_Sample)
    for row in summaries:
        if row["run_id"] not in ok_runs:
            continue
        flow = (row["run_id"], row["flow_id"])
        sample = samples[(labels.get(flow, row["kind"]), row["metric"], row["plane"])]
        values = sample.per_run.setdefault(row["run_id"], [])
        if row["value"] is None or not flow_ok.get(flow, True):
            sample.missing += 1
        else:
            values.append(row["value"])
    return samples


def _stat_samples(plane_stats: list[dict[str, Any]], ok_runs: set[str]) -> dict[Key, _Sample]:
    samples: dict[Key, _Sample] = defaultdict(_Sample)
    for row in plane_stats:
        if row["run_id"] not in ok_runs:
            continue
        sample = samples[(PLANE, row["stat"], row["plane"])]
        if row["value"] is None:
            sample.missing += 1
        else:
            sample.per_run[row["run_id"]] = [row["value"]]
    return samples


def _plane_result(sample: _Sample | None, failed_runs: int) -> PlaneResult:
    sample = sample or _Sample()
    values = tuple(sum(v) / len(v) for v in sample.per_run.values() if v)
    return PlaneResult(describe(values), values, sample.missing, failed_runs)


def _compare_all(rows: list[Row], planes: list[str],
                 results: dict[Key, PlaneResult]) -> dict[Key, Comparison]:
    comparisons = {}
    for row in rows:
        base = results[(row.traffic, row.metric, planes[0])]
        for plane in planes[1:]:
            other = results[(row.traffic, row.metric, plane)]
            p = welch_p(base.run_values, other.run_values)
            comparisons[(row.traffic, row.metric, plane)] = Comparison(
                improvement_pct(row.metric, base.description.mean, other.description.mean),
                p,
                is_significant(p),
                ratio(base.description.mean, other.description.mean),
            )
    return comparisons


def _ordered_rows(samples: dict[Key, _Sample]) -> list[Row]:
    traffic_order: list[str] = []
    for traffic, _, _ in samples:
        if traffic not in traffic_order and traffic != PLANE:
            traffic_order.append(traffic)
    traffic_order.append(PLANE)
    rows = {Row(traffic, metric) for traffic, metric, _ in samples}
    return sorted(rows, key=lambda r: (traffic_order.index(r.traffic), metric_sort_key(r.metric)))


def ordered_planes(runs: list[dict[str, Any]], spec_order: list[str],
                 baseline: str | None) -> list[str]:
    stored = list(dict.fromkeys(r["plane"] for r in runs))
    planes = [p for p in spec_order if p in stored] + [p for p in stored if p not in spec_order]
    if baseline is not None:
        if baseline not in planes:
            raise StoreError(f"baseline plane {baseline!r} has no stored runs; "
                             f"planes are {planes}")
        planes.remove(baseline)
        planes.insert(0, baseline)
    return planes


def _count_failed(runs: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for run in runs:
        if run["status"] != "ok":
            counts[run["plane"]] += 1
    return counts
