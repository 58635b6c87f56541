"""Static IPv4 routes for any topology, as the routing workload's OVS and P4 planes install
them: every switch is a router hop that rewrites the Ethernet addresses (its own MAC as
source, the next hop's as destination) and decrements the TTL.

Hosts keep the substrate's l2 addressing (one /8), so they resolve each other directly:
ARP is forwarded hop by hop by its target address, along the same path as IP, and the
routers answer no ARP. Each destination host's routes form one shortest-path tree rooted
at it (the router plane's next hops), so consecutive switches always agree, loops or not.

Where the switch's IPv4 table is longest-prefix match (the p4 plane's ``l3`` program),
``lpm_tables`` gives each host's /24 (the block its address is taken from; nothing else
is addressed in it) aggregated exactly per switch (``planes.aggregate``), so neighbours
behind one next hop share an entry, and the same for its ARP table, whose action is the
port alone.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dplab.planes.aggregate import aggregate_spans
from dplab.planes.router import next_hops

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
class SwitchTables:
    """One switch's longest-prefix-match tables, aggregated, as integers: ``routes``
    (network, prefix length, port, next-hop MAC) leave with Ethernet source ``own_mac``;
    ``arp`` (network, prefix length, port) forward ARP by its target address."""

    switch: str
    own_mac: str
    routes: list[tuple[int, int, int, str]]
    arp: list[tuple[int, int, int]]


def lpm_tables(net: Network) -> tuple[list[SwitchTables], int]:
    """Every switch's tables for a longest-prefix-match IPv4 and ARP table (the hops of
    ``hops``, each host's /24 aggregated per switch), and the (switch, host) pairs they
    route. Worked out on integers straight from the next hops: at a thousand hosts there
    are hundreds of thousands of pairs, and a Hop object and an address object each were
    most of the plane's time to its entries."""
    ports = net.topo.port_numbers()
    macs = router_macs(net)
    blocks = {host: int(ipaddress.IPv4Address(net.host_ip(host))) & ~0xFF
              for host in net.topo.hosts()}
    spans: dict[str, list[tuple[int, int, tuple[int, str]]]] = {}
    for switch, remote in next_hops(net).items():
        spans[switch] = [(blocks[host], blocks[host] | 0xFF,
                          (ports[(switch, nearer)], macs[nearer])) for host, nearer in remote]
    for host in net.topo.hosts():
        switch = next(iter(net.topo.graph.neighbors(host)))
        spans.setdefault(switch, []).append(
            (blocks[host], blocks[host] | 0xFF, (ports[(switch, host)], net.host_mac(host))))
    return [_tables(switch, macs[switch], own) for switch, own in spans.items()], sum(
        map(len, spans.values()))


def _tables(switch: str, own_mac: str,
            spans: list[tuple[int, int, tuple[int, str]]]) -> SwitchTables:
    """The port alone decides ARP: its table is the IPv4 routes aggregated again by port
    (the same addresses per port, so the same prefixes as aggregating the hops by port)."""
    routes = aggregate_spans(spans)
    arp = aggregate_spans((network, network | ((1 << (32 - length)) - 1), port)
                          for network, length, (port, _mac) in routes)
    return SwitchTables(switch, own_mac, [(network, length, port, mac)
                                          for network, length, (port, mac) in routes], arp)


def prefix_text(network: int, length: int) -> str:
    """A table's (network, prefix length) as text: 10.1.0.0/16."""
    return f"{ipaddress.IPv4Address(network)}/{length}"
