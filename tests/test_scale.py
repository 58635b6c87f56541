"""A large network on one machine: a 250-host fat-tree (k=10, 125 switches, 750 links, every
link shaped) comes up on the bridge plane, forwards a sample of pings across it, and
leaves nothing behind; rtnetlink failures name the request and the namespace."""

from __future__ import annotations

import random
import subprocess

import pytest
from net_checks import leftovers, ping_failures

from dplab import planes
from dplab.substrate import Network, SubstrateError
from dplab.substrate.rtnl import NsPlan
from dplab.topology import catalog

SAMPLE = 24  # host pairs pinged, each drawn with its own fixed seed


def test_fattree_k10_forwards_a_ping_sample_and_leaves_nothing():
    topo = catalog.build("fattree", k=10)
    assert len(topo.hosts()) == 250 and len(topo.switches()) == 125
    plane = planes.create("bridge", {})
    net = Network(topo, addressing=plane.addressing)
    with net:
        prefix, run_dir = net.prefix, net.run_dir
        plane.start(net)
        plane.wait_ready(60)
        hosts = topo.hosts()
        pairs = [tuple(random.Random(i).sample(hosts, 2)) for i in range(SAMPLE)]
        assert ping_failures(net, pairs) == []
        # every shaped end has its TBF: one qdisc per switch port in a core switch
        core = topo.switches()[0]
        qdiscs = subprocess.run(["tc", "-n", net.switch_ns(core), "qdisc", "show"],
                                capture_output=True, text=True, check=True).stdout
        assert qdiscs.count("qdisc tbf") == len(net.switch_ports(core)) == 10
    assert leftovers(prefix, run_dir) == []


def test_rtnl_failures_name_the_request_and_namespace():
    with Network(catalog.build("single", hosts=2)) as net:
        ns = net.host_ns("h1")
        with pytest.raises(SubstrateError, match=f"namespace {ns}: .*no interface"):
            net.configure({ns: NsPlan(up=["nosuch0"])})
        taken = net.host_ip("h1")  # already on eth0: the kernel refuses it twice
        with pytest.raises(SubstrateError, match=f"addr add {taken}/8 dev eth0 in {ns}: File "):
            net.configure({ns: NsPlan(addrs=[("eth0", taken, 8)])})
        with pytest.raises(SubstrateError, match="does not belong"):
            net.configure({"elsewhere": NsPlan()})


def test_rtnl_writes_fit_the_socket_buffer():
    # a one-switch star of a thousand hosts puts a thousand TBF requests (~1 KiB each, with
    # their rate table) into one namespace: they must go in several writes
    from dplab.substrate import rtnl
    requests = [(f"tbf {i}", bytes(1100)) for i in range(1000)] + [("up", bytes(32))] * 600
    chunks = rtnl._chunks(requests)
    assert [r for chunk in chunks for r in chunk] == requests
    assert all(0 < len(c) <= rtnl.CHUNK for c in chunks)
    assert all(sum(len(m) for _, m in c) <= rtnl.CHUNK_BYTES for c in chunks)
