"""Conventional L3: Linux kernel forwarding with static routes along shortest paths.

Every switch gets a route to each remote host's /24 via the neighbour one hop nearer it,
aggregated exactly (``planes.aggregate``: sibling prefixes with the same next hop become
their parent), so a fat-tree's pods take a few routes per switch instead of one per host.
"""

from __future__ import annotations

import ipaddress
import time
from typing import Any

import networkx as nx

from dplab.planes import host_ttl
from dplab.planes.aggregate import aggregate
from dplab.planes.base import Plane, PlaneError, farthest_hosts, ping_until
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
    subnets = {host: ipaddress.ip_network(f"{net.host_gateway(host)}/24", strict=False)
               for host in net.topo.hosts()}
    routes: dict[str, list[tuple[str, int, str]]] = {}
    for switch, remote in hops.items():
        merged = aggregate((subnets[host], link_addr[(nearer, switch)][1])
                           for host, nearer in remote)
        routes[switch] = [(str(prefix.network_address), prefix.prefixlen, via)
                          for prefix, via in merged]
    return routes


def next_hops(net: Network) -> dict[str, list[tuple[str, str]]]:
    """For every switch, (remote host, neighbour switch one hop nearer it on a shortest path)
    in host order; ties go to the neighbour first in switch order. Hosts on the switch
    itself are left out."""
    fabric = nx.Graph(net.topo.graph.subgraph(net.topo.switches()))  # a copy: views are slow
    rank = {s: i for i, s in enumerate(sorted(fabric, key=node_order))}
    towards: dict[str, list[tuple[str, str]]] = {}  # edge switch -> (switch, nearer)
    hops: dict[str, list[tuple[str, str]]] = {s: [] for s in net.topo.switches()}
    for host in net.topo.hosts():
        edge_switch = next(iter(net.topo.graph.neighbors(host)))
        if not _is_switch(net, edge_switch):
            continue
        if edge_switch not in towards:  # hosts on one switch share their next hops
            towards[edge_switch] = _towards(fabric, edge_switch, rank)
        for switch, nearer in towards[edge_switch]:
            hops[switch].append((host, nearer))
    return hops


def _towards(fabric: nx.Graph, target: str, rank: dict[str, int]) -> list[tuple[str, str]]:
    """(switch, its neighbour one hop nearer ``target``, first in switch order) per switch."""
    distance = nx.single_source_shortest_path_length(fabric, target)
    return [(switch, min((n for n in fabric.adj[switch] if distance.get(n) == length - 1),
                         key=rank.__getitem__))
            for switch, length in distance.items() if length > 0]


def _is_switch(net: Network, node: str) -> bool:
    return net.topo.graph.nodes[node].get("kind") == SWITCH
