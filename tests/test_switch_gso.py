"""The P4 switch with host offloads on: a real TCP flow (the sender's kernel hands TSO
super-packets to its veth) crosses the switch, whose pipeline sees every wire segment on its
own; on the way out the switch joins the segments of the flow again into super-packets
(coalesce.rs) unless the pipeline made them differ, and counts wire segments either way."""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import subprocess
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import PACKET_OUTGOING, SO_RCVBUFFORCE, Rig, in_netns, ipv4_checksum

pytestmark = pytest.mark.net

TRANSFER_BYTES = 2 << 20
WIRE_MAX = 1514  # a 1500-byte MTU plus the Ethernet header
SOL_PACKET = 263
PACKET_VNET_HDR = 15
VNET_HDR_LEN = 10
GSO_TCPV4 = 1
ENDS = {1: ("a", "10.0.1.1", "10.0.1.254"), 2: ("b", "10.0.2.2", "10.0.2.254")}


def _ns(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], check=True,
                          capture_output=True, text=True).stdout


@contextmanager
def two_hosts(rig: Rig):
    """Moves the rig's host ends of ports 1 and 2 into namespaces of their own, addressed
    10.0.1.1 and 10.0.2.2 (offloads as veth leaves them: TSO on); yields their MACs."""
    created: list[str] = []
    try:
        macs = {}
        for port, (name, addr, gateway) in ENDS.items():
            ns, ifname = f"{rig.prefix}-{name}", rig.host_if(port)
            subprocess.run(["ip", "netns", "add", ns], check=True)
            created.append(ns)
            _ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1")
            subprocess.run(["ip", "-n", rig.host_ns, "link", "set", ifname, "netns", ns],
                           check=True)
            _ns(ns, "ip", "addr", "add", f"{addr}/24", "dev", ifname)
            _ns(ns, "ip", "link", "set", ifname, "up")
            other = "10.0.2.0/24" if port == 1 else "10.0.1.0/24"
            _ns(ns, "ip", "neigh", "add", gateway, "lladdr", "02:00:00:00:00:fe", "dev", ifname)
            _ns(ns, "ip", "route", "add", other, "via", gateway)
            macs[port] = _ns(ns, "cat", f"/sys/class/net/{ifname}/address").strip()
        yield macs
    finally:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def capture_socket(ns: str, ifname: str) -> socket.socket:
    """A tap on `ifname` that reads every frame behind its virtio-net header, which says
    whether the frame is a super-packet (GSO type and segment size)."""
    with in_netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(rig_mod.ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    s.bind((ifname, 0))
    s.setblocking(False)
    return s


def drain(s: socket.socket, outgoing: bool, gso_kind: int = GSO_TCPV4,
          ethertype: bytes | None = b"\x08\x00") -> list[tuple[int, bytes]]:
    """Frames of `ethertype` (None: any) captured so far in one direction (the socket's
    host sending or not), each with its GSO segment size if it is a super-packet of
    `gso_kind` (0: a frame as a wire carries it)."""
    frames = []
    while True:
        try:
            data, addr = s.recvfrom(1 << 17)
        except BlockingIOError:
            return frames
        vnet, frame = data[:VNET_HDR_LEN], data[VNET_HDR_LEN:]
        gso_type, gso_size = vnet[1] & 0x7F, struct.unpack("<H", vnet[4:6])[0]
        if (addr[2] == PACKET_OUTGOING) == outgoing and ethertype in (None, frame[12:14]):
            frames.append((gso_size if gso_type == gso_kind else 0, frame))


def headers_len(frame: bytes) -> int:
    """Ethernet, IPv4 and TCP headers of a frame."""
    ihl = (frame[14] & 0x0F) * 4
    return 14 + ihl + (frame[14 + ihl + 12] >> 4) * 4


def wire_segments(gso_size: int, frame: bytes) -> tuple[int, int]:
    """How many frames and bytes a wire carries for a captured frame: a super-packet
    counts as the segments its GSO size cuts it into, each with its own headers."""
    if not gso_size:
        return 1, len(frame)
    headers = headers_len(frame)
    count = -(-(len(frame) - headers) // gso_size)
    return count, len(frame) + (count - 1) * headers


def transfer(ns_from: str, ns_to: str, data: bytes, address: str = "10.0.2.2",
             options: tuple[tuple[int, int, bytes], ...] = ()) -> bytes:
    """Sends `data` over one TCP connection to `address` (IPv4 or IPv6) port 5001, from
    a client socket set up with `options` (setsockopt level, name, value); returns what
    arrived."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with in_netns(ns_to):
        server = socket.socket(family)
    server.bind((address, 5001))
    server.listen(1)
    server.settimeout(20)
    received = bytearray()

    def receive() -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(20)
            while chunk := conn.recv(1 << 16):
                received.extend(chunk)

    reader = threading.Thread(target=receive)
    reader.start()
    with in_netns(ns_from):
        client = socket.socket(family)
    for level, name, value in options:
        client.setsockopt(level, name, value)
    with client, server:
        client.settimeout(20)
        client.connect((address, 5001))
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        reader.join(timeout=30)
    return bytes(received)


def tcp_sum(frame: bytes, length: int | None = None) -> int:
    """The TCP checksum of a frame (0 when valid); with `length`, only the folded
    pseudo-header sum for a TCP length of `length` (what a super-packet carries)."""
    ihl = (frame[14] & 0x0F) * 4
    total = struct.unpack("!H", frame[16:18])[0]
    segment = frame[14 + ihl:14 + total]
    pseudo = frame[26:34] + struct.pack("!HH", 6, len(segment) if length is None else length)
    if length is not None:
        return ~ipv4_checksum(pseudo) & 0xFFFF
    return ipv4_checksum(pseudo + segment + b"\0" * (len(segment) % 2))


def tcp_checksum_ok(frame: bytes) -> bool:
    return tcp_sum(frame) == 0


def partial_checksum_ok(frame: bytes) -> bool:
    """A super-packet's TCP checksum field holds the pseudo-header sum of its whole TCP
    length, for the kernel to finish in each segment."""
    ihl = (frame[14] & 0x0F) * 4
    field = struct.unpack("!H", frame[14 + ihl + 16:14 + ihl + 18])[0]
    return field == tcp_sum(frame, len(frame) - 14 - ihl)


def settled_port(rig: Rig, port: int) -> dict:
    """The port's stats once they stop changing: the flow's last ACKs have gone through."""
    last = None
    for _ in range(50):
        time.sleep(0.1)
        now = next(p for p in rig.client.call("stats")["ports"] if p["port"] == port)
        if now == last:
            return now
        last = now
    raise AssertionError(f"port {port} kept forwarding: {last}")


def entry_counter(rig: Rig, prefix: str) -> dict:
    table = rig.client.call("table_read", table="L3Ingress.ipv4_lpm")
    return next(e for e in table["entries"] if int(e["match"][0]["v"], 16) == int(prefix, 16))


def add_routes(rig: Rig, macs: dict[int, str]) -> None:
    for port, prefix in ((2, "0x0a000200"), (1, "0x0a000100")):
        rig.client.call(
            "table_add", table="L3Ingress.ipv4_lpm",
            match=[{"kind": "lpm", "v": prefix, "plen": 24}],
            action={"action": "L3Ingress.ipv4_forward",
                    "args": ["0x" + macs[port].replace(":", ""), hex(port)]})


@contextmanager
def flow_through_switch(ir, switch_port_offloads: str = ""):
    """A switch running `ir` between two hosts, routes set; yields the rig and taps on
    the sender's and the receiver's interface. `switch_port_offloads`, if given, are
    ethtool -K settings for the switch's port towards the receiver."""
    with ExitStack() as stack:
        rig = stack.enter_context(Rig(n_ports=2, capture=False))
        macs = stack.enter_context(two_hosts(rig))
        if switch_port_offloads:
            _ns(rig.sw_ns, "ethtool", "-K", rig.switch_if(2), *switch_port_offloads.split())
        rig.load(ir)
        add_routes(rig, macs)
        sent_tap = stack.enter_context(capture_socket(f"{rig.prefix}-a", rig.host_if(1)))
        received_tap = stack.enter_context(capture_socket(f"{rig.prefix}-b", rig.host_if(2)))
        yield rig, sent_tap, received_tap


def send_stream(rig: Rig, sent_tap: socket.socket) -> None:
    """Sends random bytes over TCP from host a to host b and checks they arrived whole,
    handed to the sender's veth as TSO super-packets (whose TCP checksum field holds
    what the switch puts in its own super-packets)."""
    data = os.urandom(TRANSFER_BYTES)
    arrived = transfer(f"{rig.prefix}-a", f"{rig.prefix}-b", data)
    assert hashlib.sha256(arrived).digest() == hashlib.sha256(data).digest()
    sent = [f for gso_size, f in drain(sent_tap, outgoing=True) if gso_size]
    assert sent and all(len(f) > WIRE_MAX for f in sent), "the sender's kernel used TSO"
    assert all(partial_checksum_ok(f) for f in sent)
    settled_port(rig, 2)  # the connection's last packets reached the receiver's tap too


def kernel_drops(rig: Rig, port: int) -> int:
    """Frames the switch handed the kernel that its port's veth then dropped (a full
    receive backlog on the far side, on a loaded machine): sent, but never received."""
    path = f"/sys/class/net/{rig.switch_if(port)}/statistics/tx_dropped"
    return int(_ns(rig.sw_ns, "cat", path))


def received(rig: Rig, tap: socket.socket) -> list[tuple[int, bytes]]:
    """What the receiver's tap got of the flow, read until it holds every wire segment the
    switch sent that the kernel did not drop (a frame may still wait in a loaded core's
    receive backlog when the switch's counters have settled), or 5 s passed."""
    port2 = settled_port(rig, 2)
    expected = port2["tx_packets"] - kernel_drops(rig, 2)
    frames: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 5
    while True:
        frames += drain(tap, outgoing=False)
        if sum(wire_segments(*f)[0] for f in frames) >= expected or time.monotonic() > deadline:
            return frames
        time.sleep(0.05)


def assert_counted_as_wire_segments(rig: Rig, frames: list[tuple[int, bytes]]) -> None:
    """The table entry's direct counter and port 2's transmit counters count the wire
    segments of what the receiver got (each super-packet as its segments), and of any
    frame the kernel dropped after the switch sent it."""
    port2 = settled_port(rig, 2)
    dropped = kernel_drops(rig, 2)
    wire = [wire_segments(gso_size, f) for gso_size, f in frames]
    counted = entry_counter(rig, "0x0a000200")
    assert counted["packets"] == port2["tx_packets"] == sum(n for n, _ in wire) + dropped
    assert counted["bytes"] == port2["tx_bytes"]
    if not dropped:
        assert counted["bytes"] == sum(b for _, b in wire)
    assert counted["packets"] >= TRANSFER_BYTES // 1448
    assert port2["drops"] == 0


def compiled(name: Path, tmp_path_factory) -> Path:
    return rig_mod.compile_p4(name, rig_mod.ir_folder(tmp_path_factory, f"switch_gso_{name.stem}"))


@pytest.fixture(scope="module")
def l3_ir(tmp_path_factory):
    return compiled(rig_mod.ROOT / "benchmarks" / "switch_l3.p4", tmp_path_factory)


@pytest.fixture(scope="module")
def ttl_by_id_ir(tmp_path_factory):
    return compiled(rig_mod.ROOT / "tests" / "p4" / "ttl_by_id.p4", tmp_path_factory)


def test_segments_of_one_flow_leave_joined_and_count_as_wire_segments(l3_ir):
    with flow_through_switch(l3_ir) as (rig, sent_tap, received_tap):
        send_stream(rig, sent_tap)
        frames = received(rig, received_tap)
        joined = [f for gso_size, f in frames if gso_size]
        assert joined, "the receiver got super-packets"
        assert all(len(f) > WIRE_MAX for f in joined)
        assert all(len(f) <= WIRE_MAX for gso_size, f in frames if not gso_size)
        assert all(ipv4_checksum(f[14:34]) == 0 for _, f in frames)
        assert all(partial_checksum_ok(f) for f in joined)
        assert all(tcp_checksum_ok(f) for gso_size, f in frames if not gso_size)
        assert_counted_as_wire_segments(rig, frames)
        assert entry_counter(rig, "0x0a000200")["packets"] > len(frames)


def test_without_tso_on_its_port_the_switch_sends_wire_packets(l3_ir):
    # A port without TSO gets no super-packets from the switch (the kernel would only cut
    # them again in software).
    with flow_through_switch(l3_ir, "tx off") as (rig, sent_tap, received_tap):
        send_stream(rig, sent_tap)
        frames = received(rig, received_tap)
        assert all(not gso_size and len(f) <= WIRE_MAX for gso_size, f in frames)
        assert all(ipv4_checksum(f[14:34]) == 0 for _, f in frames)
        assert all(tcp_checksum_ok(f) for _, f in frames)
        assert_counted_as_wire_segments(rig, frames)


def test_segments_the_pipeline_made_differ_leave_one_by_one(ttl_by_id_ir):
    with flow_through_switch(ttl_by_id_ir) as (rig, sent_tap, received_tap):
        send_stream(rig, sent_tap)
        frames = received(rig, received_tap)
        assert all(not gso_size and len(f) <= WIRE_MAX for gso_size, f in frames)
        data = [f for _, f in frames if len(f) > headers_len(f)]
        # The sender's TTL is 64: ingress takes one, egress one more for odd ids.
        assert {f[22] for f in data} == {62, 63}
        assert all(f[22] == 63 - (struct.unpack("!H", f[18:20])[0] & 1) for f in data)
        assert all(tcp_checksum_ok(f) and ipv4_checksum(f[14:34]) == 0 for _, f in frames)
        assert_counted_as_wire_segments(rig, frames)
