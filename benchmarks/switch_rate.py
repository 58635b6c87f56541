"""Forwarding rate of the P4 switch (switch/) beside the XDP router (the xdp plane's l3
program), the Linux bridge, the Linux router, OVS and the user-space forwarder (dplab-fwd,
router and bridge), one core each, measured in the same run with the same source and sink.

Each forwarder joins port 1 to port 2 of a two-port rig (benchmarks/forwarders.py) and works
on one core; `dplab-pktblast --method xdp` (switch/src/bin) offers frames from the other
core into port 1 as fast as it can; the kernel's receive counter of port 2's peer says how
many came out. Rates are delivered / offered time, median of the repetitions. For the P4
switch's L3 program, one more 64 B run under `perf record` splits its core's time, and one at
a set rate checks the source's rate control. Prints a "P4 switch" section, and writes it into
docs/benchmarks.md with --write.

usage: sudo .venv/bin/python benchmarks/switch_rate.py [--seconds 3] [--reps 3] [--write]
           [--tx ring|xdp|both] [--switch-bin PATH] [--p4-only] [--rx-frames N ...]

`--tx` is how the P4 switch transmits (switch/PROTOCOL.md; with `xdp` the sink's veth gets
GRO on, which veth needs to take XDP frames); `both` (the default) measures the P4 rows in
each mode, in the same run; `--switch-bin` runs another build of the
switch (an A/B against an older build: it must know `--tx` unless that is `ring`);
`--p4-only` leaves OVS, the kernel forwarders and the user-space forwarder out (a quicker
A/B; not with --write); `--rx-frames` adds, for each count and mode, a row of the L3 switch
with its receive ring (one for all ports) that deep (`dplab-switch --rx-frames`; the other
rows keep the default 2048): what a shallower ring, which the p4 plane picks when memory is
short, costs.
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

import forwarders  # noqa: E402  (beside this script)
import perf_shares  # noqa: E402
import switch_rig  # noqa: E402  (the test rig lives with the tests)
from doc_section import write_section  # noqa: E402

from dplab.measure.resources import parse_vmrss_kib  # noqa: E402
from dplab.planes.ovs import PORTS  # noqa: E402

SIZES = (60, 1514)  # Ethernet frames without FCS: 64 B and 1518 B on a wire
SWITCH_CORE, BLAST_CORE = 0, 1
# The rate-control check, (method, pps): a low rate and one near what the transmit ring
# sustains beside a switch, and a high one for the XDP method.
SET_RATES = (("ring", 100_000), ("ring", 300_000), ("xdp", 800_000))
PERF_SECONDS = 2.0
L3_PROGRAM, FORWARD_PROGRAM = "switch_l3.p4", "switch_forward.p4"
L3_NAME, FORWARD_NAME = "P4 switch, L3", "P4 switch, forward only"
TX_MODES = ("xdp", "ring")  # the lab's default first: the budget is judged on it
L3_ROUTE = {
    "table": "L3Ingress.ipv4_lpm",
    "match": [{"kind": "lpm", "v": "0x0a000200", "plen": 24}],
    "action": {"action": "L3Ingress.ipv4_forward", "args": ["0x020000000002", "0x2"]},
}

SECTION = """## P4 switch

Forwarding rate of `dplab-switch` beside XDP's, the kernel's and OVS's forwarding, measured
in the same run: each forwarder joins two veth ports and works on core {core};
`dplab-pktblast` (`--method xdp`: the kernel redirects frames from an XDP program, no socket
buffer per frame on transmit) offers the same UDP frame as fast as it can from core
{blast_core} into port 1 (GRO on for port 1: veth accepts XDP frames only into a NAPI peer),
and port 2's peer (the sink) counts what arrives and drops it in XDP (`benchmarks/xdp_drop.py`):
veth runs a peer's receive inside the sender's transmit, on the forwarder's core, and a
sink dropping XDP frames in XDP costs next to nothing there, as a NIC between them would (a
socket buffer without XDP's headroom, which the AF_PACKET transmit ring sends, veth first
copies into a page for the program, skb_pp_cow_data: the *tx ring* rows pay that copy per
frame on the switch's core, which XDP frames do not). The row
*sink receiving into its stack* runs the L3 switch once more with a sink that takes every
frame into the kernel's receive path (a socket buffer each, GRO, then IP drops it: it is
addressed to another host), all of it on core {core} inside the switch's send. Median of
{reps} runs of {seconds} s, measured {when} on {host} (kernel {kernel}, 2 cores, shared with
other work; load average at the start {load_start}, at the end {load_end}; core {core} spent
{baseline} of its time in softirq before the runs, with no traffic of ours). The budget is
1 Mpps at 64 B on one core.

| forwarder | packet | offered | forwarded | forwarded | CPU/pkt, core {core} | capacity | counted |
|---|---|---|---|---|---|---|---|
{rows}

- *P4 switch, L3*: `benchmarks/switch_l3.p4` (IPv4 lpm, MAC rewrite, TTL decrement,
  checksum update). *P4 switch, forward only*: `benchmarks/switch_forward.p4` (egress = the
  other port, nothing parsed or rewritten): the floor of the switch's own packet I/O.
  Both receive through an AF_PACKET ring; *(tx xdp)* sends every round's frames for a port
  (8 or more) from an XDP program in one BPF_PROG_TEST_RUN (the lab's default; veth
  takes XDP frames only into a peer that runs NAPI or XDP, as the sink does), *(tx ring)*
  through an AF_PACKET transmit ring (switch/PROTOCOL.md, `--tx`). *OVS*: ovs-vswitchd
  {ovs_version} on its userspace (netdev) datapath, pinned to core {core} with taskset,
  once per port I/O of the ovs plane's option `ports` (`netdev`: AF_PACKET; `netdev-tso`:
  the same with userspace TSO on, the plane's default; `afxdp`: AF_XDP sockets served by a
  busy-polling PMD thread, pinned to core {core} too by pmd-cpu-mask; `afxdp-sleep`: the
  PMD sleeps up to 1 ms while its queues are idle, pmd-maxsleep), proactive OpenFlow
  rules doing the L3 program's work (match IPv4 to 10.0.2.0/24: set
  both MACs, `dec_ttl`, output). *Linux bridge*: a static FDB entry for the frame's
  destination on port 2. *Linux router*: `ip_forward`, a permanent neighbour entry for the next hop.
  *User-space forwarder*: `dplab-fwd` (the userspace plane, switch/fwd) pinned to core {core},
  `router`: one route, the L3 program's work (lookup, TTL, checksum, MACs); `bridge`: its
  learning bridge, the frame's destination never seen as a source, so flooded (to port 2
  alone); AF_PACKET rings as the P4 switch's, transmit ring only.
  *XDP router*: the xdp plane's l3 program (`xdp/l3_router.bpf.c`: LPM-trie lookup, MAC
  rewrite, TTL decrement, checksum update, devmap redirect) on port 1, one route; port 1's
  NAPI, which runs the program, in a kernel thread of its own (threaded NAPI) pinned to
  core {core} (on a NIC it would run in that queue's softirq; veth would otherwise run it
  on the source's core). *Through port 2's qdisc*: the plane's path to a shaped port
  (`xdp/qdisc.h`): the program passes each frame up with its decision as XDP metadata and
  the tc program `tc_qdisc` (tcx ingress) redirects the skb to port 2's egress, through
  its qdisc (veth's default, noqueue: the path's cost, not a shaper's).
- *offered*: frames the source's veth counted as sent, per second.
- *forwarded*: frames that arrived at the sink, per second.
- *CPU/pkt*: CPU time on core {core} counted as the *counted* column says, per frame the
  forwarder sent out of port 2 (veth's tx packets + tx dropped: when the sink falls behind,
  its receive queue drops some frames after the forwarder's work; {sink_dropped});
  *capacity* = 1 / that, the rate one core of its
  own would sustain (derived, neither offered nor forwarded).
  *switch thread, busy rounds*: the switch's data-plane thread in rounds that moved
  packets (it polls; idle rounds are left out).
  *ovs-vswitchd*, *process, all its time* (dplab-fwd, which sleeps in poll when idle):
  the process's user + system time, all threads. *port 1's NAPI thread*:
  that kernel thread's time (tick-sampled), which includes the sink's XDP drop (raised
  inside it). Both include the kernel
  work done in their system calls: the transmit (packet socket or XDP) and the sink's
  receive, which veth runs inside the send (XDP's drop; in the *sink receiving into its
  stack* row, the stack's receive). *core's softirq + irq*: the kernel forwarders have no
  process; RPS on port 1 (`rps_cpus`) moves their stack receive, forwarding, transmit and
  the sink's receive to core {core}, as softirq, counted from /proc/stat (tick-sampled; the
  kernel has no IRQ_TIME_ACCOUNTING; other softirq work on that core counts too, see the
  baseline above). Not counted anywhere: veth's NAPI receive of port 1 (building the socket
  buffer, and for the user-space switches the packet socket's copy into their ring), which
  runs on the source's core.
{perf}
- Rate control, 64 B frames for {seconds} s into the L3 switch's port 1 (`ring`: the
  AF_PACKET transmit ring; `xdp`: calls of up to 4096 frames, each sending what the schedule
  owes):
{set_rates}

{meaning}

Switch memory (RSS) before / after the first L3 switch's runs: {rss} KiB.
BMv2 measured on a machine like this: 27.6 kpps at 64 B.

Reproduce: `sudo .venv/bin/python benchmarks/switch_rate.py --write` (writes this section).
"""


def link_stats(ns: str, ifname: str) -> dict:
    out = subprocess.run(
        ["ip", "-n", ns, "-s", "-j", "link", "show", ifname],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)[0]["stats64"]


def rx_packets(ns: str, ifname: str) -> int:
    return link_stats(ns, ifname)["rx"]["packets"]


def sent_out(ns: str, ifname: str) -> int:
    """Frames a forwarder sent out of a veth port: those the peer took and those its full
    receive queue dropped (veth counts them as the port's tx_dropped)."""
    tx = link_stats(ns, ifname)["tx"]
    return tx["packets"] + tx["dropped"]


def rss_kib(pid: int) -> int | None:
    try:
        return parse_vmrss_kib(Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return None


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def one_run(fwd: forwarders.Forwarder, size: int, seconds: float, pps: int | None = None,
            method: str | None = None) -> dict:
    rig = fwd.rig
    before = rx_packets(rig.host_ns, rig.host_if(2))
    out_before = sent_out(rig.sw_ns, rig.switch_if(2))
    cpu_before = fwd.cpu_seconds()
    offered = rig.blast(forwarders.frame(size), seconds, pps, core=BLAST_CORE, method=method)
    time.sleep(0.2)  # let the last frames drain through the forwarder
    delivered = rx_packets(rig.host_ns, rig.host_if(2)) - before
    forwarded = sent_out(rig.sw_ns, rig.switch_if(2)) - out_before
    cpu = fwd.cpu_seconds() - cpu_before
    return {
        "delivered": delivered,
        "sink_dropped": forwarded - delivered,
        "offered_pps": offered["pps"],
        "delivered_pps": delivered / offered["seconds"],
        "delivered_mbit": delivered * size * 8 / offered["seconds"] / 1e6,
        "cpu_us": cpu / forwarded * 1e6 if forwarded and cpu > 0 else None,
        "capacity_pps": forwarded / cpu if cpu > 0 else None,
        "pktblast": offered,
    }


def summarize(runs: list[dict]) -> dict:
    """Median of every figure over the runs; the runs themselves stay alongside."""
    figures = [k for k in runs[0] if k != "pktblast"]
    summary = {k: median([r[k] for r in runs]) for k in figures}
    summary["runs"] = runs
    return summary


def measure_rows(fwd: forwarders.Forwarder, seconds: float, reps: int) -> dict:
    return {size: summarize([one_run(fwd, size, seconds) for _ in range(reps)]) for size in SIZES}


def perf_breakdown(fwd: forwarders.P4Switch, tmp: Path) -> dict | None:
    """The switch core's time split by perf during one more 64 B run; None without perf."""
    if not perf_shares.available():
        return None
    data = tmp / "switch.perf.data"
    recorder = perf_shares.start(SWITCH_CORE, data)
    try:
        time.sleep(0.3)  # perf opens its events before the first frame
        one_run(fwd, SIZES[0], PERF_SECONDS)
    finally:
        perf_shares.stop(recorder)
    return perf_shares.shares(data, fwd.rig.proc.pid)


def measure_forwarder(fwd: forwarders.Forwarder, seconds: float, reps: int, tmp: Path) -> dict:
    """Its rows; for a P4 switch also the perf split of its core and its memory."""
    switch = fwd if isinstance(fwd, forwarders.P4Switch) else None
    rss_start = rss_kib(switch.rig.proc.pid) if switch else None
    out = {"cpu_counted": fwd.cpu_counted, "rows": measure_rows(fwd, seconds, reps)}
    if switch:
        out["perf"] = perf_breakdown(switch, tmp)
        out["rss_kib"] = [rss_start, rss_kib(switch.rig.proc.pid)]
    return out


def core_softirq_share(core: int, seconds: float = 1.0) -> float:
    """Share of a second the core spends in softirq/irq without our traffic: the noise floor
    of the kernel forwarders' count."""
    before = forwarders.core_irq_seconds(core)
    time.sleep(seconds)
    return (forwarders.core_irq_seconds(core) - before) / seconds


def p4_name(name: str, tx: str) -> str:
    """A P4 switch's row: its program and how it transmits."""
    return f"{name} (tx {tx})"


def inline_name(tx: str) -> str:
    """The row of the L3 switch whose sink receives into its stack."""
    return f"{p4_name(L3_NAME, tx)}, sink receiving into its stack"


def ring_name(tx: str, frames: int) -> str:
    """The row of the L3 switch whose receive ring is `frames` deep."""
    return f"{p4_name(L3_NAME, tx)}, rx ring {frames} frames"


def measure(seconds: float, reps: int, modes: tuple[str, ...] = TX_MODES,
            switch_bin: Path = switch_rig.SWITCH_BIN, p4_only: bool = False,
            rx_frames: tuple[int, ...] = ()) -> dict:
    load_start = os.getloadavg()
    baseline = core_softirq_share(SWITCH_CORE)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        l3_ir = switch_rig.compile_p4(ROOT / "benchmarks" / L3_PROGRAM, tmp)
        forward_ir = switch_rig.compile_p4(ROOT / "benchmarks" / FORWARD_PROGRAM, tmp)
        set_rates: list[dict] = []
        others = []  # each starts only when its `with` enters, after the one before stopped
        for tx in modes:
            switch = {"core": SWITCH_CORE, "tx": tx, "switch_bin": switch_bin}
            with forwarders.p4_switch(p4_name(L3_NAME, tx), l3_ir, [L3_ROUTE],
                                      xdp_sink=True, **switch) as fwd:
                results[fwd.name] = measure_forwarder(fwd, seconds, reps, tmp)
                if not set_rates:  # the source's rate control, once
                    set_rates = [one_run(fwd, SIZES[0], seconds, pps=rate,
                                         method=method)["pktblast"]
                                 for method, rate in SET_RATES]
            others.append(forwarders.p4_switch(p4_name(FORWARD_NAME, tx), forward_ir, [],
                                               xdp_sink=True, **switch))
            others += [forwarders.p4_switch(ring_name(tx, n), l3_ir, [L3_ROUTE], xdp_sink=True,
                                            rx_frames=n, **switch) for n in rx_frames]
        # The lab's default once more with a sink that receives into its stack, which veth
        # runs inside the switch's send: what such a sink costs a forwarder on veth.
        inline = {"core": SWITCH_CORE, "tx": modes[0], "switch_bin": switch_bin}
        others.append(forwarders.p4_switch(inline_name(modes[0]), l3_ir, [L3_ROUTE], **inline))
        if not p4_only:
            others += [forwarders.ovs(SWITCH_CORE, xdp_sink=True, ports=ports)
                       for ports in PORTS]  # every port I/O of the ovs plane
            others += [
                forwarders.xdp_router(SWITCH_CORE, xdp_sink=True),
                forwarders.xdp_router(SWITCH_CORE, xdp_sink=True, qdisc=True),
                forwarders.linux_bridge(SWITCH_CORE, xdp_sink=True),
                forwarders.linux_router(SWITCH_CORE, xdp_sink=True),
                *(forwarders.userspace(SWITCH_CORE, xdp_sink=True, mode=mode)
                  for mode in ("router", "bridge")),
            ]
        for other in others:
            with other as fwd:
                results[fwd.name] = measure_forwarder(fwd, seconds, reps, tmp)
    return {
        "tx": list(modes),
        "switch_bin": str(switch_bin),
        "results": results,
        "set_rates": set_rates,
        "baseline_softirq_share": baseline,
        "load_start": load_start,
        "load_end": os.getloadavg(),
    }


def kpps(pps: float | None) -> str:
    return "—" if pps is None else f"{pps / 1e3:,.0f} kpps"


def micros(us: float | None) -> str:
    return "—" if us is None else f"{us:.2f} µs"


def table_rows(m: dict) -> str:
    rows = []
    for name, result in m["results"].items():
        for size, r in result["rows"].items():
            rows.append(
                f"| {name} | {size + 4} B | {kpps(r['offered_pps'])} | "
                f"{kpps(r['delivered_pps'])} | {r['delivered_mbit']:,.0f} Mbit/s | "
                f"{micros(r['cpu_us'])} | {kpps(r['capacity_pps'])} | {result['cpu_counted']} |"
            )
    return "\n".join(rows)


def sink_drops(m: dict) -> str:
    """The sink's drops per forwarder, as a share of what the forwarder sent at 64 B."""
    parts = []
    for name, result in m["results"].items():
        r = result["rows"][SIZES[0]]
        sent = r["delivered"] + r["sink_dropped"]
        if sent:
            parts.append(f"{name} {r['sink_dropped'] / sent:.0%}")
    return "the sink dropped, at 64 B: " + ", ".join(parts)


def perf_text(m: dict) -> str:
    switches = {name: r["perf"] for name, r in m["results"].items() if "perf" in r}
    if not any(p and p["shares"] for p in switches.values()):
        return "- Where the switch's core time goes: — (perf is not installed)."
    lines = [
        f"- Where the switch's core time goes at 64 B: `perf record -C {SWITCH_CORE} -g` "
        f"during one more {PERF_SECONDS:g} s run per program. Each sample of the switch "
        "counts once, in the first bucket its stack matches: net_rx_action or "
        "process_backlog (the sink's receive), packet_sendmsg (the rest of the transmit), a "
        "kernel leaf frame (other kernel), else user space (`benchmarks/perf_shares.py`).",
        "",
        "| program | switch samples (of the core's busy) | "
        + " | ".join(perf_shares.BUCKETS) + " |",
        "|---|---|" + "---|" * len(perf_shares.BUCKETS),
    ]
    for name, p in switches.items():
        if not p or not p["shares"]:
            lines.append(f"| {name} | — |" + " — |" * len(perf_shares.BUCKETS))
            continue
        share = p["samples"] / p["busy_core_samples"]
        cells = " | ".join(f"{p['shares'][b]:.0%}" for b in perf_shares.BUCKETS)
        lines.append(f"| {name} | {p['samples']:,} ({share:.0%}) | {cells} |")
    return "\n".join(lines) + "\n"


def cpu_us(m: dict, name: str) -> float | None:
    result = m["results"].get(name)  # None: that forwarder was left out (--p4-only)
    return result["rows"][SIZES[0]]["cpu_us"] if result else None


def perf_us(m: dict, name: str, buckets: tuple[str, ...]) -> float | None:
    """The switch's CPU per packet spent in the given perf buckets (µs)."""
    p, us = m["results"][name].get("perf"), cpu_us(m, name)
    if not p or not p["shares"] or us is None:
        return None
    return us * sum(p["shares"][b] for b in buckets)


def meaning(m: dict) -> str:
    """What the figures say about the 1 Mpps budget, from the figures themselves."""
    modes = [tx for tx in m["tx"] if cpu_us(m, p4_name(L3_NAME, tx)) is not None]
    if not modes:
        return "What this means for the budget: — (the switch's CPU per packet was not measured)."
    text = ("What this means for the 1 Mpps budget: one core at 1 Mpps has 1.00 µs per "
            "packet. " + " ".join(_mode_cost(m, tx) for tx in modes))
    text += _kernel_split(m, modes[0])
    l3 = cpu_us(m, p4_name(L3_NAME, modes[0]))
    text += (f" Budget {'met' if l3 <= 1.0 else 'missed'} on this run: the L3 program "
             f"(tx {modes[0]}) needs {l3:.2f} µs per 64 B packet, {1 / l3:.2f} Mpps of one "
             "core.")
    text += _xdp_comparison(m, modes[0])
    kernel_rows = [n for n in ("Linux bridge", "Linux router") if cpu_us(m, n) is not None]
    if kernel_rows:
        text += " For scale, the kernel's own forwarding in softirq: " + ", ".join(
            f"{n} {cpu_us(m, n):.2f} µs" for n in kernel_rows) + " per 64 B packet."
    return text


def _xdp_comparison(m: dict, tx: str) -> str:
    """XDP's capacity against its 3 Mpps-per-core budget, and the P4 switch's as a share of
    it: XDP on veth is the closest this machine has to its forwarding limit."""
    xdp = m["results"].get(forwarders.XdpRouter.name)
    xdp_pps = xdp["rows"][SIZES[0]]["capacity_pps"] if xdp else None
    if xdp_pps is None:
        return ""
    p4_pps = m["results"][p4_name(L3_NAME, tx)]["rows"][SIZES[0]]["capacity_pps"]
    text = (f" The XDP router's core sustains {xdp_pps / 1e6:.2f} Mpps of 64 B frames (budget "
            f"3 Mpps per core: {'met' if xdp_pps >= 3e6 else 'missed'})")
    if p4_pps is not None:
        text += f"; the P4 switch's L3 program (tx {tx}) reaches {p4_pps / xdp_pps:.0%} of it"
    return text + "."


def _mode_cost(m: dict, tx: str) -> str:
    floor, l3 = cpu_us(m, p4_name(FORWARD_NAME, tx)), cpu_us(m, p4_name(L3_NAME, tx))
    how = {"xdp": "Transmitting through XDP (the lab's default)",
           "ring": "Through the AF_PACKET transmit ring"}[tx]
    if floor is None:
        return f"{how}, the L3 program spends {l3:.2f} µs per 64 B packet."
    return (f"{how}, the forward-only switch, which runs no P4 work worth the name, spends "
            f"{floor:.2f} µs per 64 B packet and the L3 program {l3:.2f} µs "
            f"({l3 - floor:+.2f} µs for parsing, the table, the rewrite and the checksum).")


def _kernel_split(m: dict, tx: str) -> str:
    """The kernel's share of the forward-only switch's cost, from perf."""
    name = p4_name(FORWARD_NAME, tx)
    sink = perf_us(m, name, (perf_shares.SINK_RECEIVE,))
    send = perf_us(m, name, (perf_shares.TRANSMIT, perf_shares.OTHER_KERNEL))
    if sink is None or send is None:
        return ""
    text = (f" Of the forward-only {cpu_us(m, name):.2f} µs (tx {tx}), {sink + send:.2f} µs "
            f"is the kernel: {send:.2f} µs the transmit and the rest of the packet I/O, "
            f"{sink:.2f} µs softirq receive work that ran inside the switch's calls.")
    inline = cpu_us(m, inline_name(tx))
    if inline is not None:
        text += (f" With a sink that takes every frame into its stack, which veth runs "
                 f"inside the switch's send, the L3 program needs {inline:.2f} µs per packet.")
    return text


def ovs_version() -> str:
    done = subprocess.run(["ovs-vswitchd", "--version"], capture_output=True, text=True)
    return done.stdout.split()[-1] if done.returncode == 0 else "(version unknown)"


def rate_line(s: dict) -> str:
    """One paced pktblast run: what it was asked for against what it sent."""
    iface = "—" if s["iface_tx_packets"] is None else f"{s['iface_tx_packets']:,}"
    method = "ring" if s["method"] == "tx_ring" else s["method"]
    return (f"  - `{method}`, asked for {s['target_pps'] / 1e3:,.0f} kpps: sent "
            f"{s['sent']:,} frames, {s['pps'] / 1e3:,.1f} kpps ({s['rate_error']:+.2%} off "
            f"the target; its interface counted {iface} frames)")


def section(m: dict, seconds: float, reps: int) -> str:
    loads = {k: ", ".join(f"{x:.1f}" for x in m[k]) for k in ("load_start", "load_end")}
    return SECTION.format(
        core=SWITCH_CORE,
        blast_core=BLAST_CORE,
        reps=reps,
        seconds=f"{seconds:g}",
        when=time.strftime("%Y-%m-%d %H:%M"),
        host=platform.node(),
        kernel=platform.release(),
        baseline=f"{m['baseline_softirq_share']:.0%}",
        rows=table_rows(m),
        sink_dropped=sink_drops(m),
        ovs_version=ovs_version(),
        perf=perf_text(m),
        meaning=meaning(m),
        set_rates="\n".join(rate_line(s) for s in m["set_rates"]),
        rss=" / ".join(str(k) for k in m["results"][p4_name(L3_NAME, m["tx"][0])]["rss_kib"]),
        **loads,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="write into docs/benchmarks.md")
    ap.add_argument("--tx", choices=("ring", "xdp", "both"), default="both",
                    help="how the P4 switch transmits (both: a row for each mode)")
    ap.add_argument("--switch-bin", type=Path, default=switch_rig.SWITCH_BIN,
                    help="the switch build to run (default: this tree's)")
    ap.add_argument("--p4-only", action="store_true", help="leave OVS and the kernel out")
    ap.add_argument("--rx-frames", type=int, nargs="+", default=[],
                    help="also the L3 switch with its receive ring this many frames deep")
    args = ap.parse_args()
    if args.write and (args.p4_only or args.switch_bin != switch_rig.SWITCH_BIN):
        ap.error("--write takes the full comparison with this tree's switch")
    switch_rig.build_switch()
    modes = TX_MODES if args.tx == "both" else (args.tx,)
    m = measure(args.seconds, args.reps, modes, args.switch_bin, args.p4_only,
                tuple(args.rx_frames))
    text = section(m, args.seconds, args.reps)
    print(text)
    print(json.dumps(m, indent=1, default=str))
    if args.write:
        write_section("p4switch", text)


if __name__ == "__main__":
    main()
