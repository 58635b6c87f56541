"""The P4 switch with host offloads on: a real TCP flow (the sender's kernel hands TSO
super-packets to its veth) crosses the switch as wire-sized segments with valid checksums,
and the pipeline sees every segment on its own."""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import subprocess
import threading
import time
from contextlib import ExitStack, contextmanager

import pytest
import switch_rig as rig_mod
from switch_rig import PACKET_OUTGOING, Rig, in_netns, ipv4_checksum

pytestmark = pytest.mark.net

TRANSFER_BYTES = 2 << 20
WIRE_MAX = 1514  # a 1500-byte MTU plus the Ethernet header
SO_RCVBUFFORCE = 33
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
    with in_netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(rig_mod.ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    s.bind((ifname, 0))
    s.setblocking(False)
    return s


def drain(s: socket.socket, outgoing: bool) -> list[bytes]:
    """IPv4 frames captured so far in one direction (the socket's host sending or not)."""
    frames = []
    while True:
        try:
            data, addr = s.recvfrom(1 << 17)
        except BlockingIOError:
            return frames
        if (addr[2] == PACKET_OUTGOING) == outgoing and data[12:14] == b"\x08\x00":
            frames.append(data)


def transfer(ns_from: str, ns_to: str, data: bytes) -> bytes:
    """Sends `data` over one TCP connection 10.0.1.1 -> 10.0.2.2; returns what arrived."""
    with in_netns(ns_to):
        server = socket.socket()
    server.bind(("10.0.2.2", 5001))
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
        client = socket.socket()
    with client, server:
        client.settimeout(20)
        client.connect(("10.0.2.2", 5001))
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        reader.join(timeout=30)
    return bytes(received)


def tcp_checksum_ok(frame: bytes) -> bool:
    ihl = (frame[14] & 0x0F) * 4
    total = struct.unpack("!H", frame[16:18])[0]
    segment = frame[14 + ihl:14 + total]
    pseudo = frame[26:34] + struct.pack("!HH", 6, len(segment))
    return ipv4_checksum(pseudo + segment + b"\0" * (len(segment) % 2)) == 0


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


@pytest.fixture(scope="module")
def l3_ir(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces")
    rig_mod.build_switch()
    out = tmp_path_factory.mktemp("switch_gso_ir")
    return rig_mod.compile_p4(rig_mod.ROOT / "benchmarks" / "switch_l3.p4", out)


def test_tso_super_packets_cross_as_counted_wire_segments(l3_ir):
    with ExitStack() as stack:
        rig = stack.enter_context(Rig(n_ports=2, capture=False))
        macs = stack.enter_context(two_hosts(rig))
        rig.load(l3_ir)
        for port, prefix in ((2, "0x0a000200"), (1, "0x0a000100")):
            rig.client.call(
                "table_add", table="L3Ingress.ipv4_lpm",
                match=[{"kind": "lpm", "v": prefix, "plen": 24}],
                action={"action": "L3Ingress.ipv4_forward",
                        "args": ["0x" + macs[port].replace(":", ""), hex(port)]})
        ns_a, ns_b = f"{rig.prefix}-a", f"{rig.prefix}-b"
        sent_tap = stack.enter_context(capture_socket(ns_a, rig.host_if(1)))
        received_tap = stack.enter_context(capture_socket(ns_b, rig.host_if(2)))
        data = os.urandom(TRANSFER_BYTES)

        arrived = transfer(ns_a, ns_b, data)

        assert hashlib.sha256(arrived).digest() == hashlib.sha256(data).digest()
        port2 = settled_port(rig, 2)
        sent = drain(sent_tap, outgoing=True)
        assert max(len(f) for f in sent) > WIRE_MAX, "the sender's kernel used TSO"
        frames = drain(received_tap, outgoing=False)
        data_frames = [f for f in frames if len(f) > 66]
        assert len(data_frames) >= TRANSFER_BYTES // 1460
        assert max(len(f) for f in frames) <= WIRE_MAX
        assert all(ipv4_checksum(f[14:34]) == 0 for f in frames)
        assert all(tcp_checksum_ok(f) for f in frames)
        counted = entry_counter(rig, "0x0a000200")
        # The pipeline counted each segment: as many as left the switch on port 2 and
        # as the receiver's tap saw, far more than the super-packets the sender handed over.
        assert counted["packets"] == port2["tx_packets"] == len(frames)
        assert counted["bytes"] == port2["tx_bytes"] == sum(len(f) for f in frames)
        assert counted["packets"] > len(sent)
        assert port2["drops"] == 0
