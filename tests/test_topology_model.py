import networkx as nx

from dplab.topology.model import HOST, SWITCH, Topology, node_order


def test_port_numbers_are_stable_and_one_based():
    g = nx.Graph()
    g.add_node("h1", kind=HOST)
    g.add_node("h10", kind=HOST)
    g.add_node("s1", kind=SWITCH)
    g.add_edge("s1", "h10")
    g.add_edge("s1", "h1")
    topo = Topology("t", g)
    ports = topo.port_numbers()
    assert ports[("s1", "h1")] == 1
    assert ports[("s1", "h10")] == 2
    assert topo.hosts() == ["h1", "h10"]
    assert sorted(["h10", "h2"], key=node_order) == ["h2", "h10"]
