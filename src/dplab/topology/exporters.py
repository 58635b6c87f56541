"""A topology as a containerlab topology file, to rebuild the same network with containers.

Interfaces are ``eth<port>`` with our stable port numbers (containerlab keeps ``eth0`` for
management). containerlab has no bandwidth field, so each link's ``bw_mbit`` travels in the
link's ``vars``, for whatever shapes the lab afterwards.
"""

from __future__ import annotations

import yaml

from dplab.topology.model import Topology, TopologyError

HOST_IMAGE = "alpine:3.20"
SWITCH_IMAGE = "alpine:3.20"


def to_containerlab(topo: Topology, host_image: str = HOST_IMAGE,
                    switch_image: str = SWITCH_IMAGE) -> str:
    """YAML text of a containerlab topology file (nodes of kind linux, veth links)."""
    if topo.access_points():
        raise TopologyError(f"topology {topo.name!r}: its stations share an access point's "
                            "wireless medium, which a containerlab file (point-to-point veth "
                            "links) cannot describe")
    ports = topo.port_numbers()
    nodes = {n: {"kind": "linux", "image": switch_image, "labels": {"dplab-role": "switch"}}
             for n in topo.switches()}
    nodes |= {n: {"kind": "linux", "image": host_image, "labels": {"dplab-role": "host"}}
              for n in topo.hosts()}
    links = [_link(a, b, data, ports) for a, b, data in _ordered_edges(topo)]
    lab = {"name": topo.name, "topology": {"nodes": nodes, "links": links}}
    return yaml.safe_dump(lab, sort_keys=False, default_flow_style=None)


def _ordered_edges(topo: Topology) -> list[tuple[str, str, dict]]:
    """Switches first within a link, links in node order: the same topology, the same text."""
    order = {n: i for i, n in enumerate(topo.switches() + topo.hosts())}
    edges = [tuple(sorted((a, b), key=order.__getitem__)) + (data,)
             for a, b, data in topo.graph.edges(data=True)]
    return sorted(edges, key=lambda e: (order[e[0]], order[e[1]]))


def _link(a: str, b: str, data: dict, ports: dict[tuple[str, str], int]) -> dict:
    return {
        "type": "veth",
        "endpoints": [{"node": a, "interface": f"eth{ports[(a, b)]}"},
                      {"node": b, "interface": f"eth{ports[(b, a)]}"}],
        "vars": {"bw_mbit": data.get("bw_mbit"), "delay_ms": data.get("delay_ms", 0.0),
                 "loss_pct": data.get("loss_pct", 0.0)},
    }
