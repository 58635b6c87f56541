"""OVS under our OpenFlow controller on a looped topology: real namespaces, real traffic."""

from __future__ import annotations

from pathlib import Path

import pytest
from net_checks import check_controlled_plane_on_multipath, iperf_server_report

from dplab.planes import PlaneError, create
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


@pytest.mark.net
def test_ovs_without_controller_learns_and_blocks_loops_with_rstp() -> None:
    plane = create("ovs", {"controller": False})
    with Network(catalog.build("multipath"), addressing="l2", shared_switch_ns=True) as net:
        try:
            plane.start(net)
            plane.wait_ready(30)
            tcp = iperf_server_report(net, "h1", "h8", [])
            stats = plane.stats()
        finally:
            plane.stop()
    assert int(tcp[7]) > 5_000_000
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
