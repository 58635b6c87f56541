"""Topologies from Mininet custom-topology files (the ``mn --custom FILE --topo NAME`` kind).

Mininet is Debian's package, importable only by the system Python, so ``mininet_dump.py``
runs there in a subprocess, builds the ``Topo`` and prints it as JSON; this module turns that
into a ``Topology``. Hosts become ``h1..hN`` and switches ``s1..sM`` in Mininet's natural
name order, each keeping its Mininet name as ``label``. Link options map ``bw`` (Mbit/s) ->
``bw_mbit`` (absent = unshaped, as in Mininet), ``delay`` ("5ms", "250us", "1s"; a bare
number is microseconds, as for tc) -> ``delay_ms``, ``jitter`` (same units) -> ``jitter_ms``,
``loss`` (%) -> ``loss_pct``; other
options (``max_queue_size``, ``cls``, ...) are not modelled. Mininet's own port numbers are
kept for reference as ``mininet_ports`` ({node: port}); dplab numbers ports itself. Switches
get a ``layer`` (hops from the centre of the switch graph) for drawing.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import networkx as nx

from dplab.topology.catalog import across_pairs
from dplab.topology.model import HOST, SWITCH, Topology, TopologyError

SYSTEM_PYTHON = "/usr/bin/python3"
DUMPER = Path(__file__).with_name("mininet_dump.py")
TIMEOUT_S = 60.0
DELAY_UNITS_MS = {"us": 1e-3, "usec": 1e-3, "ms": 1.0, "msec": 1.0, "s": 1e3, "sec": 1e3,
                  "secs": 1e3, "": 1e-3}
DELAY_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$")

Params = dict[str, object]
Args = list[object]


def load(
    path: str | Path, name: str | None = None, params: Params | None = None,
    args: Args | None = None,
) -> Topology:
    """Build topology ``name`` of the Mininet file ``path`` with positional ``args`` and
    keyword ``params``; without ``name`` the file must define exactly one."""
    file = Path(path)
    if not file.is_file():
        raise TopologyError(f"{file}: no such file")
    dump = _dump(file, name or "", params or {}, args or [])
    return _topology(file, dump)


def code_warning(path: str | Path) -> str:
    """What to tell a user before ``load`` runs their file: it is a program, not data."""
    return (f"warning: {path} is Python code; reading its topology runs it as root in this "
            "machine's own namespaces (as `mn --custom` would): use only files you trust")


def parse_topo_option(text: str) -> tuple[str, Args, Params]:
    """Mininet's ``--topo`` syntax ``NAME,3,2,k=v`` -> (name, [3, 2], {"k": "v"}); values
    become int or float where they read as one, as Mininet's own parser does."""
    name, *rest = text.split(",")
    args: Args = [_typed(v) for v in rest if "=" not in v]
    params: Params = {k: _typed(v) for k, v in (item.split("=", 1) for item in rest if "=" in item)}
    return name, args, params


def _typed(value: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _dump(file: Path, name: str, params: Params, args: Args) -> dict:
    # -I: the dumper's folder (our modules) must not shadow what the user's file imports.
    argv = [SYSTEM_PYTHON, "-I", str(DUMPER), str(file), name, json.dumps(params),
            json.dumps(args)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)
    except FileNotFoundError:
        raise TopologyError(f"{file}: {SYSTEM_PYTHON} is missing; Mininet files need "
                            "Debian's python3 with the 'mininet' package") from None
    except subprocess.TimeoutExpired:
        raise TopologyError(f"{file}: building the Mininet topology took longer than "
                            f"{TIMEOUT_S:g} s") from None
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise TopologyError(f"{file}: the Mininet file exited ({done.returncode}) without a "
                            f"topology: {tail[0]}") from None
    if "error" in result:
        raise TopologyError(result["error"])
    return result["topology"]


def _topology(file: Path, dump: dict) -> Topology:
    where = f"{file} ({dump['name']})"
    names = {mn: f"h{i}" for i, mn in enumerate(dump["hosts"], start=1)}
    names |= {mn: f"s{i}" for i, mn in enumerate(dump["switches"], start=1)}
    graph = nx.Graph()
    for mn in dump["switches"]:
        graph.add_node(names[mn], kind=SWITCH, label=mn)
    for mn in dump["hosts"]:
        graph.add_node(names[mn], kind=HOST, label=mn)
    for link in dump["links"]:
        _add_link(where, graph, names, link)
    _check_hosts(where, graph, dump["hosts"], names)
    _check_connected(where, graph)
    _set_layers(graph, [names[mn] for mn in dump["switches"]])
    hosts = [names[mn] for mn in dump["hosts"]]
    return Topology(dump["name"], graph, across_pairs(hosts))


def _add_link(where: str, graph: nx.Graph, names: dict[str, str], link: dict) -> None:
    mn1, mn2 = link["node1"], link["node2"]
    a, b = names[mn1], names[mn2]
    what = f"{where}: link {mn1}-{mn2}"
    if graph.nodes[a]["kind"] == HOST and graph.nodes[b]["kind"] == HOST:
        raise TopologyError(f"{what} joins two hosts; dplab hosts attach to switches only")
    if graph.has_edge(a, b):
        raise TopologyError(f"{what} is a second link between the same nodes; dplab keeps one "
                            "link per pair of nodes")
    opts = link["opts"]
    graph.add_edge(a, b, bw_mbit=_bw(what, opts.get("bw")),
                   delay_ms=_delay_ms(what, "delay", opts.get("delay")),
                   jitter_ms=_delay_ms(what, "jitter", opts.get("jitter")),
                   loss_pct=_loss(what, opts.get("loss")),
                   mininet_ports={a: link["port1"], b: link["port2"]})


def _bw(what: str, value: object) -> float | None:
    if value is None:
        return None
    bw = _number(value)
    if not bw > 0:
        raise TopologyError(f"{what}: bw must be a positive number of Mbit/s, got {value!r}")
    return bw


def _delay_ms(what: str, key: str, value: object) -> float:
    if value is None:
        return 0.0
    match = DELAY_RE.match(str(value).lower())
    if not match or match.group(2) not in DELAY_UNITS_MS:
        raise TopologyError(f"{what}: {key} must look like '5ms', '250us' or '1s', "
                            f"got {value!r}")
    return float(match.group(1)) * DELAY_UNITS_MS[match.group(2)]


def _loss(what: str, value: object) -> float:
    if value is None:
        return 0.0
    loss = _number(value)
    if not 0 <= loss <= 100:
        raise TopologyError(f"{what}: loss must be a percentage 0-100, got {value!r}")
    return loss


def _number(value: object) -> float:
    """NaN for anything that is not a plain number, so every range check fails on it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def _check_hosts(where: str, graph: nx.Graph, mn_hosts: list[str],
                 names: dict[str, str]) -> None:
    if len(mn_hosts) < 2:
        raise TopologyError(f"{where}: {len(mn_hosts)} host(s); traffic needs two hosts")
    for mn in mn_hosts:
        links = list(graph.neighbors(names[mn]))
        if not links:
            raise TopologyError(f"{where}: host {mn} has no link")
        if len(links) > 1:
            labels = ", ".join(sorted(graph.nodes[s]["label"] for s in links))
            raise TopologyError(f"{where}: host {mn} is linked to several switches ({labels}); "
                                "a dplab host has one interface")


def _check_connected(where: str, graph: nx.Graph) -> None:
    parts = sorted(nx.connected_components(graph), key=len, reverse=True)
    if len(parts) > 1:
        cut_off = sorted(graph.nodes[n]["label"] for part in parts[1:] for n in part)
        raise TopologyError(f"{where}: the topology falls into {len(parts)} separate parts; "
                            f"cut off from the largest: {', '.join(cut_off)}")


def _set_layers(graph: nx.Graph, switches: list[str]) -> None:
    """``layer`` = hops from the switch graph's centre, so a drawing shows a Mininet tree or
    dumbbell in rows (the root or the bottleneck on top) rather than a tangle."""
    core = graph.subgraph(switches)
    hops = nx.multi_source_dijkstra_path_length(core, set(nx.center(core)))
    for switch, layer in hops.items():
        graph.nodes[switch]["layer"] = int(layer)
