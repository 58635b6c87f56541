"""Hosts' IPv4 TTL against the longest route, for planes whose switches are routers.

Every router on a path decrements the TTL and drops the packet when it reaches 0, so with
Linux's default TTL of 64 a packet crosses at most 63 routers. Large backbone graphs have
host pairs farther apart than that (topohub's backbone/americas: 75 switches between its
farthest hosts). Where the topology's longest shortest path between hosts crosses more
routers, the hosts' default TTL (``net.ipv4.ip_default_ttl``, per network namespace: ping,
TCP, UDP and the kernel's own ICMP replies use it) is raised to 255, the most IPv4 allows;
elsewhere it is left alone, so hop counts read from TTLs stay Linux's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from dplab.planes.base import PlaneError
from dplab.planes.hop_distances import hop_rows
from dplab.topology.model import HOST

if TYPE_CHECKING:
    from dplab.substrate.network import Network
    from dplab.topology.model import Topology

DEFAULT_TTL = 64  # Linux's net.ipv4.ip_default_ttl
MAX_TTL = 255
SYSCTL = "net.ipv4.ip_default_ttl"


def routers_on_longest_path(topo: Topology) -> int:
    """The most switches on a shortest path between two hosts (0: no two hosts reach
    each other over switches). Breadth-first from every switch that has hosts, in C
    (scipy), since backbone graphs have thousands."""
    switches = topo.switches()
    fabric = nx.Graph(topo.graph.subgraph(switches))
    kinds = topo.graph.nodes
    edge = [i for i, s in enumerate(switches)
            if any(kinds[n].get("kind") == HOST for n in topo.graph.neighbors(s))]
    if not edge:
        return 0
    longest = 0.0
    for _, rows in hop_rows(fabric, switches, edge):
        reached = rows[:, edge]
        reached = reached[np.isfinite(reached)]
        longest = max(longest, float(reached.max(initial=0.0)))
    return int(longest) + 1


def fit(net: Network, plane: str) -> int | None:
    """Raise the hosts' default TTL to 255 when the longest path between hosts crosses
    more routers than 64 lets through; the router count when it did, else None.
    PlaneError when even 255 is too few."""
    routers = routers_on_longest_path(net.topo)
    if routers < DEFAULT_TTL:
        return None
    if routers >= MAX_TTL:
        raise PlaneError(f"{plane}: the farthest hosts are {routers} routers apart; an IPv4 "
                         f"TTL ({MAX_TTL} at most) cannot cross more than {MAX_TTL - 1}")
    net.sysctl({ns: {SYSCTL: str(MAX_TTL)}
                for ns in dict.fromkeys(net.host_ns(h) for h in net.topo.hosts())})
    return routers


def info(routers: int | None) -> dict[str, str]:
    """The plane's info() line for what ``fit`` did (nothing when it left the TTL)."""
    if routers is None:
        return {}
    return {"host_ttl": f"{MAX_TTL} (the farthest hosts are {routers} routers apart; "
                        f"Linux's default TTL {DEFAULT_TTL} crosses {DEFAULT_TTL - 1})"}
