"""VLAN tagging over any topology, as pure data: which switch ports face hosts (access
ports: the tag is pushed on what enters there and popped on what leaves), which face other
switches (trunks: frames cross them tagged), and where each host's frames go.

Frames travel a spanning tree of the switches, the fabric without the switch links ``cut``
(the bridge plane's ``off_tree_links``), so floods (ARP) never loop on a looped fabric;
unicast to a host follows the tree to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx

from dplab.topology.model import Topology

MIN_VID, MAX_VID = 1, 4094  # 802.1Q: 0 means "no VLAN", 4095 is reserved


@dataclass(frozen=True)
class SwitchPlan:
    """One switch's part: ``access`` ports (to hosts), ``flood`` ports (every port on the
    tree) and ``routes`` (host MAC -> the port towards that host)."""

    access: tuple[int, ...]
    flood: tuple[int, ...]
    routes: dict[str, int]


def check_vid(value: object, where: str) -> int:
    """``value`` as a VLAN id, or ValueError naming ``where`` and the valid range."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_VID <= value <= MAX_VID:
        raise ValueError(f"{where} must be a VLAN id {MIN_VID}..{MAX_VID}, not {value!r}")
    return value


def info(vid: int | None, how: str) -> dict[str, str]:
    """The plane's ``info()`` line for VLAN id ``vid`` (none without tagging)."""
    return {} if vid is None else {"VLAN tagging": f"802.1Q id {vid}, {how}"}


def plan(topo: Topology, mac_of: Callable[[str], str],
         cut: set[frozenset[str]]) -> dict[str, SwitchPlan]:
    """Every switch's access ports, flood ports and routes to every host (by its MAC,
    ``mac_of(host)``: ``Network.host_mac``) over the fabric without the links ``cut``."""
    hosts = set(topo.hosts())
    tree = topo.graph.copy()
    tree.remove_edges_from(tuple(link) for link in cut)
    ports = topo.port_numbers()
    out: dict[str, SwitchPlan] = {}
    for switch in topo.switches():
        mine = {nbr: port for (node, nbr), port in ports.items() if node == switch}
        paths = nx.single_source_shortest_path(tree, switch)
        out[switch] = SwitchPlan(
            access=tuple(sorted(p for nbr, p in mine.items() if nbr in hosts)),
            flood=tuple(sorted(p for nbr, p in mine.items()
                               if frozenset((switch, nbr)) not in cut)),
            routes={mac_of(h): mine[paths[h][1]] for h in sorted(hosts) if h in paths})
    return out
