"""Static IPv4 routes for any topology, as the routing workload's OVS and P4 planes install
them: every switch is a router hop that rewrites the Ethernet addresses (its own MAC as
source, the next hop's as destination) and decrements the TTL.

Hosts keep the substrate's l2 addressing (one /8), so they resolve each other directly:
ARP is forwarded hop by hop by its target address, along the same path as IP, and the
routers answer no ARP. Each destination host's routes form one shortest-path tree rooted
at it (the router plane's next hops), so consecutive switches always agree, loops or not.

Where the switch's IPv4 table is longest-prefix match (the p4 plane's ``l3`` program),
``lpm_routes`` gives each host's /24 (the block its address is taken from; nothing else
is addressed in it) aggregated exactly per switch (``planes.aggregate``), so neighbours
behind one next hop share an entry; ``arp_routes`` does the same for its ARP table, whose
action is the port alone.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import TYPE_CHECKING, TypeVar

from dplab.planes.aggregate import aggregate
from dplab.planes.router import next_hops

A = TypeVar("A", bound=Hashable)

if TYPE_CHECKING:
    from dplab.substrate.network import Network


@dataclass(frozen=True)
class Hop:
    """On ``switch``, IPv4 (and ARP asking for) ``host_ip`` leaves by ``port`` with
    Ethernet source ``own_mac`` and destination ``next_mac``."""

    switch: str
    host_ip: str
    port: int
    own_mac: str
    next_mac: str


def router_mac(net: Network, switch: str) -> str:
    """02:00:00:fe:HH:LL from the switch's place in the topology (hosts' MACs are
    02:00:00:00:HH:LL, so the two never collide)."""
    return router_macs(net)[switch]


def router_macs(net: Network) -> dict[str, str]:
    """Every switch's ``router_mac``, worked out once: a fat-tree of a thousand hosts has
    hundreds of thousands of hops, and sorting the switches for each was minutes."""
    return {switch: f"02:00:00:fe:{n // 256:02x}:{n % 256:02x}"
            for n, switch in enumerate(net.topo.switches(), start=1)}


def hops(net: Network) -> list[Hop]:
    """One Hop per (switch, host) the switch can reach: the router plane's next hops
    (``router.next_hops``) towards remote hosts, and the port of each host on its own
    switch."""
    ports = net.topo.port_numbers()
    macs = router_macs(net)
    out = [Hop(switch, net.host_ip(host), ports[(switch, nearer)], macs[switch], macs[nearer])
           for switch, remote in next_hops(net).items() for host, nearer in remote]
    for host in net.topo.hosts():
        switch = next(iter(net.topo.graph.neighbors(host)))
        out.append(Hop(switch, net.host_ip(host), ports[(switch, host)],
                       macs[switch], net.host_mac(host)))
    return out


@dataclass(frozen=True)
class Route:
    """On ``switch``, IPv4 to ``prefix`` leaves by ``port`` with Ethernet source
    ``own_mac`` and destination ``next_mac``."""

    switch: str
    prefix: IPv4Network
    port: int
    own_mac: str
    next_mac: str


def lpm_routes(hop_list: list[Hop]) -> list[Route]:
    """The IPv4 routes of ``hop_list`` (``hops``) for a longest-prefix-match table: per
    switch, each host's /24 with its hop's action, aggregated."""
    return [Route(switch, prefix, *action) for switch, prefix, action
            in _aggregated(hop_list, lambda hop: (hop.port, hop.own_mac, hop.next_mac))]


def arp_routes(hop_list: list[Hop]) -> list[tuple[str, IPv4Network, int]]:
    """(switch, prefix, port) for a longest-prefix-match table of ARP target addresses: per
    switch, each host's /24 with its hop's port, aggregated."""
    return [(switch, prefix, port)
            for switch, prefix, port in _aggregated(hop_list, lambda hop: hop.port)]


def _aggregated(hop_list: list[Hop], action_of: Callable[[Hop], A]
                ) -> list[tuple[str, IPv4Network, A]]:
    blocks = {ip: ipaddress.ip_network(f"{ip}/24", strict=False)  # one object per host
              for ip in {hop.host_ip for hop in hop_list}}
    by_switch: dict[str, list[tuple[IPv4Network, A]]] = {}
    for hop in hop_list:
        by_switch.setdefault(hop.switch, []).append((blocks[hop.host_ip], action_of(hop)))
    return [(switch, prefix, action) for switch, routes in by_switch.items()
            for prefix, action in aggregate(routes)]
