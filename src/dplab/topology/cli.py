"""`dplab topo show` / `export`: build or import a topology, draw it or write it as a
containerlab file, print what it holds."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from dplab.topology import catalog, from_mininet, from_topohub, importers
from dplab.topology.draw import draw
from dplab.topology.exporters import to_containerlab
from dplab.topology.model import Topology

DEFAULT_DIR = Path("results") / "topologies"
MININET_ARG = re.compile(r"^(?P<file>.+\.py)(?::(?P<topo>[^:]+))?$")  # FILE.py[:NAME,ARGS]


def show(name_or_path: str, out: str | None = None) -> Path:
    """Draw a catalog topology, a GraphML/GML file, a topohub graph (``topohub:KEY``) or a
    Mininet file (``FILE.py`` or ``FILE.py:NAME[,ARG...,KEY=VALUE...]`` as Mininet's
    ``--topo``); default output
    ``results/topologies/<name>.png``. Returns the written path."""
    topo = resolve(name_or_path)
    path = Path(out) if out else DEFAULT_DIR / f"{topo.name}.png"
    draw(topo, path)
    print(f"{summary(topo)} -> {path}")
    return path


def export(name_or_path: str, out: str | None = None) -> Path:
    """Write a topology (any source ``show`` takes) as a containerlab topology file; default
    output ``results/topologies/<name>.clab.yml``. Returns the written path."""
    topo = resolve(name_or_path)
    path = Path(out) if out else DEFAULT_DIR / f"{topo.name}.clab.yml"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_containerlab(topo), encoding="utf-8")
    except OSError as exc:
        raise catalog.TopologyError(f"{path}: cannot write: {exc.strerror}") from None
    print(f"{summary(topo)} -> {path}")
    return path


def resolve(name_or_path: str) -> Topology:
    """Catalog names and topohub keys build with default parameters; files are read."""
    if name_or_path.startswith(from_topohub.PREFIX):
        return from_topohub.load(name_or_path.removeprefix(from_topohub.PREFIX))
    mininet = MININET_ARG.match(name_or_path)
    if mininet:
        print(from_mininet.code_warning(mininet["file"]), file=sys.stderr, flush=True)
        name, args, params = from_mininet.parse_topo_option(mininet["topo"] or "")
        return from_mininet.load(mininet["file"], name, params, args)
    if name_or_path in catalog.NAMES or not Path(name_or_path).suffix:
        return catalog.build(name_or_path)
    return importers.load(name_or_path)


def import_sources() -> list[str]:
    """What else ``dplab topo show`` and experiment files take besides the catalog."""
    return [
        f"topohub:KEY     {len(from_topohub.graph_keys())} graphs embedded in topohub "
        f"({', '.join(from_topohub.groups())}), e.g. topohub:topozoo/Abilene",
        "FILE.graphml    a GraphML/GML file (Internet Topology Zoo)",
        "FILE.py[:NAME[,ARGS]]  a Mininet custom-topology file (its 'topos' dict or a Topo "
        "class; ARGS as Mininet's --topo: 3,2,k=v)",
    ]


def summary(topo: Topology) -> str:
    return (f"{topo.name}: {len(topo.hosts())} hosts, {len(topo.switches())} switches, "
            f"{topo.graph.number_of_edges()} links")
