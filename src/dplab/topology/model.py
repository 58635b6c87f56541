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
    names ``s1``, ``s2``, ... (both at most 6 characters, so interface names stay short).
    Every edge carries ``bw_mbit`` (float or None for unshaped), ``delay_ms`` and
    ``loss_pct`` (0.0 unless set; the substrate refuses non-zero values without netem).
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
        """(node, neighbour) -> port number on ``node``, 1-based, stable (neighbours sorted)."""
        ports: dict[tuple[str, str], int] = {}
        for node in self.graph.nodes:
            for i, nbr in enumerate(sorted(self.graph.neighbors(node), key=node_order), start=1):
                ports[(node, nbr)] = i
        return ports

    def host_index(self, host: str) -> int:
        """h7 -> 7; the index every address of a host is derived from."""
        return int(host[1:])


def node_order(name: str) -> tuple[str, int]:
    """Sort h2 before h10."""
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (head, int(tail) if tail else -1)
