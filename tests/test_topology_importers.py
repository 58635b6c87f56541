from pathlib import Path

import networkx as nx
import pytest

from dplab.topology.importers import load
from dplab.topology.model import EDGE_BW_MBIT, TopologyError

DATA = Path(__file__).parent / "data"


def test_graphml_nodes_become_switches_in_file_order_with_one_host_each():
    topo = load(DATA / "tiny_zoo.graphml")
    assert topo.name == "tiny_zoo"
    assert topo.switches() == ["s1", "s2", "s3", "s4"]
    assert [topo.graph.nodes[s]["label"] for s in topo.switches()] == [
        "Amsterdam", "Berlin", "Paris", "London"]
    assert topo.hosts() == ["h1", "h2", "h3", "h4"]
    for i in range(1, 5):
        assert list(topo.graph.neighbors(f"h{i}")) == [f"s{i}"]
        assert topo.graph.edges[f"h{i}", f"s{i}"]["bw_mbit"] == EDGE_BW_MBIT
    bw = nx.get_edge_attributes(topo.graph, "bw_mbit")
    assert bw[("s1", "s2")] == 10000.0       # LinkSpeedRaw 10 Gbit/s
    assert bw[("s1", "s4")] == 155.0
    assert bw[("s3", "s4")] == 1000.0        # no speed in the file: core default
    assert topo.pairs["icmp"] == [("h1", "h3"), ("h2", "h4")]


def test_gml_multigraph_parallel_links_merge_to_the_fastest():
    topo = load(DATA / "tiny_zoo.gml", core_bw=None)
    assert topo.switches() == ["s1", "s2", "s3"]
    assert topo.graph.nodes["s2"]["label"] == "Bergen"
    assert topo.graph.edges["s1", "s2"]["bw_mbit"] == 10000.0
    assert topo.graph.edges["s2", "s3"]["bw_mbit"] is None
    assert topo.graph.number_of_edges() == 2 + 3


def test_keep_largest_part_renumbers(tmp_path):
    f = tmp_path / "split.gml"
    f.write_text("graph [ node [ id 7 ] node [ id 3 ] node [ id 5 ] node [ id 9 ]\n"
                 "edge [ source 3 target 5 ] edge [ source 5 target 9 ] ]")
    with pytest.raises(TopologyError, match="2 separate parts"):
        load(f)
    topo = load(f, keep_largest=True)
    assert topo.switches() == ["s1", "s2", "s3"]
    assert nx.is_connected(topo.graph)


@pytest.mark.parametrize("name, text, message", [
    ("bad.graphml", "<graphml><graph", "not a readable GraphML file"),
    ("bad.gml", "graph [ node [ id 0 ", "not a readable GML file"),
    ("empty.gml", "graph [ ]", "the graph has no nodes"),
    ("one.gml", "graph [ node [ id 0 ] ]", "only one node"),
    ("speed.gml", 'graph [ node [ id 0 ] node [ id 1 ] edge [ source 0 target 1 '
                  'LinkSpeedRaw "fast" ] ]', "LinkSpeedRaw must be a positive number"),
    ("net.txt", "x", "unknown file type '.txt'"),
])
def test_bad_files_are_refused_naming_the_file(tmp_path, name, text, message):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(TopologyError) as err:
        load(f)
    assert message in str(err.value)
    assert name in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(TopologyError, match="no such file"):
        load(tmp_path / "absent.graphml")
