"""What the Ray executor costs per run, and the wall time of one matrix on 1, 2, 4 nodes.

The matrix: REPEAT repetitions of one short ping on the bridge plane (2 hosts), run locally
and on Ray clusters started on this machine with Ray's own multi-node utility (a head that
runs nothing, N nodes offering one ``dplab_slot`` each). For each: wall time of
``runner.run_plan`` and the sum of the runs' own stored ``duration_s``; the overhead per
run is (wall − Σ duration_s) / runs, i.e. what the executor adds around the measurement
(Ray: scheduling, pickling the plan and the results, sending files, the node's cleanup
scan). The Ray cluster's start is timed apart. Nodes on one machine share its cores, so the
1/2/4-node wall times show scheduling, not the speed-up of separate machines.

With ``--study NNN`` the matrix is that study's quick profile instead (every scenario's
runs, real traffic, as ``dplab study run NNN --quick`` plans them; scenarios one after
the other), run locally and on the same 1/2/4-node clusters: its speed-up shows what
several nodes give a real matrix when they share this machine's two cores.

Reproduce: sudo .venv/bin/python benchmarks/ray_overhead.py [--repeat 8] [--nodes 1,2,4] [--write]
           sudo .venv/bin/python benchmarks/ray_overhead.py --study 004 [--nodes 1,2,4] [--write]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

import ray
from doc_section import machine_line, write_section  # beside this script
from ray.cluster_utils import Cluster

from dplab.executor.ray import SLOT
from dplab.plan import build_plan
from dplab.runner import run_plan
from dplab.spec import parse
from dplab.study import catalog as study_catalog
from dplab.study import run as study_run


def experiment(repeat: int) -> str:
    return ("name: ray-overhead\ntopology: {name: single, params: {hosts: 2}}\n"
            "planes: [bridge]\n"
            "workloads: [{kind: icmp, pairs: [[h1, h2]], count: 5, interval: 0.05}]\n"
            f"repetitions: {repeat}\n")


def measure(repeat: int, address: str | None) -> tuple[float, float, float | None, int]:
    """(wall s, Σ stored duration_s, median gap s between one run's end and the next's
    start, runs ok) of the matrix, run locally or on Ray."""
    plan = build_plan(parse(experiment(repeat)), "<benchmark>")
    with tempfile.TemporaryDirectory() as tmp:
        began = time.monotonic()
        store = run_plan(plan, Path(tmp), ray_address=address)
        wall = time.monotonic() - began
        runs = sorted(store.rows("runs"), key=lambda r: r["started"])
    gaps = [b["started"] - (a["started"] + a["duration_s"])
            for a, b in itertools.pairwise(runs)]
    return (wall, sum(r["duration_s"] for r in runs),
            statistics.median(gaps) if gaps else None, sum(r["status"] == "ok" for r in runs))


def measure_study(number: str, address: str | None) -> tuple[float, float, None, int]:
    """(wall s, Σ stored duration_s, no gap, runs ok) of study ``number``'s quick profile,
    every scenario in turn, from the repository's root as `dplab study run` does."""
    study, _published = study_catalog.find(number)
    with tempfile.TemporaryDirectory() as tmp:
        items = study_run.plans(study, "quick", Path(tmp))
        began = time.monotonic()
        with study_run.in_directory(study_catalog.repository_root()):
            stores = [run_plan(item.plan, item.results, ray_address=address)
                      for item in items]
        wall = time.monotonic() - began
        runs = [r for store in stores for r in store.rows("runs")]
    return (wall, sum(r["duration_s"] for r in runs), None,
            sum(r["status"] == "ok" for r in runs))


def study_runs(number: str) -> int:
    study, _published = study_catalog.find(number)
    with tempfile.TemporaryDirectory() as tmp:
        return sum(len(item.plan.runs) for item in study_run.plans(study, "quick",
                                                                     Path(tmp)))


def on_cluster(nodes: int, repeat: int,
               study: str | None = None) -> tuple[float, tuple[float, float, float | None, int]]:
    began = time.monotonic()
    cluster = Cluster()
    cluster.add_node(num_cpus=0)
    for _ in range(nodes):
        cluster.add_node(num_cpus=1, resources={SLOT: 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address)
    start = time.monotonic() - began
    try:
        return start, (measure(repeat, cluster.address) if study is None
                       else measure_study(study, cluster.address))
    finally:
        ray.shutdown()
        cluster.shutdown()


def row(label: str, start: float | None, figures: tuple[float, float, float | None, int],
        repeat: int, sequential: bool, one_node_wall: float | None) -> str:
    """Overhead and gaps only where runs follow each other (local, one node): with runs in
    parallel, wall − Σ durations is no cost of any run."""
    wall, busy, gap, ok = figures
    started = f"{start:.1f}" if start is not None else "–"
    overhead = f"{(wall - busy) / repeat:.2f}" if sequential else "–"
    gap_text = f"{gap:.3f}" if sequential and gap is not None else "–"
    speedup = f"{one_node_wall / wall:.2f}" if one_node_wall else "–"
    return (f"| {label} | {started} | {wall:.1f} | {busy:.1f} | {overhead} | {gap_text} "
            f"| {speedup} | {ok}/{repeat} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--nodes", default="1,2,4")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--study", default=None, metavar="NNN",
                        help="the matrix: this study's quick profile")
    args = parser.parse_args()
    if args.study is not None:
        study_main(args.study, args.nodes, args.write)
        return
    lines = ["| executor | cluster start s | matrix wall s | Σ run duration_s | "
             "overhead per run s | gap between runs s (median) | speed-up vs 1 node | "
             "runs ok |", "|---|---|---|---|---|---|---|---|"]
    lines.append(row("local", None, measure(args.repeat, None), args.repeat, True, None))
    print(lines[-1], flush=True)
    one_node_wall = None
    for nodes in (int(n) for n in args.nodes.split(",")):
        start, figures = on_cluster(nodes, args.repeat)
        if nodes == 1:
            one_node_wall = figures[0]
        lines.append(row(f"ray, {nodes} node{'s' * (nodes > 1)}", start, figures, args.repeat,
                         nodes == 1, one_node_wall if nodes > 1 else None))
        print(lines[-1], flush=True)
    body = "\n".join([
        "## Ray executor: overhead per run, and one matrix on 1, 2, 4 nodes", "",
        machine_line(), "",
        f"{args.repeat} runs of one 5-packet ping on the bridge plane (2 hosts). Overhead per "
        "run = (matrix wall − Σ the runs' stored duration_s) / runs where runs follow each "
        "other (local, one node): what the executor adds around the measurement (Ray: "
        "scheduling, the plan and results pickled through the object store, the node's "
        "cleanup scan, and once per node the worker's start and import of dplab). The "
        "nodes are raylets on this one 2-core machine, so they share its cores: more "
        "nodes here shows scheduling, not the speed-up of separate machines. Gap between runs: "
        "from one run's stored end to the next run's stored start (their clocks: the node's), "
        "the steady cost per run once the node's worker is up (every task is queued at once, "
        "so the gap is Ray handing the next task over, the node's cleanup scan and the "
        "temporary folder; the results travel back meanwhile).", "", *lines, "",
        f"Reproduce: `sudo .venv/bin/python benchmarks/ray_overhead.py --repeat {args.repeat} "
        f"--nodes {args.nodes} --write`"])
    print(body)
    if args.write:
        write_section("ray-overhead", body)


def study_main(number: str, nodes_arg: str, write: bool) -> None:
    runs = study_runs(number)
    lines = ["| executor | cluster start s | matrix wall s | Σ run duration_s | "
             "speed-up vs local | speed-up vs 1 node | runs ok |",
             "|---|---|---|---|---|---|---|"]
    local = measure_study(number, None)
    lines.append(f"| local | – | {local[0]:.0f} | {local[1]:.0f} | – | – | {local[3]}/{runs} |")
    print(lines[-1], flush=True)
    one_node_wall = None
    for nodes in (int(n) for n in nodes_arg.split(",")):
        start, (wall, busy, _gap, ok) = on_cluster(nodes, 0, number)
        one_node_wall = one_node_wall or (wall if nodes == 1 else None)
        vs_one = f"{one_node_wall / wall:.2f}" if one_node_wall and nodes > 1 else "–"
        lines.append(f"| ray, {nodes} node{'s' * (nodes > 1)} | {start:.1f} | {wall:.0f} | "
                     f"{busy:.0f} | {local[0] / wall:.2f} | {vs_one} | {ok}/{runs} |")
        print(lines[-1], flush=True)
    load = Path("/proc/loadavg").read_text().split()[0]
    body = "\n".join([
        f"## Ray executor: study {number}'s quick profile on 1, 2, 4 nodes", "",
        f"{machine_line()} Load average at the end: {load}.", "",
        f"The matrix is study {number}'s quick profile ({runs} runs with real traffic, as "
        f"`dplab study run {number} --quick` plans them; without its reports), run locally "
        "and on Ray clusters started on this machine (`ray.cluster_utils.Cluster`: a head "
        "that runs nothing and N nodes offering one `dplab_slot` each). The nodes are "
        "raylets on this one 2-core machine: they share its cores, so runs in parallel "
        "slow each other down (their stored durations grow) and the speed-up is what "
        "sharing two cores gives, not what separate machines would. Matrix wall excludes "
        "the cluster's start (its own column).", "", *lines, "",
        f"Reproduce: `sudo .venv/bin/python benchmarks/ray_overhead.py --study {number} "
        f"--nodes {nodes_arg} --write`"])
    print(body)
    if write:
        write_section(f"ray-study{number}", body)


if __name__ == "__main__":
    main()
