"""The study baselines, planes without a switch: ``direct`` (the two hosts' eth0 are the two
ends of one veth pair) and ``loopback`` (both hosts in one namespace; their addresses sit on
``lo``, so the traffic between them never leaves the kernel's loopback device).

Both take any topology with exactly two hosts, so an experiment's plane list can hold them
beside the switched planes and every table gets a "Direct connection" and a "Loopback" row.
The direct link keeps what the path between the two hosts would impose end to end: its
narrowest rate, the sum of its delays, the combined loss and the smallest MTU. Loopback has
no link at all: no shaping, and lo's own MTU (65536).
"""

from __future__ import annotations

import math
import time

import networkx as nx

from dplab.planes.base import Plane, PlaneError, ping_until
from dplab.substrate.network import MTU, Network
from dplab.topology.model import Topology


def two_hosts(topo: Topology, kind: str) -> tuple[str, str]:
    hosts = topo.hosts()
    if len(hosts) != 2:
        raise PlaneError(f"plane {kind!r} joins exactly two hosts; topology {topo.name!r} "
                         f"has {len(hosts)}")
    return hosts[0], hosts[1]


def path_link(topo: Topology, a: str, b: str) -> dict:
    """One link standing for the shortest path a..b: narrowest rate, summed delay, combined
    loss, smallest MTU."""
    try:
        path = nx.shortest_path(topo.graph, a, b)
    except nx.NetworkXNoPath:
        raise PlaneError(f"topology {topo.name!r}: no path between {a} and {b}") from None
    edges = [topo.graph.edges[u, v] for u, v in zip(path, path[1:], strict=False)]
    rates = [e["bw_mbit"] for e in edges if e.get("bw_mbit") is not None]
    delivered = math.prod(1 - (e.get("loss_pct") or 0.0) / 100 for e in edges)
    return {"bw_mbit": min(rates) if rates else None,
            "delay_ms": sum(e.get("delay_ms") or 0.0 for e in edges),
            "loss_pct": 100 * (1 - delivered),
            "mtu": min(e.get("mtu") or MTU for e in edges)}


class _Baseline(Plane):
    """No switch, no daemon: ready once one ping between the two hosts is answered."""

    def __init__(self, options: dict | None = None) -> None:
        super().__init__(options)
        self.net: Network | None = None

    def start(self, net: Network) -> None:
        self.net = net

    def wait_ready(self, timeout: float) -> None:
        assert self.net is not None
        a, b = self.net.topo.hosts()
        if not ping_until(self.net, a, b, time.monotonic() + timeout):
            raise PlaneError(f"{self.kind}: {a} got no ping answer from {b} within {timeout:g} s")

    def stats(self) -> dict[str, float | None]:
        return {}

    def stop(self) -> None:
        self.net = None


class DirectPlane(_Baseline):
    kind = "direct"

    def info(self) -> dict[str, str]:
        return {"forwarding": "none: the hosts' interfaces are one veth pair"}

    def network(self, topo: Topology) -> Network:
        a, b = two_hosts(topo, self.kind)
        graph = nx.Graph()
        graph.add_nodes_from(topo.graph.subgraph([a, b]).nodes(data=True))
        graph.add_edge(a, b, **path_link(topo, a, b))
        return Network(Topology(f"{topo.name}-direct", graph, topo.pairs))


class LoopbackPlane(_Baseline):
    kind = "loopback"

    def info(self) -> dict[str, str]:
        # lo is no link: a rate, delay or loss the topology sets does not apply, and the
        # report must say so rather than let a shaped path look unshaped
        return {"forwarding": "none: both hosts in one namespace, over lo",
                "links": "none: the topology's rates, delays and losses do not apply"}

    def network(self, topo: Topology) -> Network:
        a, b = two_hosts(topo, self.kind)
        graph = nx.Graph()
        graph.add_nodes_from(topo.graph.subgraph([a, b]).nodes(data=True))
        return Network(Topology(f"{topo.name}-loopback", graph, topo.pairs),
                       shared_host_ns=True)
