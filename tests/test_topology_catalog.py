import networkx as nx
import pytest

from dplab.topology import catalog
from dplab.topology.catalog import TopologyError, build
from dplab.topology.model import CORE_BW_MBIT, EDGE_BW_MBIT, HOST, SWITCH

# name -> (hosts, switches) with default parameters
SIZES = {
    "multipath": (8, 6),
    "grid": (8, 12),
    "internet": (36, 22),
    "fattree": (16, 20),
    "spineleaf": (8, 6),
    "study001": (6, 4),
    "linear": (4, 4),
    "single": (4, 1),
    "tree": (4, 3),
}
WIRELESS = {"wifi", "wifi2"}  # stations and access points: tests/test_wifi.py


def test_catalog_lists_every_topology():
    assert set(catalog.NAMES) == set(SIZES) | WIRELESS


@pytest.mark.parametrize("name", sorted(SIZES))
def test_counts_connectivity_pairs_and_bandwidths(name):
    topo = build(name)
    hosts, switches = SIZES[name]
    assert topo.hosts() == [f"h{i}" for i in range(1, hosts + 1)]
    assert topo.switches() == [f"s{i}" for i in range(1, switches + 1)]
    assert nx.is_connected(topo.graph)
    for host in topo.hosts():  # every host hangs off exactly one switch
        (nbr,) = topo.graph.neighbors(host)
        assert topo.graph.nodes[nbr]["kind"] == SWITCH
    for cls in ("icmp", "tcp", "udp", "cdn"):
        assert topo.pairs[cls], f"{name} has no {cls} pairs"
        for src, dst in topo.pairs[cls]:
            assert src != dst
            assert topo.graph.nodes[src]["kind"] == HOST
            assert topo.graph.nodes[dst]["kind"] == HOST
    for a, b, data in topo.graph.edges(data=True):
        is_edge = HOST in (topo.graph.nodes[a]["kind"], topo.graph.nodes[b]["kind"])
        assert data["bw_mbit"] == (EDGE_BW_MBIT if is_edge else CORE_BW_MBIT)
        assert data["delay_ms"] == 0.0 and data["loss_pct"] == 0.0


def test_study000_table1_pairs():
    for name in ("multipath", "grid"):
        pairs = build(name).pairs
        for cls in ("icmp", "tcp", "udp"):
            assert pairs[cls] == [("h1", "h5"), ("h2", "h6"), ("h3", "h7"), ("h4", "h8")]
        assert pairs["cdn"] == [("h1", "h8"), ("h2", "h8"), ("h3", "h8"), ("h4", "h8")]
    pairs = build("internet").pairs
    assert pairs["icmp"] == [("h1", "h21"), ("h5", "h22"), ("h9", "h23"), ("h13", "h24"),
                             ("h17", "h25")]
    assert pairs["tcp"] == [("h2", "h26"), ("h6", "h27"), ("h10", "h28"), ("h14", "h29"),
                            ("h18", "h30")]
    assert pairs["udp"] == [("h3", "h31"), ("h7", "h32"), ("h11", "h33"), ("h15", "h34"),
                            ("h19", "h35")]
    assert pairs["cdn"] == [(f"h{i}", "h36") for i in (4, 8, 12, 16, 20)]


def _switch_path(topo, src, dst):
    return [n for n in nx.shortest_path(topo.graph, src, dst) if n.startswith("s")]


def test_multipath_pairs_have_two_equal_cost_paths_over_the_spines():
    topo = build("multipath")
    for src, dst in topo.pairs["tcp"]:
        paths = list(nx.all_shortest_paths(topo.graph, src, dst))
        assert len(paths) == 2
        assert {p[2] for p in paths} == {"s1", "s2"}  # leaf -> spine -> leaf


def test_internet_pairs_cross_the_transit_domain():
    topo = build("internet")
    transit = {s for s in topo.switches() if topo.graph.nodes[s]["role"] == "transit"}
    assert transit == {"s1", "s2", "s3", "s4"}
    for cls in ("icmp", "tcp", "udp", "cdn"):
        for src, dst in topo.pairs[cls]:
            assert transit & set(_switch_path(topo, src, dst))
    core = topo.graph.subgraph(transit)
    assert core.number_of_edges() == 5  # ring plus one chord


def test_study001_server_and_load_pair():
    topo = build("study001")
    assert topo.pairs["tcp"] == [(f"h{i}", "h1") for i in range(2, 7)]
    assert topo.pairs["udp_load"] == [("h5", "h1")]
    assert _switch_path(topo, "h5", "h1") == ["s4", "s1", "s2"]


def test_parameters_change_the_shape():
    assert len(build("fattree", k=6).switches()) == 45  # 9 core + 6 pods x 6
    assert len(build("fattree", k=6).hosts()) == 54
    topo = build("spineleaf", spines=3, leaves=5, hosts_per_leaf=3)
    assert (len(topo.switches()), len(topo.hosts())) == (8, 15)
    assert topo.graph.degree("s1") == 5
    assert len(build("linear", switches=3, hosts_per_switch=2).hosts()) == 6
    assert len(build("single", hosts=7).hosts()) == 7
    tree = build("tree", depth=3, fanout=2)
    assert (len(tree.switches()), len(tree.hosts())) == (7, 8)
    grid = build("grid", rows=2, cols=2)
    assert grid.pairs["icmp"] == [("h1", "h3"), ("h2", "h4")]


def test_link_parameters():
    topo = build("single", hosts=2, edge_bw=None, core_bw=10, delay_ms=2, loss_pct=1.5)
    assert all(bw is None for *_, bw in topo.graph.edges(data="bw_mbit"))
    topo = build("linear", switches=2, core_bw=10.0, edge_bw=5)
    assert topo.graph.edges["s1", "s2"]["bw_mbit"] == 10.0
    assert topo.graph.edges["s1", "h1"]["bw_mbit"] == 5.0
    assert build("single", delay_ms=2).graph.edges["s1", "h1"]["delay_ms"] == 2.0


def test_link_classes_get_their_own_delay_jitter_and_loss():
    topo = build("linear", switches=2, delay_ms=1, edge_delay_ms=5, core_loss_pct=2,
                 jitter_ms=0.5, emulator="dplab")
    edge, core = topo.graph.edges["s1", "h1"], topo.graph.edges["s1", "s2"]
    assert (edge["delay_ms"], edge["loss_pct"], edge["jitter_ms"]) == (5.0, 0.0, 0.5)
    assert (core["delay_ms"], core["loss_pct"], core["jitter_ms"]) == (1.0, 2.0, 0.5)
    assert edge["emulator"] == core["emulator"] == "dplab"


def test_link_classes_get_their_own_linkem_settings_over_the_shared_ones():
    ge = {"model": "gilbert_elliott", "p_pct": 1, "r_pct": 30}
    topo = build("linear", switches=2, delay_ms=1, emulator="dplab",
                 linkem={"seed": 7, "jitter": "normal"}, core_linkem={"loss": ge},
                 edge_linkem={"rate_bps": 1e6, "jitter": "uniform"})
    edge, core = topo.graph.edges["s1", "h1"], topo.graph.edges["s1", "s2"]
    assert core["linkem"] == {"seed": 7, "jitter": "normal", "loss": ge}
    assert edge["linkem"] == {"seed": 7, "jitter": "uniform", "rate_bps": 1e6}
    only_core = build("linear", switches=2, emulator="dplab", core_linkem={"reorder": True})
    assert "linkem" not in only_core.graph.edges["s1", "h1"]
    assert only_core.graph.edges["s1", "s2"]["linkem"] == {"reorder": True}


def test_same_input_same_graph():
    a, b = build("internet"), build("internet")
    assert list(a.graph.edges(data=True)) == list(b.graph.edges(data=True))


@pytest.mark.parametrize("name, params, message", [
    ("nope", {}, "valid names: multipath, grid, internet"),
    ("fattree", {"k": 3}, "k must be even"),
    ("fattree", {"k": 0}, "k must be >= 2"),
    ("fattree", {"k": "4"}, "k must be a whole number"),
    ("fattree", {"k": 4.0}, "k must be a whole number"),
    ("linear", {"n": 3}, "unknown parameter(s) n; valid: switches, hosts_per_switch"),
    ("linear", {"switches": 1}, "fewer than 2 hosts"),
    ("tree", {"depth": 1, "fanout": 1}, "fewer than 2 hosts"),
    ("single", {"edge_bw": 0}, "edge_bw must be > 0"),
    ("single", {"core_bw": "fast"}, "core_bw must be a number"),
    ("single", {"loss_pct": 150}, "loss_pct must be between 0.0 and 100.0"),
    ("single", {"delay_ms": -1}, "delay_ms must be >= 0.0"),
    ("single", {"core_loss_pct": 101}, "core_loss_pct must be between 0.0 and 100.0"),
    ("single", {"emulator": "tc"}, "emulator must be one of ('netem', 'dplab')"),
    ("fattree", {"k": 100}, "more than 2000 nodes"),
    ("single", {"linkem": 5}, "linkem: must be a mapping of delay_us"),
    ("single", {"core_linkem": {"dealy_us": 5}}, "core_linkem: dealy_us: unknown key"),
    ("single", {"edge_linkem": {"loss": {"model": "random", "pct": 120}}},
     "edge_linkem: loss.pct: Input should be less than or equal to 100, not 120"),
    ("single", {"linkem": {"loss": {"model": "gilbert_elliott", "p_pct": 1}}},
     "linkem: loss.r_pct: Field required"),
    ("single", {"edge_linkem": {"jitter": "pareto"}}, "edge_linkem: jitter: Input should be"),
    ("single", {"core_linkem": {"queue_packets": 0}}, "core_linkem: queue_packets: Input"),
    ("single", {"linkem": {"rate_bps": True}}, "linkem: rate_bps: Input should be a valid"),
    ("single", {"linkem": {"seed": 2**63}}, "linkem: seed: Input should be less than"),
])
def test_bad_input_is_refused_clearly(name, params, message):
    with pytest.raises(TopologyError) as err:
        build(name, **params)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


def test_describe_every_topology():
    for name in catalog.NAMES:
        assert len(catalog.describe(name)) > 20
