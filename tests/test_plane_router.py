"""Router plane: kernel forwarding along shortest paths, checked by TTL and by TCP bytes."""

from __future__ import annotations

import re

import networkx as nx
import pytest
from net_checks import tcp_received

from dplab import planes
from dplab.planes import PlaneError, host_ttl
from dplab.planes.router import next_hops, routes_via
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.topology.model import HOST, SWITCH, Topology, node_order


def square() -> Topology:
    """s1 reaches s3 over s2 or s4 at equal cost: the tie must go to s2."""
    g = nx.Graph()
    g.add_nodes_from(["s1", "s2", "s3", "s4"], kind=SWITCH)
    g.add_nodes_from(["h1", "h3"], kind=HOST)
    g.add_edges_from([("s1", "s4"), ("s4", "s3"), ("s1", "s2"), ("s2", "s3"),
                      ("h1", "s1"), ("h3", "s3")])
    return Topology("square", g)


def test_ties_go_to_the_first_neighbour_in_switch_order():
    net = Network(square(), addressing="l3")
    router = planes.create("router", {})
    addresses = router._link_addresses(net)
    routes = routes_via(net, addresses, next_hops(net))
    via_s2 = addresses[("s2", "s1")][1]
    assert routes["s1"] == [("10.0.3.0", 24, via_s2)]


@pytest.mark.parametrize(("name", "params"), [
    ("grid", {"rows": 3, "cols": 4}), ("internet", {}), ("multipath", {}), ("fattree", {"k": 4}),
    ("single", {"hosts": 2}),
])
def test_next_hops_are_one_hop_nearer_and_first_in_switch_order(name, params):
    """Every next hop is a neighbour one hop nearer the host's switch, the first such in
    switch order, and every switch that reaches a remote host has one."""
    topo = catalog.build(name, **params)
    fabric = topo.graph.subgraph(topo.switches())
    order = {s: i for i, s in enumerate(sorted(fabric, key=node_order))}
    got = next_hops(Network(topo, addressing="l3"))
    for host in topo.hosts():
        edge = next(iter(topo.graph.neighbors(host)))
        hops = nx.single_source_shortest_path_length(fabric, edge)
        for switch in topo.switches():
            nearer = [n for n in fabric.adj[switch] if hops.get(n) == hops.get(switch, 0) - 1]
            expected = min(nearer, key=order.__getitem__) if switch != edge else None
            assert dict(got[switch]).get(host) == expected, (host, switch)


def test_router_refuses_an_l2_network_and_unknown_options():
    with pytest.raises(PlaneError, match="'hops'"):
        planes.create("router", {"hops": 3})
    with pytest.raises(PlaneError, match="l3"):
        planes.create("router", {}).start(Network(square(), addressing="l2"))


def reply_ttl(ping_output: str) -> int:
    return int(re.search(r"ttl=(\d+)", ping_output).group(1))


@pytest.mark.net
@pytest.mark.parametrize("topo_name, src, dst", [("linear", "h1", "h4"),
                                                 ("multipath", "h1", "h8")])
def test_router_forwards_along_shortest_paths(topo_name, src, dst):
    topo = catalog.build(topo_name)
    plane = planes.create("router", {})
    with Network(topo, addressing=plane.addressing) as net:
        plane.start(net)
        plane.wait_ready(timeout=10)
        ping = net.run(net.host_ns(src), ["ping", "-c3", "-i0.2", "-W1", net.host_ip(dst)]).stdout
        received, _ = tcp_received(net, src, dst, seconds=1)
    assert " 0% packet loss" in ping
    # Every router on the way back decrements the TTL of the reply (Linux starts at 64).
    routers = nx.shortest_path_length(topo.graph, src, dst) - 1
    assert reply_ttl(ping) == 64 - routers
    assert received > 1_000_000
    assert plane.stats()["ready_s"] is not None


def chain(switches: int) -> Topology:
    """h1 - s1 - s2 - ... - sN - h2: the hosts are N routers apart."""
    g = nx.path_graph([f"s{i}" for i in range(1, switches + 1)])
    nx.set_node_attributes(g, SWITCH, "kind")
    g.add_nodes_from(["h1", "h2"], kind=HOST)
    g.add_edges_from([("h1", "s1"), ("h2", f"s{switches}")])
    return Topology(f"chain{switches}", g)


def test_hosts_keep_linux_ttl_unless_the_longest_path_needs_more():
    assert host_ttl.routers_on_longest_path(catalog.build("fattree", k=4)) == 5
    assert host_ttl.routers_on_longest_path(chain(63)) == 63
    # 63 routers fit in TTL 64: nothing to set (and nothing tried: this network is not up)
    assert host_ttl.fit(Network(chain(63), addressing="l3"), "router") is None
    with pytest.raises(PlaneError, match="255 routers apart"):
        host_ttl.fit(Network(chain(255), addressing="l3"), "router")


@pytest.mark.net
def test_router_forwards_past_64_routers_with_the_hosts_ttl_raised():
    plane = planes.create("router", {})
    with Network(chain(64), addressing=plane.addressing) as net:
        plane.start(net)
        plane.wait_ready(timeout=20)
        ping = net.run(net.host_ns("h1"), ["ping", "-c1", "-W2", net.host_ip("h2")]).stdout
    assert reply_ttl(ping) == 255 - 64  # h2 answered with TTL 255, 64 routers took theirs
    assert "64 routers apart" in plane.info()["host_ttl"]
