"""Topologies from GraphML and GML files, as published by the Internet Topology Zoo.

Every node of the file becomes a switch (``s1..sN`` in the file's node order) with one host
attached (``hI`` on ``sI``); the node's own name is kept as the switch's ``label``. A link's
bandwidth comes from its ``LinkSpeedRaw`` attribute (bit/s, the Zoo's field) when present.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx

from dplab.topology.catalog import across_pairs
from dplab.topology.model import CORE_BW_MBIT, EDGE_BW_MBIT, HOST, SWITCH, Topology, TopologyError

READERS = {".graphml": "GraphML", ".xml": "GraphML", ".gml": "GML"}
SPEED_ATTR = "LinkSpeedRaw"


def load(path: str | Path, *, core_bw: float | None = CORE_BW_MBIT,
         edge_bw: float | None = EDGE_BW_MBIT, keep_largest: bool = False) -> Topology:
    """Read a GraphML/GML file. A graph in several separate parts is refused unless
    ``keep_largest`` (then only its largest part is kept)."""
    file = Path(path)
    return from_graph(file, file.stem, _read(file), core_bw=core_bw, edge_bw=edge_bw,
                      keep_largest=keep_largest)


def from_graph(source: str | Path, name: str, raw: nx.Graph, *,
               core_bw: float | None = CORE_BW_MBIT, edge_bw: float | None = EDGE_BW_MBIT,
               keep_largest: bool = False) -> Topology:
    """A switch per node of ``raw`` (its ``label`` kept), a host on each; errors name ``source``.
    Shared by every importer whose graph has no hosts of its own (files, topohub)."""
    if raw.number_of_nodes() == 0:
        raise TopologyError(f"{source}: the graph has no nodes")
    switches = _switch_graph(source, raw, core_bw)
    switches = _connected(source, switches, keep_largest)
    if switches.number_of_nodes() < 2:
        raise TopologyError(f"{source}: the graph has only one node; traffic needs two hosts")
    graph = _with_hosts(switches, edge_bw)
    hosts = [f"h{i}" for i in range(1, switches.number_of_nodes() + 1)]
    return Topology(name, graph, across_pairs(hosts))


def _read(file: Path) -> nx.Graph:
    if not file.is_file():
        raise TopologyError(f"{file}: no such file")
    kind = READERS.get(file.suffix.lower())
    if kind is None:
        raise TopologyError(f"{file}: unknown file type {file.suffix!r}; "
                            f"supported: {', '.join(READERS)}")
    try:
        if kind == "GML":
            # label="id": Zoo files may repeat labels; ids are unique by the format.
            return nx.read_gml(file, label="id")
        return nx.read_graphml(file)
    except (nx.NetworkXError, ET.ParseError, ValueError, KeyError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{file}: not a readable {kind} file: {exc}") from None


def _switch_graph(source: str | Path, raw: nx.Graph, core_bw: float | None) -> nx.Graph:
    """One switch per node in file order; parallel links merge (the fastest one wins)."""
    names = {node: f"s{i}" for i, node in enumerate(raw.nodes, start=1)}
    graph = nx.Graph()
    for node, data in raw.nodes(data=True):
        graph.add_node(names[node], kind=SWITCH, label=str(data.get("label", node)))
    for a, b, data in raw.edges(data=True):
        if a == b:
            continue  # a self-loop carries no traffic between switches
        bw = _speed_mbit(source, (a, b), data)
        bw = core_bw if bw is None else bw
        sa, sb = names[a], names[b]
        if graph.has_edge(sa, sb):
            bw = _faster(graph.edges[sa, sb]["bw_mbit"], bw)
        graph.add_edge(sa, sb, bw_mbit=bw, delay_ms=0.0, loss_pct=0.0)
    return graph


def _speed_mbit(source: str | Path, edge: tuple, data: dict) -> float | None:
    raw = data.get(SPEED_ATTR)
    if raw is None or raw == "":
        return None
    try:
        bits = float(raw)
    except (TypeError, ValueError):
        bits = math.nan
    if not math.isfinite(bits) or bits <= 0:
        raise TopologyError(f"{source}: link {edge[0]}-{edge[1]}: {SPEED_ATTR} must be a "
                            f"positive number of bit/s, got {raw!r}")
    return bits / 1e6


def _faster(a: float | None, b: float | None) -> float | None:
    """None means unshaped, which is the fastest."""
    return None if a is None or b is None else max(a, b)


def _connected(source: str | Path, graph: nx.Graph, keep_largest: bool) -> nx.Graph:
    parts = sorted(nx.connected_components(graph), key=len, reverse=True)
    if len(parts) == 1:
        return graph
    if not keep_largest:
        sizes = ", ".join(str(len(p)) for p in parts)
        raise TopologyError(f"{source}: the graph falls into {len(parts)} separate parts "
                            f"(sizes {sizes}); traffic between them could never flow. "
                            "Load with keep_largest=True to keep the largest part.")
    kept = sorted(parts[0], key=lambda s: int(s[1:]))
    renames = {old: f"s{i}" for i, old in enumerate(kept, start=1)}
    return nx.relabel_nodes(graph.subgraph(kept), renames, copy=True)


def _with_hosts(switches: nx.Graph, edge_bw: float | None) -> nx.Graph:
    graph = nx.Graph()
    order = sorted(switches.nodes, key=lambda s: int(s[1:]))
    graph.add_nodes_from((s, switches.nodes[s]) for s in order)
    graph.add_edges_from(switches.edges(data=True))
    for switch in order:
        host = f"h{switch[1:]}"
        graph.add_node(host, kind=HOST)
        graph.add_edge(host, switch, bw_mbit=edge_bw, delay_ms=0.0, loss_pct=0.0)
    return graph
