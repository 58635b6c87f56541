"""Runs an experiment's plan (plan.build_plan): one isolated emulated network per run."""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from dplab import cleanup, planes
from dplab.executor import MeasuredRun, Progress, local
from dplab.fidelity import FidelityMonitor, FidelityRecord
from dplab.fidelity.controller import controller_load
from dplab.measure.resources import ResourceSampler
from dplab.plan import ExperimentError, ExperimentPlan, RunKey, RunPlan, build_plan
from dplab.planes import liveness
from dplab.planes.base import SeriesPoint
from dplab.spec.model import Experiment
from dplab.store.runstore import RunStore
from dplab.substrate import cpu_idle, linkem, wmedium
from dplab.substrate.network import Network
from dplab.workloads import video
from dplab.workloads.capture import CapturePoint, Captures
from dplab.workloads.flows import FlowResult, run_flows

READY_TIMEOUT_S = 60.0


def _capture_points(net: Network, interfaces: list[tuple[str, str]],
                    out_dir: Path) -> list[CapturePoint]:
    """Where to capture; a switch the plane's network does not have (the direct and loopback
    baselines have none) has nothing to capture."""
    hosts = set(net.topo.hosts())
    return [
        CapturePoint(net.host_ns(node) if node in hosts else net.switch_ns(node), ifname,
                     out_dir / f"{node}-{ifname}.pcap")
        for node, ifname in interfaces if node in net.topo.graph
    ]


def run_matrix(exp: Experiment, results_dir: Path, progress: Progress | None = None,
               source: str = "<experiment>") -> RunStore:
    """Plan ``exp`` (``plan.build_plan``, as ``dplab validate`` does) and run the plan."""
    return run_plan(build_plan(exp, source), results_dir, progress)


def run_plan(plan: ExperimentPlan, results_dir: Path, progress: Progress | None = None,
             ray_address: str | None = None) -> RunStore:
    """Every run of the plan not already stored, in the plan's order: here, or on the Ray
    cluster at ``ray_address`` (or the experiment's ``executor: ray``, ``ray_address``)."""
    say = progress or (lambda _msg: None)
    if ray_address is not None or plan.experiment.executor == "ray":
        # imported only here: ray is a large package that local runs never need
        from dplab.executor import ray as ray_executor

        store, pending = _open_store(plan, results_dir, say)
        ray_executor.run(plan, pending, measure_run, store, say,
                         ray_address or plan.experiment.ray_address)
        return store
    try:  # held from before the first network to after the last teardown
        with cpu_idle.idle_behaviour(plan.experiment.cpu_idle):
            store, pending = _open_store(plan, results_dir, say)
            cleanup.reclaim()
            local.run(plan, pending, measure_run, store, say)
            return store
    except cpu_idle.CpuIdleError as exc:  # raised only on taking the request: nothing ran
        raise ExperimentError(f"{exc}; nothing was run") from None


def _open_store(plan: ExperimentPlan, results_dir: Path,
                say: Progress) -> tuple[RunStore, list[RunKey]]:
    """The results folder (made, or resumed if it holds this experiment) and the runs of
    the plan it does not hold yet, in the plan's order."""
    store = RunStore(results_dir)
    store.write_experiment(stored_spec(plan.experiment))
    done = store.completed_runs()
    for key in plan.runs:
        if key.run_id in done:
            say(f"{key.run_id}: already stored, skipped")
    return store, [key for key in plan.runs if key.run_id not in done]


def stored_spec(exp: Experiment) -> dict:
    """The spec as experiment.json keeps it. Fields added with axes are left out while
    unused, so a results folder made before them still resumes (its spec compares equal);
    where the runs execute is left out always: a folder begun locally resumes on Ray."""
    spec = exp.model_dump(mode="json")
    for where in ("executor", "ray_address"):
        del spec[where]
    if not spec["axes"]:
        del spec["axes"]
    if spec["phases"] is None:
        del spec["phases"]
    if not spec["cold"]:
        del spec["cold"]
    for workload in spec["workloads"]:
        for unused in ("label", "cold"):
            if workload[unused] is None:
                del workload[unused]
    return spec


def measure_run(key: RunKey, plan: RunPlan, results_dir: Path, say: Progress) -> MeasuredRun:
    """One run measured, never raising: a failure is the returned run's ``error``. Its
    pcaps, frames and logs go under ``results_dir``; nothing is stored (the executor's
    driver stores the returned run)."""
    started = time.time()
    idle = cpu_idle.IdleWatch(plan.cpu_idle)
    clock = StageClock()
    results: list[FlowResult] = []
    stats: dict[str, float | None] = {}
    series: list[SeriesPoint] = []
    fidelity: FidelityRecord | None = None
    error: str | None = None
    try:
        stats, series, fidelity = _execute(key, plan, results_dir, say, clock, results)
        failed = [r for r in results if not r.ok]
        if failed and len(failed) == len(results):
            error = f"every flow failed, first: {failed[0].flow.flow_id}: {failed[0].error}"
    except liveness.RunFailed as exc:  # the flows measured before stay in ``results``
        error = str(exc)
        if not exc.expected:
            traceback.print_exception(exc.__cause__)
    except Exception as exc:  # noqa: BLE001 - any failure marks this run failed; the matrix goes on
        error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    clock.lap("teardown")
    return MeasuredRun(
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
        plane_info=_plane_info(key),
        axes=list(key.point.values),
        fidelity=fidelity,
    )


def _plane_info(key: RunKey) -> dict[str, str]:
    """How the run's plane forwards (its configuration, known without starting it); empty
    when its options are bad (the run's error says why)."""
    try:
        return planes.create(key.plane.kind, dict(key.plane.options)).info()
    except planes.PlaneError:
        return {}


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
             clock: StageClock, results: list[FlowResult],
             ) -> tuple[dict[str, float | None], list[SeriesPoint], FidelityRecord]:
    """One run: the plane's statistics and time series, whether the host limited it; its
    flows' results go to ``results`` phase by phase (a failed run keeps those measured
    before), its pcaps and video frames to <results>/{pcap,frames}/<run_id>/. A failure
    inside the network is raised as a liveness.RunFailed, the plane's logs kept in
    <results>/logs/<run_id>/."""
    topo = plan.topo
    plane = planes.create(key.plane.kind, dict(key.plane.options))
    plane.avoid_pairs = frozenset(frozenset((f.src, f.dst)) for phase in plan.phases
                                  for f in phase if f.cold)
    say(f"{key.run_id}: building {topo.name}")
    with plane.network(topo) as net:
        clock.lap("network_up")
        say(f"{key.run_id}: network up ({net.prefix}), starting {key.plane.kind}")
        try:
            plane.start(net)
            plane.wait_ready(READY_TIMEOUT_S)
            clock.lap("plane_ready")
            switch_namespaces = {net.switch_ns(s) for s in net.topo.switches()}
            points = _capture_points(net, plan.captures, results_dir / "pcap" / key.run_id)
            with ResourceSampler(switch_namespaces) as resources, \
                    FidelityMonitor(net, plane) as fidelity, \
                    Captures(net, points) as pcap, \
                    video.keep_frames(results_dir / "frames" / key.run_id):
                traffic_began = time.monotonic()  # t = 0 of the plane's time series
                for number, flows in enumerate(plan.phases, start=1):
                    say(f"{key.run_id}: traffic phase {number}/{len(plan.phases)} "
                        f"({len(flows)} flows)")
                    measured = run_flows(net, flows)
                    results.extend(measured)  # kept, whatever the plane says next
                    liveness.check_daemons(plane, results, len(flows), f"during traffic "
                                           f"phase {number}/{len(plan.phases)}")
                    paths = plane.flow_paths(flows)  # before idle rules expire
                    for result in measured:
                        result.path = paths.get(result.flow.flow_id)
            for problem in pcap.problems:
                say(f"{key.run_id}: WARNING: {problem}")
            clock.lap("traffic")
            stats = {**plane.stats(), **resources.stats()}
            # the plane's (its run directory goes with the network) and every link's counters
            series = plane.series(traffic_began) + fidelity.series(traffic_began)
            stats.update(controller_load(series))
            clock.lap("collect_stats")
            record = fidelity.record(results)
        except Exception as exc:
            plane.stop()  # first: the daemons' last words go to their logs
            raise liveness.failed_run(exc, net.run_dir, results_dir / "logs" / key.run_id) \
                from exc
        finally:
            plane.stop()
    # The link emulators and the wireless media give their counters when the network
    # stops them.
    stats.update(linkem.flat_stats(net.emulator_reports))
    stats.update(wmedium.flat_stats(net.medium_reports))
    return stats, series, record
