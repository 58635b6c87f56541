"""Study 003's performance part, measured: echo latency, CPU and memory against the offered
load of 64 B frames, P4 and XDP side by side, and lines of code; stored as ``curves.json``
(every repetition's raw values) for the report to draw from (dplab.study003.curve_report).

For each offered rate (kpps of 64 B frames, `pps` workload: dplab-pktblast from h1):

- echo latency (study 4.2.1, Fig. 5): an echo server on one switch between h1 and h2
  answers ICMP echo requests itself (p4src/study003/echo.p4 on our switch; XDP_TX in
  xdp/study003/echo.bpf.c); h1 pings h2 every 10 ms while a load of echo requests at the rate
  runs: RTT min/p50/p99/max of the pings, and how many load requests were answered.
  Reference: the Linux bridge, where h2's kernel answers the same requests.
- CPU (4.2.3, Fig. 7) and memory (4.2.2, Fig. 6): two routers in a line forward UDP frames
  h1 -> h2 at the rate: p4src/study003/l3_forward.p4, and XDP from its static LPM map (mode
  l3) and through bpf_fib_lookup (mode l3-fib). CPU of the two dplab-switch processes
  (utime + stime, % of one core, both summed; XDP has no process), the time the kernel
  spent in the XDP switches' programs (its BPF run-time statistics, % of one core: the
  programs alone, not the redirect and transmit they ask for), and each core's user,
  system and softirq (/proc/stat, % of that core; everything else on the machine included),
  frames forwarded per second (counted at h2). Memory per switch: the P4 switch's RSS
  against the kernel's own accounting of the switch's BPF programs and maps (their memlock,
  dplab.xdp.libbpf). Reference: the kernel router plane. Rate 0 is the idle baseline.
- lines of code (Fig. 10) of each use case's program in both technologies (non-blank,
  non-comment; the lab's own headers a C program includes counted beside it).

A point that fails (the plane does not come up, a sender dies) is stored with its error and
left out of every figure, never counted as zero. A repetition whose sender offered less
than the set rate by more than HOST_LIMIT_MARGIN is stored with ``host_limited: true``: the
sender shares the machine's cores with the switches, so there the host, not the plane,
set the load (``host_limited()``).
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dplab import planes
from dplab.measure.resources import ProcReader, Snapshot
from dplab.planes.base import Plane, PlaneError
from dplab.planes.xdp import XdpPlane
from dplab.study.catalog import repository_root
from dplab.substrate import Network
from dplab.substrate.registry import SubstrateError
from dplab.topology import catalog
from dplab.workloads.flows import Flow, run_flows
from dplab.workloads.pps import PpsFlows
from dplab.xdp.libbpf import run_time_stats

CURVES_FILE = "curves.json"
SIZE = 64
PING_INTERVAL_S = 0.01
SWITCH_COMM = "dplab-switch"
TICKS = os.sysconf("SC_CLK_TCK")
# Unshaped links, as the study's veths: a TBF would cap every technology at the link's rate
# (the catalog's 100 Mbit/s edges carry about 195 kpps of 64 B frames) and would send the
# XDP routers' frames through the tc qdisc path (xdp/qdisc.h) instead of an XDP redirect.
UNSHAPED = {"edge_bw": None, "core_bw": None}
LINE = {"switches": 2, "hosts_per_switch": 1, **UNSHAPED}
PAIR = {"hosts": 2, **UNSHAPED}
ROOT = repository_root()
P4 = ROOT / "p4src" / "study003"
XDP = ROOT / "xdp"
# What a point may fail with and stay a failed point (a plane that does not come up, a tool
# that fails, a host that resolves no next hop); anything else is a bug and is raised.
POINT_ERRORS = (PlaneError, SubstrateError, OSError, RuntimeError, ValueError,
                subprocess.SubprocessError)
# How far below the set rate the sender's offered rate may fall before the point counts as
# limited by the host rather than the plane: pktblast paces to within a few per cent when
# it has a core to itself.
HOST_LIMIT_MARGIN = 0.10


@dataclass(frozen=True)
class Setup:
    label: str
    kind: str  # the plane
    topology: str
    params: dict
    options: dict = field(default_factory=dict)


ECHO = (
    Setup("p4 echo.p4", "p4", "single", PAIR, {"program": str(P4 / "echo.p4"),
                                               "entries": str(P4 / "echo_entries.yaml")}),
    Setup("xdp echo.bpf.c", "xdp", "single", PAIR, {
        "program": str(XDP / "study003" / "echo.bpf.c"),
        "maps": str(XDP / "study003" / "echo_maps.yaml")}),
    Setup("kernel (bridge; h2 answers)", "bridge", "single", PAIR),
)
FORWARD = (
    Setup("p4 l3_forward.p4", "p4", "linear", LINE, {
        "program": str(P4 / "l3_forward.p4"),
        "entries": str(P4 / "l3_forward_entries.yaml")}),
    Setup("xdp l3 (static LPM map)", "xdp", "linear", LINE, {"mode": "l3"}),
    Setup("xdp l3-fib (bpf_fib_lookup)", "xdp", "linear", LINE, {"mode": "l3-fib"}),
    Setup("kernel router", "router", "linear", LINE),
)


@contextmanager
def plane_network(setup: Setup) -> Iterator[tuple[Network, ProcReader, Plane]]:
    """The setup's plane up and ready; a reader of its switch namespaces' processes. An XDP
    setup runs with the kernel's BPF run-time statistics on (only then: they time every BPF
    program on the machine)."""
    plane = planes.create(setup.kind, setup.options)
    topo = catalog.build(setup.topology, **setup.params)
    stats = run_time_stats() if isinstance(plane, XdpPlane) else nullcontext()
    with stats, Network(topo, addressing=plane.addressing) as net:
        plane.start(net)
        try:
            plane.wait_ready(timeout=60)
            switch_ns = {net.switch_ns(s) for s in topo.switches()}
            yield net, ProcReader(switch_ns), plane
        finally:
            plane.stop()


def host_limited(kpps: float, offered_kpps: float | None) -> bool | None:
    """Whether the sender offered less than ``kpps`` (the set rate) by more than
    HOST_LIMIT_MARGIN: the host could not load the plane as asked. None when there is
    nothing to tell: the idle point (no load asked) or no offered rate measured."""
    if not kpps or offered_kpps is None:
        return None
    return offered_kpps < kpps * (1 - HOST_LIMIT_MARGIN)


def load_flow(kpps: float, seconds: float, protocol: str) -> Flow:
    params = {"size": SIZE, "pps": kpps * 1000, "duration": seconds, "protocol": protocol}
    return Flow(f"load-{protocol}", "pps", "h1", "h2", params)


def echo_point(net: Network, reader: ProcReader, plane: Plane, kpps: float,
               seconds: float) -> dict:
    count = round(seconds / PING_INTERVAL_S)
    ping = Flow("ping", "icmp", "h1", "h2", {"count": count, "interval": PING_INTERVAL_S})
    flows = [ping, load_flow(kpps, seconds, "icmp")] if kpps else [ping]
    results = run_flows(net, flows)
    ping_summary = results[0].summary
    row = {**{key: ping_summary[key] for key in ("rtt_min_ms", "rtt_p50_ms", "rtt_p99_ms",
                                                 "rtt_max_ms")},
           "ping_loss_pct": ping_summary["loss_pct"],
           "memory_kib": memory_kib(plane, reader.snapshot())}
    if kpps:
        load = results[1].summary
        offered = _kilo(load["offered_pps"])
        row.update(offered_kpps=offered, host_limited=host_limited(kpps, offered),
                   answered_pct=_share(load["replies_received"], load["frames_offered"]))
    return row


def forward_point(net: Network, reader: ProcReader, plane: Plane, kpps: float,
                  seconds: float) -> dict:
    """CPU over the sender's lifetime: snapshots right before it starts and after it ends."""
    if not kpps:
        before, cores, programs = reader.snapshot(), core_ticks(), _run_time(plane)
        time.sleep(seconds)  # the idle baseline: nothing to wait for but the time itself
        return usage(plane, before, reader.snapshot(), cores, programs)
    flows = PpsFlows(net, [load_flow(kpps, seconds, "udp")])
    with tempfile.TemporaryDirectory(prefix="dplab-curves-") as tmp:
        try:
            flows.listen(Path(tmp))
            before, cores, programs = reader.snapshot(), core_ticks(), _run_time(plane)
            flows.send()
            flows.wait_senders()
            after = reader.snapshot()
            measured = usage(plane, before, after, cores, programs)
            flows.stop_counting()
        finally:
            flows.kill()
        [load] = flows.results()
    s = load.summary
    forwarded = None if s["frames_received"] is None else s["frames_received"] / s["send_s"]
    offered = _kilo(s["offered_pps"])
    return {**measured, "offered_kpps": offered, "host_limited": host_limited(kpps, offered),
            "forwarded_kpps": _kilo(forwarded)}


def usage(plane: Plane, before: Snapshot, after: Snapshot,
          cores_before: dict[str, dict[str, int]], programs_before: int | None) -> dict:
    """``switch_cpu_pct``: the switch processes' CPU (P4); ``program_cpu_pct``: the time
    the kernel spent in the XDP switches' programs (bpf_stats), both in % of one core, both
    switches summed; None where the plane has no such thing."""
    elapsed_ticks = (after.time_s - before.time_s) * TICKS
    switches = [pid for pid in after.procs if pid in before.procs and _comm(pid) == SWITCH_COMM]
    busy = sum(after.procs[p].utime + after.procs[p].stime
               - before.procs[p].utime - before.procs[p].stime for p in switches)
    programs_after = _run_time(plane)
    program_ns = (None if programs_before is None or programs_after is None
                  else programs_after - programs_before)
    elapsed_ns = (after.time_s - before.time_s) * 1e9
    return {"switch_cpu_pct": 100.0 * busy / elapsed_ticks if switches else None,
            "program_cpu_pct": None if program_ns is None else 100.0 * program_ns / elapsed_ns,
            **core_usage(cores_before, core_ticks()),
            "memory_kib": memory_kib(plane, after)}


def _run_time(plane: Plane) -> int | None:
    return plane.run_time_ns() if isinstance(plane, XdpPlane) else None


CORE_FIELDS = {"user": 1, "system": 3, "softirq": 7}  # columns of a /proc/stat cpuN line


def core_ticks() -> dict[str, dict[str, int]]:
    """Each core's ticks (``cpu0`` -> all fields by name) from /proc/stat."""
    cores = {}
    for line in Path("/proc/stat").read_text().splitlines():
        parts = line.split()
        if parts and re.fullmatch(r"cpu\d+", parts[0]):
            ticks = [int(v) for v in parts[1:]]
            cores[parts[0]] = {**{n: ticks[i - 1] for n, i in CORE_FIELDS.items()},
                               "total": sum(ticks[:8])}
    return cores


def core_usage(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict:
    """``cpuN_user`` / ``cpuN_system`` / ``cpuN_softirq``: % of that core's time."""
    out = {}
    for core, now in after.items():
        total = now["total"] - before[core]["total"]
        for name in CORE_FIELDS:
            out[f"{core}_{name}"] = (100.0 * (now[name] - before[core][name]) / total
                                     if total else None)
    return out


def memory_kib(plane: Plane, snapshot: Snapshot) -> float | None:
    """Per switch (the largest): the P4 switch process's RSS, or what the kernel accounts to
    the XDP switch's programs and maps; None for a kernel plane (nothing of its own)."""
    if isinstance(plane, XdpPlane):
        used = [sum(parts.values()) for parts in plane.memory().values()]
        return max(used) / 1024 if used else None
    rss = [p.rss_kib for pid, p in snapshot.procs.items()
           if p.rss_kib is not None and _comm(pid) == SWITCH_COMM]
    return float(max(rss)) if rss else None


def _comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _kilo(value: float | None) -> float | None:
    return None if value is None else value / 1000


def _share(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else 100.0 * part / whole


Point = Callable[[Network, ProcReader, Plane, float, float], dict]
# setup label -> {"kind": plane kind, "error": why it never came up (or None),
#                 "points": [{"kpps": set rate, "runs": [raw values or {"error": ...}]}]}
Curve = dict[str, dict[str, Any]]


def curve(setups: tuple[Setup, ...], point: Point, rates: list[float], seconds: float,
          repetitions: int, progress: Callable[[str], None] = lambda _m: None) -> Curve:
    """Every repetition's raw values per setup and rate (the rates run in turn within each
    repetition, so slow drifts of the machine's load spread over every rate)."""
    out: Curve = {}
    for setup in setups:
        runs: dict[float, list[dict]] = {kpps: [] for kpps in rates}
        error = None
        try:
            with plane_network(setup) as (net, reader, plane):
                for repetition in range(repetitions):
                    for kpps in rates:
                        progress(f"{setup.label}: {kpps:g} kpps, repetition {repetition + 1}")
                        runs[kpps].append(_attempt(point, net, reader, plane, kpps, seconds))
        except POINT_ERRORS as exc:
            error = f"{type(exc).__name__}: {exc}"
        out[setup.label] = {"kind": setup.kind, "error": error,
                            "points": [{"kpps": kpps, "runs": runs[kpps]} for kpps in rates]}
    return out


def _attempt(point: Point, net: Network, reader: ProcReader, plane: Plane, kpps: float,
             seconds: float) -> dict:
    try:
        return point(net, reader, plane, kpps, seconds)
    except POINT_ERRORS as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def code_lines(path: Path) -> int:
    """Lines with code once comments (// and /* */) are removed; blank lines do not count."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), path.read_text(),
                  flags=re.DOTALL)
    return sum(1 for line in text.splitlines() if line.split("//", 1)[0].strip())


# use case -> (P4 program in p4src/study003, XDP program in xdp/); None: no such program
LOC_CASES = {
    "I drop": ("drop.p4", "study003/drop.bpf.c"),
    "II pass": (None, "study003/pass.bpf.c"),
    "III echo server": ("echo.p4", "study003/echo.bpf.c"),
    "IV L3 forwarding (static table)": ("l3_forward.p4", "l3_router.bpf.c"),
    "IV L3 forwarding (FIB lookup)": (None, "l3_fib.bpf.c"),
    "V broadcast": ("broadcast.p4", "study003/broadcast.bpf.c"),
    "V broadcast (XDP + tc clone)": (None, "study003/broadcast_tc.bpf.c"),
    # On a wireless access point: the same P4 program (its shared_medium table), XDP_TX.
    "V broadcast, wireless": ("broadcast.p4", "study003/broadcast_wireless.bpf.c"),
}


def lab_headers(path: Path, seen: frozenset[Path] = frozenset()) -> set[Path]:
    """The lab's headers ``path`` includes (``#include "..."``), and theirs."""
    found: set[Path] = set()
    for name in re.findall(r'^#include "([^"]+)"', path.read_text(), flags=re.MULTILINE):
        header = next(p for p in (path.parent / name, XDP / name) if p.is_file())
        if header not in seen and header not in found:
            found |= {header} | lab_headers(header, seen | found | {header})
    return found


def loc_rows() -> list[dict[str, Any]]:
    """Per use case: each technology's program and its lines of code (None: no program);
    for C also the lines of the lab headers it includes."""
    rows = []
    for case, (p4, xdp) in LOC_CASES.items():
        source = XDP / xdp
        rows.append({"case": case, "p4_program": p4,
                     "p4_lines": code_lines(P4 / p4) if p4 else None,
                     "xdp_program": xdp, "xdp_lines": code_lines(source),
                     "xdp_header_lines": sum(code_lines(h) for h in lab_headers(source))})
    return rows


def measure(rates: list[float], seconds: float, repetitions: int,
            progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """The whole performance part as curves.json stores it."""
    started = time.time()
    echo = curve(ECHO, echo_point, rates, seconds, repetitions, progress)
    forward = curve(FORWARD, forward_point, rates, seconds, repetitions, progress)
    return {"settings": {"rates_kpps": rates, "seconds": seconds, "repetitions": repetitions,
                         "frame_bytes": SIZE},
            "machine": {"host": platform.node(), "kernel": platform.release(),
                        "cores": os.cpu_count(), "started": started, "ended": time.time(),
                        "load_1min_end": os.getloadavg()[0]},
            "echo": echo, "forward": forward, "loc": loc_rows()}


def stored_or_measured(folder: Path, rates: list[float], seconds: float, repetitions: int,
                       progress: Callable[[str], None] = lambda _m: None
                       ) -> tuple[dict[str, Any], bool]:
    """The curves stored in ``folder`` when they were measured with these settings (a
    resumed study run measures them once), else measured now and stored; read back from
    the file either way, so the report draws what is stored. And whether they were
    measured now."""
    stored = load(folder)
    settings = {"rates_kpps": rates, "seconds": seconds, "repetitions": repetitions}
    if stored is not None and all(stored["settings"].get(k) == v for k, v in settings.items()):
        return stored, False
    write(measure(rates, seconds, repetitions, progress), folder)
    return json.loads((folder / CURVES_FILE).read_text(encoding="utf-8")), True


def write(data: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CURVES_FILE
    # Keys in the measured order: the set-ups' order is the tables' and the figures'.
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def load(folder: Path) -> dict[str, Any] | None:
    """The stored curves, or None when none were measured there."""
    path = folder / CURVES_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
