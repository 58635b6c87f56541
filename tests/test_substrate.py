"""Network: names and addresses, real bring-up in namespaces, shaping measured with iperf."""

from __future__ import annotations

import json

import networkx as nx
import pytest
from net_checks import tcp_received

from dplab.substrate import Network, SubstrateError, linkem
from dplab.substrate.rtnl import NsPlan
from dplab.topology import catalog
from dplab.topology.model import HOST, SWITCH, Topology


def pair(bw_mbit: float | None = None, **attrs: float) -> Topology:
    """Two hosts on one direct link: the substrate alone carries their traffic."""
    g = nx.Graph()
    g.add_node("h1", kind=HOST)
    g.add_node("h2", kind=HOST)
    g.add_edge("h1", "h2", bw_mbit=bw_mbit, **attrs)
    return Topology("pair", g)


def test_addresses_names_and_ports_follow_the_contract():
    net = Network(catalog.build("linear"), addressing="l3")
    assert net.host_ip("h7") == "10.0.7.1"
    assert net.host_gateway("h300") == "10.1.44.254"
    assert net.host_mac("h300") == "02:00:00:00:01:2c"
    ports = net.switch_ports("s1")
    assert ports == {1: "s1-eth1", 2: "s1-eth2"}
    assert {net.neighbour("s1", p) for p in ports} == {"h1", "s2"}


@pytest.mark.parametrize("bad, needle", [
    (dict(addressing="l4"), "addressing"),
    (dict(prefix="xx12"), "prefix"),
])
def test_bad_arguments_are_named(bad, needle):
    with pytest.raises(SubstrateError, match=needle):
        Network(pair(), **bad)


def test_a_host_with_two_links_is_refused():
    g = nx.Graph()
    g.add_nodes_from(["s1", "s2"], kind=SWITCH)
    g.add_node("h1", kind=HOST)
    g.add_edges_from([("h1", "s1"), ("h1", "s2")])
    with pytest.raises(SubstrateError, match="host h1 has 2 links"):
        Network(Topology("t", g))


@pytest.mark.net
def test_netem_asked_for_without_netem_is_refused_before_anything_is_built():
    net = Network(pair(delay_ms=5.0, emulator="netem"))
    if net.capabilities()["netem"]:
        pytest.skip("this kernel has netem")
    with pytest.raises(SubstrateError, match="h1–h2 asks for emulator netem.*no netem"):
        net.up()
    with pytest.raises(SubstrateError, match="not up"):
        net.run("dl0000-h1", ["true"])


def test_link_emulation_settings_are_checked():
    with pytest.raises(SubstrateError, match="h1–h2: emulator must be one of"):
        Network(pair(emulator="tc"))
    with pytest.raises(SubstrateError, match="h1–h2: loss_pct must be <= 100"):
        Network(pair(loss_pct=150.0))
    with pytest.raises(SubstrateError, match="h1–h2: linkem: dealy_us: unknown key"):
        Network(pair(linkem={"dealy_us": 5}, emulator="dplab"))
    with pytest.raises(SubstrateError, match="h1–h2: linkem settings need emulator dplab"):
        Network(pair(linkem={"duplicate_pct": 1}))
    with pytest.raises(SubstrateError, match=r"h1–h2: linkem: seed: .*integer, not '7'"):
        Network(pair(linkem={"seed": "7"}, emulator="dplab"))


def test_a_linkem_seed_seeds_each_link_from_it_and_none_draws_a_random_one():
    topo = catalog.build("linear", switches=2, hosts_per_switch=1, emulator="dplab",
                         delay_ms=1.0, linkem={"seed": 7})
    net = Network(topo)
    assert [linkem.seed(link, i) for i, link in enumerate(net.links)] == [7, 8, 9]
    assert all("seed" not in linkem.direction(link) for link in net.links)
    unseeded = Network(pair(delay_ms=1.0, emulator="dplab")).links[0]
    assert linkem.seed(unseeded, 0) != linkem.seed(unseeded, 0)


@pytest.mark.parametrize("node, owner", [("linkem0", "the link emulator of h1–linkem0"),
                                         ("map1", "the wireless medium of ap1")])
def test_a_node_named_like_an_emulators_namespace_is_refused(node, owner):
    g = nx.Graph()
    g.add_node("h1", kind=HOST)
    g.add_node(node, kind=SWITCH)
    g.add_edge("h1", node, bw_mbit=None)
    if node == "map1":
        g.add_node("ap1", kind=SWITCH)
        g.add_node("sta1", kind=HOST)
        g.add_edge(node, "ap1", bw_mbit=None)
        g.add_edge("sta1", "ap1", wireless=True, rate_mbit=54.0, loss_pct=0.0)
    with pytest.raises(SubstrateError, match=f"node {node}: its namespace .* is the one of "
                                             f"{owner}; give the node another name"):
        Network(Topology("t", g))


@pytest.mark.net
def test_l2_hosts_get_address_mac_and_reach_each_other():
    with Network(pair()) as net:
        addr = json.loads(net.run(net.host_ns("h1"), ["ip", "-j", "addr", "show"]).stdout)
        by_name = {a["ifname"]: a for a in addr}
        assert by_name["eth0"]["address"] == "02:00:00:00:00:01"
        assert by_name["eth0"]["mtu"] == 1500
        assert [(i["local"], i["prefixlen"]) for i in by_name["eth0"]["addr_info"]] == [
            ("10.0.1.1", 8)]
        assert "UP" in by_name["lo"]["flags"]
        no_v6 = net.run(net.host_ns("h1"), ["sysctl", "-n", "net.ipv6.conf.all.disable_ipv6"])
        assert no_v6.stdout.strip() == "1"
        ping = net.run(net.host_ns("h1"), ["ping", "-c2", "-i0.2", "-W2", net.host_ip("h2")])
        assert " 0% packet loss" in ping.stdout


@pytest.mark.net
def test_offloads_named_as_ethtool_names_them_are_set_and_unknown_names_left_out():
    def features(net: Network) -> dict[str, str]:
        listed = net.run(net.host_ns("h1"), ["ethtool", "-k", "eth0"]).stdout.splitlines()
        return dict(line.strip().split(": ", 1)[:2] for line in listed if ": " in line)

    with Network(pair()) as net:
        for on in (True, False):
            net.configure({net.host_ns("h1"): NsPlan(features={"eth0": {
                "rx-gro": on, "tx-checksum-sctp": not on, "no-such-feature": True}})})
            now = features(net)
            assert now["generic-receive-offload"].startswith("on" if on else "off")
            assert now["tx-checksum-sctp"].startswith("off" if on else "on")


@pytest.mark.net
def test_l3_host_reaches_its_gateway_on_the_switch_port():
    with Network(catalog.build("single", hosts=2), addressing="l3") as net:
        route = net.run(net.host_ns("h2"), ["ip", "route", "show", "default"]).stdout
        assert "via 10.0.2.254 dev eth0" in route
        ping = net.run(net.host_ns("h2"), ["ping", "-c1", "-W1", "10.0.2.254"])
        assert " 0% packet loss" in ping.stdout


@pytest.mark.net
def test_shared_switch_namespace_holds_every_switch_port():
    topo = catalog.build("linear")
    with Network(topo, shared_switch_ns=True) as net:
        assert {net.switch_ns(s) for s in topo.switches()} == {f"{net.prefix}-sw"}
        links = json.loads(net.run(f"{net.prefix}-sw", ["ip", "-j", "link", "show"]).stdout)
        names = {link["ifname"] for link in links}
        wanted = {p for s in topo.switches() for p in net.switch_ports(s).values()}
        assert wanted <= names


@pytest.mark.net
def test_a_10_mbit_link_delivers_10_mbit():
    with Network(pair(bw_mbit=10.0)) as net:
        received, bps = tcp_received(net, "h1", "h2", seconds=2)
    assert received > 0
    # The shaper caps the rate (the bucket's first burst allows a little over); how close
    # TCP gets below the cap depends on the machine's load, so the floor is loose.
    assert 7e6 <= bps <= 11e6, f"measured {bps / 1e6:.2f} Mbit/s on a 10 Mbit/s link"


@pytest.mark.net
def test_two_networks_at_once_do_not_disturb_each_other():
    with Network(pair()) as first, Network(pair()) as second:
        assert first.prefix != second.prefix
        second.down()
        ping = first.run(first.host_ns("h1"), ["ping", "-c1", "-W1", first.host_ip("h2")])
        assert " 0% packet loss" in ping.stdout


def test_links_with_delay_or_loss_get_netem_above_tbf():
    from dplab.substrate.network import Link, LinkEnd, shaping_lines

    def link(bw, delay=0.0, loss=0.0):
        return Link(LinkEnd("s1", "s1-eth1"), LinkEnd("s2", "s2-eth1"), bw, delay, loss)

    assert shaping_lines("x", link(None)) == []
    assert [line.split()[5] for line in shaping_lines("x", link(10.0))] == ["tbf"]
    netem, tbf = shaping_lines("x", link(10.0, delay=5.0, loss=1.0))
    assert netem == "qdisc add dev x root handle 1: netem delay 5.0ms loss 1.0%"
    assert tbf.startswith("qdisc add dev x parent 1:1 handle 10: tbf rate 10.0mbit")
    assert shaping_lines("x", link(None, delay=2.0)) == [
        "qdisc add dev x root handle 1: netem delay 2.0ms"]
    jittery = Link(LinkEnd("s1", "s1-eth1"), LinkEnd("s2", "s2-eth1"), None, 2.0, jitter_ms=0.5)
    assert shaping_lines("x", jittery) == ["qdisc add dev x root handle 1: netem delay 2.0ms 0.5ms"]
