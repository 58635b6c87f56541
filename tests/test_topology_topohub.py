"""topohub graphs as dplab topologies, checked against topohub's own data."""

import networkx as nx
import pytest
import topohub

from dplab.plan import build_topology
from dplab.spec import SpecError, parse
from dplab.topology import from_topohub
from dplab.topology.cli import resolve
from dplab.topology.model import CORE_BW_MBIT, EDGE_BW_MBIT, TopologyError


def switch_links(topo):
    return [(a, b) for a, b in topo.graph.edges if a[0] == "s" and b[0] == "s"]


@pytest.mark.parametrize("key", ["topozoo/Abilene", "sndlib/polska", "gabriel/25/0",
                                 "topozoo/Renam"])
def test_counts_and_names_match_topohubs_data(key):
    data = topohub.get(key)
    topo = from_topohub.load(key)
    n = len(data["nodes"])
    assert topo.name == key.replace("/", "-")
    assert topo.switches() == [f"s{i}" for i in range(1, n + 1)]
    assert topo.hosts() == [f"h{i}" for i in range(1, n + 1)]
    assert len(switch_links(topo)) == len(data["edges"]) == data["graph"]["stats"]["links"]
    assert [topo.graph.nodes[f"s{i}"]["label"] for i in range(1, n + 1)] == [
        node["name"] for node in data["nodes"]]
    assert nx.is_connected(topo.graph)


def test_abilene_links_follow_topohubs_edges_with_core_and_edge_bandwidth():
    data = topohub.get("topozoo/Abilene")
    topo = from_topohub.load("topozoo/Abilene")
    name_of = {int(node["id"]): node["name"] for node in data["nodes"]}
    expected = {frozenset((name_of[int(e["source"])], name_of[int(e["target"])]))
                for e in data["edges"]}
    label = nx.get_node_attributes(topo.graph, "label")
    assert {frozenset((label[a], label[b])) for a, b in switch_links(topo)} == expected
    assert topo.graph.nodes["s1"]["label"] == "New York"
    for a, b, bw in topo.graph.edges(data="bw_mbit"):
        assert bw == (CORE_BW_MBIT if a[0] == b[0] == "s" else EDGE_BW_MBIT)
    for i in range(1, 12):
        assert list(topo.graph.neighbors(f"h{i}")) == [f"s{i}"]
    assert topo.pairs["icmp"] == [(f"h{i}", f"h{i + 5}") for i in range(1, 6)]
    assert topo.pairs["cdn"][0] == ("h1", "h11")


def test_bandwidth_parameters():
    topo = from_topohub.load("sndlib/polska", core_bw=None, edge_bw=10)
    assert {topo.graph.edges[e]["bw_mbit"] for e in switch_links(topo)} == {None}
    assert topo.graph.edges["h1", "s1"]["bw_mbit"] == 10


def test_every_group_is_listed():
    assert from_topohub.groups() == ["backbone", "caida", "gabriel", "sndlib", "topozoo"]
    assert "topozoo/Abilene" in from_topohub.graph_keys()
    assert "gabriel/25/0" in from_topohub.graph_keys()


@pytest.mark.parametrize("key, hint", [
    ("topozoo/abilene", "Close matches: topozoo/Abilene"),
    ("topozoo/Abilen", "Close matches: topozoo/Abilene"),
    ("nothing/here", "Groups: backbone, caida, gabriel, sndlib, topozoo"),
])
def test_unknown_key_names_it_and_hints(key, hint):
    with pytest.raises(TopologyError) as err:
        from_topohub.load(key)
    assert f"topohub:{key}: unknown topohub key" in str(err.value)
    assert hint in str(err.value)


@pytest.mark.parametrize("params, message", [
    ({"edge": 5}, "unknown parameter(s) edge; valid: core_bw, edge_bw, keep_largest"),
    ({"core_bw": "fast"}, "core_bw must be a positive number"),
    ({"edge_bw": 0}, "edge_bw must be a positive number"),
])
def test_bad_parameters_are_named(params, message):
    with pytest.raises(TopologyError) as err:
        from_topohub.load("sndlib/polska", **params)
    assert str(err.value).startswith("topohub:sndlib/polska: ")
    assert message in str(err.value)


def test_experiment_file_and_topo_show_take_topohub_keys():
    exp = parse("""
name: hub
topology: {topohub: topozoo/Abilene, params: {edge_bw: 50}}
planes: [bridge]
workloads: [{kind: icmp}]
""")
    topo = build_topology(exp)
    assert len(topo.hosts()) == 11 and topo.graph.edges["h1", "s1"]["bw_mbit"] == 50
    assert resolve("topohub:topozoo/Abilene").name == "topozoo-Abilene"


def test_topohub_with_another_source_is_refused():
    with pytest.raises(SpecError, match="give exactly one of 'name'"):
        parse("""
name: hub
topology: {topohub: topozoo/Abilene, name: linear}
planes: [bridge]
workloads: [{kind: icmp}]
""")
