"""`dplab topo show`: build or import a topology, draw it, print what it holds."""

from __future__ import annotations

from pathlib import Path

from dplab.topology import catalog, importers
from dplab.topology.draw import draw
from dplab.topology.model import Topology

DEFAULT_DIR = Path("results") / "topologies"


def show(name_or_path: str, out: str | None = None) -> Path:
    """Draw a catalog topology or a GraphML/GML file; default output
    ``results/topologies/<name>.png``. Returns the written path."""
    topo = resolve(name_or_path)
    path = Path(out) if out else DEFAULT_DIR / f"{topo.name}.png"
    draw(topo, path)
    print(f"{summary(topo)} -> {path}")
    return path


def resolve(name_or_path: str) -> Topology:
    """A catalog name builds with default parameters; a file name (with a suffix) is read."""
    if name_or_path in catalog.NAMES or not Path(name_or_path).suffix:
        return catalog.build(name_or_path)
    return importers.load(name_or_path)


def summary(topo: Topology) -> str:
    return (f"{topo.name}: {len(topo.hosts())} hosts, {len(topo.switches())} switches, "
            f"{topo.graph.number_of_edges()} links")
