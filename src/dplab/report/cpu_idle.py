"""Under which CPU idle behaviour the runs were measured, in words for the report's header.

Each stored run carries the experiment's `cpu_idle` setting, the PM QoS wake-up latency
target read during the run and the share of the run's idle CPU time spent polling
(``dplab.store.runstore``). Wake-up costs on a VM differ by tens of µs between the two, so
a reader must see which one a figure was taken under.
"""

from __future__ import annotations

import statistics
from typing import Any

NOT_RECORDED = "not recorded"
# The kernel's PM QoS "no request" value: any wake-up latency is fine.
NO_REQUEST_US = 2_000_000_000

MEANING = {
    "machine": "idle CPUs as the machine has them",
    "poll": "idle CPUs poll instead of halting (0 µs wake-up latency request held)",
}


def summary(runs: list[dict[str, Any]]) -> str:
    """One line per setting found among the runs: setting, target(s), polled share range."""
    by_setting: dict[str | None, list[dict[str, Any]]] = {}
    for run in runs:
        by_setting.setdefault(run.get("cpu_idle"), []).append(run)
    if not by_setting:
        return NOT_RECORDED
    return "; ".join(_describe(setting, group) for setting, group in by_setting.items())


def _describe(setting: str | None, runs: list[dict[str, Any]]) -> str:
    if setting is None:
        return f"{NOT_RECORDED} ({_count(runs)})"
    targets = sorted({run["cpu_wakeup_target_us"] for run in runs
                      if run.get("cpu_wakeup_target_us") is not None})
    shares = [run["cpu_idle_polled_share"] for run in runs
              if run.get("cpu_idle_polled_share") is not None]
    parts = [f"wake-up latency target {', '.join(target_text(t) for t in targets) or '—'}",
             f"idle time spent polling {share_range(shares)}"]
    meaning = MEANING.get(setting, "")
    return f"{setting}: {meaning} ({'; '.join(parts)}; {_count(runs)})"


def target_text(target_us: float | None) -> str:
    if target_us is None:
        return "—"
    if target_us >= NO_REQUEST_US:
        return "none asked"
    return f"{target_us:.0f} µs"


def share_text(share: float | None) -> str:
    return "—" if share is None else f"{share * 100:.0f} %"


def share_range(shares: list[float]) -> str:
    """'97 %' or '95–99 %' over the runs; '—' when no run could measure it."""
    if not shares:
        return "—"
    low, high = f"{min(shares) * 100:.0f}", f"{max(shares) * 100:.0f}"
    return f"{low} %" if low == high else f"{low}–{high} %"


def _count(runs: list[dict[str, Any]]) -> str:
    return f"{len(runs)} run{'s' if len(runs) != 1 else ''}"


def setting_with_share(setting: str, shares: list[float | None]) -> str:
    """'poll (100 %)': a setting and the median measured share of idle time spent polling
    under it (the setting alone when none was measured)."""
    got = [share for share in shares if share is not None]
    if not got:
        return setting
    return f"{setting} ({share_text(statistics.median(got))})"
