"""Study 003's performance curves, P4 and XDP side by side: echo latency, CPU and memory vs
offered load, and lines of code.

usage: python benchmarks/study003_curves.py [--rates 0,1,10,50,100,200] [--seconds 3]
       [--repetitions 1] [--write]

For each offered rate (kpps of 64 B frames, `pps` workload: dplab-pktblast from h1):

- echo latency (study 4.2.1, Fig. 5): an echo server on one switch between h1 and h2
  answers ICMP echo requests itself (p4src/study003/echo.p4 on our switch; XDP_TX in
  xdp/study003/echo.bpf.c); h1 pings h2 every 10 ms while a load of echo requests at the rate
  runs: RTT min/p50/p99/max of the pings, and how many load requests were answered.
  Reference: the Linux bridge, where h2's kernel answers the same requests.
- CPU (4.2.3, Fig. 7) and memory (4.2.2, Fig. 6): two routers in a line
  (scenarios/study003_l3.yaml's topology) forward UDP frames h1 -> h2 at the rate:
  p4src/study003/l3_forward.p4, and XDP from its static LPM map (mode l3) and through
  bpf_fib_lookup (mode l3-fib). CPU of the two dplab-switch processes (utime + stime, % of
  one core, both summed; XDP has no process), and each core's user, system and softirq
  (/proc/stat, % of that core; everything else on the machine included), frames forwarded
  per second (counted at h2). Memory per switch: the P4 switch's RSS against the kernel's
  own accounting of the switch's BPF programs and maps (their memlock, dplab.xdp.libbpf).
  Reference: the kernel router plane on the same topology. Rate 0 is the idle baseline.
- lines of code of each use case's program in both technologies (non-blank,
  non-comment; the lab's own headers a C program includes counted beside it).

Each point runs ``--repetitions`` times (mean ± 95 % CI from 2 on); `--write` replaces the
section of docs/studies/003-xdp.md. Run as root from the repository's root, with the lab built.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from doc_section import machine_line, write_section  # beside this script

from dplab import planes
from dplab.analysis.stats import Description, describe
from dplab.measure.resources import ProcReader, Snapshot
from dplab.planes.base import Plane
from dplab.planes.xdp import XdpPlane
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.workloads.flows import Flow, run_flows
from dplab.workloads.pps import PpsFlows

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "p4src" / "study003"
XDP = ROOT / "xdp"
DOC = ROOT / "docs" / "studies" / "003-xdp.md"
SIZE = 64
PING_INTERVAL_S = 0.01
SWITCH_COMM = "dplab-switch"
TICKS = os.sysconf("SC_CLK_TCK")
LINE = {"switches": 2, "hosts_per_switch": 1}
PAIR = {"hosts": 2}


@dataclass(frozen=True)
class Setup:
    label: str
    kind: str
    topology: str
    params: dict
    options: dict = field(default_factory=dict)


ECHO = (
    Setup("p4 echo.p4", "p4", "single", PAIR, {"program": str(STUDY / "echo.p4"),
                                               "entries": str(STUDY / "echo_entries.yaml")}),
    Setup("xdp echo.bpf.c", "xdp", "single", PAIR, {
        "program": str(XDP / "study003" / "echo.bpf.c"),
        "maps": str(XDP / "study003" / "echo_maps.yaml")}),
    Setup("kernel (bridge; h2 answers)", "bridge", "single", PAIR),
)
FORWARD = (
    Setup("p4 l3_forward.p4", "p4", "linear", LINE, {
        "program": str(STUDY / "l3_forward.p4"),
        "entries": str(STUDY / "l3_forward_entries.yaml")}),
    Setup("xdp l3 (static LPM map)", "xdp", "linear", LINE, {"mode": "l3"}),
    Setup("xdp l3-fib (bpf_fib_lookup)", "xdp", "linear", LINE, {"mode": "l3-fib"}),
    Setup("kernel router", "router", "linear", LINE),
)


@contextmanager
def plane_network(setup: Setup) -> Iterator[tuple[Network, ProcReader, Plane]]:
    """The setup's plane up and ready; a reader of its switch namespaces' processes."""
    plane = planes.create(setup.kind, setup.options)
    topo = catalog.build(setup.topology, **setup.params)
    with Network(topo, addressing=plane.addressing) as net:
        plane.start(net)
        try:
            plane.wait_ready(timeout=60)
            switch_ns = {net.switch_ns(s) for s in topo.switches()}
            yield net, ProcReader(switch_ns), plane
        finally:
            plane.stop()


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
        row.update(offered_kpps=_kilo(load["offered_pps"]),
                   answered_pct=_share(load["replies_received"], load["frames_offered"]))
    return row


def forward_point(net: Network, reader: ProcReader, plane: Plane, kpps: float,
                  seconds: float) -> dict:
    """CPU over the sender's lifetime: snapshots right before it starts and after it ends."""
    if not kpps:
        before, cores = reader.snapshot(), core_ticks()
        time.sleep(seconds)
        return usage(plane, before, reader.snapshot(), cores)
    flows = PpsFlows(net, [load_flow(kpps, seconds, "udp")])
    with tempfile.TemporaryDirectory(prefix="dplab-curves-") as tmp:
        try:
            flows.listen(Path(tmp))
            before, cores = reader.snapshot(), core_ticks()
            flows.send()
            flows.wait_senders()
            after = reader.snapshot()
            flows.stop_counting()
        finally:
            flows.kill()
        [load] = flows.results()
    s = load.summary
    forwarded = None if s["frames_received"] is None else s["frames_received"] / s["send_s"]
    return {**usage(plane, before, after, cores), "offered_kpps": _kilo(s["offered_pps"]),
            "forwarded_kpps": _kilo(forwarded)}


def usage(plane: Plane, before: Snapshot, after: Snapshot,
          cores_before: dict[str, dict[str, int]]) -> dict:
    elapsed_ticks = (after.time_s - before.time_s) * TICKS
    switches = [pid for pid in after.procs if pid in before.procs and _comm(pid) == SWITCH_COMM]
    busy = sum(after.procs[p].utime + after.procs[p].stime
               - before.procs[p].utime - before.procs[p].stime for p in switches)
    return {"switch_cpu_pct": 100.0 * busy / elapsed_ticks if switches else None,
            **core_usage(cores_before, core_ticks()),
            "memory_kib": memory_kib(plane, after)}


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


def code_lines(path: Path) -> int:
    """Lines with code once comments (// and /* */) are removed; blank lines do not count."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), path.read_text(),
                  flags=re.DOTALL)
    return sum(1 for line in text.splitlines() if line.split("//", 1)[0].strip())


Point = Callable[[Network, ProcReader, Plane, float, float], dict]


def curve(setups: tuple[Setup, ...], point: Point, rates: list[float], seconds: float,
          repetitions: int) -> dict[str, list[dict]]:
    """setup label -> one row per rate, each metric described over the repetitions (the
    rates run in turn within each repetition, so slow drifts of the machine's load spread
    over every rate)."""
    rows = {}
    for setup in setups:
        runs: dict[float, list[dict]] = {kpps: [] for kpps in rates}
        with plane_network(setup) as (net, reader, plane):
            for _ in range(repetitions):
                for kpps in rates:
                    runs[kpps].append(point(net, reader, plane, kpps, seconds))
        rows[setup.label] = [{"kpps": kpps, **described(runs[kpps])} for kpps in rates]
        print(f"  {setup.label}: done", file=sys.stderr)
    return rows


def described(points: list[dict]) -> dict[str, Description]:
    """Each metric over the repetitions that measured it (a None is left out, never 0)."""
    names = dict.fromkeys(name for point in points for name in point)
    return {name: describe([p[name] for p in points if p.get(name) is not None])
            for name in names}


MEMORY = ("memory_kib", "memory KiB per switch")
ECHO_COLUMNS = (("kpps", "set kpps"), ("offered_kpps", "offered kpps"),
                ("answered_pct", "load answered %"), ("rtt_min_ms", "RTT min ms"),
                ("rtt_p50_ms", "RTT p50 ms"), ("rtt_p99_ms", "RTT p99 ms"),
                ("rtt_max_ms", "RTT max ms"), ("ping_loss_pct", "ping loss %"), MEMORY)


def forward_columns() -> tuple[tuple[str, str], ...]:
    cores = [(f"{core}_{name}", f"{core} {abbreviation} %") for core in core_ticks()
             for name, abbreviation in (("user", "usr"), ("system", "sys"),
                                        ("softirq", "si"))]
    return (("kpps", "set kpps"), ("offered_kpps", "offered kpps"),
            ("forwarded_kpps", "forwarded kpps"),
            ("switch_cpu_pct", "switch process CPU % (2 switches)"), *cores, MEMORY)


def table(rows: dict[str, list[dict]], columns: tuple[tuple[str, str], ...]) -> str:
    lines = ["| plane | " + " | ".join(title for _, title in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for label, points in rows.items():
        for point in points:
            cells = [_cell(point.get(key)) for key, _ in columns]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: float | Description | None) -> str:
    """A number, or a mean with its 95 % CI half-width when repetitions give one; '-' when
    nothing was measured."""
    if isinstance(value, Description):
        if value.mean is None:
            return "-"
        text = _number(value.mean)
        return text if value.ci95 is None else f"{text} ± {_number(value.ci95)}"
    return "-" if value is None else _number(value)


def _number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


# use case -> (P4 program, XDP program); None: no program of that technology
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


def c_lines(path: Path) -> tuple[int, int]:
    """(the file's own lines of code, those of the lab headers it includes, directly or
    through another header, once each)."""
    return code_lines(path), sum(code_lines(header) for header in lab_headers(path))


def lab_headers(path: Path, seen: frozenset[Path] = frozenset()) -> set[Path]:
    """The lab's headers ``path`` includes (``#include "..."``), and theirs."""
    found: set[Path] = set()
    for name in re.findall(r'^#include "([^"]+)"', path.read_text(), flags=re.MULTILINE):
        header = next(p for p in (path.parent / name, XDP / name) if p.is_file())
        if header not in seen and header not in found:
            found |= {header} | lab_headers(header, seen | found | {header})
    return found


def loc_table() -> str:
    lines = ["| use case | P4 program | P4 lines | XDP program | XDP lines (+ lab headers) |",
             "|---|---|---|---|---|"]
    for case, (p4, xdp) in LOC_CASES.items():
        own, headers = c_lines(XDP / xdp)
        p4_cells = f"{p4} | {code_lines(STUDY / p4)}" if p4 else "- (no P4 program) | -"
        lines.append(f"| {case} | {p4_cells} | {xdp} | {own} (+{headers}) |")
    return "\n".join(lines)


def report(echo: dict, forward: dict, command: str) -> str:
    return "\n\n".join([
        "## Performance curves (benchmarks/study003_curves.py)",
        f"`{command}`. {machine_line()} Load: {os.getloadavg()[0]:.1f} (1 min) at the end. "
        "Cells: the mean over the repetitions ± its 95 % CI half-width (Student t); '-' = not "
        "measured (a kernel plane has no switch process nor "
        "memory of its own). Memory per switch: the P4 switch process's RSS, the XDP "
        "switch's BPF programs and maps as the kernel accounts them (memlock).",
        "Echo latency of 10 ms pings under a load of 64 B echo requests (the load's own "
        "replies counted at h1):", table(echo, ECHO_COLUMNS),
        "CPU and memory while forwarding 64 B UDP frames h1 -> h2 through two routers (CPU "
        "% over the sender's lifetime; per core the whole machine's, the sender and "
        "everything else included). The P4 switch CPU is not work alone: a switch spins "
        "through gaps between packets up to a limit instead of sleeping "
        "(switch/src/dataplane/arrivals.rs), so from about 10 kpps on it holds most of a "
        "core whatever the rate; dplab-pktblast also spins between frames on the sender's "
        "core. XDP runs in the receiving veth's NAPI poll: its work is softirq:",
        table(forward, forward_columns()),
        "Lines of code (non-blank, non-comment) of each use case's program:", loc_table(),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0,1,10,50,100,200", help="kpps, comma-separated")
    parser.add_argument("--seconds", type=float, default=3.0, help="load time per point")
    parser.add_argument("--repetitions", type=int, default=1,
                        help="runs per point (2 or more: mean ± 95 %% CI)")
    parser.add_argument("--write", action="store_true", help=f"update {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    rates = [float(rate) for rate in args.rates.split(",")]
    if any(rate < 0 for rate in rates) or args.seconds <= 0 or args.repetitions < 1:
        parser.error("rates must be >= 0 kpps, --seconds > 0 and --repetitions >= 1")
    echo = curve(ECHO, echo_point, rates, args.seconds, args.repetitions)
    forward = curve(FORWARD, forward_point, rates, args.seconds, args.repetitions)
    command = "python benchmarks/study003_curves.py " + " ".join(sys.argv[1:])
    text = report(echo, forward, command.strip())
    print(text)
    if args.write:
        write_section("study003-curves", text, DOC)


if __name__ == "__main__":
    main()
