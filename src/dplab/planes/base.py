"""The interface every data plane implements (see docs/architecture.md, planes)."""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, NamedTuple

import networkx as nx
import numpy as np

from dplab.planes.hop_distances import hop_rows
from dplab.substrate.network import Network

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dplab.topology.model import Topology
    from dplab.workloads.flows import Flow


# switch -> (src MAC, dst MAC, lower case) -> packets the switch's path rules for the pair
# forwarded
RulePackets = dict[str, dict[tuple[str, str], int]]
# Option ``ready`` of the planes that list it: "ping" (ready once the farthest hosts ping
# each other) or "started" (ready once start() returned: its programs attached, its entries
# written; for a program that forwards nothing, such as a drop program, through which no
# ping could ever pass).
READY_WAYS = ("ping", "started")


class PlaneError(RuntimeError):
    """A plane was misconfigured or did not become ready; the message says which and why."""


class SeriesPoint(NamedTuple):
    """One value a plane recorded at a moment of a run (the store's plane_series table)."""

    t: float  # s since the run's traffic began; negative: before it
    series: str  # "<metric>:<subject>", e.g. "rate_bps:s3:class1"
    value: float | None  # None: not measured at that moment


class Plane(ABC):
    """One data plane on every switch of a Network.

    Subclasses set ``kind``, ``addressing`` ("l2"/"l3": what the Network must build) and
    ``shared_switch_ns``, and list the option keys they accept in ``OPTIONS`` (key -> default).
    """

    kind: str = ""
    addressing: str = "l2"
    shared_switch_ns: bool = False
    OPTIONS: dict[str, Any] = {}
    # Host pairs the readiness ping should not use (cold flows' pairs, set by the runner):
    # a ping across them would leave the forwarding state their first packets must set up.
    avoid_pairs: frozenset[frozenset[str]] = frozenset()

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise PlaneError(f"plane {self.kind!r}: unknown option {unknown[0]!r} "
                             f"(known: {sorted(self.OPTIONS) or 'none'})")
        self.options = {**self.OPTIONS, **options}
        if self.options.get("ready", "ping") not in READY_WAYS:
            raise PlaneError(f"plane {self.kind!r}: option 'ready' must be one of "
                             f"{', '.join(READY_WAYS)}, not {self.options['ready']!r}")

    def pings_when_ready(self) -> bool:
        """Whether wait_ready() ends with the readiness ping (option ``ready``, READY_WAYS)."""
        return self.options.get("ready", "ping") == "ping"

    def network(self, topo: Topology) -> Network:
        """The (not yet up) Network this plane runs on for ``topo``. Planes that replace the
        switches (the baselines) build a different one; PlaneError if ``topo`` does not fit."""
        return Network(topo, addressing=self.addressing, shared_switch_ns=self.shared_switch_ns)

    @abstractmethod
    def start(self, net: Network) -> None:
        """Configure the switches of ``net`` and start daemons/controller."""

    @abstractmethod
    def wait_ready(self, timeout: float) -> None:
        """Return once the plane forwards; raise PlaneError if not within ``timeout`` s."""

    @abstractmethod
    def stats(self) -> dict[str, float | None]:
        """Plane counters (e.g. packet_ins, flow_installs, setup_ms); None = not measured."""

    def series(self, traffic_began: float) -> list[SeriesPoint]:
        """What the plane recorded over the run, with times relative to ``traffic_began``
        (a ``time.monotonic()`` reading). Called with ``stats()``, before ``stop()``, while
        the run directory still exists. Most planes record nothing over time."""
        return []

    def info(self) -> dict[str, str]:
        """How the plane forwards, as the report states it beside the results (e.g. OVS's
        datapath and port type): name -> text. Known once the plane is created."""
        return {}

    def flow_paths(self, flows: Sequence[Flow]) -> dict[str, list[str]]:
        """flow_id -> the switches the flow's src -> dst packets crossed, in order, as the
        plane's own rules or counters tell; called after each traffic phase. Flows it cannot
        tell are left out (most planes keep no per-flow state)."""
        return {}

    def path_rule_packets(self) -> RulePackets | None:
        """Under a controller: switch -> (src MAC, dst MAC) -> packets the switch's path
        rules for the pair forwarded so far, every rule the switch holds (0 when unhit);
        flow_paths is told by it. None: the plane keeps no rule per host pair."""
        return None

    def failures(self) -> list[str]:
        """Why the plane is no longer the plane as configured: one line per daemon of it
        that has exited (which, how, where its log is). Empty while all of them run, and
        for planes without daemons. The runner asks after every traffic phase: a run whose
        plane lost a daemon is failed, whatever its flows measured."""
        return []

    def drops(self) -> dict[str, int] | None:
        """Packets the plane's own daemons dropped so far, by where (``<port> <reason>``),
        counted since they started; the fidelity monitor takes the difference over the
        traffic. None: this plane keeps no such counts (the kernel's are read elsewhere)."""
        return None

    @abstractmethod
    def stop(self) -> None:
        """Stop daemons; idempotent (whatever runs in the namespaces dies with them anyway)."""


def farthest_hosts(net: Network,
                   avoid: frozenset[frozenset[str]] = frozenset()) -> tuple[str, str]:
    """The host pair with the most hops between them (ties: first in host order), not one of
    ``avoid`` unless every pair is."""
    graph = net.topo.graph
    hosts = net.topo.hosts()
    index = {h: i for i, h in enumerate(hosts)}
    nodes = hosts + [n for n in graph if n not in index]
    avoided = [sorted((index[a], index[b])) for a, b in (tuple(p) for p in avoid if len(p) == 2)
               if a in index and b in index]
    best = (0, len(hosts) - 1, -1.0)
    for first, rows in hop_rows(graph, nodes, range(len(hosts))):
        hops = np.where(np.isfinite(rows[:, :len(hosts)]), rows[:, :len(hosts)], -1.0)
        # Only pairs (src, dst) with dst after src count, as unreachable ones never win.
        hops[np.arange(len(hosts))[None, :] <= np.arange(first, first + len(hops))[:, None]] = -2
        for a, b in avoided:
            if first <= a < first + len(hops):
                hops[a - first, b] = -2
        row, col = divmod(int(np.argmax(hops)), len(hosts))  # first of the block's longest
        if hops[row, col] > best[2]:
            best = (first + row, col, float(hops[row, col]))
    return hosts[best[0]], hosts[best[1]]


def paths_from_rule_packets(net: Network, flows: Sequence[Flow],
                            counted: RulePackets) -> dict[str, list[str]]:
    """flow_id -> the switches whose path rules for the flow's (src MAC, dst MAC) forwarded
    packets, ordered by hops from the source host; flows no rule counted are left out."""
    paths = {}
    for flow in flows:
        pair = (net.host_mac(flow.src).lower(), net.host_mac(flow.dst).lower())
        crossed = [s for s, rules in counted.items() if rules.get(pair, 0) > 0]
        if crossed:
            hops = nx.single_source_shortest_path_length(net.topo.graph, flow.src)
            paths[flow.flow_id] = sorted(crossed, key=lambda s: hops.get(s, len(hops)))
    return paths


def ping_until(net: Network, src: str, dst: str, deadline: float) -> bool:
    """Ping ``dst`` from ``src`` until one answer or ``deadline`` (monotonic): echo requests
    a second apart from ``ping -w``, where an answer to any of them counts however late it
    comes (a network may forward with a round trip of seconds: ovs-vswitchd at a few
    thousand ports, see docs/benchmarks.md), which a new ``ping -W1`` each second would
    never see. ping gives up at the first error (an ARP request unanswered while the
    network settles), so a new one follows until the deadline."""
    while True:
        seconds = max(1, math.ceil(deadline - time.monotonic()))
        reply = net.run(net.host_ns(src), ["ping", "-c1", "-w", str(seconds), "-n",
                                           net.host_ip(dst)], check=False)
        if reply.returncode == 0:
            return True
        if time.monotonic() >= deadline:
            return False
