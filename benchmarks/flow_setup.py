"""Reactive flow setup: p4 (P4Runtime) vs OVS (OpenFlow) under the same controller logic.

    sudo .venv/bin/python benchmarks/flow_setup.py [--reps 3] [--pairs 6] [--rounds 2]
                                                   [--planes p4-reactive,ovs-reactive]
                                                   [--cpu-idle machine poll] [--write]

Each plane comes up reactive on catalog ``linear`` (4 switches, ``--pairs`` hosts on each,
unshaped). Host a_i on the first switch is paired with b_i on the last one (4-switch path).
A warm-up ping per pair teaches the controller every host; then ARP entries are made
permanent (no ARP during a trial) and the b hosts ignore echo requests. Every round waits
until the reactive rules of the round before have idled out, then per pair:

1. ``ping a -> b`` (b stays silent): one flow set-up, path towards b;
2. ``ping b -> a``: one flow set-up, path towards a; the reply rides the path of step 1.
   Its RTT is the **first-packet RTT**: one set-up plus the path there and back;
3. ``ping b -> a`` again: the **warm RTT**, every rule in place.

After steps 1 and 2 the controller's counters file (``flows_set_up``, ``setup_ms_mean``)
gives that one set-up's ``setup_ms`` exactly (the difference of the running sums); a step
that set up no flow (or more than one) gives no sample. Per repetition: p50/p99 of the
samples; the table shows the median over repetitions.

``--cpu-idle`` (default both) measures each plane under each idle behaviour of the CPUs
(experiment field ``cpu_idle``): ``machine`` as the machine has it, ``poll`` with a 0 µs PM
QoS wake-up latency request held from before the network comes up until after teardown.

``--write`` replaces this benchmark's section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import time
from collections.abc import Iterator

from doc_section import machine_line, write_section  # beside this script

from dplab import planes
from dplab.control.forwarding import REACTIVE_IDLE_TIMEOUT_S
from dplab.planes.controlled import ControlledPlane
from dplab.report import cpu_idle as idle_report
from dplab.substrate import Network, cpu_idle
from dplab.substrate.network import HOST_IF
from dplab.topology import catalog

PLANES: dict[str, tuple[str, dict]] = {
    "p4-reactive": ("p4", {"mode": "reactive"}),
    "ovs-reactive": ("ovs", {"mode": "reactive"}),
}
SWITCHES = 4
READY_TIMEOUT_S = 60.0
# Idle rules must be gone before a round: OVS checks its timeouts about once a second,
# our P4 switch reports idle entries and the controller then deletes them.
EXPIRY_WAIT_S = REACTIVE_IDLE_TIMEOUT_S + 3.0
COUNTERS_WAIT_S = 2.0
RTT = re.compile(r"time=([\d.]+) ms")


@contextlib.contextmanager
def reactive(label: str, pairs: int) -> Iterator[tuple[Network, ControlledPlane]]:
    kind, options = PLANES[label]
    topo = catalog.build("linear", switches=SWITCHES, hosts_per_switch=pairs,
                         core_bw=None, edge_bw=None)
    with planes.running(kind, options, topo, READY_TIMEOUT_S) as (net, plane):
        yield net, plane


def end_pairs(net: Network) -> list[tuple[str, str]]:
    """(host on the first switch, host on the last switch), as many as each has."""
    graph = net.topo.graph
    switches = net.topo.switches()
    first, last = switches[0], switches[-1]
    hosts = net.topo.hosts()
    return list(zip([h for h in hosts if graph.has_edge(h, first)],
                    [h for h in hosts if graph.has_edge(h, last)], strict=True))


class Counters:
    """The controller's running count and sum of set-up times, read from its stats file."""

    def __init__(self, plane: ControlledPlane) -> None:
        self.file = plane.stats_file
        self.count, self.total = self._read()

    def _read(self) -> tuple[int, float]:
        counters = json.loads(self.file.read_text())
        count = int(counters["flows_set_up"])
        return count, (counters["setup_ms_mean"] or 0.0) * count

    def next_sample(self) -> float | None:
        """setup_ms of the one flow set up since the last call; None if not exactly one."""
        deadline = time.monotonic() + COUNTERS_WAIT_S
        asked = time.time()
        while True:
            if self.file.stat().st_mtime > asked:
                count, total = self._read()
                if count > self.count or time.monotonic() > deadline:
                    break
            time.sleep(0.02)
        sample = total - self.total if count == self.count + 1 else None
        self.count, self.total = count, total
        return sample


def ping_rtt(net: Network, src: str, dst: str) -> float | None:
    out = net.run(net.host_ns(src), ["ping", "-c1", "-W1", "-n", net.host_ip(dst)],
                  check=False).stdout
    found = RTT.search(out)
    return float(found.group(1)) if found else None


def prepare(net: Network, pairs: list[tuple[str, str]]) -> None:
    """Warm-up pings (the controller learns every host), then permanent ARP entries on
    both ends and b hosts that ignore echo requests."""
    for a, b in pairs:
        ping_rtt(net, a, b)
    for a, b in pairs:
        for host, peer in ((a, b), (b, a)):
            net.run(net.host_ns(host), ["ip", "neigh", "replace", net.host_ip(peer), "lladdr",
                                        net.host_mac(peer), "nud", "permanent", "dev", HOST_IF])
        net.run(net.host_ns(b), ["sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1"])


def measure(label: str, pairs_n: int, rounds: int) -> tuple[dict[str, list[float]], int]:
    """Samples of one repetition (setup_ms, first-packet and warm RTT, ms) and the number
    of steps that gave no set-up sample."""
    samples: dict[str, list[float]] = {"setup": [], "first": [], "warm": []}
    missed = 0
    with reactive(label, pairs_n) as (net, plane):
        pairs = end_pairs(net)
        prepare(net, pairs)
        for _ in range(rounds):
            time.sleep(EXPIRY_WAIT_S)
            counters = Counters(plane)
            for a, b in pairs:
                ping_rtt(net, a, b)  # no answer: b ignores echo requests
                towards_b = counters.next_sample()
                first = ping_rtt(net, b, a)
                towards_a = counters.next_sample()
                warm = ping_rtt(net, b, a)
                got = [s for s in (towards_b, towards_a) if s is not None]
                samples["setup"].extend(got)
                missed += 2 - len(got)
                if first is not None and towards_a is not None:
                    samples["first"].append(first)
                if warm is not None:
                    samples["warm"].append(warm)
    return samples, missed


def p99(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def summary(samples: dict[str, list[float]], missed: int) -> dict[str, float | None]:
    out: dict[str, float | None] = {"samples": float(len(samples["setup"])),
                                    "missed": float(missed)}
    for key in ("setup", "first", "warm"):
        values = samples[key]
        out[f"{key}_p50"] = statistics.median(values) if values else None
        out[f"{key}_p99"] = p99(values)
    return out


def median_of(reps: list[dict], key: str) -> str:
    got = [r[key] for r in reps if r.get(key) is not None]
    if not got:
        return "—"
    return f"{statistics.median(got):.2f} [{min(got):.2f}–{max(got):.2f}]"


def table(results: dict[tuple[str, str], list[dict]]) -> list[str]:
    """A row per (plane, CPU idle setting)."""
    lines = ["| plane | CPU idle (idle time polled) | setup_ms p50 | setup_ms p99 "
             "| first-packet RTT p50 (ms) | first-packet RTT p99 (ms) | warm RTT p50 (ms) "
             "| set-ups measured / missed |",
             "|---|---|---|---|---|---|---|---|"]
    for (label, setting), reps in results.items():
        cells = [median_of(reps, key) for key in
                 ("setup_p50", "setup_p99", "first_p50", "first_p99", "warm_p50")]
        measured = sum(r["samples"] or 0 for r in reps)
        missed = sum(r["missed"] or 0 for r in reps)
        idle = idle_report.setting_with_share(setting, [r.get("polled_share") for r in reps])
        lines.append(f"| {label} | {idle} | {' | '.join(cells)} "
                     f"| {measured:.0f} / {missed:.0f} |")
    return lines


SPAN_NOTE = [
    "- `setup_ms` is the controller's own span (forwarding.py): packet-in reaching the",
    "  logic to the packet-out handed to the southbound. Both southbounds end it once",
    "  every other switch of the path has confirmed its rules: P4Runtime's Writes are",
    "  answered once the switch took the entries, OpenFlow's flow-mods are followed by a",
    "  barrier whose reply is awaited (os-ken's ofctl service, one switch after another).",
    "  The first-packet RTT is the comparable figure: it holds one set-up and what each",
    "  plane needs before the packet can move on.",
    "- P4's set-up writes one Write per switch of the path, all in flight at once, and",
    "  sends the packet-out once every switch the packet will meet has answered; the",
    "  packet-out's own switch (whose table a packet-out skips) is written after the",
    "  packet-out, outside the span, and answered before the controller's next event",
    "  (control/p4runtime_app.py). Each Write is a gRPC-Python RPC to the one process that",
    "  serves every switch's P4Runtime.",
    "- CPU idle: on this VM an idle vCPU halts and every wake-up of a sleeping thread",
    "  exits to the hypervisor (~10-30 µs; a set-up wakes the controller, the P4Runtime",
    "  server or ovs-vswitchd and the switches several times). `poll` holds a 0 µs PM QoS",
    "  wake-up latency request (experiment field `cpu_idle`) for the whole measurement, so",
    "  idle CPUs poll; `machine` leaves them as they are. Both planes get the same",
    "  treatment; the percentage is the measured share of idle time spent polling.",
]


def render(results: dict[tuple[str, str], list[dict]], args: argparse.Namespace,
           command: str) -> str:
    return "\n".join([
        "## Reactive flow setup: P4Runtime vs OpenFlow",
        "",
        machine_line(),
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.2f}.",
        "",
        f"Catalog `linear`, {SWITCHES} switches, {args.pairs} host pairs across the whole "
        f"chain, {args.rounds} rounds of fresh set-ups (one per direction and pair), "
        f"{args.reps} repetitions; median [min–max] over repetitions of each repetition's "
        "p50/p99.",
        "",
        *table(results),
        "",
        *SPAN_NOTE,
        "",
        f"Reproduce: `{command}` (root).",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--planes", default=",".join(PLANES))
    parser.add_argument("--cpu-idle", nargs="+", default=list(cpu_idle.SETTINGS),
                        choices=cpu_idle.SETTINGS,
                        help="idle behaviours of the CPUs to measure under")
    parser.add_argument("--write", action="store_true",
                        help="write the figures into docs/benchmarks.md")
    args = parser.parse_args()
    labels = args.planes.split(",")
    unknown = sorted(set(labels) - set(PLANES))
    if unknown:
        parser.error(f"--planes: unknown {', '.join(unknown)} (known: {', '.join(PLANES)})")
    settings = list(dict.fromkeys(args.cpu_idle))
    results: dict[tuple[str, str], list[dict]] = {
        (label, setting): [] for label in labels for setting in settings}
    for rep in range(args.reps):
        for label, setting in results:  # interleaved: drift of the shared machine hits all
            with cpu_idle.idle_behaviour(setting):
                watch = cpu_idle.IdleWatch(setting)
                figures = summary(*measure(label, args.pairs, args.rounds))
                figures["polled_share"] = watch.finish().polled_share
            results[(label, setting)].append(figures)
            print(f"rep {rep + 1}: {label} ({setting}): {figures}", flush=True)
    command = (f"python benchmarks/flow_setup.py --reps {args.reps} --pairs {args.pairs} "
               f"--rounds {args.rounds} --cpu-idle {' '.join(settings)}")
    text = render(results, args, command)
    print(text)
    if args.write:
        write_section("flow_setup", text)


if __name__ == "__main__":
    main()
