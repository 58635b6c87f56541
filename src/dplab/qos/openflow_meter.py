"""The ovs plane's ``qos`` option: study 004's static baseline as OpenFlow 1.3 meters.

    qos: {policy: meter, burst_kbit: 1000,
          classes: [{dscp: 46, rate_mbit: 1.5}, {dscp: 34, rate_mbit: 3}, {dscp: 0, rate_mbit: 3}]}

Each class is one meter (band type drop, rate in kbit/s, the burst in kbit) on every
switch, and one rule sending the IPv4 packets of its DSCP through it; the controller installs
both when a switch connects (``dplab.control.openflow_app``). Nothing changes them afterwards.
OVS meters count whole Ethernet frames.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

POLICIES = ("meter",)
DEFAULT_BURST_KBIT = 1000  # the study's 1 Mbit burst
WHERE = "plane ovs: option 'qos'"


class MeterError(ValueError):
    """A bad ``qos`` option; the message names the key and the value."""


@dataclass(frozen=True)
class MeterClass:
    meter_id: int  # OpenFlow meter id, 1..
    dscp: int
    rate_kbps: int
    burst_kbit: int


def parse(given: Any) -> list[MeterClass]:
    """The meters ``given`` asks for, in its order (meter ids 1, 2, ...)."""
    if not isinstance(given, dict):
        raise MeterError(f"{WHERE}: must be a mapping, e.g. {{policy: meter, classes: "
                         f"[{{dscp: 46, rate_mbit: 1}}]}}, not {given!r}")
    unknown = sorted(set(given) - {"policy", "classes", "burst_kbit"})
    if unknown:
        raise MeterError(f"{WHERE}: unknown key {unknown[0]!r} "
                         "(known: burst_kbit, classes, policy)")
    if given.get("policy") not in POLICIES:
        raise MeterError(f"{WHERE}: 'policy' must be one of {', '.join(POLICIES)}, "
                         f"not {given.get('policy')!r}")
    burst = given.get("burst_kbit", DEFAULT_BURST_KBIT)
    if not _whole(burst) or burst <= 0:
        raise MeterError(f"{WHERE}: 'burst_kbit' must be a whole number > 0, not {burst!r}")
    classes = given.get("classes")
    if not isinstance(classes, list) or not classes:
        raise MeterError(f"{WHERE}: 'classes' must be a non-empty list of "
                         f"{{dscp, rate_mbit}}, not {classes!r}")
    meters = [_meter(number, entry, burst) for number, entry in enumerate(classes, start=1)]
    dscps = [m.dscp for m in meters]
    if len(set(dscps)) != len(dscps):
        raise MeterError(f"{WHERE}: 'classes' name a DSCP twice: {dscps}")
    return meters


def _meter(number: int, entry: Any, burst: int) -> MeterClass:
    where = f"{WHERE}: classes[{number - 1}]"
    if not isinstance(entry, dict) or set(entry) != {"dscp", "rate_mbit"}:
        raise MeterError(f"{where}: must be {{dscp: 0..63, rate_mbit: > 0}}, not {entry!r}")
    dscp, rate = entry["dscp"], entry["rate_mbit"]
    if not _whole(dscp) or not 0 <= dscp <= 63:
        raise MeterError(f"{where}: 'dscp' must be a whole number 0..63, not {dscp!r}")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0:
        raise MeterError(f"{where}: 'rate_mbit' must be a number > 0, not {rate!r}")
    return MeterClass(number, dscp, round(rate * 1000), burst)


def to_json(meters: list[MeterClass]) -> str:
    """For the controller's command line."""
    return json.dumps([asdict(m) for m in meters])


def from_json(text: str) -> list[MeterClass]:
    return [MeterClass(**fields) for fields in json.loads(text)]


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
