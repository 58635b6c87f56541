"""Forwarding rate of the P4 switch (switch/) running the basic L3 program.

The switch runs pinned to one core with two ports; `dplab-pktblast` (switch/src/bin) offers
frames from the other core into port 1, as fast as it can (its XDP method: GRO is turned on
for the switch's port 1 so veth accepts XDP frames); the kernel's receive counter of port 2's
peer says how many came out. Rates are delivered / offered time, median of the
repetitions; one more run at a set rate checks the source's rate control. Prints a "P4
switch" section, and writes it into docs/benchmarks.md with --write.

usage: sudo .venv/bin/python benchmarks/switch_rate.py [--seconds 3] [--reps 3] [--write]
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
SET_RATE_PPS = 100_000  # the rate-control check: low enough for a busy shared machine

SECTION = """## P4 switch

Forwarding rate of `dplab-switch` running `benchmarks/switch_l3.p4` (IPv4 lpm, MAC rewrite,
TTL decrement, checksum update), pinned to one core, two veth ports; `dplab-pktblast`
(`--method xdp`: the kernel redirects frames from an XDP program, no socket buffer per frame
on transmit) offers frames as fast as it can from the other core; GRO is on for the switch's
port 1 (veth accepts XDP frames only into a NAPI peer). Median of {reps} runs of {seconds} s,
measured {when} on {host} (2 cores, shared with other work; load average at the start
{load_start}, at the end {load_end}).
The budget is 1 Mpps at 64 B on one core.

| packet | offered | source CPU/frame | forwarded | forwarded | busy | switch CPU/pkt | capacity |
|---|---|---|---|---|---|---|---|
{rows}

- *offered*: frames the veth counted as sent (pktblast's `sent` / `seconds`).
- *source CPU/frame*: pktblast's CPU time per frame. It includes the kernel's receive work
  for the switch's input port, which veth runs on the sending core.
- *forwarded*: frames that arrived at port 2's peer per second of the run.
- *busy*: the share of the run the data-plane thread spent in rounds that moved packets;
  *switch CPU/pkt*: the CPU time it ran in those rounds per packet sent, its kernel
  transmit work and port 2's peer receive work (run in its system calls) included;
  *capacity* = 1 / that, the rate one core of its own would sustain. Capacity is derived,
  not offered and forwarded.
- Rate control (`--method ring`, AF_PACKET transmit ring): pktblast asked for {set_target}
  kpps of 64 B frames for {seconds} s and sent {set_sent} frames, {set_rate} kpps
  ({set_error} off the target; its interface counted {set_iface} frames).

Switch memory (RSS) before / after the runs: {rss_start} / {rss_end} KiB.
BMv2 measured on a machine like this: 27.6 kpps at 64 B.

Reproduce: `sudo .venv/bin/python benchmarks/switch_rate.py --write` (writes this section).
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


def blast(rig: switch_rig.Rig, frame: bytes, seconds: float, pps: int | None) -> dict:
    """Runs pktblast on the host side of port 1: as fast as it can with its XDP method,
    at a set rate with its transmit ring; returns its JSON report."""
    argv = ["ip", "netns", "exec", rig.host_ns, "taskset", "-c", str(BLAST_CORE)]
    argv += [str(switch_rig.BLAST_BIN), "--iface", rig.host_if(1), "--frame", frame.hex()]
    argv += ["--seconds", str(seconds)]
    argv += ["--pps", str(pps), "--method", "ring"] if pps else ["--method", "xdp"]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"dplab-pktblast failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def one_run(rig: switch_rig.Rig, size: int, seconds: float, pps: int | None = None) -> dict:
    frame = switch_rig.udp_frame(
        "02:00:00:00:00:aa", "02:00:00:00:00:01", "10.0.1.1", "10.0.2.5", size=size
    )
    before = rx_packets(rig.host_ns, rig.host_if(2))
    stats_before = rig.client.call("stats")
    offered = blast(rig, frame, seconds, pps)
    time.sleep(0.2)  # let the last frames drain through the switch
    delivered = rx_packets(rig.host_ns, rig.host_if(2)) - before
    stats_after = rig.client.call("stats")

    def delta(key: str) -> float:
        return stats_after[key] - stats_before[key]

    sent_by_switch = stats_after["ports"][1]["tx_packets"] - stats_before["ports"][1]["tx_packets"]
    cpu = delta("dataplane_cpu_s")
    source_cpu = offered["cpu_seconds"] / offered["sent"] if offered["sent"] else None
    return {
        "offered_pps": offered["pps"],
        "source_cpu_us": None if source_cpu is None else source_cpu * 1e6,
        "delivered_pps": delivered / offered["seconds"],
        "delivered_mbit": delivered * size * 8 / offered["seconds"] / 1e6,
        "busy_share": delta("dataplane_busy_s") / offered["seconds"],
        "switch_cpu_us": cpu / sent_by_switch * 1e6 if sent_by_switch else None,
        "capacity_pps": sent_by_switch / cpu if cpu > 0 else None,
        "pktblast": offered,
    }


def summarize(runs: list[dict]) -> dict:
    """Median of every figure over the runs; the runs themselves stay alongside."""
    figures = [k for k in runs[0] if k != "pktblast"]
    summary = {k: median([r[k] for r in runs]) for k in figures}
    summary["runs"] = runs
    return summary


def measure(seconds: float, reps: int) -> dict:
    load_start = os.getloadavg()
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
            # veth takes XDP frames only into a peer that runs NAPI, which GRO turns on.
            subprocess.run(
                ["ip", "netns", "exec", rig.sw_ns, "ethtool", "-K", rig.switch_if(1), "gro", "on"],
                check=True,
                capture_output=True,
            )
            rss_start = rss_kib(rig.proc.pid)
            results = {}
            for size in SIZES:
                results[size] = summarize([one_run(rig, size, seconds) for _ in range(reps)])
            set_rate = one_run(rig, SIZES[0], seconds, pps=SET_RATE_PPS)["pktblast"]
            return {
                "results": results,
                "set_rate": set_rate,
                "rss_start_kib": rss_start,
                "rss_end_kib": rss_kib(rig.proc.pid),
                "switch_stats": rig.client.call("stats"),
                "load_start": load_start,
                "load_end": os.getloadavg(),
            }


def kpps(pps: float | None) -> str:
    return "n/a" if pps is None else f"{pps / 1e3:,.0f} kpps"


def micros(us: float | None) -> str:
    return "n/a" if us is None else f"{us:.2f} µs"


def section(m: dict, seconds: float, reps: int) -> str:
    rows = []
    for size, r in m["results"].items():
        rows.append(
            f"| {size + 4} B ({size} B frame) | {kpps(r['offered_pps'])} | "
            f"{micros(r['source_cpu_us'])} | {kpps(r['delivered_pps'])} | "
            f"{r['delivered_mbit']:,.0f} Mbit/s | {r['busy_share']:.0%} | "
            f"{micros(r['switch_cpu_us'])} | {kpps(r['capacity_pps'])} |"
        )
    s = m["set_rate"]
    loads = {k: ", ".join(f"{x:.1f}" for x in m[k]) for k in ("load_start", "load_end")}
    return SECTION.format(
        reps=reps,
        seconds=f"{seconds:g}",
        when=time.strftime("%Y-%m-%d %H:%M"),
        host=platform.node(),
        rows="\n".join(rows),
        set_iface="n/a" if s["iface_tx_packets"] is None else f"{s['iface_tx_packets']:,}",
        set_target=f"{SET_RATE_PPS / 1e3:,.0f}",
        set_sent=f"{s['sent']:,}",
        set_rate=f"{s['pps'] / 1e3:,.1f}",
        set_error=f"{s['rate_error']:+.2%}",
        rss_start=m["rss_start_kib"],
        rss_end=m["rss_end_kib"],
        **loads,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="write into docs/benchmarks.md")
    args = ap.parse_args()
    switch_rig.build_switch()
    m = measure(args.seconds, args.reps)
    text = section(m, args.seconds, args.reps)
    print(text)
    print(json.dumps({str(k): v for k, v in m["results"].items()}, indent=1))
    print(json.dumps({"set_rate": m["set_rate"]}))
    if args.write:
        write_section("p4switch", text)


if __name__ == "__main__":
    main()
