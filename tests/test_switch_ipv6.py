"""IPv6 TCP through the P4 switch with host offloads on (switch/PROTOCOL.md, *Offloads*).

A plain IPv6 flow: the sender's kernel hands TSO super-packets to its veth, the switch cuts
them into wire segments and, on the way out, joins them again into GSO_TCPV6 super-packets
(coalesce.rs). A flow with hop-by-hop and destination options headers: the sender's kernel
segments it in software (no TSO offload for IPv6 extension headers), GRO on the switch's
port joins the segments again, so super-packets with extension headers reach the switch,
which must cut them into the segments the sender made (segment.rs), not drop them, and
join them again on the way out, extension headers kept (coalesce.rs).
The switch forwards port 1 <-> port 2 without parsing (benchmarks/switch_forward.p4)."""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import subprocess
import time
from contextlib import ExitStack, contextmanager

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, ipv4_checksum
from test_switch_gso import _ns, capture_socket, compiled, settled_port, transfer
from test_switch_gso import drain as drain_any

pytestmark = pytest.mark.net

TRANSFER_BYTES = 1 << 20
WIRE_MAX = 1514  # a 1500-byte MTU plus the Ethernet header
# How long a port's counter and its tap may take to agree after the flow (see agreeing).
AGREE_WITHIN_S = 10.0
GSO_TCPV6 = 4
HOSTS = {1: ("a", "fd00::1"), 2: ("b", "fd00::2")}
IPV6_HOPOPTS, IPV6_DSTOPTS = 54, 59
HOP_BY_HOP, DEST_OPTIONS, TCP = 0, 60, 6
PAD_N = b"\x00\x00\x01\x04\x00\x00\x00\x00"  # one 8-byte options header: a PadN option
EXTENSIONS = ((socket.IPPROTO_IPV6, IPV6_HOPOPTS, PAD_N),
              (socket.IPPROTO_IPV6, IPV6_DSTOPTS, PAD_N))


@contextmanager
def two_v6_hosts(rig: Rig):
    """Moves the rig's host ends of ports 1 and 2 into namespaces of their own with IPv6
    on, fd00::1 and fd00::2 in one /64, each knowing the other's MAC (the switch forwards
    by port); yields the namespaces by port."""
    created: dict[int, str] = {}
    try:
        for port, (name, addr) in HOSTS.items():
            ns, ifname = f"{rig.prefix}-{name}", rig.host_if(port)
            subprocess.run(["ip", "netns", "add", ns], check=True)
            created[port] = ns
            _ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0",
                "net.ipv6.conf.default.disable_ipv6=0")
            subprocess.run(["ip", "-n", rig.host_ns, "link", "set", ifname, "netns", ns],
                           check=True)
            _ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=0")
            _ns(ns, "ip", "addr", "add", f"{addr}/64", "dev", ifname, "nodad")
            _ns(ns, "ip", "link", "set", ifname, "up")
        for port, ns in created.items():
            other = 3 - port
            mac = _ns(created[other], "cat", f"/sys/class/net/{rig.host_if(other)}/address")
            _ns(ns, "ip", "-6", "neigh", "add", HOSTS[other][1], "lladdr", mac.strip(),
                "dev", rig.host_if(port))
        yield created
    finally:
        for ns in created.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def is_tcp6(frame: bytes) -> bool:
    return frame[12:14] == b"\x86\xdd" and tcp_offset(frame) > 0


def tcp_offset(frame: bytes) -> int:
    """Where the TCP header of an IPv6 frame starts, behind its options headers (0: the
    frame carries no TCP)."""
    next_header, at = frame[20], 54
    while next_header in (HOP_BY_HOP, DEST_OPTIONS):
        next_header, at = frame[at], at + (frame[at + 1] + 1) * 8
    return at if next_header == TCP else 0


def wire_segments(gso_size: int, frame: bytes) -> int:
    """How many wire packets a captured frame stands for."""
    if not gso_size:
        return 1
    headers = tcp_offset(frame) + (frame[tcp_offset(frame) + 12] >> 4) * 4
    return -(-(len(frame) - headers) // gso_size)


def counted_as_wire_packets(counted: int, frames: list[tuple[int, bytes]]) -> bool:
    """Whether a port counter counted the tapped frames as the wire packets they stand for:
    every TCP segment, and at most every frame (a host's late MLD report may reach the
    tap after the counter was read)."""
    tcp = sum(wire_segments(g, f) for g, f in frames if is_tcp6(f))
    return tcp <= counted <= tcp + sum(not is_tcp6(f) for _, f in frames)


def agreeing(rig: Rig, port: int, counter: str, tap: socket.socket,
             outgoing: bool) -> tuple[dict, list[tuple[int, bytes]]]:
    """The port's settled stats and all its tap holds, read again until the counter counts
    the tapped frames as their wire packets (for at most AGREE_WITHIN_S): on a loaded machine
    a late segment (a retransmitted FIN, a delayed last ACK) reaches the tap after the
    counter was read. A counter that never agrees is left for the caller to assert on."""
    frames: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + AGREE_WITHIN_S
    while True:
        stats = settled_port(rig, port)
        frames += drain(tap, outgoing)
        if counted_as_wire_packets(stats[counter], frames) or time.monotonic() > deadline:
            return stats, frames


def tcp_checksum_ok(frame: bytes) -> bool:
    """The TCP checksum of a wire frame, over the IPv6 pseudo-header, is right."""
    at = tcp_offset(frame)
    segment = frame[at:]
    pseudo = frame[22:54] + struct.pack("!IxxxB", len(segment), TCP)
    return ipv4_checksum(pseudo + segment + b"\0" * (len(segment) % 2)) == 0


def stream(rig: Rig, hosts: dict[int, str], options=()) -> None:
    """Sends random bytes over TCP from host a to host b; they must arrive whole."""
    data = os.urandom(TRANSFER_BYTES)
    arrived = transfer(hosts[1], hosts[2], data, HOSTS[2][1], options)
    assert hashlib.sha256(arrived).digest() == hashlib.sha256(data).digest()


def drain(s: socket.socket, outgoing: bool) -> list[tuple[int, bytes]]:
    """Every frame a tap captured so far in one direction, with its GSO_TCPV6 size."""
    return drain_any(s, outgoing, GSO_TCPV6, ethertype=None)


@pytest.fixture(scope="module")
def forward_ir(tmp_path_factory):
    return compiled(rig_mod.ROOT / "benchmarks" / "switch_forward.p4", tmp_path_factory)


@contextmanager
def v6_flow(ir):
    """A switch forwarding 1 <-> 2 between two IPv6 hosts; yields the rig, the hosts and
    taps on the switch's ports 1 and 2, opened before any host could send: what the switch
    received on port 1 and sent on port 2 is all in them."""
    with ExitStack() as stack:
        rig = stack.enter_context(Rig(n_ports=2, capture=False))
        taps = [stack.enter_context(capture_socket(rig.sw_ns, rig.switch_if(port)))
                for port in (1, 2)]
        hosts = stack.enter_context(two_v6_hosts(rig))
        rig.load(ir)
        yield rig, hosts, taps


def test_ipv6_segments_leave_joined_as_tcpv6_super_packets(forward_ir):
    with v6_flow(forward_ir) as (rig, hosts, (_, sent_tap)):
        stream(rig, hosts)
        port2, sent = agreeing(rig, 2, "tx_packets", sent_tap, outgoing=True)
    joined = [f for gso_size, f in sent if gso_size]
    assert joined and all(len(f) > WIRE_MAX and is_tcp6(f) for f in joined)
    assert all(len(f) <= WIRE_MAX for gso_size, f in sent if not gso_size)
    assert all(tcp_checksum_ok(f) for gso_size, f in sent if not gso_size and is_tcp6(f))
    assert counted_as_wire_packets(port2["tx_packets"], sent)
    assert port2["tx_packets"] > len(sent)
    assert port2["drops"] == 0


def test_ipv6_super_packets_with_extension_headers_are_cut_and_joined_not_dropped(forward_ir):
    with v6_flow(forward_ir) as (rig, hosts, (arrival_tap, sent_tap)):
        # The sender segments in software (its veth then takes part in GRO), GRO on the
        # switch's port joins the segments into super-packets that keep the headers.
        _ns(hosts[1], "ethtool", "-K", rig.host_if(1), "tso", "off")
        _ns(rig.sw_ns, "ethtool", "-K", rig.switch_if(1), "gro", "on")
        stream(rig, hosts, EXTENSIONS)
        port1, arrived = agreeing(rig, 1, "rx_packets", arrival_tap, outgoing=False)
        port2, sent = agreeing(rig, 2, "tx_packets", sent_tap, outgoing=True)
    supers = [f for gso_size, f in arrived if gso_size]
    assert supers and all(f[20] == HOP_BY_HOP and len(f) > WIRE_MAX for f in supers)
    assert port1["drops"] == 0
    assert counted_as_wire_packets(port1["rx_packets"], arrived)
    # Out went the segments the sender made, headers kept: those of one super-packet
    # joined again (each arrived whole, so its segments share a round), others as wire
    # packets with right checksums.
    data = [(g, f) for g, f in sent if is_tcp6(f) and len(f) > tcp_offset(f) + 32]
    assert sum(wire_segments(g, f) for g, f in data) >= TRANSFER_BYTES // 1500
    assert all(f[20] == HOP_BY_HOP and f[54] == DEST_OPTIONS for _, f in data)
    assert any(g for g, _ in data)
    assert all(len(f) <= WIRE_MAX and tcp_checksum_ok(f) for g, f in data if not g)
    assert counted_as_wire_packets(port2["tx_packets"], sent)
    assert port2["drops"] == 0
