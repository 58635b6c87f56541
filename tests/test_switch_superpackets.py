"""Crafted super-packets into the P4 switch (switch/PROTOCOL.md, *Offloads* and `stats`):
a host's socket hands one TSO super-packet to its veth with a virtio-net header, as a
host's stack would; the switch cuts it into wire segments (segment.rs), its pipeline sees
each, and on the way out it joins them again (coalesce.rs). IPv6 segments behind
hop-by-hop, routing and destination options headers travel that way whole and in order;
a super-packet the switch cannot cut is dropped and counted with its reason."""

from __future__ import annotations

import socket
import struct
import time

import pytest
import switch_rig as rig_mod
from scapy.layers.inet import TCP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting
from scapy.layers.l2 import Ether
from switch_rig import Rig, in_netns
from test_switch_gso import capture_socket, compiled, drain

pytestmark = pytest.mark.net

SOL_PACKET, PACKET_VNET_HDR = 263, 15
F_NEEDS_CSUM, GSO_TCPV6 = 1, 4
SEGMENT = 1000  # gso_size: payload bytes per wire segment
SEGMENTS = 6
MACS = {"dst": "02:00:00:00:02:02", "src": "02:00:00:00:01:01"}
ADDRS = {"src": "fd00::1", "dst": "fd00::2"}


def payload(length: int) -> bytes:
    """Bytes that count up, so a lost, doubled or reordered segment shows."""
    return bytes(i * 7 % 251 for i in range(length))


def with_extensions(*extensions) -> Ether:
    """An IPv6 TCP packet (seq 1000, ACK) behind `extensions`, carrying SEGMENTS segments."""
    ip = IPv6(**ADDRS)
    for header in extensions:
        ip = ip / header
    tcp = TCP(sport=40000, dport=5001, seq=1000, ack=1, flags="A", window=500)
    return Ether(**MACS) / ip / tcp / payload(SEGMENTS * SEGMENT)


def tcp_offset(frame: bytes) -> int:
    """Where the TCP header of an IPv6 frame starts, behind its extension headers."""
    next_header, at = frame[20], 54
    while next_header in (0, 43, 60):
        next_header, at = frame[at], at + (frame[at + 1] + 1) * 8
    assert next_header == 6, "not TCP"
    return at


def send_super_packet(rig: Rig, port: int, packet: Ether) -> None:
    """Hands `packet` to the host end of `port` as a TSO super-packet (GSO_TCPV6, segments
    of SEGMENT bytes, TCP checksum left to finish), as a host's stack would."""
    frame = bytes(packet)
    l4 = tcp_offset(frame)
    hdr_len = l4 + (frame[l4 + 12] >> 4) * 4
    vnet = struct.pack("<BBHHHH", F_NEEDS_CSUM, GSO_TCPV6, hdr_len, SEGMENT, l4, 16)
    with in_netns(rig.host_ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    with s:
        s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
        s.bind((rig.host_if(port), 0))
        s.send(vnet + frame)


def port_stats(rig: Rig, port: int) -> dict:
    return next(p for p in rig.client.call("stats")["ports"] if p["port"] == port)


def stream_bytes(frames: list[tuple[int, bytes]]) -> bytes:
    """The TCP payload of the frames in order, each starting where the one before ended."""
    data, seq = b"", 1000
    for _, frame in frames:
        at = tcp_offset(frame)
        assert struct.unpack("!I", frame[at + 4 : at + 8])[0] == seq, "out of order"
        part = frame[at + (frame[at + 12] >> 4) * 4 :]
        data, seq = data + part, seq + len(part)
    return data


@pytest.fixture(scope="module")
def forward_ir(tmp_path_factory):
    return compiled(rig_mod.ROOT / "benchmarks" / "switch_forward.p4", tmp_path_factory)


@pytest.fixture
def rig(forward_ir):
    with Rig(n_ports=2, capture=False) as r:
        r.load(forward_ir)
        yield r


def sent_on_port_2(rig: Rig, packet: Ether, expect_frames: int = 1) -> list[tuple[int, bytes]]:
    """Sends `packet` as a super-packet into port 1; returns the frames the switch sent on
    port 2 (with their GSO size), once they are out."""
    with capture_socket(rig.sw_ns, rig.switch_if(2)) as tap:
        send_super_packet(rig, 1, packet)
        frames: list[tuple[int, bytes]] = []
        for _ in range(100):  # up to 5 s on a loaded machine
            time.sleep(0.05)
            frames += drain(tap, outgoing=True, gso_kind=GSO_TCPV6, ethertype=b"\x86\xdd")
            if len(frames) >= expect_frames:
                break
        return frames


EXTENSION_CHAINS = {
    "hop-by-hop": (IPv6ExtHdrHopByHop(),),
    "hop-by-hop, routing, destination options": (
        IPv6ExtHdrHopByHop(),
        IPv6ExtHdrRouting(type=0, segleft=1, addresses=["fd00::9"]),
        IPv6ExtHdrDestOpt(),
    ),
}


@pytest.mark.parametrize("chain", EXTENSION_CHAINS, ids=list(EXTENSION_CHAINS))
def test_segments_behind_extension_headers_leave_joined_whole_and_in_order(rig, chain):
    packet = with_extensions(*EXTENSION_CHAINS[chain])
    frames = sent_on_port_2(rig, packet)
    stats = port_stats(rig, 2)
    # Cut into wire segments for the pipeline, joined again into one super-packet of the
    # same segment size, headers and extension headers as they came.
    assert [gso_size for gso_size, _ in frames] == [SEGMENT]
    frame = frames[0][1]
    at = tcp_offset(frame)
    sent = bytes(packet)
    assert frame[54:at] == sent[54:at]
    assert stream_bytes(frames) == payload(SEGMENTS * SEGMENT)
    assert stats["tx_packets"] == SEGMENTS and stats["drops"] == 0
    assert port_stats(rig, 1)["rx_packets"] == SEGMENTS


def test_a_super_packet_the_switch_cannot_cut_is_dropped_with_its_reason(rig):
    # A routing header of type 3 (RPL) with a segment left: where its final destination
    # is, the segments' checksums would need, and the switch does not know that format.
    routing = IPv6ExtHdrRouting(type=3, segleft=1, addresses=["fd00::9"])
    send_super_packet(rig, 1, with_extensions(IPv6ExtHdrHopByHop(), routing))
    for _ in range(100):  # up to 5 s on a loaded machine
        stats = port_stats(rig, 1)
        if stats["drops"]:
            break
        time.sleep(0.05)
    assert stats["drops"] == 1
    assert stats["drop_reasons"] == {"truncated": 0, "bad_offload": 0, "unsegmentable": 1,
                                     "too_long": 0, "refused": 0}
    assert stats["rx_packets"] == 1  # counted as the one packet it is
    assert port_stats(rig, 2)["tx_packets"] == 0
