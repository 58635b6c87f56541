"""The p4 plane on a looped topology: real switches, P4Runtime servers, the controller,
real traffic; nothing left behind."""

from __future__ import annotations

import json
import time

import pytest
from test_plane_ovs import iperf_server_report, leftovers, ping_failures

from dplab.planes import PlaneError, create
from dplab.substrate.network import Network
from dplab.topology import catalog


@pytest.mark.net
@pytest.mark.parametrize("mode", ["reactive", "proactive"])
def test_p4_carries_ping_tcp_and_udp_over_a_looped_fabric(mode: str) -> None:
    topo = catalog.build("multipath")  # 6 switches, 10 links, 8 hosts
    plane = create("p4", {"mode": mode})
    with Network(topo, addressing="l2") as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            plane.wait_ready(40)
            assert ping_failures(net) == []
            tcp = iperf_server_report(net, "h1", "h8", [])
            udp = iperf_server_report(net, "h2", "h7", ["-u", "-b", "10M"])
            stats = plane.stats()
            stopping = time.time()
            plane.stop()
            assert plane.stats_file.stat().st_mtime >= stopping  # final counters on SIGTERM
            final = json.loads(plane.stats_file.read_text())
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []
    assert final["packet_ins"] >= stats["packet_ins"]
    assert int(tcp[7]) > 5_000_000  # 2 s over 100 Mbit/s edges carries ~23 MB
    udp_bytes, udp_loss_pct = int(udp[7]), float(udp[12])
    assert udp_bytes > 2_000_000 and udp_loss_pct < 5.0
    assert stats["lldp_links"] == 10 and stats["hosts"] == 8 and stats["ready_s"] > 0
    if mode == "reactive":
        assert stats["packet_ins"] > 0 and stats["flow_installs"] > 0
        assert stats["flows_set_up"] > 0
    else:
        assert stats["proactive_pairs"] == 8 * 7


def test_p4_options_are_checked(tmp_path) -> None:
    with pytest.raises(PlaneError, match="'mode'.*'fast'"):
        create("p4", {"mode": "fast"})
    with pytest.raises(PlaneError, match="'program'.*nowhere.p4"):
        create("p4", {"program": str(tmp_path / "nowhere.p4")})
