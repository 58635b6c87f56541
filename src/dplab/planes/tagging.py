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

from dplab.planes.base import PlaneError
from dplab.topology.model import Topology

MIN_VID, MAX_VID = 1, 4094  # 802.1Q: 0 means "no VLAN", 4095 is reserved


@dataclass(frozen=True)
class SwitchPlan:
    """One switch's part: ``access`` ports (to hosts), ``flood`` ports (every port on the
    tree) and ``routes`` (host MAC -> the port towards that host)."""

    access: tuple[int, ...]
    flood: tuple[int, ...]
    routes: dict[str, int]


def vid_option(value: object, kind: str) -> int | None:
    """Plane ``kind``'s option ``vlan``: None (no tagging) or a VLAN id; PlaneError naming
    the option and the valid range otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_VID <= value <= MAX_VID:
        raise PlaneError(f"plane {kind}: option 'vlan' must be a VLAN id {MIN_VID}..{MAX_VID}, "
                         f"not {value!r}")
    return value


def info(vid: int | None, how: str) -> dict[str, str]:
    """The plane's ``info()`` line for VLAN id ``vid`` (none without tagging)."""
    return {} if vid is None else {"VLAN tagging": f"802.1Q id {vid}, {how}"}


def openflow(part: SwitchPlan, vid: int, table: int) -> list[str]:
    """ovs-ofctl flow lines (OpenFlow 1.3) tagging as ``part`` says, in two tables: ``table``
    admits frames (untagged ones from access ports get the tag pushed, tagged ones come
    from trunks on the tree, anything else is dropped), ``table + 1`` forwards by VLAN and
    destination MAC (popping the tag towards an access port) and floods the rest along
    the tree, trunks first, then untagged to the access ports (OVS never sends a frame
    back out of its ingress port unless told to)."""
    fwd, present = table + 1, 0x1000 | vid  # OpenFlow's vlan_vid carries OFPVID_PRESENT
    access = set(part.access)
    lines = [f"table={table},priority=0,actions=drop"]
    lines += [f"table={table},priority=10,in_port={p},vlan_tci=0x0000/0x1000,"
              f"actions=push_vlan:0x8100,set_field:{present}->vlan_vid,goto_table:{fwd}"
              for p in part.access]
    lines += [f"table={table},priority=10,in_port={p},dl_vlan={vid},actions=goto_table:{fwd}"
              for p in part.flood if p not in access]
    lines += [f"table={fwd},priority=10,dl_vlan={vid},dl_dst={mac},actions="
              + (f"pop_vlan,output:{port}" if port in access else f"output:{port}")
              for mac, port in part.routes.items()]
    flood = [f"output:{p}" for p in part.flood if p not in access]
    if access:
        flood += ["pop_vlan", *(f"output:{p}" for p in part.access)]
    return [*lines, f"table={fwd},priority=1,dl_vlan={vid},actions={','.join(flood)}"]


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
