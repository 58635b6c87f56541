"""Topologies from topohub, the repository of reference graphs embedded in its Python wheel
(Internet Topology Zoo, SNDlib, CAIDA, Gabriel and synthetic backbone graphs; no network).

A key names one graph: ``topozoo/Abilene``, ``sndlib/polska``, ``gabriel/25/0``. The graph
becomes a topology the way a GraphML file does (``importers.from_graph``): a switch per node
in topohub's order with the node's ``name`` as its ``label``, a host on each. topohub has no
link speeds, so every switch link gets ``core_bw``.
"""

from __future__ import annotations

import difflib
import importlib.resources
import json
from functools import cache

import networkx as nx

from dplab.topology.importers import from_graph
from dplab.topology.model import Topology, TopologyError

PREFIX = "topohub:"
PARAMS = ("core_bw", "edge_bw", "keep_largest")


def load(key: str, **params: object) -> Topology:
    """The topohub graph ``key`` (e.g. ``topozoo/Abilene``) with a host on every node.
    ``params``: ``core_bw``, ``edge_bw`` (Mbit/s, None = unshaped) and ``keep_largest``,
    as for GraphML files."""
    source = f"{PREFIX}{key}"
    if key not in graph_keys():
        raise TopologyError(f"{source}: unknown topohub key. {_hint(key)}")
    _check_params(source, params)
    raw = _graph(_read(key))
    return from_graph(source, key.replace("/", "-"), raw, **params)


def _check_params(source: str, params: dict[str, object]) -> None:
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise TopologyError(f"{source}: unknown parameter(s) {', '.join(unknown)}; "
                            f"valid: {', '.join(PARAMS)}")
    for bw in ("core_bw", "edge_bw"):
        value = params.get(bw)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not value > 0):
            raise TopologyError(f"{source}: {bw} must be a positive number of Mbit/s or "
                                f"None (unshaped), got {value!r}")


@cache
def graph_keys() -> tuple[str, ...]:
    """Every graph topohub ships, as ``group/.../name``, sorted."""
    data = importlib.resources.files("topohub") / "data"
    found: list[str] = []
    pending = [(data, "")]
    while pending:
        folder, prefix = pending.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                pending.append((entry, f"{prefix}{entry.name}/"))
            elif entry.name.endswith(".json"):
                found.append(prefix + entry.name.removesuffix(".json"))
    return tuple(sorted(found))


def groups() -> list[str]:
    return sorted({key.split("/", 1)[0] for key in graph_keys()})


def _hint(key: str) -> str:
    # Compare case-insensitively: "topozoo/abilene" should still suggest "topozoo/Abilene".
    by_lower = {k.lower(): k for k in graph_keys()}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=5, cutoff=0.6)
    if close:
        return "Close matches: " + ", ".join(by_lower[c] for c in close)
    return (f"Groups: {', '.join(groups())}; list every key with "
            "`dplab topo list --topohub`")


def _read(key: str) -> dict:
    path = importlib.resources.files("topohub") / "data" / f"{key}.json"
    with path.open() as f:
        return json.load(f)


def _graph(node_link: dict) -> nx.Graph:
    """topohub's node-link data as the plain graph ``from_graph`` expects."""
    graph = nx.Graph()
    for node in node_link["nodes"]:
        label = node.get("name") or str(node["id"])
        graph.add_node(node["id"], label=label)
    for edge in node_link["edges"]:
        graph.add_edge(edge["source"], edge["target"])
    return graph
