"""Study 003's performance curves, P4 side: echo latency, CPU and memory vs offered load.

usage: python benchmarks/study003_curves.py [--rates 0,1,10,50,100,200] [--seconds 3] [--write]

For each offered rate (kpps of 64 B frames, `pps` workload: dplab-pktblast from h1):

- echo latency (study 4.2.1): p4src/study003/echo.p4 on one switch between h1 and h2
  answers ICMP echo requests itself; h1 pings h2 every 10 ms while a load of echo requests
  at the rate runs: RTT p50/p99 of the pings, and how many load requests were answered.
  Reference: the Linux bridge, where h2's kernel answers the same requests.
- CPU (4.2.3) and memory (4.2.2): p4src/study003/l3_forward.p4 on two switches in a line
  (scenarios/study003_l3.yaml's topology) forwards UDP frames h1 -> h2 at the rate: CPU of
  the two dplab-switch processes (utime + stime, % of one core, both summed), the machine's
  softirq (all cores summed, % of one core: it includes everything else on the machine),
  switch RSS (largest of the two, MiB), frames forwarded per second (counted at h2).
  Reference: the kernel router plane on the same topology (no process: CPU is softirq).
  Rate 0 is the idle baseline (no load for the same time).
- lines of code of each study-003 P4 program (non-blank, non-comment).

There is no XDP plane in the lab yet, so the study's XDP curves have no counterpart here.
One run per point (the lead reruns on a quiet machine); `--write` replaces the section of
docs/studies/003-p4.md. Run as root from the repository's root, with the lab built.
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
from dplab.measure.resources import ProcReader, Snapshot
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.workloads.flows import Flow, run_flows
from dplab.workloads.pps import PpsFlows

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "p4src" / "study003"
DOC = ROOT / "docs" / "studies" / "003-p4.md"
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
    Setup("kernel (bridge; h2 answers)", "bridge", "single", PAIR),
)
FORWARD = (
    Setup("p4 l3_forward.p4", "p4", "linear", LINE, {
        "program": str(STUDY / "l3_forward.p4"),
        "entries": str(STUDY / "l3_forward_entries.yaml")}),
    Setup("kernel router", "router", "linear", LINE),
)


@contextmanager
def plane_network(setup: Setup) -> Iterator[tuple[Network, ProcReader]]:
    """The setup's plane up and ready; a reader of its switch namespaces' processes."""
    plane = planes.create(setup.kind, setup.options)
    topo = catalog.build(setup.topology, **setup.params)
    with Network(topo, addressing=plane.addressing) as net:
        plane.start(net)
        try:
            plane.wait_ready(timeout=60)
            switch_ns = {net.switch_ns(s) for s in topo.switches()}
            yield net, ProcReader(switch_ns)
        finally:
            plane.stop()


def load_flow(kpps: float, seconds: float, protocol: str) -> Flow:
    params = {"size": SIZE, "pps": kpps * 1000, "duration": seconds, "protocol": protocol}
    return Flow(f"load-{protocol}", "pps", "h1", "h2", params)


def echo_point(net: Network, reader: ProcReader, kpps: float, seconds: float) -> dict:
    count = round(seconds / PING_INTERVAL_S)
    ping = Flow("ping", "icmp", "h1", "h2", {"count": count, "interval": PING_INTERVAL_S})
    flows = [ping, load_flow(kpps, seconds, "icmp")] if kpps else [ping]
    results = run_flows(net, flows)
    row = {"rtt_p50_ms": results[0].summary["rtt_p50_ms"],
           "rtt_p99_ms": results[0].summary["rtt_p99_ms"],
           "ping_loss_pct": results[0].summary["loss_pct"],
           "switch_rss_mib": switch_rss_mib(reader.snapshot())}
    if kpps:
        load = results[1].summary
        row.update(offered_kpps=_kilo(load["offered_pps"]),
                   answered_pct=_share(load["replies_received"], load["frames_offered"]))
    return row


def forward_point(net: Network, reader: ProcReader, kpps: float, seconds: float) -> dict:
    """CPU over the sender's lifetime: snapshots right before it starts and after it ends."""
    if not kpps:
        before = reader.snapshot()
        time.sleep(seconds)
        return usage(before, reader.snapshot())
    flows = PpsFlows(net, [load_flow(kpps, seconds, "udp")])
    with tempfile.TemporaryDirectory(prefix="dplab-curves-") as tmp:
        try:
            flows.listen(Path(tmp))
            before = reader.snapshot()
            flows.send()
            flows.wait_senders()
            after = reader.snapshot()
            flows.stop_counting()
        finally:
            flows.kill()
        [load] = flows.results()
    s = load.summary
    forwarded = None if s["frames_received"] is None else s["frames_received"] / s["send_s"]
    return {**usage(before, after), "offered_kpps": _kilo(s["offered_pps"]),
            "forwarded_kpps": _kilo(forwarded)}


def usage(before: Snapshot, after: Snapshot) -> dict:
    elapsed_ticks = (after.time_s - before.time_s) * TICKS
    switches = [pid for pid in after.procs if pid in before.procs and _comm(pid) == SWITCH_COMM]
    busy = sum(after.procs[p].utime + after.procs[p].stime
               - before.procs[p].utime - before.procs[p].stime for p in switches)
    softirq = None
    if before.host is not None and after.host is not None:
        softirq = 100.0 * (after.host["softirq"] - before.host["softirq"]) / elapsed_ticks
    return {"switch_cpu_pct": 100.0 * busy / elapsed_ticks if switches else None,
            "softirq_pct": softirq, "switch_rss_mib": switch_rss_mib(after)}


def switch_rss_mib(snapshot: Snapshot) -> float | None:
    rss = [p.rss_kib for pid, p in snapshot.procs.items()
           if p.rss_kib is not None and _comm(pid) == SWITCH_COMM]
    return max(rss) / 1024 if rss else None


def _comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _kilo(value: float | None) -> float | None:
    return None if value is None else value / 1000


def _share(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else 100.0 * part / whole


def p4_lines(path: Path) -> int:
    """Lines with code once comments (// and /* */) are removed; blank lines do not count."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), path.read_text(),
                  flags=re.DOTALL)
    return sum(1 for line in text.splitlines() if line.split("//", 1)[0].strip())


Point = Callable[[Network, ProcReader, float, float], dict]


def curve(setups: tuple[Setup, ...], point: Point, rates: list[float],
          seconds: float) -> dict[str, list[dict]]:
    rows = {}
    for setup in setups:
        with plane_network(setup) as (net, reader):
            rows[setup.label] = [{"kpps": kpps, **point(net, reader, kpps, seconds)}
                                 for kpps in rates]
        print(f"  {setup.label}: done", file=sys.stderr)
    return rows


ECHO_COLUMNS = (("kpps", "set kpps"), ("offered_kpps", "offered kpps"),
                ("answered_pct", "load answered %"), ("rtt_p50_ms", "ping RTT p50 ms"),
                ("rtt_p99_ms", "ping RTT p99 ms"), ("ping_loss_pct", "ping loss %"),
                ("switch_rss_mib", "switch RSS MiB"))
FORWARD_COLUMNS = (("kpps", "set kpps"), ("offered_kpps", "offered kpps"),
                   ("forwarded_kpps", "forwarded kpps"),
                   ("switch_cpu_pct", "switch CPU % (2 switches)"),
                   ("softirq_pct", "softirq % (machine)"), ("switch_rss_mib", "switch RSS MiB"))


def table(rows: dict[str, list[dict]], columns: tuple[tuple[str, str], ...]) -> str:
    lines = ["| plane | " + " | ".join(title for _, title in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for label, points in rows.items():
        for point in points:
            cells = [_cell(point.get(key)) for key, _ in columns]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def loc_table() -> str:
    lines = ["| program | lines of code |", "|---|---|"]
    for path in sorted(STUDY.glob("*.p4")):
        lines.append(f"| {path.name} | {p4_lines(path)} |")
    return "\n".join(lines)


def report(echo: dict, forward: dict, command: str) -> str:
    return "\n\n".join([
        "## Performance curves (benchmarks/study003_curves.py)",
        f"`{command}`. {machine_line()} Load: {os.getloadavg()[0]:.1f} (1 min) at the end. "
        "One run per point; '-' = not measured (a kernel plane has no switch process). "
        "No XDP plane exists in the lab yet, so the study's XDP side has no figures here.",
        "Echo latency under a load of 64 B echo requests (the load's own replies counted "
        "at h1):", table(echo, ECHO_COLUMNS),
        "CPU and memory while forwarding 64 B UDP frames h1 -> h2 (CPU % of one core over "
        "the sender's lifetime; softirq is the whole machine's, other work included). "
        "The switch CPU is not work alone: a switch spins through gaps between packets up "
        "to a limit instead of sleeping (switch/src/dataplane/arrivals.rs), so from about "
        "10 kpps on it holds most of a core whatever the rate; dplab-pktblast also spins "
        "between frames on the sender's core:",
        table(forward, FORWARD_COLUMNS),
        "Lines of code (non-blank, non-comment) of the study-003 P4 programs:", loc_table(),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0,1,10,50,100,200", help="kpps, comma-separated")
    parser.add_argument("--seconds", type=float, default=3.0, help="load time per point")
    parser.add_argument("--write", action="store_true", help=f"update {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    rates = [float(rate) for rate in args.rates.split(",")]
    if any(rate < 0 for rate in rates) or args.seconds <= 0:
        parser.error("rates must be >= 0 kpps and --seconds > 0")
    echo = curve(ECHO, echo_point, rates, args.seconds)
    forward = curve(FORWARD, forward_point, rates, args.seconds)
    command = "python benchmarks/study003_curves.py " + " ".join(sys.argv[1:])
    text = report(echo, forward, command.strip())
    print(text)
    if args.write:
        write_section("study003-curves", text, DOC)


if __name__ == "__main__":
    main()
