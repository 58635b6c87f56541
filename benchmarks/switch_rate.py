"""Forwarding rate of the P4 switch (switch/) running the basic L3 program.

The switch runs pinned to one core with two ports; `dplab-pktblast` (switch/src/bin) offers
as many frames as it can from the other core into port 1; the kernel's receive counter of
port 2's peer says how many came out. Rate = delivered / offered time, median of the
repetitions. Writes a "P4 switch" section into docs/benchmarks.md (or prints with --no-write).

usage: sudo .venv/bin/python benchmarks/switch_rate.py [--seconds 3] [--reps 3] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import switch_rig  # noqa: E402  (the test rig lives with the tests)
from doc_section import write_section  # noqa: E402  (beside this script)

SIZES = (60, 1514)  # Ethernet frames without FCS: 64 B and 1518 B on a wire
SWITCH_CORE, BLAST_CORE = 0, 1

SECTION = """## P4 switch

Forwarding rate of `dplab-switch` running `benchmarks/switch_l3.p4` (IPv4 lpm, MAC rewrite,
TTL decrement, checksum update), pinned to one core, two veth ports; `dplab-pktblast` offers
frames as fast as it can from the other core. Median of {reps} runs of {seconds} s, measured
{when} on {host} (2 cores, shared with other work; load average at the end {load}).

| packet | offered | forwarded | forwarded | switch core busy | capacity |
|---|---|---|---|---|---|
{rows}

*Busy* is the share of the run the data-plane thread spent in rounds that moved packets (its
kernel send work included, idle polling excluded); *capacity* = packets the switch sent / that
busy time, the rate one fully busy core would sustain. Capacity is derived, not offered and
forwarded. The veth receive work for the switch's input port runs on the sender's core, so the
sender, not only the switch, limits the offered column.

Switch memory (RSS) before / after the runs: {rss_start} / {rss_end} KiB.
BMv2 measured on a machine like this: 27.6 kpps at 64 B.

Reproduce: `sudo .venv/bin/python benchmarks/switch_rate.py` (writes this section).
"""


def rx_packets(ns: str, ifname: str) -> int:
    out = subprocess.run(
        ["ip", "-n", ns, "-s", "-j", "link", "show", ifname],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)[0]["stats64"]["rx"]["packets"]


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def one_run(rig: switch_rig.Rig, size: int, seconds: float) -> dict:
    frame = switch_rig.udp_frame(
        "02:00:00:00:00:aa", "02:00:00:00:00:01", "10.0.1.1", "10.0.2.5", size=size
    )
    before = rx_packets(rig.host_ns, rig.host_if(2))
    stats_before = rig.client.call("stats")
    blast = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            rig.host_ns,
            "taskset",
            "-c",
            str(BLAST_CORE),
            str(switch_rig.BLAST_BIN),
            "--iface",
            rig.host_if(1),
            "--frame",
            frame.hex(),
            "--seconds",
            str(seconds),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    time.sleep(0.2)  # let the last frames drain through the switch
    delivered = rx_packets(rig.host_ns, rig.host_if(2)) - before
    stats_after = rig.client.call("stats")
    offered = json.loads(blast.stdout)
    busy = stats_after["dataplane_busy_s"] - stats_before["dataplane_busy_s"]
    sent_by_switch = stats_after["ports"][1]["tx_packets"] - stats_before["ports"][1]["tx_packets"]
    return {
        "offered_pps": offered["sent"] / offered["seconds"],
        "delivered_pps": delivered / offered["seconds"],
        "delivered_mbit": delivered * size * 8 / offered["seconds"] / 1e6,
        "busy_share": busy / offered["seconds"],
        "capacity_pps": sent_by_switch / busy if busy > 0 else None,
    }


def measure(seconds: float, reps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        ir = switch_rig.compile_p4(ROOT / "benchmarks" / "switch_l3.p4", Path(tmp))
        with switch_rig.Rig(n_ports=2, core=SWITCH_CORE, capture=False) as rig:
            rig.load(ir)
            rig.client.call(
                "table_add",
                table="L3Ingress.ipv4_lpm",
                match=[{"kind": "lpm", "v": "0x0a000200", "plen": 24}],
                action={"action": "L3Ingress.ipv4_forward", "args": ["0x020000000002", "0x2"]},
            )
            rss_start = rss_kib(rig.proc.pid)
            results = {}
            for size in SIZES:
                runs = [one_run(rig, size, seconds) for _ in range(reps)]
                results[size] = {k: median([r[k] for r in runs]) for k in runs[0]}
                results[size]["runs"] = runs
            stats = rig.client.call("stats")
            return {
                "results": results,
                "rss_start_kib": rss_start,
                "rss_end_kib": rss_kib(rig.proc.pid),
                "switch_stats": stats,
                "load": os.getloadavg(),
            }


def section(m: dict, seconds: float, reps: int) -> str:
    rows = []
    for size, r in m["results"].items():
        capacity = "n/a" if r["capacity_pps"] is None else f"{r['capacity_pps'] / 1e3:,.0f} kpps"
        rows.append(
            f"| {size + 4} B ({size} B frame) | {r['offered_pps'] / 1e3:,.0f} kpps | "
            f"{r['delivered_pps'] / 1e3:,.0f} kpps | {r['delivered_mbit']:,.0f} Mbit/s | "
            f"{r['busy_share']:.0%} | {capacity} |"
        )
    load = ", ".join(f"{x:.1f}" for x in m["load"])
    when = time.strftime("%Y-%m-%d %H:%M")
    return SECTION.format(
        reps=reps,
        seconds=f"{seconds:g}",
        when=when,
        host=platform.node(),
        load=load,
        rows="\n".join(rows),
        rss_start=m["rss_start_kib"],
        rss_end=m["rss_end_kib"],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--no-write", action="store_true", help="print, do not touch docs/benchmarks.md"
    )
    args = ap.parse_args()
    switch_rig.build_switch()
    m = measure(args.seconds, args.reps)
    text = section(m, args.seconds, args.reps)
    print(text)
    print(json.dumps({str(k): v for k, v in m["results"].items()}, indent=1))
    if not args.no_write:
        write_section("p4switch", text)


if __name__ == "__main__":
    main()
