"""The topology as pure data: a networkx graph of hosts and switches plus the study's host pairs."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

HOST = "host"
SWITCH = "switch"

CORE_BW_MBIT = 1000.0
EDGE_BW_MBIT = 100.0


class TopologyError(ValueError):
    """A topology cannot be built or read: unknown name, bad parameter, bad file."""


@dataclass
class Topology:
    """A network to emulate.

    Nodes carry ``kind`` (HOST or SWITCH). Host names are ``h1``, ``h2``, ... and switch
    names ``s1``, ``s2``, ... (both at most 6 characters, so interface names stay short);
    wireless stations are hosts named ``sta1``, ... and access points switches named
    ``ap1``, .... Every wired edge carries ``bw_mbit`` (float or None for unshaped),
    ``delay_ms`` and ``loss_pct`` (0.0 unless set). A station–access point edge carries
    ``wireless: True``, the station's ``rate_mbit`` and ``loss_pct`` on the shared medium
    (dplab.topology.radio turns a distance into them) and no ``bw_mbit``.
    ``pairs`` maps a traffic class (``icmp``, ``tcp``, ``udp``, ``cdn``, ``voip``, ``all``)
    to ordered (source, destination) host pairs.
    """

    name: str
    graph: nx.Graph
    pairs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def hosts(self) -> list[str]:
        return sorted((n for n, k in self.graph.nodes(data="kind") if k == HOST), key=node_order)

    def switches(self) -> list[str]:
        return sorted((n for n, k in self.graph.nodes(data="kind") if k == SWITCH), key=node_order)

    def port_numbers(self) -> dict[tuple[str, str], int]:
        """(node, neighbour) -> port number on ``node``, 1-based, stable (neighbours sorted).

        An access point has one wireless interface for all its stations, so every wireless
        neighbour of a switch gets the same number: its wlan port (numbered where its first
        station sorts). Every plane and controller that maps (node, neighbour) to a port then
        sends to a station through the wlan port."""
        ports: dict[tuple[str, str], int] = {}
        for node in self.graph.nodes:
            wlan = None
            number = 0
            for nbr in sorted(self.graph.neighbors(node), key=node_order):
                if self.is_wireless(node, nbr) and self.graph.nodes[node]["kind"] == SWITCH:
                    if wlan is None:
                        number += 1
                        wlan = number
                    ports[(node, nbr)] = wlan
                else:
                    number += 1
                    ports[(node, nbr)] = number
        return ports

    def is_wireless(self, a: str, b: str) -> bool:
        return bool(self.graph.edges[a, b].get("wireless"))

    def stations(self, ap: str) -> list[str]:
        """The wireless neighbours of access point ``ap`` (none for a wired switch)."""
        return sorted((n for n in self.graph.neighbors(ap) if self.is_wireless(ap, n)),
                      key=node_order)

    def access_points(self) -> list[str]:
        """Switches with a wireless interface (at least one station)."""
        return [s for s in self.switches() if self.stations(s)]

    def host_index(self, host: str) -> int:
        """h7 -> 7, sta7 -> STATION_BASE + 7: the index every address of a host is derived
        from (stations in a range of their own, so sta1 and h1 never share an address)."""
        return node_index(host)


STATION_PREFIX, AP_PREFIX = "sta", "ap"
# Stations' and access points' numbers are offset so they never meet a wired node's:
# host index 0x8000 + n is 10.128.n.1 (below 10.254/16, which the lab keeps for itself).
STATION_BASE = 0x8000
AP_BASE = 0x8000


def node_index(name: str) -> int:
    """The number a node's addresses and ids come from: h7/s7 -> 7, sta7/ap7 -> base + 7."""
    head, tail = name.rstrip("0123456789"), name.lstrip("abcdefghijklmnopqrstuvwxyz")
    if not tail or head + tail != name:
        raise TopologyError(f"node {name!r}: a name is letters then a number (h1, sta1, s1, ap1)")
    if head == STATION_PREFIX:
        return STATION_BASE + int(tail)
    if head == AP_PREFIX:
        return AP_BASE + int(tail)
    return int(tail)


def node_order(name: str) -> tuple[str, int]:
    """Sort h2 before h10."""
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (head, int(tail) if tail else -1)
