"""Crafted frames into and out of a real namespace topology (study 003's feasibility matrix
and its tests): a packet socket on each host's eth0 sees every frame that host received
(its own sends left out) from the moment it opened."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from dplab.substrate.network import HOST_IF, Network
from dplab.xdp.netns import inside

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


@contextmanager
def listening(net: Network, hosts: list[str]) -> Iterator[dict[str, socket.socket]]:
    """A packet socket bound to each host's eth0 (opened inside its namespace, where it
    stays)."""
    with ExitStack() as stack:
        sockets = {}
        for host in hosts:
            with inside(net.host_ns(host)):
                sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                     socket.htons(ETH_P_ALL))
            stack.enter_context(sock)
            sock.bind((HOST_IF, 0))
            sockets[host] = sock
        yield sockets


def send(net: Network, host: str, frames: list[bytes]) -> None:
    with inside(net.host_ns(host)):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    with sock:
        sock.bind((HOST_IF, 0))
        for frame in frames:
            sock.send(frame)


def received(sockets: dict[str, socket.socket], settle_s: float = 0.3
             ) -> dict[str, list[bytes]]:
    """Every frame each socket got until none came for ``settle_s``."""
    got: dict[str, list[bytes]] = {host: [] for host in sockets}
    host_of = {sock: host for host, sock in sockets.items()}
    while True:
        ready, _, _ = select.select(list(host_of), [], [], settle_s)
        if not ready:
            return got
        for sock in ready:
            frame, address = sock.recvfrom(65535)
            if address[2] != PACKET_OUTGOING:
                got[host_of[sock]].append(frame)


def exchange(net: Network, sender: str, frames: list[bytes], hosts: list[str],
             marker: bytes) -> dict[str, list[bytes]]:
    """``frames`` sent from ``sender``; what each of ``hosts`` received that carries
    ``marker`` (the hosts' own chatter, IPv6 and the like, left out)."""
    with listening(net, hosts) as sockets:
        send(net, sender, frames)
        got = received(sockets)
    return {host: [f for f in frames_ if marker in f] for host, frames_ in got.items()}


def snmp(net: Network, ns: str, group: str) -> dict[str, int]:
    """The ``group`` counters (``Ip``, ``Icmp``, ...) of namespace ``ns``'s /proc/net/snmp."""
    text = net.run(ns, ["cat", "/proc/net/snmp"]).stdout
    names, values = [line.split()[1:] for line in text.splitlines()
                     if line.startswith(f"{group}:")]
    return dict(zip(names, map(int, values), strict=True))
