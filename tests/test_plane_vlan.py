"""Study 002's VLAN tagging workload and complex pipeline over a real linear topology
(three switches, a host on each): the host's switch pushes the 802.1Q tag, the core
forwards tagged frames, the far edge pops it. Frames are captured on both ends of the
s1-s2 link (tagged) and at the hosts (untagged); ping and TCP cross. The complex
pipeline's extra tables are each looked up once per packet, read from the plane's own
counters (P4Runtime counter cells; OVS's n_packets)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from net_checks import tcp_received
from scapy.layers.inet import ICMP
from scapy.layers.l2 import Dot1Q
from scapy.utils import rdpcap

from dplab.planes import create
from dplab.planes.base import Plane
from dplab.substrate.network import HOST_IF, Network
from dplab.topology import catalog
from dplab.workloads.capture import CapturePoint, Captures

VID = 100
PINGS = 5


def run_tagged(kind: str, options: dict[str, Any], tmp_path: Path,
               more: Callable[[Network, Plane], None] | None = None) -> None:
    """Plane ``kind`` with ``options`` on linear(3): ping h1 -> h3 under captures, check
    the tags where they must be and nowhere else, then TCP, then ``more(net, plane)``."""
    plane = create(kind, options)
    topo = catalog.build("linear", switches=3, hosts_per_switch=1)
    with Network(topo, addressing="l2", shared_switch_ns=plane.shared_switch_ns) as net:
        try:
            plane.start(net)
            plane.wait_ready(40)
            core = [CapturePoint(net.switch_ns(s), f"{s}-eth2", tmp_path / f"{s}.pcap")
                    for s in ("s1", "s2")]
            hosts = [CapturePoint(net.host_ns(h), HOST_IF, tmp_path / f"{h}.pcap")
                     for h in ("h1", "h3")]
            with Captures(net, core + hosts, bpf_filter="icmp or (vlan and icmp)") as caps:
                net.run(net.host_ns("h1"), ["ping", "-c", str(PINGS), "-i", "0.05", "-W", "2",
                                            "-n", net.host_ip("h3")])
            assert caps.problems == []
            on_core = [p for c in core for p in rdpcap(str(c.path)) if ICMP in p]
            at_hosts = [p for c in hosts for p in rdpcap(str(c.path)) if ICMP in p]
            # Every ping crossed the core link both ways; each end sees what it received.
            assert len(on_core) >= 2 * PINGS
            assert all(Dot1Q in p and p[Dot1Q].vlan == VID for p in on_core)
            assert len(at_hosts) >= 4 * PINGS  # request and reply at h1 and at h3
            assert not any(Dot1Q in p for p in at_hosts)
            received, _ = tcp_received(net, "h1", "h3", seconds=1.0)
            assert received > 1_000_000
            if more is not None:
                more(net, plane)
        finally:
            plane.stop()


@pytest.mark.net
def test_p4_vlan_tags_on_the_core_and_none_at_the_hosts(tmp_path):
    run_tagged("p4", {"vlan": VID}, tmp_path)
