"""Drawing a topology to PNG or SVG: switches as circles, hosts as squares, links coloured by
bandwidth (fastest red, as in study 000's figures).

Layout, first that applies: positions the builder gave (``pos`` on every node); layers
(``layer`` on every switch, hosts in a row below); otherwise a seeded spring layout of the
switches with each host set just outside its switch.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch

from dplab.topology.model import Topology, TopologyError, node_order

Pos = dict[str, tuple[float, float]]

FORMATS = (".png", ".svg")
LINK_COLOURS = ("tab:red", "black", "tab:blue", "tab:green", "tab:purple", "tab:brown")
UNSHAPED_COLOUR = "tab:gray"
WIRELESS_COLOUR = "tab:cyan"
SWITCH_COLOUR = "#9ecae1"
HOST_COLOUR = "#fdd49e"
SEED = 7  # fixed, so the same topology is always drawn the same way


def draw(topo: Topology, path: str | Path) -> Path:
    """Write the drawing; the format follows the suffix (.png or .svg)."""
    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise TopologyError(f"{out}: drawings are {' or '.join(FORMATS)}, not {out.suffix!r}")
    pos = layout(topo)
    fig = _figure(pos)
    ax = fig.add_subplot()
    _draw_links(ax, topo, pos)
    _draw_nodes(ax, topo, pos)
    ax.set_title(f"{topo.name}: {len(topo.hosts())} hosts, {len(topo.switches())} switches, "
                 f"{topo.graph.number_of_edges()} links")
    ax.set_axis_off()
    ax.margins(0.06)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(out, dpi=150, bbox_inches="tight")
    return out


def layout(topo: Topology) -> Pos:
    graph = topo.graph
    if all("pos" in data for _, data in graph.nodes(data=True)):
        return {n: tuple(p) for n, p in graph.nodes(data="pos")}
    if all(graph.nodes[s].get("layer") is not None for s in topo.switches()):
        return _layered(topo)
    return _spring(topo)


def _layered(topo: Topology) -> Pos:
    """One row per switch layer, hosts in a row below; each row spread over the full width,
    so a parent sits above the middle of its children when the tree is regular."""
    rows: dict[int, list[str]] = {}
    for s in topo.switches():
        rows.setdefault(int(topo.graph.nodes[s]["layer"]), []).append(s)
    ordered = [rows[layer] for layer in sorted(rows)] + [topo.hosts()]
    width = max(len(row) for row in ordered)
    gap = max(1.6, width / 12)  # wide networks get taller rows, so links do not flatten
    pos: Pos = {}
    for depth, row in enumerate(ordered):
        for i, node in enumerate(row):
            pos[node] = ((i + 0.5) * width / len(row), -gap * depth)
    return pos


def _spring(topo: Topology) -> Pos:
    switches = topo.graph.subgraph(topo.switches())
    spread = max(1.0, len(switches) ** 0.5)
    pos: Pos = {n: (float(x) * spread, float(y) * spread)
                for n, (x, y) in nx.spring_layout(switches, seed=SEED).items()}
    cx = sum(x for x, _ in pos.values()) / len(pos)
    cy = sum(y for _, y in pos.values()) / len(pos)
    for host in topo.hosts():
        switch = min(topo.graph.neighbors(host), key=node_order)
        x, y = pos[switch]
        dx, dy = x - cx, y - cy
        norm = (dx * dx + dy * dy) ** 0.5 or 1.0
        pos[host] = (x + 0.25 * spread * dx / norm, y + 0.25 * spread * dy / norm)
    return pos


def _figure(pos: Pos) -> Figure:
    xs = [x for x, _ in pos.values()]
    ys = [y for _, y in pos.values()]
    width = min(24.0, max(6.0, 0.5 * (max(xs) - min(xs)) + 2))
    height = min(16.0, max(3.5, 0.9 * (max(ys) - min(ys)) + 2))
    return Figure(figsize=(width, height))


def _bandwidth_colours(topo: Topology) -> dict[float | None, str]:
    speeds = sorted({bw for *_, bw in topo.graph.edges(data="bw_mbit") if bw is not None},
                    reverse=True)
    colours: dict[float | None, str] = {
        bw: LINK_COLOURS[min(i, len(LINK_COLOURS) - 1)] for i, bw in enumerate(speeds)}
    colours[None] = UNSHAPED_COLOUR
    return colours


def _draw_links(ax, topo: Topology, pos: Pos) -> None:
    colours = _bandwidth_colours(topo)
    edges = [(a, b, bw) for a, b, bw in topo.graph.edges(data="bw_mbit")
             if not topo.is_wireless(a, b)]
    straight = [(a, b, bw) for a, b, bw in edges if not _hidden(a, b, pos)]
    ax.add_collection(LineCollection([(pos[a], pos[b]) for a, b, _ in straight],
                                     colors=[colours[bw] for *_, bw in straight],
                                     linewidths=1.4, zorder=1))
    for a, b, bw in edges:
        if _hidden(a, b, pos):
            # Bend the link so it does not run through the nodes between its ends.
            ax.add_patch(FancyArrowPatch(pos[a], pos[b], arrowstyle="-", color=colours[bw],
                                         linewidth=1.4, zorder=1,
                                         connectionstyle="arc3,rad=-0.12"))
    used = {bw for *_, bw in edges}
    handles = [Line2D([], [], color=colours[bw], label=_bw_label(bw))
               for bw in colours if bw in used]
    if _draw_wireless(ax, topo, pos):
        handles.append(Line2D([], [], color=WIRELESS_COLOUR, linestyle="--",
                              label="wireless (station's Mbit/s, loss)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
              ncol=len(handles), fontsize=8, frameon=False)


def _draw_wireless(ax, topo: Topology, pos: Pos) -> bool:
    """Station-AP links dashed, each with its rate (and loss) at its middle; True if any."""
    drawn = False
    for a, b, attrs in topo.graph.edges(data=True):
        if not attrs.get("wireless"):
            continue
        drawn = True
        ax.plot(*zip(pos[a], pos[b], strict=True), color=WIRELESS_COLOUR, linestyle="--",
                linewidth=1.2, zorder=1)
        loss = f" {attrs['loss_pct']:.2g}%" if attrs.get("loss_pct") else ""
        ax.text((pos[a][0] + pos[b][0]) / 2, (pos[a][1] + pos[b][1]) / 2,
                f"{attrs['rate_mbit']:g}M{loss}", ha="center", va="center", fontsize=6,
                color=WIRELESS_COLOUR, backgroundcolor="white", zorder=1)
    return drawn


def _hidden(a: str, b: str, pos: Pos) -> bool:
    """A straight a-b line would pass through another node of the same row."""
    (xa, ya), (xb, yb) = pos[a], pos[b]
    if ya != yb:
        return False
    low, high = sorted((xa, xb))
    return any(y == ya and low < x < high for x, y in pos.values())


def _bw_label(bw: float | None) -> str:
    return "unshaped" if bw is None else f"{bw:g} Mbit/s"


def _draw_nodes(ax, topo: Topology, pos: Pos) -> None:
    for nodes, marker, colour, size in ((topo.switches(), "o", SWITCH_COLOUR, 420),
                                        (topo.hosts(), "s", HOST_COLOUR, 300)):
        if not nodes:
            continue
        ax.scatter([pos[n][0] for n in nodes], [pos[n][1] for n in nodes], s=size,
                   marker=marker, c=colour, edgecolors="black", linewidths=0.8, zorder=2)
        for n in nodes:
            ax.text(*pos[n], n, ha="center", va="center", fontsize=7, zorder=3)
            label = topo.graph.nodes[n].get("label")
            if label:
                ax.text(*_label_spot(topo, pos, n), label, ha="center", va="center",
                        fontsize=6, color="dimgray", zorder=3)


def _label_spot(topo: Topology, pos: Pos, switch: str) -> tuple[float, float]:
    """Below the switch, or opposite its host so the two do not overlap."""
    x, y = pos[switch]
    hosts = [n for n in topo.graph.neighbors(switch) if n in set(topo.hosts())]
    if not hosts:
        return x, y - 0.25
    hx, hy = pos[hosts[0]]
    dx, dy = x - hx, y - hy
    norm = (dx * dx + dy * dy) ** 0.5 or 1.0
    return x + 0.45 * dx / norm, y + 0.45 * dy / norm
