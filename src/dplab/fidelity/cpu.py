"""Per-core CPU time from /proc/stat: how busy each core was between two readings.

The ``cpuN`` lines count, per core, the ticks spent in each state since boot. A core's busy
share over an interval is 1 − (idle + iowait ticks) / all ticks; steal counts as busy here,
because time the hypervisor gave to another guest is time this machine's emulation did not
get either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
IDLE_FIELDS = (3, 4)  # idle, iowait: positions among the numbers of a cpuN line


@dataclass(frozen=True)
class CoreTicks:
    """One reading of one core: ticks spent busy and ticks in all."""

    busy: int
    total: int


def parse_cores(text: str) -> dict[str, CoreTicks]:
    """``{"cpu0": CoreTicks, ...}`` from /proc/stat's text (the all-cores ``cpu`` line is
    left out); guest time is already inside user time, so it is not added again."""
    cores = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        ticks = [int(v) for v in rest.split()[:8]]  # user .. steal
        idle = sum(ticks[i] for i in IDLE_FIELDS)
        cores[name] = CoreTicks(sum(ticks) - idle, sum(ticks))
    if not cores:
        raise ValueError("/proc/stat lists no cpuN lines")
    return cores


def read_cores(path: Path = PROC_STAT) -> dict[str, CoreTicks]:
    return parse_cores(path.read_text())


def busy_shares(before: dict[str, CoreTicks],
                after: dict[str, CoreTicks]) -> dict[str, float | None]:
    """Each core's busy share (0..1) between two readings; None for a core that counted no
    ticks in between (or went offline)."""
    shares: dict[str, float | None] = {}
    for core, start in before.items():
        end = after.get(core)
        total = None if end is None else end.total - start.total
        shares[core] = None if not total or total <= 0 else (end.busy - start.busy) / total
    return shares
