"""OVS under our OpenFlow controller on a looped topology: real namespaces, real traffic."""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dplab.planes import PlaneError, create
from dplab.substrate import registry
from dplab.substrate.network import Network
from dplab.topology import catalog


def ping_failures(net: Network) -> list[tuple[str, str, str]]:
    """Ping every ordered host pair twice; the pairs that lost anything, with ping's summary."""
    hosts = net.topo.hosts()
    pairs = [(a, b) for a in hosts for b in hosts if a != b]

    def ping(pair: tuple[str, str]) -> tuple[str, str, str] | None:
        done = net.run(net.host_ns(pair[0]), ["ping", "-c2", "-i0.2", "-W2", "-n",
                                              net.host_ip(pair[1])], check=False)
        return None if done.returncode == 0 else (*pair, done.stdout.strip()[-80:])

    with ThreadPoolExecutor(max_workers=8) as pool:
        return [failure for failure in pool.map(ping, pairs) if failure is not None]


def iperf_server_report(net: Network, src: str, dst: str, client_args: list[str]) -> list[str]:
    """Run iperf2 from src to dst for 2 s; the server's CSV report fields."""
    udp = ["-u"] if "-u" in client_args else []
    server = net.popen(net.host_ns(dst), ["iperf", "-s", "-y", "C", *udp],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        time.sleep(0.3)  # let the server listen
        net.run(net.host_ns(src), ["iperf", "-c", net.host_ip(dst), "-t", "2", *client_args],
                timeout=15)
        time.sleep(0.5)  # the server reports when the flow ends
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=5)
    return out.strip().splitlines()[-1].split(",")


def leftovers(prefix: str, run_dir: Path) -> list[str]:
    """Namespaces of the run and processes whose command line names its run directory."""
    found = [ns for ns in registry.list_netns() if ns.startswith(prefix)]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(run_dir).encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            continue  # the process ended while we looked
    return found


@pytest.mark.net
@pytest.mark.parametrize("mode", ["reactive", "proactive"])
def test_ovs_carries_ping_tcp_and_udp_over_a_looped_fabric(mode: str) -> None:
    topo = catalog.build("multipath")  # 6 switches, 10 links, loops: needs LLDP + edge floods
    plane = create("ovs", {"mode": mode})
    with Network(topo, addressing="l2", shared_switch_ns=True) as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            plane.wait_ready(30)
            assert ping_failures(net) == []
            tcp = iperf_server_report(net, "h1", "h8", [])
            udp = iperf_server_report(net, "h2", "h7", ["-u", "-b", "10M"])
            stats = plane.stats()
            stopping = time.time()
            plane.stop()
            # The controller writes its counters once more on SIGTERM.
            assert plane.stats_file.stat().st_mtime >= stopping
            final = json.loads(plane.stats_file.read_text())
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []
    assert final["packet_ins"] >= stats["packet_ins"]

    assert int(tcp[7]) > 5_000_000  # 2 s over 100 Mbit/s edges carries ~23 MB
    udp_bytes, udp_loss_pct = int(udp[7]), float(udp[12])
    # 10 Mbit/s for 2 s is 2.6 MB; the machine is shared, so allow a little loss.
    assert udp_bytes > 2_000_000 and udp_loss_pct < 5.0
    assert stats["lldp_links"] == 10 and stats["hosts"] == 8
    assert stats["ovs_path_flows"] > 0
    if mode == "reactive":
        assert stats["packet_ins"] > 0 and stats["flow_installs"] > 0
        assert stats["flows_set_up"] > 0 and stats["setup_ms_p50"] > 0
    else:
        assert stats["proactive_pairs"] == 8 * 7
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
