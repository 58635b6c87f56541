"""Mininet custom-topology files as dplab topologies (built by Debian's python3 + Mininet)."""

from pathlib import Path

import pytest

from dplab.spec import SpecError, parse
from dplab.topology import from_mininet
from dplab.topology.cli import resolve
from dplab.topology.model import TopologyError

ROOT = Path(__file__).resolve().parents[1]
DUMBBELL = ROOT / "topologies" / "examples" / "mininet_dumbbell.py"
HEADER = "from mininet.topo import Topo\n"


def write(tmp_path: Path, body: str, name: str = "topo.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def labels(topo, nodes):
    return [topo.graph.nodes[n]["label"] for n in nodes]


def test_dumbbell_is_renamed_in_natural_order_keeping_mininet_names():
    topo = from_mininet.load(DUMBBELL)
    assert topo.name == "dumbbell"
    assert topo.hosts() == ["h1", "h2", "h3", "h4"]
    assert labels(topo, topo.hosts()) == ["l1", "l2", "r1", "r2"]
    assert labels(topo, topo.switches()) == ["sl1", "sr1"]
    assert [topo.graph.nodes[s]["layer"] for s in topo.switches()] == [0, 0]
    assert sorted(topo.graph.neighbors("s1")) == ["h1", "h2", "s2"]
    assert topo.graph.edges["s1", "s2"]["bw_mbit"] == 10.0
    assert topo.graph.edges["h3", "s2"]["bw_mbit"] == 100.0
    assert topo.graph.edges["s1", "s2"]["delay_ms"] == 0.0
    assert topo.graph.edges["s1", "s2"]["mininet_ports"] == {"s1": 1, "s2": 1}
    assert topo.pairs["icmp"] == [("h1", "h3"), ("h2", "h4")]   # l1 -> r1, l2 -> r2
    assert topo.pairs["cdn"] == [("h1", "h4"), ("h2", "h4")]


def test_params_are_keyword_arguments_and_class_names_work_too():
    topo = from_mininet.load(DUMBBELL, "Dumbbell", {"n": 5, "bottleneck_bw": 2.5})
    assert len(topo.hosts()) == 10 and len(topo.switches()) == 2
    assert topo.graph.edges["s1", "s2"]["bw_mbit"] == 2.5
    # natural order: l1, l2, ..., l5 before r1 (and l10 would come after l9)
    assert labels(topo, topo.hosts()) == [f"l{i}" for i in range(1, 6)] + [
        f"r{i}" for i in range(1, 6)]


def test_positional_arguments_as_mininets_topo_option():
    assert from_mininet.parse_topo_option("dumbbell,3,2.5,delay=5ms") == (
        "dumbbell", [3, 2.5], {"delay": "5ms"})
    topo = from_mininet.load(DUMBBELL, "dumbbell", {"edge_bw": 50}, [4, 2.5])
    assert len(topo.hosts()) == 8
    assert topo.graph.edges["s1", "s2"]["bw_mbit"] == 2.5
    shown = resolve(f"{DUMBBELL}:dumbbell,3,bottleneck_bw=7")
    assert len(shown.hosts()) == 6 and shown.graph.edges["s1", "s2"]["bw_mbit"] == 7
    with pytest.raises(TopologyError, match=r"building 'dumbbell'\(1, 2, 3, 4, 5\) failed"):
        from_mininet.load(DUMBBELL, "dumbbell", args=[1, 2, 3, 4, 5])


@pytest.mark.parametrize("opts, bw, delay_ms, loss", [
    ("", None, 0.0, 0.0),
    ("bw=1000, delay='5ms', loss=2", 1000.0, 5.0, 2.0),
    ("delay='250us'", None, 0.25, 0.0),
    ("delay='1.5s'", None, 1500.0, 0.0),
    ("delay=100", None, 0.1, 0.0),   # a bare number is microseconds, as tc reads it
])
def test_link_options_map_to_our_attributes(tmp_path, opts, bw, delay_ms, loss):
    path = write(tmp_path, f"""
class Pair(Topo):
    def build(self):
        a, b = self.addSwitch('s1'), self.addSwitch('s2')
        self.addLink(a, b, {opts})
        self.addLink(self.addHost('h1'), a)
        self.addLink(self.addHost('h2'), b)
""")
    edge = from_mininet.load(path).graph.edges["s1", "s2"]
    assert (edge["bw_mbit"], edge["delay_ms"], edge["loss_pct"]) == (bw, delay_ms, loss)


def test_tclink_jitter_maps_to_jitter_ms(tmp_path):
    path = write(tmp_path, """
class Pair(Topo):
    def build(self):
        a = self.addSwitch('s1')
        self.addLink(self.addHost('h1'), a, delay='10ms', jitter='2ms', loss=1)
        self.addLink(self.addHost('h2'), a)
""")
    edge = from_mininet.load(path).graph.edges["s1", "h1"]
    assert (edge["delay_ms"], edge["jitter_ms"], edge["loss_pct"]) == (10.0, 2.0, 1.0)


def test_mininets_own_tree_topo_through_the_topos_dict(tmp_path):
    path = write(tmp_path, "from mininet.topolib import TreeTopo\ntopos = {'tree': TreeTopo}\n")
    topo = from_mininet.load(path, "tree", {"depth": 2, "fanout": 3})
    assert (len(topo.switches()), len(topo.hosts())) == (4, 9)
    assert topo.graph.number_of_edges() == 3 + 9
    layers = {topo.graph.nodes[s]["label"]: topo.graph.nodes[s]["layer"] for s in topo.switches()}
    assert layers == {"s1": 0, "s2": 1, "s3": 1, "s4": 1}   # root on top, for drawing
    assert {bw for *_, bw in topo.graph.edges(data="bw_mbit")} == {None}   # Mininet: unshaped


def test_mininet_natural_sort_puts_h2_before_h10(tmp_path):
    path = write(tmp_path, """
class Star(Topo):
    def build(self):
        s = self.addSwitch('s1')
        for i in (10, 2, 1):
            self.addLink(self.addHost(f'h{i}'), s)
""")
    topo = from_mininet.load(path)
    assert labels(topo, topo.hosts()) == ["h1", "h2", "h10"]


def test_prints_in_the_file_do_not_disturb_the_import(tmp_path):
    path = write(tmp_path, """
print('hello from the topo file')
topos = {'one': lambda: Two()}
class Two(Topo):
    def build(self):
        print('building')
        s = self.addSwitch('s1')
        self.addLink(self.addHost('a'), s)
        self.addLink(self.addHost('b'), s)
""")
    topo = from_mininet.load(path)
    assert topo.name == "one" and labels(topo, topo.hosts()) == ["a", "b"]


PAIR = """
class Pair(Topo):
    def build(self):
        s1 = self.addSwitch('s1')
        h1, h2 = self.addHost('h1'), self.addHost('h2')
{links}
"""


@pytest.mark.parametrize("links, message", [
    ("        self.addLink(h1, s1); self.addLink(h2, s1); self.addLink(h1, h2)",
     "link h1-h2 joins two hosts"),
    ("        s2 = self.addSwitch('s2')\n"
     "        self.addLink(h1, s1); self.addLink(h1, s2); self.addLink(h2, s2)",
     "host h1 is linked to several switches (s1, s2)"),
    ("        self.addLink(h1, s1); self.addLink(h2, s1); self.addLink(h2, s1)",
     "second link between the same nodes"),
    ("        self.addLink(h1, s1)", "host h2 has no link"),
    ("        s2 = self.addSwitch('s2')\n"
     "        self.addLink(h1, s1); self.addLink(h2, s2)",
     "falls into 2 separate parts; cut off from the largest: h2, s2"),
    ("        self.addLink(h1, s1, bw='fast'); self.addLink(h2, s1)",
     "link h1-s1: bw must be a positive number of Mbit/s, got 'fast'"),
    ("        self.addLink(h1, s1, delay='soon'); self.addLink(h2, s1)",
     "link h1-s1: delay must look like '5ms'"),
    ("        self.addLink(h1, s1, loss=150); self.addLink(h2, s1)",
     "link h1-s1: loss must be a percentage 0-100, got 150"),
])
def test_shapes_our_model_cannot_take_are_refused_naming_the_file(tmp_path, links, message):
    path = write(tmp_path, PAIR.format(links=links))
    with pytest.raises(TopologyError) as err:
        from_mininet.load(path)
    assert str(err.value).startswith(f"{path} (Pair): ")
    assert message in str(err.value)


def test_python_error_in_the_file_gives_its_file_and_line(tmp_path):
    path = write(tmp_path, "x = 1\nraise RuntimeError('broken on purpose')\n")
    with pytest.raises(TopologyError) as err:
        from_mininet.load(path)
    assert str(err.value) == (f"{path}: error in the file: {path}:3: "
                              "RuntimeError: broken on purpose")


def test_syntax_error_gives_its_file_and_line(tmp_path):
    path = write(tmp_path, "def broken(:\n")
    with pytest.raises(TopologyError, match=rf"{path}:2: SyntaxError"):
        from_mininet.load(path)


def test_error_while_building_points_into_the_file(tmp_path):
    path = write(tmp_path, """
class Bad(Topo):
    def build(self, n=1):
        self.addSwitch('s1')
        return 1 / 0
""")
    with pytest.raises(TopologyError) as err:
        from_mininet.load(path)
    assert f"building 'Bad'() failed: {path}:6: ZeroDivisionError" in str(err.value)


def test_unknown_name_lists_what_the_file_has():
    with pytest.raises(TopologyError) as err:
        from_mininet.load(DUMBBELL, "barbell")
    assert str(err.value) == (f"{DUMBBELL}: no topology 'barbell'; it defines topos dumbbell; "
                              "Topo classes Dumbbell; choose one with 'name'")


def test_several_topologies_need_a_name(tmp_path):
    path = write(tmp_path, "topos = {'a': Topo, 'b': Topo}\n")
    with pytest.raises(TopologyError, match="more than one topology; it defines topos a, b"):
        from_mininet.load(path)


def test_a_file_without_topologies_says_so(tmp_path):
    path = write(tmp_path, "x = 1\n")
    with pytest.raises(TopologyError, match="no 'topos' dict, no Topo class"):
        from_mininet.load(path)


def test_unknown_parameter_is_reported_from_the_build_call():
    with pytest.raises(TopologyError, match="unexpected keyword argument 'hosts'"):
        from_mininet.load(DUMBBELL, params={"hosts": 3})


def test_missing_file(tmp_path):
    with pytest.raises(TopologyError, match="absent.py: no such file"):
        from_mininet.load(tmp_path / "absent.py")


def test_experiment_file_and_topo_show_take_mininet_files():
    exp = parse(f"""
name: mn
topology: {{mininet: {DUMBBELL}, name: dumbbell, params: {{n: 3}}}}
planes: [bridge]
workloads: [{{kind: icmp}}]
""")
    assert exp.topology.mininet == str(DUMBBELL) and exp.topology.name == "dumbbell"
    from dplab.plan import build_topology
    assert len(build_topology(exp).hosts()) == 6
    positional = parse(f"""
name: mn
topology: {{mininet: {DUMBBELL}, name: dumbbell, args: [2]}}
planes: [bridge]
workloads: [{{kind: icmp}}]
""")
    assert len(build_topology(positional).hosts()) == 4
    assert resolve(f"{DUMBBELL}:Dumbbell").name == "Dumbbell"
    with pytest.raises(SpecError, match="give exactly one of"):
        parse(f"""
name: mn
topology: {{mininet: {DUMBBELL}, file: x.graphml}}
planes: [bridge]
workloads: [{{kind: icmp}}]
""")


@pytest.mark.net
def test_imported_dumbbell_carries_traffic_at_its_bottleneck_rate_on_the_bridge(tmp_path):
    from dplab.runner import run_matrix
    from dplab.store import RunStore

    exp = parse(f"""
name: mn-net
topology: {{mininet: {DUMBBELL}, params: {{n: 1, bottleneck_bw: 20}}}}
planes: [bridge]
workloads:
  - {{kind: icmp, count: 5, interval: 0.05}}
  - {{kind: tcp, duration: 2}}
""")
    run_matrix(exp, tmp_path / "results")
    store = RunStore.open(tmp_path / "results")
    assert [r["status"] for r in store.rows("runs")] == ["ok"]
    values = {(s["kind"], s["metric"]): s["value"] for s in store.rows("summaries")}
    assert values[("icmp", "packets_received")] == 5
    # the file's 20 Mbit/s bottleneck (edges 100) bounds TCP: bw -> bw_mbit reached the link
    assert 0.7 * 20e6 < values[("tcp", "throughput_bps")] < 1.1 * 20e6
