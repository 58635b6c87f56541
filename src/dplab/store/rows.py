"""Flatten one run's FlowResults into the long-format rows the store keeps.

Long format means one row per measured value: (run, flow, metric) -> value. A value that
was not measured stays a row with ``value=None``, so "missing" remains visible in the data
instead of disappearing (or, worse, turning into 0).
"""

from __future__ import annotations

import json
import math
from typing import Any, Protocol


class StoreError(ValueError):
    """Bad input to the store or unreadable stored data; the message says where and what."""


class FlowLike(Protocol):
    """The fields of ``dplab.workloads.Flow`` the store reads."""

    flow_id: str
    kind: str
    src: str
    dst: str
    params: dict


class FlowResultLike(Protocol):
    """The fields of ``dplab.workloads.FlowResult`` the store reads."""

    flow: FlowLike
    ok: bool
    error: str | None
    summary: dict[str, float | None]
    intervals: list[dict[str, float | None]]
    path: list[str] | None


class SeriesPointLike(Protocol):
    """The fields of ``dplab.planes.base.SeriesPoint`` the store reads."""

    t: float
    series: str
    value: float | None


class AxisPointLike(Protocol):
    """The fields of ``dplab.spec.axes.AxisPoint`` the store reads."""

    axis: str
    label: str
    number: float | None


class CpuIdleLike(Protocol):
    """The fields of ``dplab.substrate.cpu_idle.IdleRecord`` the store reads."""

    setting: str
    wakeup_target_us: int | None
    polled_share: float | None


def cpu_idle_columns(run_id: str, record: CpuIdleLike | None) -> dict[str, Any]:
    """The ``runs`` columns saying under which idle behaviour a run was measured."""
    if record is None:
        return {"cpu_idle": None, "cpu_wakeup_target_us": None, "cpu_idle_polled_share": None}
    where = f"run {run_id!r}, cpu_idle"
    return {"cpu_idle": record.setting,
            "cpu_wakeup_target_us": as_value(record.wakeup_target_us, f"{where} target"),
            "cpu_idle_polled_share": as_value(record.polled_share, f"{where} polled share")}


class FidelityLike(Protocol):
    """The fields of ``dplab.fidelity.FidelityRecord`` the store reads."""

    host_bound: bool
    reasons: list[str]
    measures: list  # of (measure, subject, value) objects, dplab.fidelity.Measure


REASON_SEPARATOR = "; "


def fidelity_columns(record: FidelityLike | None) -> dict[str, Any]:
    """The ``runs`` columns saying whether the host limited the run, and why (null: the
    run was not monitored, e.g. stored before the monitor existed, or it failed first)."""
    if record is None:
        return {"host_bound": None, "host_bound_reasons": None}
    return {"host_bound": bool(record.host_bound),
            "host_bound_reasons": REASON_SEPARATOR.join(record.reasons) or None}


def fidelity_rows(run: dict[str, Any], record: FidelityLike | None) -> list[dict[str, Any]]:
    """One row per measured fidelity figure: (measure, subject, value)."""
    if record is None:
        return []
    where = f"run {run['run_id']!r}, fidelity"
    return [{**run, "measure": m.measure, "subject": m.subject,
             "value": as_value(m.value, f"{where} {m.measure} {m.subject}")}
            for m in record.measures]


def as_value(raw: Any, where: str) -> float | None:
    """A stored metric value: float, or None when not measured (NaN counts as not measured)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise StoreError(f"{where}: expected a number or None, got {raw!r}")
    value = float(raw)
    return None if math.isnan(value) else value


def flow_row(run: dict[str, Any], result: FlowResultLike) -> dict[str, Any]:
    """One row describing the flow itself: identity, parameters, and whether it worked."""
    flow = result.flow
    return {
        **run,
        "flow_id": flow.flow_id,
        "kind": flow.kind,
        "src": flow.src,
        "dst": flow.dst,
        "ok": bool(result.ok),
        "error": result.error,
        "params": json.dumps(flow.params, sort_keys=True, default=str),
        "path": None if result.path is None else " ".join(result.path),
    }


def summary_rows(run: dict[str, Any], result: FlowResultLike) -> list[dict[str, Any]]:
    """One row per summary metric of a flow."""
    ident = _flow_identity(run, result)
    where = f"run {run['run_id']!r}, flow {result.flow.flow_id!r}, summary"
    return [
        {**ident, "metric": metric, "value": as_value(raw, f"{where} metric {metric!r}")}
        for metric, raw in result.summary.items()
    ]


def interval_rows(run: dict[str, Any], result: FlowResultLike) -> list[dict[str, Any]]:
    """One row per (interval, metric) of a flow; each interval must say when it was."""
    ident = _flow_identity(run, result)
    rows: list[dict[str, Any]] = []
    for index, interval in enumerate(result.intervals):
        where = f"run {run['run_id']!r}, flow {result.flow.flow_id!r}, interval {index}"
        t_start = _required_time(interval, "t_start", where)
        t_end = _required_time(interval, "t_end", where)
        for metric, raw in interval.items():
            if metric in ("t_start", "t_end"):
                continue
            value = as_value(raw, f"{where} metric {metric!r}")
            rows.append(
                {**ident, "t_start": t_start, "t_end": t_end, "metric": metric, "value": value}
            )
    return rows


def plane_stat_rows(run: dict[str, Any], stats: dict[str, float | None]) -> list[dict[str, Any]]:
    """One row per plane statistic (packet_ins, flow_installs, setup_ms, ...)."""
    where = f"run {run['run_id']!r}, plane stat"
    return [
        {**run, "stat": stat, "value": as_value(raw, f"{where} {stat!r}")}
        for stat, raw in stats.items()
    ]


def plane_info_rows(run: dict[str, Any], info: dict[str, str]) -> list[dict[str, Any]]:
    """One row per fact of how the plane ran: (key, value), both text."""
    for key, value in info.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise StoreError(f"run {run['run_id']!r}, plane info: keys and values must be "
                             f"text, got {key!r}: {value!r}")
    return [{**run, "key": key, "value": value} for key, value in info.items()]


def plane_series_rows(run: dict[str, Any],
                      points: list[SeriesPointLike]) -> list[dict[str, Any]]:
    """One row per point of a plane's time series: (t, series, value)."""
    rows = []
    for index, point in enumerate(points):
        where = f"run {run['run_id']!r}, plane series point {index}"
        if not isinstance(point.series, str) or not point.series:
            raise StoreError(f"{where}: series must be a non-empty name, got {point.series!r}")
        t = as_value(point.t, f"{where} ({point.series}) t")
        if t is None:
            raise StoreError(f"{where} ({point.series}): t is missing; every point needs "
                             "its time")
        rows.append({**run, "t": t, "series": point.series,
                     "value": as_value(point.value, f"{where} ({point.series}) value")})
    return rows


def run_axis_rows(run: dict[str, Any], points: list[AxisPointLike]) -> list[dict[str, Any]]:
    """One row per axis of the run's point: its value's label and, if numeric, number."""
    where = f"run {run['run_id']!r}, axis"
    return [{**run, "axis": p.axis, "value": p.label,
             "number": as_value(p.number, f"{where} {p.axis!r} number")} for p in points]


def _flow_identity(run: dict[str, Any], result: FlowResultLike) -> dict[str, Any]:
    flow = result.flow
    return {**run, "flow_id": flow.flow_id, "kind": flow.kind, "src": flow.src, "dst": flow.dst}


def _required_time(interval: dict[str, float | None], key: str, where: str) -> float:
    value = as_value(interval.get(key), f"{where} {key}")
    if value is None:
        raise StoreError(f"{where}: {key} is missing; every interval needs t_start and t_end")
    return value
