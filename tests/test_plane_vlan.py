"""Study 002's VLAN tagging workload and complex pipeline over a real linear topology
(three switches, a host on each): the host's switch pushes the 802.1Q tag, the core
forwards tagged frames, the far edge pops it. Frames are captured on both ends of the
s1-s2 link (tagged) and at the hosts (untagged); ping and TCP cross. The complex
pipeline's extra tables are each looked up once per packet, read from the plane's own
counters (P4Runtime counter cells; OVS's n_packets; the user-space forwarder's report)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from net_checks import ping_failures, tcp_received
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc
from scapy.layers.inet import ICMP
from scapy.layers.l2 import Dot1Q
from scapy.utils import rdpcap

from dplab.planes import create
from dplab.planes.base import Plane
from dplab.planes.ovs import private_env
from dplab.planes.pipeline import COUNTER, EXTRA_LOOKUPS
from dplab.substrate.network import HOST_IF, Network
from dplab.topology import catalog
from dplab.workloads.capture import CapturePoint, Captures

VID = 100
PINGS = 5
MORE_PINGS = 20


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


def lookups_per_packet(net: Network, read: Callable[[], list[int]]) -> None:
    """``read()`` gives every extra table's lookup count on s2; across MORE_PINGS pings
    h1 -> h3 each table counts the same packets, the pings both ways (ARP may add a few)."""
    before = read()
    net.run(net.host_ns("h1"), ["ping", "-c", str(MORE_PINGS), "-i", "0.02", "-W", "2", "-n",
                                net.host_ip("h3")])
    deltas = [after - was for after, was in zip(read(), before, strict=True)]
    assert len(deltas) == EXTRA_LOOKUPS
    assert len(set(deltas)) == 1, deltas
    assert 2 * MORE_PINGS <= deltas[0] <= 2 * MORE_PINGS + 6


def p4_counter_cells(plane: Plane, switch: str) -> list[int]:
    """The extra lookups' counter cells of ``switch``, read over P4Runtime."""
    (info_file,) = plane.dir.glob("*_complex.p4info.bin")
    info = p4info_pb2.P4Info.FromString(info_file.read_bytes())
    (counter,) = [c for c in info.counters if c.preamble.alias == COUNTER]
    entity = pb.Entity()
    entity.counter_entry.counter_id = counter.preamble.id
    request = pb.ReadRequest(device_id=int(switch[1:]), entities=[entity])
    with grpc.insecure_channel(f"unix:{plane.dir / switch}.grpc") as channel:
        cells = {e.counter_entry.index.index: e.counter_entry.data.packet_count
                 for reply in p4runtime_pb2_grpc.P4RuntimeStub(channel).Read(request, timeout=10)
                 for e in reply.entities}
    return [cells[i] for i in range(EXTRA_LOOKUPS)]


@pytest.mark.net
def test_p4_complex_pipeline_looks_up_every_extra_table_once_per_packet(tmp_path):
    run_tagged("p4", {"vlan": VID, "pipeline": "complex"}, tmp_path,
               lambda net, plane: lookups_per_packet(net, lambda: p4_counter_cells(plane, "s2")))


def ovs_table_packets(plane: Plane, switch: str) -> list[int]:
    """n_packets of the extra tables' rules in ``switch``'s bridge, once ovs-vswitchd has
    pushed its datapath's counts to them (a revalidation cycle ends)."""
    env = private_env(plane.dir)
    subprocess.run(["ovs-appctl", "-t", str(plane.dir / "ovs-vswitchd.ctl"), "revalidator/wait"],
                   check=True, env=env, capture_output=True, timeout=20)
    out = subprocess.run(["ovs-ofctl", "--protocols=OpenFlow13", "dump-flows",
                          f"unix:{plane.dir / plane.bridge(switch)}.mgmt"], check=True,
                         env=env, capture_output=True, text=True, timeout=20).stdout
    packets = {int(re.search(r"table=(\d+)", line).group(1)):
               int(re.search(r"n_packets=(\d+)", line).group(1))
               for line in out.splitlines() if "goto_table" in line}
    return [packets[i] for i in range(EXTRA_LOOKUPS)]


def userspace_table_hits(plane: Plane, switch: str) -> list[int]:
    """Each extra table's hits in ``switch``'s running forwarder."""
    return plane.live_counters(switch)["extra_lookups"]


@pytest.mark.net
@pytest.mark.parametrize(("kind", "options", "read"), [
    ("ovs", {"controller": False}, ovs_table_packets),
    ("userspace", {}, userspace_table_hits)])
def test_vlan_push_pop_and_the_complex_pipeline(kind, options, read, tmp_path):
    """OVS (OpenFlow push_vlan / pop_vlan, goto_table) and the user-space forwarder."""
    run_tagged(kind, {**options, "vlan": VID, "pipeline": "complex"}, tmp_path,
               lambda net, plane: lookups_per_packet(net, lambda: read(plane, "s2")))


@pytest.mark.net
def test_bridge_with_tc_ebpf_tags_at_its_edges(tmp_path):
    run_tagged("bridge", {"vlan": VID}, tmp_path)


@pytest.mark.net
def test_p4_complex_pipeline_under_the_controller():
    """basic_fwd.p4 with the extra lookups, paths set up by the controller: traffic
    crosses and every extra table counts each packet once."""
    plane = create("p4", {"mode": "proactive", "pipeline": "complex"})
    topo = catalog.build("linear", switches=3, hosts_per_switch=1)
    with Network(topo, addressing="l2") as net:
        try:
            plane.start(net)
            plane.wait_ready(40)
            received, _ = tcp_received(net, "h1", "h3", seconds=1.0)
            assert received > 1_000_000
            lookups_per_packet(net, lambda: p4_counter_cells(plane, "s2"))
        finally:
            plane.stop()


@pytest.mark.net
@pytest.mark.parametrize(("kind", "options"), [
    ("bridge", {"vlan": VID}), ("p4", {"vlan": VID}),
    ("ovs", {"controller": False, "vlan": VID}), ("userspace", {"vlan": VID})])
def test_vlan_tagging_over_a_looped_fabric_joins_every_pair(kind, options):
    """multipath (6 switches, 10 links): tagged floods stay on the spanning tree the plan
    keeps, so every host pair pings."""
    plane = create(kind, options)
    with Network(catalog.build("multipath"), addressing="l2",
                 shared_switch_ns=plane.shared_switch_ns) as net:
        try:
            plane.start(net)
            plane.wait_ready(40)
            assert ping_failures(net) == []
        finally:
            plane.stop()
