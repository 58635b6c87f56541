"""Whether a run's controller was saturated (study 001's "controller overloaded"), from the
per-second series the controlled planes record (``cpu_pct:controller``,
``packet_ins_per_s:controller``; planes.controlled). The controller is one Python process
whose forwarding logic runs one thread at a time, so one core is all it can use: a second
spent at nearly 100 % of a core is a second in which packet-ins queued behind it."""

from __future__ import annotations

from collections.abc import Sequence

from dplab.control.counters_file import SERIES_INTERVAL_S
from dplab.planes.base import SeriesPoint

SATURATED_PCT = 95.0
CPU = "cpu_pct:controller"
PACKET_INS = "packet_ins_per_s:controller"


def controller_load(points: Sequence[SeriesPoint]) -> dict[str, float | None]:
    """Plane statistics of the controller's load over the traffic (t >= 0):
    ``controller_saturated_s`` (seconds it used >= SATURATED_PCT of a core),
    ``controller_cpu_max_pct`` and ``packet_ins_max_per_s`` (the busiest interval of each).
    Empty when the plane recorded no controller series (no controller, or unmeasured)."""
    cpu = sorted((p for p in points if p.series == CPU and p.value is not None),
                 key=lambda p: p.t)
    # each point closes the interval since the one before it (the first: one period)
    starts = [cpu[0].t - SERIES_INTERVAL_S] + [p.t for p in cpu[:-1]] if cpu else []
    during = [(start, p) for start, p in zip(starts, cpu, strict=True) if p.t >= 0]
    if not during:
        return {}
    ins = [p.value for p in points
           if p.series == PACKET_INS and p.t >= 0 and p.value is not None]
    return {
        "controller_saturated_s": sum(p.t - max(start, 0.0) for start, p in during
                                      if p.value >= SATURATED_PCT),
        "controller_cpu_max_pct": max(p.value for _start, p in during),
        "packet_ins_max_per_s": max(ins) if ins else None,
    }
