"""Overhead of one run beyond its traffic time, per plane (budget: ≤ 2 s).

Runs a one-repetition experiment per plane on the default multi-path network with a
single TCP flow of fixed duration, and reads the runner's own stage clock: network up,
plane ready, traffic, teardown. Overhead = run wall time − nominal traffic time.

Reproduce: sudo .venv/bin/python benchmarks/run_overhead.py [--write]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from doc_section import machine_line, write_section  # beside this script

from dplab.runner import run_matrix
from dplab.spec import parse
from dplab.store import RunStore

TRAFFIC_S = 3.0
PLANES = [
    "bridge",
    "router",
    "{kind: ovs, label: ovs-reactive, options: {mode: reactive}}",
    "{kind: ovs, label: ovs-proactive, options: {mode: proactive}}",
    "{kind: p4, label: p4-reactive, options: {mode: reactive}}",
]
STAGES = ("run_network_up_s", "run_plane_ready_s", "run_traffic_s", "run_collect_stats_s",
          "run_teardown_s")


def experiment(plane: str, repeat: int) -> str:
    return (f"name: overhead\ntopology: {{name: multipath}}\nplanes: [{plane}]\n"
            f"workloads: [{{kind: tcp, pairs: [[h1, h5]], duration: {TRAFFIC_S}}}]\n"
            f"repetitions: {repeat}\n")


def measure(plane: str, repeat: int) -> tuple[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        store: RunStore = run_matrix(parse(experiment(plane, repeat)), Path(tmp))
        runs = [r for r in store.rows("runs") if r["status"] == "ok"]
        stats = store.rows("plane_stats")
    label = runs[0]["plane"] if runs else plane
    figures = {stage: statistics.median(s["value"] for s in stats if s["stat"] == stage)
               for stage in STAGES}
    figures["wall_s"] = statistics.median(r["duration_s"] for r in runs)
    figures["overhead_s"] = figures["wall_s"] - TRAFFIC_S
    return label, figures


def render(rows: dict[str, dict[str, float]], repeat: int) -> str:
    lines = [
        "## Overhead of one run beyond its traffic time",
        "",
        machine_line(),
        f"Multi-path topology (8 hosts, 6 switches), one TCP flow h1→h5 of {TRAFFIC_S:g} s, "
        f"median of {repeat} runs. Budget: overhead ≤ 2 s.",
        "",
        "| plane | network up (s) | plane ready (s) | traffic phase (s) | collect stats (s) "
        "| teardown (s) | run wall (s) | overhead (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, f in rows.items():
        lines.append(f"| {label} | {f['run_network_up_s']:.2f} | {f['run_plane_ready_s']:.2f} "
                     f"| {f['run_traffic_s']:.2f} | {f['run_collect_stats_s']:.2f} "
                     f"| {f['run_teardown_s']:.2f} "
                     f"| {f['wall_s']:.2f} | {f['overhead_s']:.2f} |")
    lines += [
        "",
        "- `traffic phase` includes starting the iperf servers and collecting their reports;",
        "  `plane ready` for `bridge` is one ping across (its loops are cut by a spanning tree",
        "  computed up front; `stp: kernel` would add 2 x 2 s of STP settling); `collect stats`",
        "  waits for the controller's next counter write (every 0.1 s) so nothing counted is",
        "  missed.",
        "",
        "Reproduce: `sudo .venv/bin/python benchmarks/run_overhead.py --repeat 3 --write`",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    rows = dict(measure(plane, args.repeat) for plane in PLANES)
    section = render(rows, args.repeat)
    print(section)
    if args.write:
        write_section("overhead", section)


if __name__ == "__main__":
    main()
