"""Measurements the substrate and plane tests share: bytes flows really delivered, which
host pairs cannot reach each other, and what a run left behind."""

from __future__ import annotations

import json
import select
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dplab.planes import create
from dplab.substrate import registry
from dplab.substrate.network import Network
from dplab.topology import catalog
from dplab.workloads.waiting import bound_ports

IPERF_PORT = 5001  # iperf2's default
IPERF_LISTEN_WAIT_S = 5.0
IPERF_REPORT_WAIT_S = 5.0


def tcp_received(net: Network, src: str, dst: str, seconds: float = 1.0) -> tuple[int, float]:
    """Run iperf2 TCP src -> dst; return (bytes the server received, bits/s it measured)."""
    fields = iperf_server_report(net, src, dst, [], seconds)
    return int(fields[7]), float(fields[8])


def ping_failures(net: Network, pairs: list[tuple[str, str]] | None = None
                  ) -> list[tuple[str, str, str]]:
    """Ping every ordered host pair (or ``pairs``) twice; the pairs that lost every ping,
    with ping's summary.
    A pair that lost both is pinged once more before it counts: under a reactive controller
    on a loaded machine both first pings may wait out the path set-up, and a pair the network
    really cannot join fails the second round too."""
    hosts = net.topo.hosts()
    if pairs is None:
        pairs = [(a, b) for a in hosts for b in hosts if a != b]

    def ping(pair: tuple[str, str]) -> tuple[str, str, str] | None:
        done = net.run(net.host_ns(pair[0]), ["ping", "-c2", "-i0.2", "-W2", "-n",
                                              net.host_ip(pair[1])], check=False)
        return None if done.returncode == 0 else (*pair, done.stdout.strip()[-80:])

    with ThreadPoolExecutor(max_workers=8) as pool:
        failed = [failure for failure in pool.map(ping, pairs) if failure is not None]
        again = [(a, b) for a, b, _ in failed]
        return [failure for failure in pool.map(ping, again) if failure is not None]


def iperf_server_report(net: Network, src: str, dst: str, client_args: list[str],
                        seconds: float = 2.0) -> list[str]:
    """Run iperf2 from src to dst for `seconds`; the server's CSV report fields."""
    udp = "-u" in client_args
    server = net.popen(net.host_ns(dst), ["iperf", "-s", "-y", "C", *(["-u"] if udp else [])],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        _wait_bound(net, dst, udp, server)
        net.run(net.host_ns(src), ["iperf", "-c", net.host_ip(dst), "-t", str(seconds),
                                   *client_args], timeout=seconds + 13)
        # The server writes its report line (and flushes it) when the flow ends.
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], IPERF_REPORT_WAIT_S)
        first = server.stdout.readline() if ready else ""
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=5)
    return (first + out).strip().splitlines()[-1].split(",")


def _wait_bound(net: Network, host: str, udp: bool, server: subprocess.Popen) -> None:
    """Returns once the iperf server's port is bound in the host's namespace (or the server
    ended, or IPERF_LISTEN_WAIT_S passed: the client then reports what it could not reach)."""
    deadline = time.monotonic() + IPERF_LISTEN_WAIT_S
    while (IPERF_PORT not in bound_ports(net, net.host_ns(host), udp)
           and server.poll() is None and time.monotonic() < deadline):
        time.sleep(0.02)


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


def check_controlled_plane_on_multipath(kind: str, mode: str,
                                        ready_timeout: float) -> dict[str, float | None]:
    """Run plane ``kind`` under its controller on the looped multipath topology (6 switches,
    10 links, 8 hosts): every pair pings, TCP and UDP flows deliver, the controller writes
    its final counters on stop and nothing is left behind. Returns the plane's stats for
    the plane's own checks."""
    plane = create(kind, {"mode": mode})
    with Network(catalog.build("multipath"), addressing="l2",
                 shared_switch_ns=plane.shared_switch_ns) as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            plane.wait_ready(ready_timeout)
            assert ping_failures(net) == []
            tcp = iperf_server_report(net, "h1", "h8", [], 1)
            udp = iperf_server_report(net, "h2", "h7", ["-u", "-b", "10M"], 1)
            stats = plane.stats()
            # The file system's clock is coarser than time.time(): take "now" from it too.
            marker = plane.stats_file.with_suffix(".stopping")
            marker.touch()
            stopping = marker.stat().st_mtime_ns
            plane.stop()
            assert plane.stats_file.stat().st_mtime_ns >= stopping  # final counters on SIGTERM
            final = json.loads(plane.stats_file.read_text())
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []
    assert final["packet_ins"] >= stats["packet_ins"]
    assert int(tcp[7]) > 2_500_000  # 1 s over 100 Mbit/s edges carries ~11.5 MB
    udp_bytes, udp_loss_pct = int(udp[7]), float(udp[12])
    # 10 Mbit/s for 1 s is 1.3 MB. Most of it must arrive (a broken path loses it all); a
    # loaded machine's receiver has dropped over 5 %, which says nothing about the plane.
    assert udp_bytes > 650_000 and udp_loss_pct < 50.0
    assert stats["lldp_links"] == 10 and stats["hosts"] == 8
    if mode == "reactive":
        assert stats["packet_ins"] > 0 and stats["flow_installs"] > 0
        assert stats["flows_set_up"] > 0
    else:
        assert stats["proactive_pairs"] == 8 * 7
    return stats
