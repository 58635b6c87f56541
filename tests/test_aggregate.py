"""Exact route aggregation: every address resolves to the same action before and after."""

from __future__ import annotations

import ipaddress
import random
from ipaddress import IPv4Network

import pytest

from dplab.planes import l3_routes
from dplab.planes.aggregate import aggregate
from dplab.planes.router import next_hops, routes_via
from dplab.substrate import Network
from dplab.topology import catalog

SPACE = ipaddress.ip_network("10.0.0.0/20")


def lookup(routes: list[tuple[IPv4Network, str]], address: int) -> str | None:
    """Longest-prefix match the slow, obvious way."""
    best = max(((prefix.prefixlen, action) for prefix, action in routes
                if int(prefix.network_address) <= address <= int(prefix.broadcast_address)),
               default=None)
    return None if best is None else best[1]


def random_table(rng: random.Random) -> list[tuple[IPv4Network, str]]:
    """Disjoint prefixes of SPACE, /23 to /28, with holes, each with one of two actions."""
    routes, pending = [], [SPACE]
    while pending:
        prefix = pending.pop()
        choice = rng.random()
        if prefix.prefixlen < 23 or (prefix.prefixlen < 28 and choice < 0.5):
            pending += prefix.subnets()
        elif choice < 0.9:
            routes.append((prefix, rng.choice("xy")))
    return routes


@pytest.mark.parametrize("seed", range(20))
def test_every_address_keeps_its_action_and_no_siblings_are_left(seed):
    before = random_table(random.Random(seed))
    after = aggregate(before)
    assert len(after) <= len(before)
    by_length = sorted(before, key=lambda r: -r[0].prefixlen)  # first match = longest
    for address in range(int(SPACE.network_address), int(SPACE.broadcast_address) + 1, 4):
        old = next((a for p, a in by_length if int(p.network_address) <= address
                    <= int(p.broadcast_address)), None)
        assert lookup(after, address) == old
    merged = {prefix: action for prefix, action in after}
    for prefix, action in after:  # nothing left to merge: the rule was applied to the end
        sibling = next(p for p in prefix.supernet().subnets() if p != prefix)
        assert merged.get(sibling) != action


def test_siblings_merge_only_with_the_same_action_and_both_halves_present():
    net = ipaddress.ip_network
    assert aggregate([(net("10.0.2.0/24"), "a"), (net("10.0.3.0/24"), "a")]) == [
        (net("10.0.2.0/23"), "a")]
    assert len(aggregate([(net("10.0.2.0/24"), "a"), (net("10.0.3.0/24"), "b")])) == 2
    # 10.0.1.0/24 and 10.0.2.0/24 are adjacent but not siblings: no /23 holds just them
    assert len(aggregate([(net("10.0.1.0/24"), "a"), (net("10.0.2.0/24"), "a")])) == 2


def test_overlapping_routes_are_refused():
    with pytest.raises(ValueError, match="10.0.0.0/16 and 10.0.1.0/24 overlap"):
        aggregate([(ipaddress.ip_network("10.0.1.0/24"), "a"),
                   (ipaddress.ip_network("10.0.0.0/16"), "b")])


def test_router_routes_on_a_fat_tree_reach_every_host_by_the_same_next_hop():
    net = Network(catalog.build("fattree", k=4), addressing="l3")
    link_addr = {(a, b): ("eth", f"{a}>{b}") for a in net.topo.switches()
                 for b in net.topo.switches()}  # a distinct "via" per (next hop, switch)
    hops = next_hops(net)
    routes = routes_via(net, link_addr, hops)
    assert sum(map(len, routes.values())) < sum(map(len, hops.values())) / 1.5
    for switch, remote in hops.items():
        table = [(ipaddress.ip_network(f"{dst}/{plen}"), via) for dst, plen, via in routes[switch]]
        for host, nearer in remote:
            address = int(ipaddress.ip_address(net.host_ip(host)))
            assert lookup(table, address) == f"{nearer}>{switch}"
        for host in set(net.topo.hosts()) - {h for h, _ in remote}:  # its own: connected
            assert lookup(table, int(ipaddress.ip_address(net.host_ip(host)))) is None


def _ipv4_routes(tables: list[l3_routes.SwitchTables]) -> list[tuple[str, IPv4Network, tuple]]:
    return [(t.switch, IPv4Network((network, length)), (port, t.own_mac, mac))
            for t in tables for network, length, port, mac in t.routes]


def _arp_routes(tables: list[l3_routes.SwitchTables]) -> list[tuple[str, IPv4Network, int]]:
    return [(t.switch, IPv4Network((network, length)), port)
            for t in tables for network, length, port in t.arp]


@pytest.mark.parametrize(("routes_of", "action_of"), [
    (_ipv4_routes, lambda hop: (hop.port, hop.own_mac, hop.next_mac)),
    (_arp_routes, lambda hop: hop.port),
], ids=["ipv4_lpm", "arp_fwd"])
@pytest.mark.parametrize("topology", ["fattree", "grid"])
def test_l3_tables_send_every_host_address_where_its_hop_does(routes_of, action_of, topology):
    net = Network(catalog.build(topology), addressing="l2")
    hops = l3_routes.hops(net)
    tables, pairs = l3_routes.lpm_tables(net)
    assert pairs == len(hops)
    routes = routes_of(tables)
    by_switch: dict[str, list[tuple[IPv4Network, object]]] = {}
    for switch, prefix, action in routes:
        by_switch.setdefault(switch, []).append((prefix, action))
    for hop in hops:
        address = int(ipaddress.ip_address(hop.host_ip))
        assert lookup(by_switch[hop.switch], address) == action_of(hop)
    if topology == "fattree":  # its hosts are numbered along its pods
        assert len(routes) < len(hops) / 1.5
