from pathlib import Path

import pytest
import yaml

from dplab.topology import catalog
from dplab.topology.cli import show
from dplab.topology.draw import draw, layout
from dplab.topology.exporters import to_containerlab
from dplab.topology.model import TopologyError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_png_of_the_36_host_network(tmp_path):
    out = draw(catalog.build("internet"), tmp_path / "internet.png")
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 20_000


def test_svg_shows_every_node_name(tmp_path):
    topo = catalog.build("grid")
    text = draw(topo, tmp_path / "grid.svg").read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert text.count("<g id=\"text_") >= len(topo.graph)  # one label per node at least


def test_layouts_keep_nodes_apart():
    for name in catalog.NAMES:
        pos = layout(catalog.build(name))
        assert len(set(pos.values())) == len(pos), f"{name}: two nodes on one spot"


def test_hosts_are_drawn_below_switches_in_layered_topologies():
    pos = layout(catalog.build("fattree"))
    assert max(pos[f"h{i}"][1] for i in range(1, 17)) < min(
        pos[f"s{i}"][1] for i in range(1, 21))


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(TopologyError, match="png or .svg"):
        draw(catalog.build("single"), tmp_path / "x.jpg")


def test_show_builds_draws_and_summarises(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = show("study001", None)
    assert path == Path("results") / "topologies" / "study001.png"
    assert (tmp_path / path).read_bytes().startswith(PNG_MAGIC)
    assert "study001: 6 hosts, 4 switches, 9 links" in capsys.readouterr().out
    zoo = show(str(Path(__file__).parent / "data" / "tiny_zoo.gml"), str(tmp_path / "zoo.svg"))
    assert zoo.read_text().count("<svg") == 1


def test_show_unknown_name_or_file_says_so(tmp_path):
    with pytest.raises(TopologyError, match="unknown topology 'nosuch'; valid names"):
        show("nosuch", str(tmp_path / "x.png"))
    with pytest.raises(TopologyError, match="no such file"):
        show(str(tmp_path / "nosuch.graphml"), str(tmp_path / "x.png"))


def test_containerlab_file_has_every_node_and_link_with_port_interfaces():
    topo = catalog.build("multipath")
    lab = yaml.safe_load(to_containerlab(topo))
    assert lab["name"] == "multipath"
    assert set(lab["topology"]["nodes"]) == set(topo.graph.nodes)
    links = lab["topology"]["links"]
    assert len(links) == topo.graph.number_of_edges()
    ports = topo.port_numbers()
    for link in links:
        (a, b) = link["endpoints"]
        assert topo.graph.has_edge(a["node"], b["node"])
        assert a["interface"] == f"eth{ports[(a['node'], b['node'])]}"
        assert link["vars"]["bw_mbit"] == topo.graph.edges[a["node"], b["node"]]["bw_mbit"]
    interfaces = [(e["node"], e["interface"]) for link in links for e in link["endpoints"]]
    assert len(interfaces) == len(set(interfaces))  # no interface used twice
