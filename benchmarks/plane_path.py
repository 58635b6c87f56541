"""Latency added per hop and single-flow TCP throughput: p4 vs OVS vs Linux bridge (and router)
vs the user-space forwarder (dplab-fwd).

    sudo .venv/bin/python benchmarks/plane_path.py [--repeat 3] [--hops 4] [--no-tcp]
                                                   [--tx xdp|ring]
                                                   [--cpu-idle machine poll] [--write]

Every plane forwards between two hosts on one switch (catalog ``single``, links unshaped).
Beside it, a direct veth pair between two more hosts stays up for the whole repetition: the
floor every switch adds to. Per plane and repetition:

- one-way delay: a paced UDP stream (rtp_tool through the ``voip`` workload: 1000 packets
  at 200 pps, 32-byte payload) through the switch and, at the same time, one over the
  direct pair, half a period apart. The receivers take kernel receive stamps and all
  namespaces share one clock, so each packet's delay is exact. Added per hop = the switch
  path's figure minus the direct pair's (p50, p99, mean each on its own). Measuring both
  at once keeps the shared machine's drift out of the difference;
- per-hop slope: the same across a ``linear`` chain of ``--hops`` switches, (added by the
  chain − added by one switch) / (hops − 1), which leaves the host ends out;
- TCP: one iperf2 flow for 10 s, first with the offloads the plane leaves (its default),
  then with ``tx``/``tso``/``gso`` off on every host and switch port (every plane moving
  wire-sized frames; a plane already in that state is not measured twice). The direct
  pair's TCP is measured alone at the start of the repetition. ``--no-tcp`` leaves TCP out
  (a quick latency-only run).

``--cpu-idle`` (default both): the one-way delay rows under each idle behaviour of the
CPUs (experiment field ``cpu_idle``: ``machine`` leaves it as it is, ``poll`` holds a 0 µs
PM QoS wake-up latency request so idle CPUs poll instead of halting); another configuration
dimension, interleaved with the planes. TCP runs under ``machine`` unless only ``poll`` is
named.

``--tx`` is the p4 plane's option ``tx``: how its switches transmit (XDP, the plane's
default, or the AF_PACKET ring; switch/PROTOCOL.md ``--tx``); the section names it.

Configurations interleave within a repetition so drift of the shared machine hits all alike.
Medians over repetitions (with min–max); ``--write`` replaces this benchmark's section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import networkx as nx
from doc_section import machine_line, write_section  # beside this script

from dplab import planes
from dplab.measure.resources import ResourceSampler
from dplab.report import cpu_idle as idle_report
from dplab.substrate import Network, cpu_idle, registry
from dplab.substrate.network import HOST_IF
from dplab.topology import catalog
from dplab.topology.model import HOST, Topology
from dplab.workloads.flows import Flow, run_flows

# Every offload off on the given interfaces: the "offloads off" TCP column.
OFFLOADS_OFF = ("for i in \"$@\"; do ethtool -K \"$i\" tx off tso off gso off >/dev/null "
                "|| exit 1; done")

DIRECT = "direct veth"
# label -> (plane kind, options); DIRECT has no plane at all.
PLANES: dict[str, tuple[str, dict]] = {
    "bridge": ("bridge", {}),
    "ovs-proactive": ("ovs", {"mode": "proactive"}),  # its default ports: netdev-tso
    # The ovs plane's other port I/O (option ports, dplab.planes.ovs.PORTS): the links here
    # are unshaped, so the AF_XDP ones may run.
    "ovs-netdev": ("ovs", {"mode": "proactive", "ports": "netdev"}),
    "ovs-afxdp": ("ovs", {"mode": "proactive", "ports": "afxdp"}),
    "ovs-afxdp-sleep": ("ovs", {"mode": "proactive", "ports": "afxdp-sleep"}),
    "p4-proactive": ("p4", {"mode": "proactive"}),
    "router": ("router", {}),
    "userspace-bridge": ("userspace", {}),  # dplab-fwd, a learning bridge per switch
    "userspace-router": ("userspace", {"mode": "router"}),
}
READY_TIMEOUT_S = 60.0
OWD_BUDGET_US = 20.0
TCP_BUDGET_GBIT = 2.0
# ethtool -k names -> short names. TSO is read from its IPv4 sub-feature: the top-level line
# stays "on" while any sub-feature (6.18: tx-tcp-accecn-segmentation) is on.
FEATURES = {"tx-checksumming": "tx", "tx-tcp-segmentation": "tso",
            "generic-segmentation-offload": "gso"}
ALL_OFF = "tx off tso off gso off"
TCP_PAYLOAD_BYTES = 1448  # MSS on a 1500-byte MTU with TCP timestamps


class Config(NamedTuple):
    """One row of the tables: a path (DIRECT or a plane label) under one CPU idle setting."""

    path: str
    cpu_idle: str  # "machine" | "poll" (dplab.substrate.cpu_idle.SETTINGS)


def tcp_idle_setting(settings: list[str]) -> str:
    """TCP is measured under one setting only: machine, unless only poll was asked for."""
    return "machine" if "machine" in settings else "poll"


@dataclass(frozen=True)
class Sizes:
    """How much traffic each measurement sends."""

    packets: int = 1000
    packet_ms: float = 5.0  # 200 pps: low load, every packet meets an idle path
    payload: int = 32
    tcp_s: float | None = 10.0  # None: no TCP measurement


# ------------------------------------------------------------------ networks


def direct_pair() -> Topology:
    """Two hosts on one unshaped veth pair: the floor of the one-way delay."""
    graph = nx.Graph()
    graph.add_nodes_from(["h1", "h2"], kind=HOST)
    graph.add_edge("h1", "h2", bw_mbit=None, delay_ms=0.0, loss_pct=0.0)
    return Topology("pair", graph)


def chain(switches: int) -> Topology:
    """One switch with two hosts, or a chain of switches with a host at each end; unshaped."""
    unshaped = {"core_bw": None, "edge_bw": None}
    if switches == 1:
        return catalog.build("single", hosts=2, **unshaped)
    return catalog.build("linear", switches=switches, hosts_per_switch=1, **unshaped)


def ends(topo: Topology) -> tuple[str, str]:
    hosts = topo.hosts()
    return hosts[0], hosts[-1]


@contextlib.contextmanager
def forwarding(label: str, topo: Topology) -> Iterator[Network]:
    """The network up with plane ``label`` forwarding on it (DIRECT: the bare network)."""
    if label == DIRECT:
        with Network(topo) as net:
            yield net
        return
    kind, options = PLANES[label]
    with planes.running(kind, options, topo, READY_TIMEOUT_S) as (net, _):
        yield net


# ------------------------------------------------------------------ measurements


def one_way_delay(net: Network, sizes: Sizes, phase_ms: float) -> dict[str, float | None]:
    """Mean, p50, p99 one-way delay (µs) and packet counts of one paced UDP stream whose
    packets leave `phase_ms` into each period of the machine's monotonic clock."""
    src, dst = ends(net.topo)
    flow = Flow("owd", "voip", src, dst, {"duration": sizes.packets * sizes.packet_ms / 1000,
                                          "packet_ms": sizes.packet_ms,
                                          "payload": sizes.payload,
                                          "phase_ms": phase_ms})
    result = run_flows(net, [flow])[0]
    summary = result.summary
    return {
        "error": result.error,
        "owd_mean_us": _us(summary.get("owd_ms")),
        "owd_p50_us": _us(summary.get("owd_p50_ms")),
        "owd_p99_us": _us(summary.get("owd_p99_ms")),
        "packets_sent": summary.get("packets_sent"),
        "packets_received": summary.get("packets_received"),
    }


def _us(ms: float | None) -> float | None:
    return None if ms is None else ms * 1000


def tcp_gbit(net: Network, seconds: float) -> dict[str, float | None]:
    """Goodput (Gbit/s, receiver side) of one iperf2 TCP flow between the end hosts, and
    where the CPU went meanwhile: the plane's processes (switch daemons, controller) and
    the machine's softirq time, where a kernel data path shows up."""
    src, dst = ends(net.topo)
    switch_namespaces = {net.switch_ns(s) for s in net.topo.switches()}
    with ResourceSampler(switch_namespaces) as sampler:
        result = run_flows(net, [Flow("tcp", "tcp", src, dst, {"duration": seconds})])[0]
    bps = result.summary.get("throughput_bps")
    cpu = sampler.stats()
    user, system = cpu["cpu_user_pct"], cpu["cpu_sys_pct"]
    return {"gbit": None if bps is None else bps / 1e9,
            "plane_cpu_pct": None if user is None or system is None else user + system,
            "softirq_pct": cpu["host_softirq_pct"]}


def host_offloads(net: Network) -> str:
    """tx/tso/gso state of the first host's interface, as ethtool reports it."""
    shown = net.run(net.host_ns(ends(net.topo)[0]), ["ethtool", "-k", HOST_IF]).stdout
    states = {}
    for line in shown.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in FEATURES:
            states[FEATURES[name.strip()]] = value.split()[0]
    return " ".join(f"{short} {states.get(short, '?')}" for short in FEATURES.values())


def offloads_off(net: Network) -> None:
    """tx checksum, TSO and GSO off on every host and switch port."""
    jobs = {net.host_ns(h): [HOST_IF] for h in net.topo.hosts()}
    for switch in net.topo.switches():
        jobs.setdefault(net.switch_ns(switch), []).extend(net.switch_ports(switch).values())
    for ns, interfaces in jobs.items():
        net.run(ns, ["sh", "-c", OFFLOADS_OFF, "sh", *interfaces])


def paired_delay(net: Network, floor_net: Network, sizes: Sizes) -> tuple[dict, dict]:
    """One stream through ``net`` and one over the direct pair, at the same time: both meet
    the same minutes of the shared machine, so their difference is what the path adds. The
    two interleave, half a period apart: in step, the floor's sender and receiver would wake
    with the measured packet and compete with it for the two cores."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        path = pool.submit(one_way_delay, net, sizes, 0.0)
        floor = pool.submit(one_way_delay, floor_net, sizes, sizes.packet_ms / 2)
        return path.result(), floor.result()


def tcp_figures(net: Network, sizes: Sizes) -> dict[str, float | str | None]:
    """TCP with the offloads the plane left, then with offloads off (unless already so)."""
    figures: dict[str, float | str | None] = {"offloads": host_offloads(net)}
    measured = tcp_gbit(net, sizes.tcp_s)
    figures.update({f"tcp_default_{key}": value for key, value in measured.items()})
    if figures["offloads"] != ALL_OFF:  # else the same setting: not measured twice
        offloads_off(net)
        measured = tcp_gbit(net, sizes.tcp_s)
    figures.update({f"tcp_off_{key}": value for key, value in measured.items()})
    return figures


def measure_plane(label: str, floor_net: Network, hops: int,
                  sizes: Sizes) -> tuple[dict, list[dict]]:
    """The plane's figures (one switch, and the chain if hops > 1) and the direct pair's
    delays measured beside them."""
    with forwarding(label, chain(1)) as net:
        path, floor = paired_delay(net, floor_net, sizes)
        figures = {**path, **added(path, floor)}
        if sizes.tcp_s is not None:
            figures.update(tcp_figures(net, sizes))
    floors = [floor]
    if hops > 1:
        with forwarding(label, chain(hops)) as net:
            far, far_floor = paired_delay(net, floor_net, sizes)
        floors.append(far_floor)
        figures["chain_added_p50_us"] = _minus(far["owd_p50_us"], far_floor["owd_p50_us"])
        figures["slope_p50_us"] = _per_hop(figures["chain_added_p50_us"],
                                           figures["added_p50_us"], hops)
    return figures, floors


def added(path: dict, floor: dict) -> dict[str, float | None]:
    return {f"added_{stat}_us": _minus(path[f"owd_{stat}_us"], floor[f"owd_{stat}_us"])
            for stat in ("mean", "p50", "p99")}


# ------------------------------------------------------------------ the run


def run(repeat: int, hops: int, sizes: Sizes, labels: list[str],
        settings: list[str]) -> dict[Config, list[dict]]:
    """Per configuration, one dict of figures per measurement. The direct pair stays up
    for a whole repetition: its TCP is measured alone, its delay beside every plane. Each
    plane is measured under every idle setting in turn, the setting held from before its
    network comes up until after its teardown."""
    tcp_setting = tcp_idle_setting(settings)
    rows: dict[Config, list[dict]] = {Config(path, setting): []
                                      for path in [DIRECT, *labels] for setting in settings}
    for rep in range(repeat):
        with forwarding(DIRECT, direct_pair()) as floor_net:
            if sizes.tcp_s is not None:
                with cpu_idle.idle_behaviour(tcp_setting):
                    floor_tcp = tcp_figures(floor_net, sizes)
                rows[Config(DIRECT, tcp_setting)].append(floor_tcp)
                print(f"rep {rep + 1}: {DIRECT} ({tcp_setting}): {_brief(floor_tcp)}",
                      flush=True)
            for label in labels:
                for setting in settings:
                    measured = sizes if setting == tcp_setting else replace(sizes, tcp_s=None)
                    with cpu_idle.idle_behaviour(setting):
                        watch = cpu_idle.IdleWatch(setting)
                        figures, floors = measure_plane(label, floor_net, hops, measured)
                        figures["polled_share"] = watch.finish().polled_share
                    rows[Config(label, setting)].append(figures)
                    rows[Config(DIRECT, setting)].extend(floors)
                    print(f"rep {rep + 1}: {label} ({setting}): {_brief(figures)}",
                          flush=True)
    return rows


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _per_hop(far: float | None, near: float | None, hops: int) -> float | None:
    return None if far is None or near is None else (far - near) / (hops - 1)


def _brief(figures: dict) -> str:
    return ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in figures.items())


# ------------------------------------------------------------------ the table


def spread(values: list, digits: int = 1) -> str:
    """Median [min–max] over the measurements; — when none measured it."""
    got = [v for v in values if isinstance(v, int | float)]
    if not got:
        return "—"
    if len(got) == 1:
        return f"{got[0]:.{digits}f}"
    return (f"{statistics.median(got):.{digits}f} "
            f"[{min(got):.{digits}f}–{max(got):.{digits}f}]")


def verdict(values: list, ok: Callable[[float], bool]) -> str:
    got = [v for v in values if isinstance(v, int | float)]
    return "—" if not got else ("meets" if ok(statistics.median(got)) else "misses")


def columns(reps: list[dict]) -> dict[str, list]:
    return {key: [r.get(key) for r in reps] for key in {k for r in reps for k in r}}


def latency_table(rows: dict[Config, list[dict]], hops: int) -> list[str]:
    slope = f"per-hop slope p50, {hops}-switch chain (µs)" if hops > 1 else "per-hop slope"
    lines = [f"| path | CPU idle (idle time polled) | OWD p50 (µs) | added p50 (µs) "
             f"| added p99 (µs) | added mean (µs) | {slope} | packets received/sent |",
             "|---|---|---|---|---|---|---|---|"]
    for config, reps in rows.items():
        col = columns(reps)
        received = sum(r.get("packets_received") or 0 for r in reps)
        sent = sum(r.get("packets_sent") or 0 for r in reps)
        cells = [spread(col.get(key, [])) for key in (
            "owd_p50_us", "added_p50_us", "added_p99_us", "added_mean_us", "slope_p50_us")]
        idle = idle_report.setting_with_share(config.cpu_idle, col.get("polled_share", []))
        lines.append(f"| {config.path} | {idle} "
                     f"| {' | '.join(cells)} | {received:.0f}/{sent:.0f} |")
    return lines


def tcp_table(rows: dict[Config, list[dict]]) -> list[str]:
    lines = ["| path | host offloads as the plane leaves them | TCP, plane's offloads (Gbit/s) "
             "| plane CPU (% of a core) | softirq (% of all cores) "
             "| TCP, offloads off (Gbit/s) | plane CPU (% of a core) | softirq (% of all cores) |",
             "|---|---|---|---|---|---|---|---|"]
    tcp_setting = tcp_idle_setting([config.cpu_idle for config in rows])
    for config, reps in rows.items():
        if config.cpu_idle != tcp_setting:
            continue  # TCP is measured under one idle setting only
        col = columns(reps)
        offloads = " / ".join(sorted({o for o in col.get("offloads", []) if o}))
        cells = []
        for setting in ("default", "off"):
            cells += [spread(col.get(f"tcp_{setting}_gbit", []), digits=2),
                      spread(col.get(f"tcp_{setting}_plane_cpu_pct", []), digits=0),
                      spread(col.get(f"tcp_{setting}_softirq_pct", []), digits=0)]
        lines.append(f"| {config.path} | {offloads} | {' | '.join(cells)} |")
    return lines


def budgets(rows: dict[Config, list[dict]]) -> list[str]:
    lines = [f"| plane | CPU idle | added p50 ≤ {OWD_BUDGET_US:g} µs "
             f"| TCP ≥ {TCP_BUDGET_GBIT:g} Gbit/s (plane's offloads) |", "|---|---|---|---|"]
    for config, reps in rows.items():
        if config.path == DIRECT:
            continue
        added = [r.get("added_p50_us") for r in reps]
        tcp = [r.get("tcp_default_gbit") for r in reps]
        lines.append(f"| {config.path} | {config.cpu_idle} "
                     f"| {verdict(added, lambda v: v <= OWD_BUDGET_US)} "
                     f"| {verdict(tcp, lambda v: v >= TCP_BUDGET_GBIT)} |")
    return lines


def p4_transmit(tx: str) -> None:
    """Runs the p4 plane's switches with transmit mode ``tx`` (its option ``tx``)."""
    kind, options = PLANES["p4-proactive"]
    PLANES["p4-proactive"] = (kind, {**options, "tx": tx})


def p4_transmit_note() -> list[str]:
    tx = PLANES["p4-proactive"][1].get("tx", "xdp")
    how = "through XDP" if tx == "xdp" else "through the AF_PACKET transmit ring"
    return [f"- p4: the switches transmit {how} (p4 plane option `tx: {tx}`, "
            "switch/PROTOCOL.md `--tx`)."]


def render(rows: dict[Config, list[dict]], repeat: int, hops: int, sizes: Sizes,
           load: tuple[str, str], command: str) -> str:
    return "\n".join([
        "## Per-hop latency and single-flow TCP through one switch",
        "",
        machine_line(),
        f"Load average (1 min) at the start: {load[0]}, at the end: {load[1]}. "
        f"Median [min–max] of {repeat} repetitions, configurations interleaved.",
        "",
        "### One-way delay added per hop (low load)",
        "",
        *latency_table(rows, hops),
        "",
        "### One TCP flow through one switch",
        "",
        *tcp_heading(rows),
        *tcp_table(rows),
        "",
        "### Budgets (medians)",
        "",
        *budgets(rows),
        "",
        *notes(sizes, hops, rows),
        *CPU_IDLE_NOTE,
        *p4_transmit_note(),
        "",
        f"Reproduce: `{command}`",
    ])


def notes(sizes: Sizes, hops: int, rows: dict[Config, list[dict]]) -> list[str]:
    """What each figure is, how it was measured, and where the time goes."""
    return [
        f"- One-way delay: {sizes.packets} UDP packets at {1000 / sizes.packet_ms:g} pps, "
        f"{sizes.payload}-byte payload (rtp_tool: send time in the payload, kernel receive",
        "  stamp, one shared clock), host to host through one switch (`single`, unshaped).",
        "  `added` = the plane's figure minus that of a second stream sent at the same time",
        f"  over a `{DIRECT}` pair (kept up for the repetition), each statistic on its own (a",
        "  difference of percentiles, not a percentile of differences); the two streams",
        "  together are 400 pps, interleaved half a period apart (voip `phase_ms`) so the",
        "  floor's sender and receiver do not wake with the measured packet and take a core",
        "  from it. The `direct veth` row's OWD is those concurrent floor",
        "  streams. One switch hop adds a forwarding step and one more veth crossing. The",
        "  absolute OWD includes the sender's Python between stamping and `sendto`; it",
        "  cancels in `added`.",
        *slope_note(hops),
        f"- TCP: {tcp_run(sizes)}, receiver's goodput. CPU during the flow:",
        "  `plane CPU` = the plane's processes in the switch namespaces (switch daemons, P4Runtime",
        "  servers, controller; — for bridge/router, which have none), `softirq` = the whole",
        "  machine's softirq time, where the kernel's packet path (veth, bridge, routing) runs.",
        "  `plane's offloads` = as the plane leaves the interfaces: bridge and router keep",
        "  the veth defaults (checksum offload, TSO, GSO on: the kernel moves 64 KiB",
        "  segments, never cut into frames inside the namespaces); `ovs-proactive` runs the",
        "  ovs plane's default ports, `netdev-tso` (AF_PACKET with userspace TSO: offloads",
        "  stay on, OVS forwards super-packets with their virtio-net header); `ovs-netdev`",
        "  (AF_PACKET without it) and `ovs-afxdp`/`ovs-afxdp-sleep` (AF_XDP ports, a PMD",
        "  thread busy polling, or sleeping up to 1 ms when idle) need `tx off` (a checksum",
        "  left to offload would never be filled in), which also drops TSO (GSO stays on, so",
        "  segments are cut into frames before they reach the switch); the p4 plane keeps",
        "  them on, its switch finishes checksums and cuts",
        "  super-packets into frames itself. `offloads off` = `tx`, `tso` and `gso` off on",
        "  every host and switch port, for every plane: the like-for-like comparison of",
        "  per-packet forwarding cost. Where a plane already runs in that state the figure",
        "  is the same measurement.",
        "- Where the time goes. The p4 switch (`dplab-switch`) moves every frame through",
        "  AF_PACKET rings in user space: two more kernel crossings per frame than a bridge,",
        "  and at low load its thread sleeps between packets; waking it costs tens of µs on",
        "  a VM. It spins only where a packet is likely: after traffic for a window tied to",
        "  the recent gap, and for a steady paced stream (as here) from a timer wake shortly",
        "  before each expected packet until it comes (at most 1/8 of the period, ≈ 2-5 % of",
        "  a core at 200 pps); packets outside that window pay the wake-up",
        "  (`switch/src/dataplane/arrivals.rs`). On that timer wake it also rehearses the",
        "  latest packet (a pipeline pass that changes nothing): a lone packet after an",
        "  idle spell cost the interpreter ~10 µs with cold caches, ~1-2 µs rehearsed",
        "  (switch/src/pipeline/bench.rs `l3_lone_packet_ns`). The scheduler of this VM wakes",
        "  a task on the core it last ran on even while that core is busy: a paced sender",
        "  waking on the switch's spinning core made the switch pick its packet up ~15 µs",
        "  late (traced, session 6). After two such pickups in a row the switch's thread",
        "  moves to the other core (`switch/src/dataplane/placement.rs`; `dataplane_moves` in",
        "  its stats); a move after which it is crowded again doubles the wait before the",
        "  next. On the same timer wake it sends one throw-away frame into the loopback of",
        "  its own namespace, through a transmit ring as a port does, so the kernel's send",
        "  path is warm too (`switch/src/dataplane/warmup.rs`; `warmups` in its stats):",
        "  traced, send() to the receiver's stamp took ~8-9 µs without, ~5 µs with it",
        "  (session 7). Traced at one hop, uncrowded, per packet: ~5-7 µs from the kernel's",
        "  stamp to the switch's pickup (the kernel's receive path runs in the sender's",
        "  context), ~1 µs reading the frame, ~2 µs pipeline, ~2 µs to fill the transmit",
        "  ring, ~5 µs of the kernel's send path up to the receiver's stamp. In a chain every",
        "  switch is its own process, sharing two cores",
        "  with the P4Runtime servers, the controller and the traffic, and each switch",
        "  receives inside the previous one's send(), so neighbours on one core wait for",
        "  each other: the wake-ups and waits add up per switch. OVS's netdev datapath",
        "  (no DPDK here) is user space too, all",
        "  bridges in one ovs-vswitchd. Bridge and router stay in the kernel's softirq",
        "  path, run in the sender's own context: no process to wake.",
        *tcp_cost_note(rows),
    ]


CPU_IDLE_NOTE = [
    "- CPU idle: on this VM an idle vCPU halts, and waking it exits to the hypervisor:",
    "  ~10-30 µs on every wake-up of a sleeping thread (a switch daemon, a receiver, a",
    "  sender's timer). `poll` holds a 0 µs PM QoS wake-up latency request",
    "  (/dev/cpu_dma_latency, experiment field `cpu_idle`) from before a plane's network",
    "  comes up until after its teardown, so idle CPUs poll and a wake-up is a flag check;",
    "  `machine` leaves idle behaviour as the machine has it. Every plane and the direct",
    "  pair get the same treatment; the percentage is the measured share of idle time",
    "  spent polling.",
]


def tcp_heading(rows: dict[Config, list[dict]]) -> list[str]:
    return [f"CPU idle: {tcp_idle_setting([config.cpu_idle for config in rows])}.", ""]


def tcp_run(sizes: Sizes) -> str:
    if sizes.tcp_s is None:
        return "not measured in this run (`--no-tcp`); else one iperf2 flow"
    return f"one iperf2 flow, {sizes.tcp_s:g} s"


def tcp_cost_note(rows: dict[Config, list[dict]]) -> list[str]:
    """Frames per second the p4 switch carried in its TCP run, from the measured goodput."""
    reps = [r for config, runs in rows.items() if config.path == "p4-proactive" for r in runs]
    gbit = [r["tcp_default_gbit"] for r in reps if r.get("tcp_default_gbit") is not None]
    cpu = [r["tcp_default_plane_cpu_pct"] for r in reps
           if r.get("tcp_default_plane_cpu_pct") is not None]
    if not gbit or not cpu:
        return []
    kfps = statistics.median(gbit) * 1e9 / (TCP_PAYLOAD_BYTES * 8) / 1000
    return [f"- p4 TCP: {statistics.median(gbit):.2f} Gbit/s of goodput is ≈ {kfps:.0f} k data "
            f"frames/s ({TCP_PAYLOAD_BYTES} B of payload each) plus their ACKs the other way,",
            "  every one through the switch's pipeline on its own (hosts hand over TSO",
            "  super-packets, the switch cuts them into wire segments, and joins in-order",
            "  segments of a flow again on output: switch/PROTOCOL.md), while its processes got "
            f"{statistics.median(cpu):.0f} % of a core; iperf's two ends and the kernel's veth",
            "  work took the rest of the two cores. Compare the switch's own rate (P4 switch",
            "  section: packets per second of one fully busy core)."]


def slope_note(hops: int) -> list[str]:
    if hops == 1:
        return ["- Per-hop slope: not measured in this run (`--hops 1`)."]
    return [f"- Per-hop slope: the same stream across a `linear` chain of {hops} switches, "
            f"(added by the chain − added by one switch) / {hops - 1}: what each further "
            "switch adds, host ends left out."]


def load_1min() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hops", type=int, default=4,
                        help="switches in the chain for the per-hop slope (1 = skip)")
    parser.add_argument("--planes", nargs="+", default=list(PLANES), choices=list(PLANES))
    parser.add_argument("--no-tcp", action="store_true", help="measure the one-way delay only")
    parser.add_argument("--tx", choices=("xdp", "ring"), default="xdp",
                        help="how the p4 plane's switches transmit (its option tx)")
    parser.add_argument("--cpu-idle", nargs="+", default=list(cpu_idle.SETTINGS),
                        choices=cpu_idle.SETTINGS,
                        help="idle behaviours of the CPUs to measure the delay under")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    p4_transmit(args.tx)
    if args.repeat < 1 or args.hops < 1:
        parser.error("--repeat and --hops must be >= 1")
    registry.cleanup_on_signals()
    registry.reclaim_stale()
    start_load = load_1min()
    sizes = Sizes(tcp_s=None) if args.no_tcp else Sizes()
    settings = list(dict.fromkeys(args.cpu_idle))
    rows = run(args.repeat, args.hops, sizes, args.planes, settings)
    command = "sudo .venv/bin/python benchmarks/plane_path.py " + " ".join(sys.argv[1:])
    section = render(rows, args.repeat, args.hops, sizes, (start_load, load_1min()),
                     command.strip())
    print(section)
    if args.write:
        write_section("planepath", section)


if __name__ == "__main__":
    main()
