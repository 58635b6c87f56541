"""The p4 plane's ``qos`` option: which meter policy drives study 004's class meters and
with what limits, checked up front so a bad value fails the run before anything starts.

    qos: {policy: dmbrl, capacity_mbit: 10, rmin_mbit: 1, rmax_mbit: 8, interval_ms: 1000,
          theta_high_mbit: 6, theta_low_mbit: 1}
    qos: {policy: mbe, capacity_mbit: 10, bands_mbit: [1, 2, 4, 6], interval_ms: 1000}

Rates are Mbit/s (the study's units); ``classes`` lists the class ids in priority order
(highest first; default 1, 2, 0 as in dmbrl_entries.yaml), each class's counter cell and
meter cell being its id. ``static`` means no loop: the entries file's meter configs stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dplab.qos.dmbrl import Limits

POLICIES = ("static", "dmbrl", "mbe")
DEFAULTS: dict[str, Any] = {
    "policy": "static", "classes": [1, 2, 0], "capacity_mbit": 10.0,
    "rmin_mbit": 1.0, "rmax_mbit": 10.0, "interval_ms": 1000.0,
    "interval_min_ms": 125.0, "interval_max_ms": 4000.0,
    "theta_high_mbit": 8.0, "theta_low_mbit": 0.5, "bands_mbit": [1.0, 2.0, 4.0, 8.0],
    "burst_bytes": 125000,  # the study's 1 Mbit burst
    "meter": "class_meter", "counter": "class_bytes",
}
NUMBERS = ("capacity_mbit", "rmin_mbit", "rmax_mbit", "interval_ms", "interval_min_ms",
           "interval_max_ms", "theta_high_mbit", "theta_low_mbit")
MBIT = 1e6


class QosError(ValueError):
    """A bad ``qos`` option; the message names the key and the value."""


@dataclass(frozen=True)
class QosSpec:
    policy: str
    classes: tuple[int, ...]      # priority order, highest first
    capacity_bps: float
    limits: Limits                # DMB-RL's bounds (also the interval bounds)
    interval_s: float             # the first (dmbrl) or fixed (mbe) sampling interval
    bands_bps: tuple[float, ...]  # MBE's predefined band rates, ascending
    burst_bytes: int
    meter: str
    counter: str

    @property
    def runs_loop(self) -> bool:
        return self.policy != "static"


def parse(given: Any) -> QosSpec:
    where = "plane p4: option 'qos'"
    if not isinstance(given, dict):
        raise QosError(f"{where}: must be a mapping, e.g. {{policy: dmbrl}}, not {given!r}")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise QosError(f"{where}: unknown key {unknown[0]!r} (known: {sorted(DEFAULTS)})")
    opts = {**DEFAULTS, **given}
    if opts["policy"] not in POLICIES:
        raise QosError(f"{where}: 'policy' must be one of {', '.join(POLICIES)}, "
                       f"not {opts['policy']!r}")
    for key in NUMBERS:
        value = opts[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise QosError(f"{where}: {key!r} must be a number >= 0, not {value!r}")
    try:
        limits = Limits(opts["rmin_mbit"] * MBIT, opts["rmax_mbit"] * MBIT,
                        opts["theta_low_mbit"] * MBIT, opts["theta_high_mbit"] * MBIT,
                        opts["interval_min_ms"] / 1000, opts["interval_max_ms"] / 1000)
    except ValueError as exc:
        raise QosError(f"{where}: {exc}") from exc
    interval_s = opts["interval_ms"] / 1000
    if not limits.interval_min_s <= interval_s <= limits.interval_max_s:
        raise QosError(f"{where}: 'interval_ms' {opts['interval_ms']} is outside "
                       f"{opts['interval_min_ms']} .. {opts['interval_max_ms']}")
    return QosSpec(opts["policy"], _classes(opts["classes"], where),
                   opts["capacity_mbit"] * MBIT, limits, interval_s,
                   _bands(opts["bands_mbit"], where), _burst(opts["burst_bytes"], where),
                   _name(opts, "meter", where), _name(opts, "counter", where))


def _classes(value: Any, where: str) -> tuple[int, ...]:
    if (not isinstance(value, list) or not value
            or not all(_whole(c) and c >= 0 for c in value) or len(set(value)) != len(value)):
        raise QosError(f"{where}: 'classes' must be a non-empty list of distinct class ids "
                       f">= 0 (priority order), not {value!r}")
    return tuple(value)


def _bands(value: Any, where: str) -> tuple[float, ...]:
    if (not isinstance(value, list) or not value
            or not all(isinstance(b, int | float) and not isinstance(b, bool) and b > 0
                       for b in value)):
        raise QosError(f"{where}: 'bands_mbit' must be a non-empty list of rates > 0, "
                       f"not {value!r}")
    return tuple(sorted(b * MBIT for b in value))


def _burst(value: Any, where: str) -> int:
    if not _whole(value) or value <= 0:
        raise QosError(f"{where}: 'burst_bytes' must be a whole number > 0, not {value!r}")
    return value


def _name(opts: dict[str, Any], key: str, where: str) -> str:
    if not isinstance(opts[key], str) or not opts[key]:
        raise QosError(f"{where}: {key!r} must be a name in the program, not {opts[key]!r}")
    return opts[key]


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
