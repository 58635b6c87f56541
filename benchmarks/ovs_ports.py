"""OVS's port I/O choices (the ovs plane's option ``ports``) in the lab's own topologies:
which is fastest, and which keeps a shaped link shaped.

    sudo .venv/bin/python benchmarks/ovs_ports.py [--repeat 2] [--tcp-s 5] [--write]

Per repetition and each of ``dplab.planes.ovs.PORTS`` (proactive controller, so no set-up
in the figures), on ``single`` (one bridge, 2 hosts) and ``multipath`` (6 bridges in one
ovs-vswitchd, 8 hosts), links unshaped, between the two farthest hosts: 100 pings 20 ms
apart (p50, p99 RTT), one iperf2 TCP flow (receiver's goodput) and ovs-vswitchd's CPU
during it (all threads, % of one core). Then shaping: ``multipath`` with every link at
100 Mbit/s, one TCP flow each way between the farthest hosts; a port I/O the plane refuses
on shaped links (AF_XDP sends past the qdisc) shows the refusal. Medians over repetitions;
``--write`` replaces this benchmark's section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from doc_section import machine_line, write_section  # noqa: E402  (beside this script)
from forwarders import process_cpu_seconds  # noqa: E402
from net_checks import iperf_server_report  # noqa: E402  (the test helpers)

from dplab.planes import PlaneError, running  # noqa: E402
from dplab.planes.base import farthest_hosts  # noqa: E402
from dplab.planes.ovs import DEFAULT_PORTS, PORTS  # noqa: E402
from dplab.substrate import Network, registry  # noqa: E402
from dplab.topology import catalog  # noqa: E402

TOPOLOGIES = {"single": {"hosts": 2}, "multipath": {}}
SHAPED_MBIT = 100
READY_S = 60


def ping_ms(net: Network, src: str, dst: str) -> list[float]:
    done = net.run(net.host_ns(src), ["ping", "-c100", "-i0.02", "-n", net.host_ip(dst)],
                   check=False)
    return [float(line.split("time=")[1].split()[0]) for line in done.stdout.splitlines()
            if "time=" in line]


def tcp_mbit(net: Network, src: str, dst: str, seconds: float) -> float:
    return float(iperf_server_report(net, src, dst, [], seconds)[8]) / 1e6


def unshaped(ports: str, topo_name: str, tcp_s: float) -> dict[str, float | None]:
    topo = catalog.build(topo_name, **TOPOLOGIES[topo_name], core_bw=None, edge_bw=None)
    options = {"mode": "proactive", "datapath": "netdev", "ports": ports}
    with running("ovs", options, topo, READY_S) as (net, plane):
        src, dst = farthest_hosts(net)
        rtts = sorted(ping_ms(net, src, dst))
        pid = int((plane.dir / "ovs-vswitchd.pid").read_text())
        cpu0, t0 = process_cpu_seconds(pid), time.monotonic()
        mbit = tcp_mbit(net, src, dst, tcp_s)
        cpu = (process_cpu_seconds(pid) - cpu0) / (time.monotonic() - t0) * 100
    return {"p50_ms": _pct(rtts, 50), "p99_ms": _pct(rtts, 99), "tcp_mbit": mbit,
            "cpu_pct": cpu}


def shaped(ports: str, tcp_s: float) -> dict[str, float | str | None]:
    topo = catalog.build("multipath", core_bw=SHAPED_MBIT, edge_bw=SHAPED_MBIT)
    options = {"mode": "proactive", "datapath": "netdev", "ports": ports}
    try:
        with running("ovs", options, topo, READY_S) as (net, _):
            src, dst = farthest_hosts(net)
            return {"there": tcp_mbit(net, src, dst, tcp_s),
                    "back": tcp_mbit(net, dst, src, tcp_s)}
    except PlaneError as exc:
        return {"refused": str(exc)}


def _pct(values: list[float], pct: int) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, round(pct / 100 * (len(values) - 1)))]


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def render(rows: dict, shaping: dict, repeat: int, tcp_s: float, load: tuple[str, str],
           command: str) -> str:
    lines = ["## OVS port I/O: fastest configuration that keeps shaping", "",
             machine_line(),
             f"Load average (1 min) at the start: {load[0]}, at the end: {load[1]} (other "
             f"work shared the machine). Median of {repeat} repetitions; proactive "
             f"controller; default `ports: {DEFAULT_PORTS}`.", "",
             "| topology | ports | ping p50 | ping p99 | TCP, one flow | ovs-vswitchd CPU |",
             "|---|---|---|---|---|---|"]
    for (topo, ports), runs in rows.items():
        lines.append(f"| {topo} | {ports} | {fmt(median(runs, 'p50_ms'), 3)} ms "
                     f"| {fmt(median(runs, 'p99_ms'), 3)} ms "
                     f"| {fmt(median(runs, 'tcp_mbit'))} Mbit/s "
                     f"| {fmt(median(runs, 'cpu_pct'))} % |")
    lines += ["", f"Shaping: `multipath` with every link at {SHAPED_MBIT} Mbit/s, one TCP "
              f"flow ({tcp_s:g} s) each way between the farthest hosts:", "",
              "| ports | there | back |", "|---|---|---|"]
    for ports, runs in shaping.items():
        refused = next((r["refused"] for r in runs if "refused" in r), None)
        if refused:
            lines.append(f"| {ports} | refused: {refused} | |")
        else:
            lines.append(f"| {ports} | {fmt(median(runs, 'there'), 1)} Mbit/s "
                         f"| {fmt(median(runs, 'back'), 1)} Mbit/s |")
    lines += ["", "- Unshaped links, so every port I/O may run; TCP "
              f"{tcp_s:g} s with the offloads the plane leaves (`netdev-tso`: on; the others: "
              "`tx off` on hosts and ports, so TSO off). ovs-vswitchd CPU: all its threads "
              "(the PMD thread of `afxdp` polls a core whether or not packets come), user + "
              "system time over the TCP flow, % of one core.",
              "", f"Reproduce: `{command}`"]
    return "\n".join(lines)


def load_1min() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tcp-s", type=float, default=5.0)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    registry.cleanup_on_signals()
    registry.reclaim_stale()
    start = load_1min()
    rows: dict[tuple[str, str], list[dict]] = {(t, p): [] for t in TOPOLOGIES for p in PORTS}
    shaping: dict[str, list[dict]] = {p: [] for p in PORTS}
    for rep in range(args.repeat):  # configurations interleave: drift hits all alike
        for (topo, ports), runs in rows.items():
            runs.append(unshaped(ports, topo, args.tcp_s))
            print(f"rep {rep + 1}: {topo} {ports}: {runs[-1]}", flush=True)
        for ports, runs in shaping.items():
            runs.append(shaped(ports, args.tcp_s))
            print(f"rep {rep + 1}: shaped {ports}: {runs[-1]}", flush=True)
    command = "sudo .venv/bin/python benchmarks/ovs_ports.py " + " ".join(sys.argv[1:])
    section = render(rows, shaping, args.repeat, args.tcp_s, (start, load_1min()),
                     command.strip())
    print(section)
    if args.write:
        write_section("ovsports", section)


if __name__ == "__main__":
    main()
