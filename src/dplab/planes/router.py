"""Conventional L3: Linux kernel forwarding with static routes along shortest paths.

Every switch gets a route to each remote host's /24 via the neighbour one hop nearer it,
aggregated exactly (``planes.aggregate``: sibling prefixes with the same next hop become
their parent), so a fat-tree's pods take a few routes per switch instead of one per host.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from typing import Any

import networkx as nx
import numpy as np

from dplab.planes import host_ttl
from dplab.planes.aggregate import aggregate_spans
from dplab.planes.base import Plane, PlaneError, farthest_hosts, ping_until
from dplab.planes.hop_distances import hop_rows
from dplab.substrate.network import Network
from dplab.substrate.rtnl import NsPlan
from dplab.topology.model import SWITCH, node_order

LINK_POOL = ipaddress.ip_network("10.254.0.0/16")


class RouterPlane(Plane):
    kind = "router"
    addressing = "l3"
    shared_switch_ns = False
    OPTIONS: dict[str, Any] = {}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.net: Network | None = None
        self._started = 0.0
        self._ready_s: float | None = None
        self.routes = 0  # installed, after aggregation
        self.routes_unaggregated = 0  # one per (switch, remote host)
        self.deep: int | None = None  # routers on the longest path, when TTL 64 is too few

    def start(self, net: Network) -> None:
        if net.addressing != "l3":
            raise PlaneError("router: the network must be built with addressing='l3'")
        self.net = net
        self._started = time.monotonic()
        self.deep = host_ttl.fit(net, self.kind)
        net.sysctl({net.switch_ns(s): self._forwarding_sysctls(net, s)
                    for s in net.topo.switches()})
        link_addr = self._link_addresses(net)
        plans = {net.switch_ns(s): NsPlan() for s in net.topo.switches()}
        for (switch, _), (ifname, address) in link_addr.items():
            plans[net.switch_ns(switch)].addrs.append((ifname, address, 30))
        hops = next_hops(net)
        self.routes_unaggregated = sum(len(remote) for remote in hops.values())
        for switch, routes in routes_via(net, link_addr, hops).items():
            plans[net.switch_ns(switch)].routes += routes
            self.routes += len(routes)
        net.configure(plans)  # over rtnetlink: no process per switch

    def _forwarding_sysctls(self, net: Network, switch: str) -> dict[str, str]:
        # Reverse-path filtering would drop replies that come back over a different
        # equal-cost path; the study's routers do not filter either.
        values = {"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.rp_filter": "0",
                  "net.ipv4.conf.default.rp_filter": "0"}
        for ifname in net.switch_ports(switch).values():
            values[f"net.ipv4.conf.{ifname}.rp_filter"] = "0"
        return values

    def _link_addresses(self, net: Network) -> dict[tuple[str, str], tuple[str, str]]:
        """(switch, neighbour) -> (interface, address): a /30 of 10.254/16 per switch link."""
        subnets = LINK_POOL.subnets(new_prefix=30)
        addresses: dict[tuple[str, str], str] = {}
        for link in net.links:
            if not (_is_switch(net, link.a.node) and _is_switch(net, link.b.node)):
                continue
            try:
                first, second = list(next(subnets).hosts())
            except StopIteration:
                raise PlaneError("router: more switch links than 10.254.0.0/16 holds") from None
            addresses[(link.a.node, link.b.node)] = (link.a.ifname, str(first))
            addresses[(link.b.node, link.a.node)] = (link.b.ifname, str(second))
        return addresses

    def wait_ready(self, timeout: float) -> None:
        if self.net is None:
            raise PlaneError("router: wait_ready() before start()")
        src, dst = farthest_hosts(self.net, self.avoid_pairs)
        if not ping_until(self.net, src, dst, time.monotonic() + timeout):
            raise PlaneError(f"router: {src} cannot ping {dst} within {timeout} s")
        self._ready_s = time.monotonic() - self._started

    def info(self) -> dict[str, str]:
        return {"forwarding": "Linux kernel (IP routing)", **host_ttl.info(self.deep)}

    def stats(self) -> dict[str, float | None]:
        """ready_s: start() to first ping across; static_routes: routes installed (after
        aggregation); routes_unaggregated: one per switch and remote host, as before it."""
        return {"ready_s": self._ready_s, "static_routes": float(self.routes),
                "routes_unaggregated": float(self.routes_unaggregated)}

    def stop(self) -> None:
        self.net = None


def routes_via(net: Network, link_addr: dict[tuple[str, str], tuple[str, str]],
               hops: dict[str, list[tuple[str, str]]]) -> dict[str, list[tuple[str, int, str]]]:
    """For every switch, routes (destination, prefix length, via): each remote host's /24
    via the address of the next hop (``link_addr``: see RouterPlane._link_addresses) along
    ``hops`` (``next_hops``), aggregated."""
    subnets = {host: int(ipaddress.ip_network(f"{net.host_gateway(host)}/24", strict=False)
                         .network_address) for host in net.topo.hosts()}
    routes: dict[str, list[tuple[str, int, str]]] = {}
    for switch, remote in hops.items():
        merged = aggregate_spans((subnets[host], subnets[host] + 255,
                                  link_addr[(nearer, switch)][1]) for host, nearer in remote)
        routes[switch] = [(socket.inet_ntoa(network.to_bytes(4, "big")), length, via)
                          for network, length, via in merged]
    return routes


def next_hops(net: Network) -> dict[str, list[tuple[str, str]]]:
    """For every switch, (remote host, neighbour switch one hop nearer it on a shortest path)
    in host order; ties go to the neighbour first in switch order. Hosts on the switch
    itself are left out."""
    switches = net.topo.switches()
    edge_of = {host: next(iter(net.topo.graph.neighbors(host))) for host in net.topo.hosts()}
    edge_of = {host: edge for host, edge in edge_of.items() if _is_switch(net, edge)}
    targets = list(dict.fromkeys(edge_of.values()))  # hosts on one switch share next hops
    towards = _towards(net, switches, targets)
    hops: dict[str, list[tuple[str, str]]] = {s: [] for s in switches}
    for host, edge in edge_of.items():
        for switch, nearer in towards[edge]:
            hops[switch].append((host, nearer))
    return hops


def _towards(net: Network, switches: list[str], targets: list[str]
             ) -> dict[str, list[tuple[str, str]]]:
    """target -> (switch, its neighbour one hop nearer ``target``, first in switch order) for
    every switch that reaches it. One breadth-first search per target in C, then per target
    one pass over the links sorted by (switch, neighbour's rank): a switch's first link whose
    far end is one hop nearer names its next hop."""
    fabric = nx.Graph(net.topo.graph.subgraph(switches))  # a copy: views are slow
    index = {s: i for i, s in enumerate(switches)}
    rank = np.empty(len(switches), dtype=np.int64)
    rank[[index[s] for s in sorted(switches, key=node_order)]] = np.arange(len(switches))
    links = nx.to_scipy_sparse_array(fabric, nodelist=switches, format="coo")
    order = np.lexsort((rank[links.col], links.row))
    near, far = links.row[order], links.col[order]
    towards: dict[str, list[tuple[str, str]]] = {}
    for first, rows in hop_rows(fabric, switches, [index[t] for t in targets]):
        for target, hops in zip(targets[first:first + len(rows)], rows, strict=True):
            nearer = np.isfinite(hops[near]) & (hops[far] == hops[near] - 1)
            via, to = near[nearer], far[nearer]
            first_of_switch = np.ones(len(via), dtype=bool)  # none on a one-switch fabric
            first_of_switch[1:] = via[1:] != via[:-1]
            towards[target] = [(switches[a], switches[b])
                               for a, b in zip(via[first_of_switch], to[first_of_switch],
                                               strict=True)]
    return towards


def _is_switch(net: Network, node: str) -> bool:
    return net.topo.graph.nodes[node].get("kind") == SWITCH
