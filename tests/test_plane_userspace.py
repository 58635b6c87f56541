"""Userspace plane: a dplab-fwd process per switch bridging or routing over the looped
multipath topology, checked on the frames a host receives and on the bytes flows deliver."""

from __future__ import annotations

import re
import subprocess

import networkx as nx
import pytest
from net_checks import iperf_server_report, leftovers, tcp_received

from dplab import planes
from dplab.planes import PlaneError
from dplab.substrate import Network
from dplab.topology import catalog

SRC, DST = "h1", "h8"  # across the spines: three switches apart


def test_userspace_options_are_checked():
    with pytest.raises(PlaneError, match="'mode' must be bridge or router, not 'hub'"):
        planes.create("userspace", {"mode": "hub"})
    with pytest.raises(PlaneError, match="'vlan' must be a VLAN id 1..4094, not 0"):
        planes.create("userspace", {"vlan": 0})
    with pytest.raises(PlaneError, match="'vlan' tags frames a bridge forwards"):
        planes.create("userspace", {"mode": "router", "vlan": 10})
    with pytest.raises(PlaneError, match="'pipeline' must be one of plain, complex"):
        planes.create("userspace", {"pipeline": "fancy"})
    assert planes.create("userspace", {"mode": "router"}).addressing == "l3"
    assert planes.create("userspace", {}).addressing == "l2"


def first_icmp_frame(net: Network, host: str, send) -> str:
    """The link-level line tcpdump prints for the first ICMP echo request ``host``
    receives while ``send()`` runs."""
    dump = net.popen(net.host_ns(host), ["tcpdump", "-l", "-c1", "-en", "-i", "eth0",
                                         "icmp[icmptype] == icmp-echo"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert dump.stderr is not None
        for line in dump.stderr:  # "listening on eth0": capturing from here on
            if "listening on" in line:
                break
        send()
        out, _ = dump.communicate(timeout=10)
    finally:
        dump.kill()
    return out


@pytest.mark.net
@pytest.mark.parametrize("mode", ["bridge", "router"])
def test_userspace_forwards_icmp_tcp_and_udp_on_multipath(mode):
    topo = catalog.build("multipath")
    plane = planes.create("userspace", {"mode": mode})
    with Network(topo, addressing=plane.addressing) as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            plane.wait_ready(timeout=10)
            ping = ""

            def send() -> None:
                nonlocal ping
                ping = net.run(net.host_ns(SRC), ["ping", "-c3", "-i0.2", "-W1", "-n",
                                                  net.host_ip(DST)]).stdout

            frame = first_icmp_frame(net, DST, send)
            tcp_bytes, _ = tcp_received(net, SRC, DST, seconds=1)
            udp = iperf_server_report(net, "h2", "h7", ["-u", "-b", "10M"], seconds=1)
            stats = plane.stats()
            assert plane.failures() == []
            plane.procs["s1"].kill()
            plane.procs["s1"].wait()
            failures = plane.failures()
            config = (run_dir / "userspace" / "s6.json").read_text()  # h8's edge switch
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []
    assert " 0% packet loss" in ping
    ttl = int(re.search(r"ttl=(\d+)", ping).group(1))
    routers = nx.shortest_path_length(topo.graph, SRC, DST) - 1
    src_mac, dst_mac = re.search(r"([0-9a-f:]{17}) > ([0-9a-f:]{17})", frame).groups()
    assert dst_mac == net.host_mac(DST)
    if mode == "router":
        assert ttl == 64 - routers  # every forwarder on the way back lowered it
        # The last router put its own port's MAC as the source.
        assert src_mac != net.host_mac(SRC) and f'"mac": "{src_mac}"' in config
        assert stats["routes"] == 6 * 8
    else:
        assert ttl == 64 and src_mac == net.host_mac(SRC)  # bridged: untouched
        assert stats["blocked_ports"] == 10 - 5  # a spanning tree of 6 switches keeps 5 links
    assert stats["processes"] == 6
    log = run_dir / "userspace" / "s1.log"
    assert failures == [f"the forwarder of s1 was killed by SIGKILL; log {log}"]
    assert tcp_bytes > 1_000_000
    udp_bytes, udp_loss_pct = int(udp[7]), float(udp[12])
    assert udp_bytes > 600_000 and udp_loss_pct < 50.0  # 10 Mbit/s for 1 s is 1.3 MB
    assert plane.counters["s6"]["tx_packets"] > 0  # printed by the forwarder as it stopped
