"""OVS under our OpenFlow controller on a looped topology: real namespaces, real traffic."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from net_checks import check_controlled_plane_on_multipath, iperf_server_report

from dplab import planes
from dplab.planes import PlaneError, create, l3_routes, ovsdb
from dplab.substrate.network import Network
from dplab.topology import catalog


@pytest.mark.net
@pytest.mark.parametrize("mode", ["reactive", "proactive"])
def test_ovs_carries_ping_tcp_and_udp_over_a_looped_fabric(mode: str) -> None:
    stats = check_controlled_plane_on_multipath("ovs", mode, ready_timeout=30)
    assert stats["ovs_path_flows"] > 0
    if mode == "reactive":
        assert stats["setup_ms_p50"] > 0
    else:
        assert stats["ovs_path_flows"] >= 8 * 7  # at least one rule per host pair


def test_ovs_options_are_checked() -> None:
    with pytest.raises(PlaneError, match="'mode'.*'fast'"):
        create("ovs", {"mode": "fast"})
    with pytest.raises(PlaneError, match="'controller'"):
        create("ovs", {"controller": "yes"})
    with pytest.raises(PlaneError, match="unknown option 'dpdk'"):
        create("ovs", {"dpdk": True})
    with pytest.raises(PlaneError, match="'ports' must be .*'dpdk'"):
        create("ovs", {"datapath": "netdev", "ports": "dpdk"})
    assert create("ovs", {"datapath": "netdev"}).info()["ports"] == "netdev-tso"


@pytest.mark.net
def test_afxdp_ports_are_refused_on_shaped_links_and_leave_no_xdp_program() -> None:
    shaped = catalog.build("linear", switches=2, hosts_per_switch=1, edge_bw=None, core_bw=10)
    plane = create("ovs", {"mode": "proactive", "datapath": "netdev", "ports": "afxdp"})
    with (Network(shaped, addressing="l2", shared_switch_ns=True) as net,
          pytest.raises(PlaneError, match="s1-s2 would lose its 10.* shaping")):
        plane.start(net)
    unshaped = catalog.build("linear", switches=2, hosts_per_switch=1, edge_bw=None,
                             core_bw=None)
    with Network(unshaped, addressing="l2", shared_switch_ns=True) as net:
        try:
            plane.start(net)
            plane.wait_ready(30)
            xdp_while_running = _xdp_interfaces(net)
            ping = net.run(net.host_ns("h1"), ["ping", "-c3", "-i0.2", "-n",
                                               net.host_ip("h2")], check=False)
            tcp = iperf_server_report(net, "h1", "h2", [], 1)
            udp = iperf_server_report(net, "h2", "h1", ["-u", "-b", "20M"], 1)
        finally:
            plane.stop()
        left = _xdp_interfaces(net)
    assert xdp_while_running, "afxdp ports attached no XDP program"
    assert ping.returncode == 0, ping.stdout
    assert int(tcp[7]) > 1_000_000
    assert int(udp[11]) > 1000 and float(udp[12]) < 5.0  # datagrams, loss %
    assert left == [], f"XDP programs left on {left}"


def _xdp_interfaces(net: Network) -> list[str]:
    """Interfaces of the run's namespaces with an XDP program attached."""
    found = []
    for ns in {net.switch_ns("s1"), *(net.host_ns(h) for h in net.topo.hosts())}:
        for link in json.loads(net.run(ns, ["ip", "-j", "-d", "link", "show"]).stdout):
            if "xdp" in link:
                found.append(f"{ns}:{link['ifname']}")
    return found


@pytest.mark.net
def test_ovs_without_controller_learns_and_blocks_loops_with_rstp(monkeypatch) -> None:
    """Its 6 bridges are written in several OVSDB transactions (one bridge's fits in 3 kB):
    all of them forward, RSTP across the transactions' bridges."""
    monkeypatch.setattr(ovsdb, "MAX_ARG_BYTES", 3000)
    plane = create("ovs", {"controller": False})
    with Network(catalog.build("multipath"), addressing="l2", shared_switch_ns=True) as net:
        try:
            plane.start(net)
            plane.wait_ready(30)
            tcp = iperf_server_report(net, "h1", "h8", [], 1)
            stats = plane.stats()
        finally:
            plane.stop()
    assert int(tcp[7]) > 2_500_000  # 1 s over 100 Mbit/s edges carries ~11.5 MB
    assert stats["packet_ins"] is None and stats["ovs_path_flows"] is None
    assert stats["ovs_flows"] == 6  # OVS's own "normal" flow on each of the 6 bridges


def test_datapath_option_picks_userspace_without_the_kernel_module() -> None:
    has_module = Path("/sys/module/openvswitch").exists()
    assert create("ovs", {}).datapath == ("system" if has_module else "netdev")
    assert create("ovs", {"datapath": "netdev"}).datapath == "netdev"
    with pytest.raises(PlaneError, match="datapath"):
        create("ovs", {"datapath": "dpdk"})
    if not has_module:
        with pytest.raises(PlaneError, match="openvswitch module"):
            create("ovs", {"datapath": "system"})


UDP_FRAME_OVERHEAD = 8 + 20 + 14  # UDP, IPv4, Ethernet headers: OVS meters whole frames
IPERF_UDP_PAYLOAD = 1470
BURST_KBIT = 1000  # study 004's 1 Mbit burst


@pytest.mark.net
def test_an_openflow_meter_limits_its_dscp_class_to_its_rate() -> None:
    """10 Mbit/s of EF (DSCP 46) UDP through a 4 Mbit/s meter arrive at 4 Mbit/s (±5 %,
    counted as frames, as the meter counts, less the bucket's burst, which a token bucket
    lets through on top of its rate), while unmetered best effort passes well above the
    meter's rate. (A burst smaller than one of OVS's 32-packet batches would cut batches
    short of the rate.) EF under the rate is measured once more: a busy machine can keep
    ovs-vswitchd from its receive buffers; every measurement must stay under the upper
    bound."""
    qos = {"policy": "meter", "burst_kbit": BURST_KBIT,
           "classes": [{"dscp": 46, "rate_mbit": 4}]}
    plane = create("ovs", {"mode": "proactive", "qos": qos})
    topo = catalog.build("single", hosts=2, edge_bw=None, core_bw=None)
    with Network(topo, addressing="l2", shared_switch_ns=True) as net:
        try:
            plane.start(net)
            plane.wait_ready(30)
            ef = [_metered_bps(net)]
            if ef[0] < 0.95 * 4e6:
                ef.append(_metered_bps(net))
            best_effort = iperf_server_report(net, "h1", "h2", ["-u", "-b", "10M"], 2)
        finally:
            plane.stop()
    assert 0.95 * 4e6 <= max(ef) <= 1.05 * 4e6, \
        f"EF through a 4 Mbit/s meter: {[round(r / 1e6, 2) for r in ef]} Mbit/s"
    assert float(best_effort[8]) > 6e6, f"best effort: {float(best_effort[8]) / 1e6} Mbit/s"
    assert "DSCP 46 at 4000 kbit/s" in plane.info()["qos"]


def _metered_bps(net: Network) -> float:
    """The meter's rate as 3 s of 10 Mbit/s EF h1 -> h2 measured it: frames delivered,
    less the bucket's burst, per second."""
    ef = iperf_server_report(net, "h1", "h2", ["-u", "-b", "10M", "-S", "0xb8"], 3)
    frames = (IPERF_UDP_PAYLOAD + UDP_FRAME_OVERHEAD) / IPERF_UDP_PAYLOAD
    return (int(ef[7]) * 8 * frames - BURST_KBIT * 1000) / float(ef[6].split("-")[1])


def test_meter_options_are_checked() -> None:
    with pytest.raises(PlaneError, match="'policy' must be one of meter"):
        create("ovs", {"qos": {"policy": "dmbrl"}})
    with pytest.raises(PlaneError, match=r"classes\[0\]: 'dscp' must be .* 0..63, not 64"):
        create("ovs", {"qos": {"policy": "meter", "classes": [{"dscp": 64, "rate_mbit": 1}]}})
    with pytest.raises(PlaneError, match="DSCP twice"):
        create("ovs", {"qos": {"policy": "meter", "classes": [{"dscp": 0, "rate_mbit": 1},
                                                              {"dscp": 0, "rate_mbit": 2}]}})
    with pytest.raises(PlaneError, match="needs the controller"):
        create("ovs", {"controller": False,
                       "qos": {"policy": "meter", "classes": [{"dscp": 0, "rate_mbit": 1}]}})


@pytest.mark.net
def test_l3_routes_are_aggregated_and_reach_every_pod() -> None:
    """``forwarding: l3`` on a fat-tree: a bridge's hosts behind one port share masked
    nw_dst / arp_tpa flows, so there are fewer flows than the one IPv4 and one ARP flow per
    (bridge, host) of exact matches, and every host still reaches a host in another pod."""
    topo = catalog.build("fattree", k=4)
    with planes.running("ovs", {"forwarding": "l3"}, topo, 60) as (net, plane):
        hosts = net.topo.hosts()
        with ThreadPoolExecutor(max_workers=8) as pool:
            pings = list(pool.map(lambda i: net.run(
                net.host_ns(hosts[i]), ["ping", "-c1", "-W2", "-n",
                                        net.host_ip(hosts[(i + len(hosts) // 2) % len(hosts)])],
                check=False).returncode, range(len(hosts))))
        flows = plane.stats()["ovs_flows"]
        exact = 2 * len(l3_routes.hops(net))
    assert pings == [0] * len(hosts)
    assert flows is not None and flows < exact
