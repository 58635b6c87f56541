"""The plan of an experiment: every run it will make, built and checked before any runs.

``build_plan`` is the one function that turns an Experiment into runs; ``dplab validate``
prints its result and ``dplab run`` executes it, so what validation accepts is exactly what
runs. Building it expands the axes, builds each point's topology and flows, and creates
every plane object once (a plane checks its options when made), so a misspelled option, a
bad mode or a missing program file stops the experiment here, naming the field, instead of
failing every run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dplab import planes
from dplab.planes.base import PlaneError
from dplab.spec import Experiment, PlaneSpec, Point, expand
from dplab.spec.model import Workload
from dplab.substrate.network import Network
from dplab.substrate.registry import SubstrateError
from dplab.topology import catalog, from_mininet, from_topohub, importers
from dplab.topology.model import Topology
from dplab.workloads import trace
from dplab.workloads.capture import requested_interfaces
from dplab.workloads.flows import Flow

# Estimated cost of one run beyond its traffic (network up, plane ready, stats, teardown),
# per plane kind, in seconds: docs/benchmarks.md "Overhead of one run" measured about 0.5 s
# (bridge, router) and 1.7 s (ovs, p4) on a quiet machine; these are rounded up for a
# loaded one. An estimate for planning, never a measurement.
RUN_OVERHEAD_S = {"bridge": 1.0, "router": 1.0, "ovs": 3.0, "p4": 3.0, "direct": 0.5,
                  "loopback": 0.5}
OTHER_PLANE_OVERHEAD_S = 3.0  # a plane kind not measured there: as the controlled ones
# Per traffic phase: starting servers, waiting for them to listen, collecting reports.
PHASE_OVERHEAD_S = 1.0


class ExperimentError(ValueError):
    """The experiment cannot run as written (e.g. host pairs the topology does not have)."""


@dataclass(frozen=True)
class RunKey:
    """One run of the matrix: a plane (with its point's options) at a point, once."""

    plane: PlaneSpec
    repetition: int
    point: Point = Point()

    @property
    def run_id(self) -> str:
        """bridge-r1 without axes (as stores made before axes have it), else
        bridge-count=2-r1."""
        middle = f"-{self.point.slug}" if self.point.values else ""
        return f"{self.plane.column}{middle}-r{self.repetition}"


@dataclass(frozen=True)
class RunPlan:
    """What every run at one point does: its topology, traffic phases, captures."""

    topo: Topology
    phases: list[list[Flow]]
    captures: list[tuple[str, str]]  # (node, interface)
    cpu_idle: str  # the experiment's setting, recorded with every run


@dataclass(frozen=True)
class PointPlan:
    """One point of the axes: its experiment (axis values applied), runs' plan and planes."""

    point: Point
    experiment: Experiment
    run: RunPlan
    planes: list[PlaneSpec]  # with the point's plane options; each made once to check it


@dataclass(frozen=True)
class ExperimentPlan:
    experiment: Experiment
    points: list[PointPlan]
    runs: list[RunKey]  # in the order they run

    def point_plan(self, point: Point) -> PointPlan:
        return next(p for p in self.points if p.point == point)

    def estimate_s(self) -> float:
        """Traffic time plus the per-run and per-phase overhead estimates."""
        per_point = {p.point: traffic_estimate_s(p.experiment) for p in self.points}
        phases = {p.point: len(p.run.phases) for p in self.points}
        return sum(per_point[k.point] + phases[k.point] * PHASE_OVERHEAD_S
                   + RUN_OVERHEAD_S.get(k.plane.kind, OTHER_PLANE_OVERHEAD_S) for k in self.runs)

    def summary(self) -> list[str]:
        """What `dplab validate` prints and `dplab run` prints before running."""
        exp = self.experiment
        axes = " × ".join(f"{name} ({len(axis.values)})" for name, axis in exp.axes.items())
        lines = [f"{len(self.runs)} runs = {len(self.points)} axis point(s)"
                 f"{f' [{axes}]' if axes else ''} × {len(exp.planes)} planes × "
                 f"{exp.repetitions} repetitions; estimated wall time "
                 f"{_duration(self.estimate_s())} (traffic + per-run overhead estimate)"]
        for p in self.points:
            head = f"{p.point.label}: " if p.point.values else ""
            lines.append(f"{head}topology {p.run.topo.name}, planes "
                         + ", ".join(s.column for s in p.planes))
            for number, flows in enumerate(p.run.phases, start=1):
                lines.append(f"  phase {number}: " + ", ".join(
                    f"{f.kind} {f.src}→{f.dst}" for f in flows))
        return lines


def build_plan(exp: Experiment, source: str = "<experiment>") -> ExperimentPlan:
    """Every run of ``exp``, checked; ExperimentError/SpecError name the file and field."""
    points = [_point_plan(point, point_exp, source) for point, point_exp in expand(exp, source)]
    return ExperimentPlan(exp, points, order_runs(points, exp.repetitions))


def order_runs(points: list[PointPlan], repetitions: int) -> list[RunKey]:
    """Within a repetition every (point, plane) once, planes interleaved at each point; odd
    repetitions go forwards, even ones backwards (A B C, C B A, ...), so a slow drift of a
    shared machine falls on every point and plane alike instead of on the last ones."""
    cells = [(p.point, plane) for p in points for plane in p.planes]
    runs = []
    for repetition in range(1, repetitions + 1):
        ordered = cells if repetition % 2 else cells[::-1]
        runs += [RunKey(plane, repetition, point) for point, plane in ordered]
    return runs


def _point_plan(point: Point, exp: Experiment, source: str) -> PointPlan:
    at = f" (at axis point {point.label})" if point.values else ""
    try:
        topo = build_topology(exp)
        run = RunPlan(topo, plan_flows(exp, topo), _plan_captures(exp, topo), exp.cpu_idle)
        _refuse_unsupported_links(topo)
    except ExperimentError as exc:
        raise ExperimentError(f"{source}: {exc}{at}") from None
    for index, spec in enumerate(exp.planes):
        check_plane(index, spec, f"{source}: ", at, topo)
    return PointPlan(point, exp, run, list(exp.planes))


def check_plane(index: int, spec: PlaneSpec, prefix: str = "", suffix: str = "",
                topo: Topology | None = None) -> None:
    """Make the plane once: its constructor checks its options and files; with ``topo``,
    whether it can run on that topology (the baselines need exactly two hosts)."""
    try:
        plane = planes.create(spec.kind, dict(spec.options))
        if topo is not None:
            plane.network(topo)
    except PlaneError as exc:
        option = re.search(r"option '(\w+)'", str(exc))
        field = f".options.{option.group(1)}" if option else ""
        raise ExperimentError(f"{prefix}planes.{index}{field}: {exc}{suffix}") from None


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
    """The flows of each phase: the experiment's phases, else by tier (1: one workload per
    phase, 2: all in one)."""
    flows = [_workload_flows(index, w, topo, exp.cold) for index, w in enumerate(exp.workloads)]
    if exp.phases is not None:
        return [[f for ref in phase for f in flows[exp.workload_index(ref, "phases")]]
                for phase in exp.phases]
    return flows if exp.tier == 1 else [[f for phase in flows for f in phase]]


def traffic_estimate_s(exp: Experiment) -> float:
    """Seconds of traffic of one run: per phase its longest workload."""
    durations = [_workload_s(w) for w in exp.workloads]
    if exp.phases is not None:
        groups = [[exp.workload_index(ref, "phases") for ref in phase] for phase in exp.phases]
    elif exp.tier == 1:
        groups = [[i] for i in range(len(durations))]
    else:
        groups = [list(range(len(durations)))]
    return sum(max(durations[i] for i in group) for group in groups)


def _workload_s(w: Workload) -> float:
    """How long a workload sends; 0 when only the data decides (bytes without a rate)."""
    if w.kind == "icmp":
        return w.count * w.interval
    if getattr(w, "duration", None) is not None:
        return w.duration
    if w.kind == "pps":
        return w.count / w.pps
    if w.kind == "trace":  # checked when its flows were planned
        return trace.validate({"file": w.file}, "trace").length_s
    rate = getattr(w, "rate_mbit", None)
    return w.bytes * 8 / (rate * 1e6) if rate else 0.0


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


def _workload_flows(index: int, workload: Workload, topo: Topology,
                    cold: bool) -> list[Flow]:
    pairs = _resolve_pairs(index, workload.pairs, topo)
    params = workload.model_dump(exclude={"kind", "pairs", "label", "cold"}, exclude_none=True)
    if workload.kind == "trace":  # a trace that cannot be replayed fails here, not each run
        try:
            trace.validate(params, f"workloads.{index}.file")
        except ValueError as exc:
            raise ExperimentError(str(exc)) from None
    cold = cold if workload.cold is None else workload.cold
    return [
        Flow(f"w{index}-{workload.kind}-{src}-{dst}", workload.kind, src, dst, dict(params),
             cold)
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


def _plan_captures(exp: Experiment, topo: Topology) -> list[tuple[str, str]]:
    try:
        return requested_interfaces(topo, exp.capture)
    except ValueError as exc:
        raise ExperimentError(str(exc)) from None


def _refuse_unsupported_links(topo: Topology) -> None:
    """A result that silently lacked the asked-for delay or loss would be wrong: stop first."""
    try:
        Network(topo).check_supported()
    except SubstrateError as exc:
        raise ExperimentError(f"topology: {exc}") from None
