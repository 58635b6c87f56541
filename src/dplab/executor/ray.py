"""The Ray executor: every pending run becomes one Ray task. Each task needs one unit of
the custom resource ``dplab_slot``, which each node offers once (``ray start --resources
'{"dplab_slot": 1}'``), so Ray's scheduler runs at most one run per node: two runs on one
machine would disturb each other's measurements.

A task measures its run with the same function as a local run, its pcaps, frames and logs in
a folder of its own, and returns the measured run and those files (as bytes, through Ray's
object store); the driver stores them in its one results folder, so ``dplab report`` reads it
as a local run's. A run whose node is lost is stored failed with the reason and submitted
once more."""

from __future__ import annotations

import math
import platform
import socket
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import ray
from ray.exceptions import NodeDiedError, RayError, WorkerCrashedError

from dplab import cleanup
from dplab.executor import Measure, MeasuredRun, Progress, store_run
from dplab.plan import ExperimentError, ExperimentPlan, RunKey, RunPlan
from dplab.store.runstore import RunStore
from dplab.substrate import cpu_idle

SLOT = "dplab_slot"
NODE_LOST = (NodeDiedError, WorkerCrashedError)  # what Ray raises for a task whose node died
ATTEMPTS = 2  # a run whose node is lost is queued again once
CONNECT_TIMEOUT_S = 5.0  # ray.init retries an unreachable head for minutes before failing


@dataclass
class NodeRun:
    """What a task sends back: the node it ran on, the run, and the files it wrote
    (path relative to the results folder -> bytes)."""

    node: str
    measured: MeasuredRun
    files: dict[str, bytes]


@ray.remote(num_cpus=0, resources={SLOT: 1}, max_retries=0)
def _run_on_node(measure: Measure, key: RunKey, plan: RunPlan) -> NodeRun:
    node = f"{platform.node()}:{ray.get_runtime_context().get_node_id()[:8]}"

    def say(message: str) -> None:  # Ray forwards a task's output to the driver's console
        print(f"[{node}] {message}", flush=True)

    for line in cleanup.reclaim():  # what runs killed on this node left behind
        say(f"removed {line}")
    with tempfile.TemporaryDirectory(prefix="dplab-ray-") as tmp:
        with cpu_idle.idle_behaviour(plan.cpu_idle):
            measured = measure(key, plan, Path(tmp), say)
        files = {str(p.relative_to(tmp)): p.read_bytes()
                 for p in sorted(Path(tmp).rglob("*")) if p.is_file()}
    return NodeRun(node, measured, files)


def run(plan: ExperimentPlan, keys: list[RunKey], measure: Measure, store: RunStore,
        say: Progress, address: str | None) -> None:
    """Run ``keys`` on the Ray cluster at ``address`` (None: RAY_ADDRESS or the cluster
    started on this machine), storing each run as it comes back. Connects unless this
    process is already connected."""
    connected_here = not ray.is_initialized()
    if connected_here:
        _check_reachable(address)
        try:
            ray.init(address=address or "auto")
        except (ConnectionError, RuntimeError) as exc:
            raise ExperimentError(f"ray: cannot connect to {address or 'auto'}: {exc}") from None
    try:
        slots = int(ray.cluster_resources().get(SLOT, 0))
        if not slots:
            raise ExperimentError(f"ray: no node of the cluster offers the resource {SLOT!r}; "
                                  f"start each node with: ray start ... --resources "
                                  f"'{{\"{SLOT}\": 1}}'")
        say(f"ray: {len(keys)} runs on {slots} nodes")
        _Queue(plan, measure, store, say, slots).run(keys)
    finally:
        if connected_here:
            ray.shutdown()


def _check_reachable(address: str | None) -> None:
    """Refuse a HOST:PORT whose head does not answer, at once (``auto`` and ``ray://``
    addresses are left to ``ray.init``, which fails fast on them)."""
    host, _, port = (address or "").rpartition(":")
    if not host or not port.isdigit() or "://" in host:
        return
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ExperimentError(f"ray: cannot reach the cluster's head at {address}: "
                              f"{exc}") from None


class _Queue:
    """The runs submitted to Ray, gathered as they finish."""

    def __init__(self, plan: ExperimentPlan, measure: Measure, store: RunStore,
                 say: Progress, slots: int) -> None:
        self.plan, self.measure, self.store, self.say = plan, measure, store, say
        self.slots = slots
        self.in_flight: dict[ray.ObjectRef, tuple[RunKey, float]] = {}
        self.attempts: Counter[str] = Counter()
        self.per_node: Counter[str] = Counter()
        self.walls: list[float] = []
        self.total = 0

    def run(self, keys: list[RunKey]) -> None:
        self.total = len(keys)
        for key in keys:
            self._submit(key)
        try:
            while self.in_flight:
                [ref], _ = ray.wait(list(self.in_flight), num_returns=1)
                self._collect(ref, *self.in_flight.pop(ref))
        finally:  # Ctrl-C or an error here: the runs still out stop and tear down on their
            for ref in self.in_flight:  # nodes (a KeyboardInterrupt in the task, not a kill)
                ray.cancel(ref)

    def _collect(self, ref: ray.ObjectRef, key: RunKey, submitted: float) -> None:
        try:
            node_run: NodeRun = ray.get(ref)
        except NODE_LOST as exc:
            self._lost(key, submitted, exc)
            return
        except RayError as exc:  # the task itself failed (the run never measured)
            self._failed(key, submitted, f"ray task: {type(exc).__name__}: {exc}")
            return
        self._gather(node_run)

    def _submit(self, key: RunKey) -> None:
        self.attempts[key.run_id] += 1
        ref = _run_on_node.remote(self.measure, key, self.plan.point_plan(key.point).run)
        self.in_flight[ref] = (key, time.time())

    def _lost(self, key: RunKey, submitted: float, exc: RayError) -> None:
        self._failed(key, submitted, f"node lost: {type(exc).__name__}: {exc}")
        if self.attempts[key.run_id] < ATTEMPTS:
            self.say(f"{key.run_id}: queued again")
            self._submit(key)

    def _failed(self, key: RunKey, submitted: float, reason: str) -> None:
        store_run(self.store, MeasuredRun(
            run_id=key.run_id, plane_label=key.plane.column, repetition=key.repetition,
            status="failed", error=reason, started=submitted,
            duration_s=time.time() - submitted, plane_stats={}, results=[], cpu_idle=None,
            plane_series=[], plane_info={}, axes=list(key.point.values), fidelity=None),
            self.say)

    def _gather(self, node_run: NodeRun) -> None:
        root = Path(self.store.results_dir).resolve()
        for name, data in node_run.files.items():
            path = (root / name).resolve()
            if not path.is_relative_to(root):  # a path from the node never leaves the folder
                raise ExperimentError(f"ray: {node_run.node} sent a file outside the "
                                      f"results folder: {name}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        run = node_run.measured
        store_run(self.store, run, self.say)
        self.per_node[node_run.node] += 1
        self.walls.append(run.duration_s)
        self.say(f"{run.run_id}: {run.status} on {node_run.node} in {run.duration_s:.1f} s; "
                 f"{self._tally()}")

    def _tally(self) -> str:
        """Runs per node and the time left: the mean run's wall time per round of runs the
        cluster's slots still have to do."""
        done = sum(self.per_node.values())
        nodes = ", ".join(f"{node} {n}" for node, n in sorted(self.per_node.items()))
        rounds = math.ceil((self.total - done) / self.slots)
        left = rounds * sum(self.walls) / len(self.walls)
        return f"runs per node: {nodes}; {done}/{self.total} done, about {left:.0f} s left"
