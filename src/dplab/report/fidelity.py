"""Host-bound runs in words and marks: the report's warning at the top, the tables' ``†``
and the per-run fidelity figures (``dplab.fidelity``, stored in ``runs`` and ``fidelity``).

A table cell is a mean over a plane's ok runs; when any of them was host-bound the cell
carries ``MARK``: part of that figure measured the emulating host, not the plane.
"""

from __future__ import annotations

from typing import Any

from dplab.store.rows import REASON_SEPARATOR

MARK = "†"
NOTE = (f"{MARK} the plane's figures include host-bound runs: the emulating host, not the "
        "plane, limited them (reasons at the top of the report and with each run).")
NOT_MONITORED = "not monitored"
DAEMON_CPU = ("cpu_user_pct", "cpu_sys_pct")  # plane stats from measure.resources
# fidelity measures shown per run, in this order, with their labels
SHOWN = {"cpu_busy_pct": "CPU busy %", "cpu_saturated_share": "time with all cores ≥ 95 % busy",
         "sender_achieved_mbit": "sent Mbit/s", "sender_requested_mbit": "asked Mbit/s",
         "sender_achieved_pps": "sent pps", "sender_requested_pps": "asked pps",
         "link_carried_mbit": "link Mbit/s while over-offered",
         "qdisc_drops": "qdisc drops", "rx_dropped": "rx dropped", "tx_dropped": "tx dropped",
         "packet_socket_drops": "packet socket drops",
         "udp_rcvbuf_errors": "UDP receive-buffer drops", "plane_drops": "plane's own drops"}


def host_bound_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ok runs marked host-bound (failed runs are left out of every figure anyway)."""
    return [r for r in runs if r.get("host_bound") and r["status"] == "ok"]


def marked_planes(runs: list[dict[str, Any]]) -> set[str]:
    return {r["plane"] for r in host_bound_runs(runs)}


def reasons(run: dict[str, Any]) -> list[str]:
    text = run.get("host_bound_reasons")
    return text.split(REASON_SEPARATOR) if text else []


def summary_lines(runs: list[dict[str, Any]]) -> list[str]:
    """A headline and one line per host-bound run; empty when none was."""
    bound = host_bound_runs(runs)
    if not bound:
        return []
    ok = sum(r["status"] == "ok" for r in runs)
    verb = "was" if len(bound) == 1 else "were"
    head = (f"Host-bound: {len(bound)} of {ok} ok run{'s' if ok != 1 else ''} {verb} limited "
            f"by this machine, not by the plane ({MARK} in the tables):")
    return [head, *(f"  {r['run_id']}: {'; '.join(reasons(r))}" for r in bound)]


def verdict_text(run: dict[str, Any]) -> str:
    """'host-bound: <reasons>', 'no' or 'not monitored' for one run."""
    if run.get("host_bound") is None:
        return NOT_MONITORED
    return f"host-bound: {'; '.join(reasons(run))}" if run["host_bound"] else "no"


def run_figures(rows: list[dict[str, Any]],
                plane_stats: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """run_id -> the run's fidelity figures in one line, e.g. 'CPU busy % cpu0 97, cpu1 99;
    plane daemons CPU % 64; qdisc drops 0'. Per-interface drops only where there were any;
    the daemons' CPU is ResourceSampler's (user + system, % of one core, plane stats)."""
    by_run: dict[str, dict[str, list[str]]] = {}
    daemons: dict[str, float] = {}
    for stat in plane_stats or []:
        if stat["stat"] in DAEMON_CPU and stat["value"] is not None:
            daemons[stat["run_id"]] = daemons.get(stat["run_id"], 0.0) + stat["value"]
    for run_id, pct in daemons.items():
        by_run.setdefault(run_id, {})["plane daemons CPU %"] = [f"{pct:.0f}"]
    for row in rows:
        label = SHOWN.get(row["measure"])
        if label is None or row["value"] is None:
            continue
        parts = by_run.setdefault(row["run_id"], {}).setdefault(label, [])
        value = row["value"] * (100 if row["measure"] == "cpu_saturated_share" else 1)
        text = f"{value:.0f}" + (" %" if row["measure"] == "cpu_saturated_share" else "")
        parts.append(text if row["subject"] == "all" else f"{row['subject']} {text}")
    return {run: "; ".join(f"{label} {', '.join(parts)}" for label, parts in figures.items())
            for run, figures in by_run.items()}
