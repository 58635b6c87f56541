"""Runs an experiment's matrix (repetition × plane): one isolated emulated network per run."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dplab import cleanup, planes
from dplab.measure.resources import ResourceSampler
from dplab.planes.base import SeriesPoint
from dplab.spec.model import Experiment, PlaneSpec
from dplab.store.runstore import RunStore
from dplab.substrate import cpu_idle
from dplab.substrate.network import Network
from dplab.substrate.registry import SubstrateError
from dplab.topology import catalog, from_mininet, from_topohub, importers
from dplab.topology.model import Topology
from dplab.workloads import video
from dplab.workloads.capture import CapturePoint, Captures, requested_interfaces
from dplab.workloads.flows import Flow, FlowResult, run_flows

READY_TIMEOUT_S = 60.0


class ExperimentError(ValueError):
    """The experiment cannot run as written (e.g. host pairs the topology does not have)."""


@dataclass(frozen=True)
class RunKey:
    plane: PlaneSpec
    repetition: int

    @property
    def run_id(self) -> str:
        return f"{self.plane.column}-r{self.repetition}"


Progress = Callable[[str], None]


def build_topology(exp: Experiment) -> Topology:
    spec = exp.topology
    if spec.file is not None:
        return importers.load(spec.file, **spec.params)
    if spec.topohub is not None:
        return from_topohub.load(spec.topohub, **spec.params)
    if spec.mininet is not None:
        return from_mininet.load(spec.mininet, spec.name, spec.params, spec.args)
    return catalog.build(spec.name, **spec.params)


def plan_flows(exp: Experiment, topo: Topology) -> list[list[Flow]]:
    """The flows of each phase: Tier 1 runs one workload per phase, Tier 2 all in one."""
    phases = [_workload_flows(index, w, topo) for index, w in enumerate(exp.workloads)]
    return phases if exp.tier == 1 else [[f for phase in phases for f in phase]]


def _workload_flows(index: int, workload, topo: Topology) -> list[Flow]:
    pairs = _resolve_pairs(index, workload.pairs, topo)
    params = workload.model_dump(exclude={"kind", "pairs"}, exclude_none=True)
    return [
        Flow(f"w{index}-{workload.kind}-{src}-{dst}", workload.kind, src, dst, dict(params))
        for src, dst in pairs
    ]


def _resolve_pairs(index: int, pairs, topo: Topology) -> list[tuple[str, str]]:
    where = f"workloads.{index}.pairs"
    if isinstance(pairs, str):
        if pairs not in topo.pairs:
            known = ", ".join(sorted(topo.pairs)) or "none"
            raise ExperimentError(
                f"{where}: topology {topo.name!r} has no host pairs named {pairs!r} "
                f"(it has: {known})"
            )
        return list(topo.pairs[pairs])
    hosts = set(topo.hosts())
    for src, dst in pairs:
        for host in (src, dst):
            if host not in hosts:
                raise ExperimentError(f"{where}: host {host!r} is not in topology {topo.name!r}")
    return [tuple(p) for p in pairs]


@dataclass(frozen=True)
class RunPlan:
    """What every run of an experiment does: its topology, traffic phases, captures."""

    topo: Topology
    phases: list[list[Flow]]
    captures: list[tuple[str, str]]  # (node, interface)
    cpu_idle: str  # the experiment's setting, recorded with every run


def _plan_captures(exp: Experiment, topo: Topology) -> list[tuple[str, str]]:
    try:
        return requested_interfaces(topo, exp.capture)
    except ValueError as exc:
        raise ExperimentError(str(exc)) from None


def _capture_points(net: Network, interfaces: list[tuple[str, str]],
                    out_dir: Path) -> list[CapturePoint]:
    hosts = set(net.topo.hosts())
    return [
        CapturePoint(net.host_ns(node) if node in hosts else net.switch_ns(node), ifname,
                     out_dir / f"{node}-{ifname}.pcap")
        for node, ifname in interfaces
    ]


def _refuse_unsupported_links(topo: Topology) -> None:
    """A result that silently lacked the asked-for delay or loss would be wrong: stop first."""
    try:
        Network(topo).check_supported()
    except SubstrateError as exc:
        raise ExperimentError(f"topology: {exc}") from None


def run_matrix(exp: Experiment, results_dir: Path, progress: Progress | None = None) -> RunStore:
    """Every (repetition, plane) run not already stored; repetitions interleave the planes
    so slow drift of a shared machine spreads over all planes alike."""
    say = progress or (lambda _msg: None)
    topo = build_topology(exp)
    phases = plan_flows(exp, topo)
    captures = _plan_captures(exp, topo)
    _refuse_unsupported_links(topo)
    plan = RunPlan(topo, phases, captures, exp.cpu_idle)
    try:  # held from before the first network to after the last teardown
        with cpu_idle.idle_behaviour(exp.cpu_idle):
            return _run_pending(exp, plan, results_dir, say)
    except cpu_idle.CpuIdleError as exc:  # raised only on taking the request: nothing ran
        raise ExperimentError(f"{exc}; nothing was run") from None


def _run_pending(exp: Experiment, plan: RunPlan, results_dir: Path, say: Progress) -> RunStore:
    store = RunStore(results_dir)
    store.write_experiment(exp.model_dump(mode="json"))
    done = store.completed_runs()
    cleanup.reclaim()
    for repetition in range(1, exp.repetitions + 1):
        for plane_spec in exp.planes:
            key = RunKey(plane_spec, repetition)
            if key.run_id in done:
                say(f"{key.run_id}: already stored, skipped")
                continue
            _run_one(key, plan, store, say)
    return store


def _run_one(key: RunKey, plan: RunPlan, store: RunStore, say: Progress) -> None:
    started = time.time()
    idle = cpu_idle.IdleWatch(plan.cpu_idle)
    clock = StageClock()
    results: list[FlowResult] = []
    stats: dict[str, float | None] = {}
    series: list[SeriesPoint] = []
    error: str | None = None
    try:
        results, stats, series = _execute(key, plan, store.results_dir, say, clock)
        failed = [r for r in results if not r.ok]
        if failed and len(failed) == len(results):
            error = f"every flow failed, first: {failed[0].flow.flow_id}: {failed[0].error}"
    except Exception as exc:  # noqa: BLE001 - any failure marks this run failed; the matrix goes on
        error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    clock.lap("teardown")
    store.add_run(
        run_id=key.run_id,
        plane_label=key.plane.column,
        repetition=key.repetition,
        status="failed" if error else "ok",
        error=error,
        started=started,
        duration_s=time.time() - started,
        plane_stats={**stats, **clock.stats()},
        results=results,
        cpu_idle=idle.finish(),
        plane_series=series,
    )
    if error:  # after storing: whatever the message holds, the failed run is on disk
        say(f"{key.run_id}: FAILED: {error}")


class StageClock:
    """Wall time of each stage of a run, so the cost beyond traffic time is visible."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self.stages: dict[str, float] = {}

    def lap(self, stage: str) -> None:
        now = time.monotonic()
        self.stages[stage] = self.stages.get(stage, 0.0) + now - self._last
        self._last = now

    def stats(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {f"run_{k}_s": v for k, v in self.stages.items()}
        if "traffic" in self.stages:
            out["run_overhead_s"] = sum(self.stages.values()) - self.stages["traffic"]
        return out


def _execute(key: RunKey, plan: RunPlan, results_dir: Path, say: Progress,
             clock: StageClock,
             ) -> tuple[list[FlowResult], dict[str, float | None], list[SeriesPoint]]:
    """One run: its flows' results, the plane's statistics and time series; its pcaps and
    video frames go to <results>/{pcap,frames}/<run_id>/."""
    topo = plan.topo
    plane = planes.create(key.plane.kind, dict(key.plane.options))
    say(f"{key.run_id}: building {topo.name}")
    with Network(topo, addressing=plane.addressing,
                 shared_switch_ns=plane.shared_switch_ns) as net:
        clock.lap("network_up")
        say(f"{key.run_id}: network up ({net.prefix}), starting {key.plane.kind}")
        try:
            plane.start(net)
            plane.wait_ready(READY_TIMEOUT_S)
            clock.lap("plane_ready")
            results: list[FlowResult] = []
            switch_namespaces = {net.switch_ns(s) for s in topo.switches()}
            points = _capture_points(net, plan.captures, results_dir / "pcap" / key.run_id)
            with ResourceSampler(switch_namespaces) as resources, \
                    Captures(net, points) as pcap, \
                    video.keep_frames(results_dir / "frames" / key.run_id):
                traffic_began = time.monotonic()  # t = 0 of the plane's time series
                for number, flows in enumerate(plan.phases, start=1):
                    say(f"{key.run_id}: traffic phase {number}/{len(plan.phases)} "
                        f"({len(flows)} flows)")
                    results.extend(run_flows(net, flows))
            for problem in pcap.problems:
                say(f"{key.run_id}: WARNING: {problem}")
            clock.lap("traffic")
            stats = {**plane.stats(), **resources.stats()}
            series = plane.series(traffic_began)  # the run directory goes with the network
            clock.lap("collect_stats")
            return results, stats, series
        finally:
            plane.stop()
