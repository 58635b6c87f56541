"""Issue 22's metrics off the network: cold planning, the readiness pair, trace files."""

from __future__ import annotations

import random
from types import SimpleNamespace

import networkx as nx
import pytest

from dplab.plan import ExperimentError, build_plan
from dplab.planes.base import farthest_hosts
from dplab.runner import stored_spec
from dplab.spec import parse
from dplab.topology import catalog
from dplab.workloads import trace, trace_file

COLD = """
name: cold
topology: {name: linear, params: {switches: 3, hosts_per_switch: 1}}
planes: [bridge]
cold: true
workloads:
  - {kind: icmp, pairs: [[h1, h3]], count: 3}
  - {kind: icmp, pairs: [[h1, h2]], count: 3, cold: false}
"""


def test_cold_comes_from_the_experiment_unless_the_workload_says_otherwise():
    plan = build_plan(parse(COLD), "cold.yaml")
    [[first], [second]] = plan.point_plan(plan.runs[0].point).run.phases
    assert (first.cold, second.cold) == (True, False)
    assert "cold" not in first.params  # not a tool parameter
    assert "cold" not in stored_spec(parse(COLD.replace("cold: true\n", "")))


def test_the_readiness_ping_avoids_cold_pairs_while_another_pair_is_left():
    net = SimpleNamespace(topo=catalog.build("linear", switches=3, hosts_per_switch=1))
    assert farthest_hosts(net) == ("h1", "h3")
    assert farthest_hosts(net, frozenset({frozenset(("h1", "h3"))})) in {("h1", "h2"),
                                                                        ("h2", "h3")}
    every = frozenset(frozenset(p) for p in (("h1", "h2"), ("h1", "h3"), ("h2", "h3")))
    assert farthest_hosts(net, every) == ("h1", "h3")


def _farthest_by_python_bfs(hosts, graph, avoid):
    best = (hosts[0], hosts[-1], -1)
    for i, src in enumerate(hosts):
        lengths = nx.single_source_shortest_path_length(graph, src)
        for dst in hosts[i + 1:]:
            if frozenset((src, dst)) not in avoid and lengths.get(dst, -1) > best[2]:
                best = (src, dst, lengths[dst])
    return best[:2]


def test_the_farthest_hosts_match_a_breadth_first_search_from_each_host():
    """The block-wise scipy search picks the pair a plain search picks, ties and unreachable
    hosts included, on random (often disconnected) graphs."""
    rng = random.Random(7)
    for seed in range(200):
        graph = nx.gnp_random_graph(rng.randint(2, 20), rng.random() * 0.3, seed=seed)
        graph = nx.relabel_nodes(graph, {i: f"h{i}" if i % 2 == 0 else f"s{i}" for i in graph})
        hosts = [n for n in graph if n.startswith("h")]
        if len(hosts) < 2:
            continue
        avoid = frozenset(frozenset(rng.sample(hosts, 2)) for _ in range(rng.randint(0, 3)))
        net = SimpleNamespace(topo=SimpleNamespace(graph=graph, hosts=lambda h=hosts: h))
        assert farthest_hosts(net, avoid) == _farthest_by_python_bfs(hosts, graph, avoid)


def test_a_csv_trace_with_header_and_hex_tos(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("time,size,tos\n10.5,200,0xb8\n10.52,1400,\n")
    packets = trace_file.load(path)
    assert [(round(p.offset_s, 6), p.size, p.tos) for p in packets] == [
        (0.0, 200, 184), (0.02, 1400, None)]
    params = trace.validate({"file": str(path), "tos": 40}, "w")
    assert {p.tos for p in params.packets} == {40} and params.count == 2


@pytest.mark.parametrize(("text", "message"), [
    ("0,100\nx,100\n", "line 2: expected time,size"),
    ("1,100\n0.5,100\n", "line 2: time 0.5 is before"),
    ("", "no packets"),
])
def test_a_bad_trace_names_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        trace.validate({"file": str(path)}, "flow 'w0'")
    assert str(path) in str(err.value) and "flow 'w0'" in str(err.value)


def test_a_trace_packet_over_the_mtu_is_refused(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("0,1400\n0.1,9000\n")
    with pytest.raises(ValueError, match="packet 2: size 9000"):
        trace.validate({"file": str(path)}, "w")


def test_the_experiment_file_names_a_missing_trace():
    text = COLD.replace("{kind: icmp, pairs: [[h1, h2]], count: 3, cold: false}",
                        "{kind: trace, pairs: [[h1, h2]], file: /nonexistent.csv}")
    with pytest.raises(Exception, match="nonexistent.csv"):
        parse(text)


def test_validate_reads_the_trace_once_for_its_length_and_names_a_bad_one(tmp_path):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("0,200\n2.5,200\n")
    bad.write_text("0,200\n1,big\n")
    text = COLD.replace("{kind: icmp, pairs: [[h1, h2]], count: 3, cold: false}",
                        f"{{kind: trace, pairs: [[h1, h2]], file: {good}}}")
    plan = build_plan(parse(text), "t.yaml")
    assert plan.estimate_s() >= 2.5
    with pytest.raises(ExperimentError, match=r"t\.yaml: workloads\.1\.file: .*line 2"):
        build_plan(parse(text.replace(str(good), str(bad))), "t.yaml")
