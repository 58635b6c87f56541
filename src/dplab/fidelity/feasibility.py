"""Before a run: does an experiment ask for more than this machine forwards faithfully?

Compares each traffic phase's paced load with the calibration (``calibrate``). A phase's
forwarding load is Σ over its paced flows of frames per second × switches on the flow's
path (each switch forwards each frame once): UDP ``rate_mbit`` over its frames (datagram
+ 42 bytes of UDP, IPv4 and Ethernet headers), pps ``pps``, voip one frame per
``packet_ms``. TCP adapts its rate and is left out, ICMP's few frames too. The calibrated
rates are for 64-byte frames through one switch, so larger frames can fail sooner: a
warning is a lower bound on trouble, its absence no promise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx

from dplab.fidelity.calibrate import faithful_text
from dplab.fidelity.verdict import (
    IPERF_UDP_DEFAULT_MBIT,
    IPERF_UDP_DEFAULT_SIZE,
    UDP_FRAME_OVERHEAD,
)


def frames_per_s(flow) -> float:
    """The frames per second a paced flow sends (0 for TCP and ICMP)."""
    params = flow.params
    if flow.kind == "udp":
        size = params.get("size") or IPERF_UDP_DEFAULT_SIZE
        rate = params.get("rate_mbit") or IPERF_UDP_DEFAULT_MBIT
        return rate * 1e6 / 8 / (size + UDP_FRAME_OVERHEAD)
    if flow.kind == "pps":
        return float(params["pps"])
    if flow.kind == "voip":
        return 1000.0 / params.get("packet_ms", 20.0)
    return 0.0


def switches_on_path(graph: nx.Graph, src: str, dst: str) -> int:
    return len(nx.shortest_path(graph, src, dst)) - 2


def warnings(phases: Sequence[Sequence[Any]], graph: nx.Graph, plane_kinds: Sequence[str],
             calibration: dict[str, Any], source: str) -> list[str]:
    """One line per (phase, plane) whose load is over the plane's calibrated faithful rate,
    and per pps flow over pktblast's measured ceiling."""
    out = []
    calibrated = calibration.get("planes", {})
    for number, flows in enumerate(phases, start=1):
        load = sum(frames_per_s(f) * switches_on_path(graph, f.src, f.dst) for f in flows)
        for kind in dict.fromkeys(plane_kinds):
            figures = calibrated.get(kind)
            if figures is None or figures.get("error") or load == 0:
                continue
            if load > (figures.get("faithful_pps") or 0):
                out.append(f"phase {number} asks {kind} to forward {load:,.0f} pps; this "
                           f"machine forwards {faithful_text(figures)} faithfully on {kind} "
                           f"({source}): expect host-bound runs")
        out += _sender_warnings(number, flows, calibration, source)
    return out


def _sender_warnings(number: int, flows: Sequence[Any], calibration: dict[str, Any],
                     source: str) -> list[str]:
    ceiling = calibration.get("pktblast_max_pps")
    if not ceiling:
        return []
    return [f"phase {number}: {f.flow_id} asks for {frames_per_s(f):,.0f} pps; pktblast sends "
            f"at most {ceiling:,.0f} pps here ({source})"
            for f in flows if f.kind == "pps" and frames_per_s(f) > ceiling]
