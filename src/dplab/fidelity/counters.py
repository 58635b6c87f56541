"""Drop and traffic counters of the run's interfaces, read from the kernel.

Per network namespace, over one netlink socket opened once and kept for the run, so a
reading costs two requests and no process. The socket is made inside the namespace by the
calling thread (setns(2) moves only that thread) and then read with pyroute2: pyroute2's
own ``netns=`` forks a child for it, and a forked copy of the runner that a signal reaches
would unwind the runner's own stack (tearing its network down). pyroute2 keeps a socket
per thread, so one thread must make and use all of them (``in_namespace``):

- every root qdisc's bytes, packets and drops (TCA_STATS2). Only roots: a classful root
  (HTB, or netem over TBF) already counts the drops of the qdiscs below it, so adding
  theirs would count a packet twice;
- every interface's ``rx_dropped`` and ``tx_dropped`` (IFLA_STATS64; on veth, tx_dropped
  counts frames its peer could not take), and its byte and packet counts each way.

And once at each end: the hosts' UDP receive-buffer drops (``Udp: RcvbufErrors`` of the
namespace's /proc/net/snmp: datagrams a full socket refused, e.g. an iperf server that
could not keep up), and, by ``ss`` (sock_diag), the drops of every AF_PACKET socket
(``skmem`` ``d``: frames its full receive buffer refused): the sockets user-space planes
receive on, e.g. OVS's netdev-linux ports. A socket that uses a PACKET_RX_RING counts its
ring's drops elsewhere (PACKET_STATISTICS, readable only by its owner), so this sees
them only where the plane reports them.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyroute2 import IPRoute

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
TC_H_ROOT = 0xFFFFFFFF
SS_TIMEOUT_S = 5.0
_SS_SOCKET = re.compile(r"\*:(?P<ifname>\S+).*?ino:(?P<inode>\d+)")
_SS_DROPS = re.compile(r"skmem:\([^)]*\bd(?P<drops>\d+)\)")


@dataclass(frozen=True)
class QdiscCount:
    bytes: int
    packets: int
    drops: int


@dataclass(frozen=True)
class LinkCount:
    rx_dropped: int
    tx_dropped: int
    rx_bytes: int = 0  # Ethernet frames without FCS, as the interface counts them
    tx_bytes: int = 0
    rx_packets: int = 0
    tx_packets: int = 0


@dataclass(frozen=True)
class Reading:
    """One namespace at one moment: root qdiscs and interfaces by interface name."""

    qdiscs: dict[str, QdiscCount]
    links: dict[str, LinkCount]


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextmanager
def in_namespace(netns: str):
    """Run the block with this thread in network namespace ``netns``, then back."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(NETNS_DIR / netns, os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)


class NamespaceCounters:
    """Readings of one network namespace; made, read and closed by one thread."""

    def __init__(self, netns: str) -> None:
        self.netns = netns
        with in_namespace(netns):  # IPRoute opens its socket here, in this thread
            self._ipr = IPRoute()

    def read(self) -> Reading:
        names, links = {}, {}
        for msg in self._ipr.get_links():
            name = msg.get_attr("IFLA_IFNAME")
            names[msg["index"]] = name
            stats = msg.get_attr("IFLA_STATS64") or {}
            links[name] = LinkCount(*(stats.get(key, 0) for key in (
                "rx_dropped", "tx_dropped", "rx_bytes", "tx_bytes", "rx_packets", "tx_packets")))
        qdiscs = {}
        for msg in self._ipr.get_qdiscs():
            if msg["parent"] != TC_H_ROOT or msg["index"] not in names:
                continue
            basic, queue = _stats2(msg)
            qdiscs[names[msg["index"]]] = QdiscCount(basic.get("bytes", 0),
                                                     basic.get("packets", 0),
                                                     queue.get("drops", 0))
        return Reading(qdiscs, links)

    def close(self) -> None:
        self._ipr.close()


def _stats2(msg) -> tuple[dict, dict]:
    stats = msg.get_attr("TCA_STATS2")
    if stats is None:
        return {}, {}
    return stats.get_attr("TCA_STATS_BASIC") or {}, stats.get_attr("TCA_STATS_QUEUE") or {}


def udp_rcvbuf_errors(netns: str) -> int | None:
    """The namespace's count of UDP datagrams dropped for a full receive buffer; None when
    it cannot be read."""
    try:
        with in_namespace(netns):  # thread-self: this thread's namespace, not the process's
            text = Path("/proc/thread-self/net/snmp").read_text()
    except OSError:
        return None
    return parse_snmp_udp(text).get("RcvbufErrors")


def parse_snmp_udp(text: str) -> dict[str, int]:
    """The ``Udp:`` header and value lines of /proc/net/snmp as name -> count."""
    lines = [line.split()[1:] for line in text.splitlines() if line.startswith("Udp:")]
    if len(lines) < 2:
        return {}
    return dict(zip(lines[0], map(int, lines[1]), strict=False))


def packet_socket_drops(namespaces: Iterable[str]) -> dict[str, dict[int, tuple[str, int]]]:
    """Per namespace: inode -> (interface, drops so far) of every AF_PACKET socket bound
    to one interface, or to none (interface ``*``). ``ss`` runs for all namespaces at once
    (each takes ~50 ms to start on a busy machine). A namespace ``ss`` could not read is left
    out: unmeasured, not zero."""
    running = {ns: subprocess.Popen(["ss", "-N", ns, "-0", "-e", "-m", "-H", "-n"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True)
               for ns in namespaces}
    out = {}
    for ns, proc in running.items():
        try:
            text, _ = proc.communicate(timeout=SS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            continue
        if proc.returncode == 0:
            out[ns] = parse_ss_packet(text)
    return out


def parse_ss_packet(text: str) -> dict[int, tuple[str, int]]:
    """``ss -0 -e -m -H`` output: each socket is a line with its address and inode and a
    continuation line with its skmem counters."""
    sockets, current = {}, None
    for line in text.splitlines():
        found = _SS_SOCKET.search(line)
        if found:
            current = (int(found["inode"]), found["ifname"])
            continue
        drops = _SS_DROPS.search(line)
        if drops and current is not None:
            sockets[current[0]] = (current[1], int(drops["drops"]))
            current = None
    return sockets


def socket_drop_deltas(before: dict[int, tuple[str, int]],
                       after: dict[int, tuple[str, int]]) -> dict[str, int]:
    """Drops per interface between two readings, summed over its sockets. A socket opened
    in between counts whole (it dropped nothing before it existed); one closed in between
    is lost with its count."""
    per_if: dict[str, int] = {}
    for inode, (ifname, drops) in after.items():
        start = before.get(inode, (ifname, 0))[1]
        per_if[ifname] = per_if.get(ifname, 0) + drops - start
    return per_if


def open_all(namespaces: Iterable[str]) -> dict[str, NamespaceCounters]:
    opened: dict[str, NamespaceCounters] = {}
    try:
        for ns in namespaces:
            opened[ns] = NamespaceCounters(ns)
    except Exception:
        close_all(opened)
        raise
    return opened


def close_all(counters: dict[str, NamespaceCounters]) -> None:
    for counter in counters.values():
        counter.close()
