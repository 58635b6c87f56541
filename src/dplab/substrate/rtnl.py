"""Configure links in many network namespaces from this process, over rtnetlink.

Starting one ``ip -n NS`` and one ``tc -n NS`` process per namespace costs a fork and an
exec each: at a thousand namespaces that is most of a bring-up. Here one thread enters
each namespace in turn with setns(2) (which moves only the calling thread), opens a
NETLINK_ROUTE socket there (a socket stays bound to the namespace it was opened in),
sends that namespace's requests in a few large writes and reads one acknowledgement per
request. The thread ends afterwards, so no other thread ever runs in a foreign namespace.

Links up/down/into a bridge, bridges, addresses and routes are small fixed structs packed
here; a TBF qdisc (with its rate table) is encoded once per distinct rate by pyroute2 and
only its ifindex changes. Offloads (GRO, TSO) go through the SIOCETHTOOL ioctl on a socket
opened in the namespace, the same way.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import threading
from dataclasses import dataclass, field
from functools import lru_cache

from pyroute2.netlink.rtnl import TC_H_ROOT
from pyroute2.netlink.rtnl.tcmsg import plugins as tc_plugins
from pyroute2.netlink.rtnl.tcmsg import tcmsg

from dplab.substrate.registry import SubstrateError
from dplab.substrate.sysctl import enter_netns

# linux/netlink.h, linux/rtnetlink.h, linux/if.h, linux/if_addr.h
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLMSG_ERROR = 2
RTM_NEWLINK, RTM_NEWADDR, RTM_NEWROUTE, RTM_NEWQDISC = 16, 20, 24, 36
IFF_UP = 0x1
IFLA_IFNAME, IFLA_MASTER, IFLA_LINKINFO, IFLA_INFO_KIND = 3, 10, 18, 1
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_GATEWAY = 1, 5
RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNICAST = 254, 3, 0, 1
SOL_NETLINK, NETLINK_CAP_ACK = 270, 10
LOOPBACK_IFINDEX = 1  # the kernel registers lo first in every new namespace
NEW = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
# Requests per write: their acknowledgements must fit the socket's receive buffer.
CHUNK = 256
CHUNK_BYTES = 64 * 1024  # well inside the default send buffer (net.core.wmem_default)
# linux/sockios.h, linux/ethtool.h: the one-feature set commands, struct ethtool_value
SIOCETHTOOL, ETHTOOL_STSO, ETHTOOL_SGRO = 0x8946, 0x1F, 0x2C
# TBF's rate field is 32 bits of bytes per second; faster links go through tc (rate64).
MAX_TBF_MBIT = (2**32 - 1) * 8 / 1e6


@dataclass
class NsPlan:
    """What to set in one namespace, in this order: bridges made, links down, links into
    bridges, links up, addresses, TBF qdiscs, routes, then the veth NAPI receive path."""

    bridges: list[str] = field(default_factory=list)  # bridge devices to make (no STP)
    down: list[str] = field(default_factory=list)  # interface names
    masters: list[tuple[str, str]] = field(default_factory=list)  # ifname, its bridge
    up: list[str] = field(default_factory=list)  # interface names; "lo" included if wanted
    addrs: list[tuple[str, str, int]] = field(default_factory=list)  # ifname, address, prefix
    tbf: list[tuple[str, float, int, int]] = field(default_factory=list)  # ifname, mbit, burst, ms
    routes: list[tuple[str, int, str]] = field(default_factory=list)  # dst, prefix len, via
    # veth ends that receive through their own NAPI ring instead of the CPU's backlog: GRO
    # on (veth then polls its ring), TSO off (veth_xmit puts a frame on the peer's ring only
    # when the sending device has no TSO, or the frame is a local socket's UDP).
    napi: list[str] = field(default_factory=list)


def configure(plans: dict[str, NsPlan]) -> None:
    """Apply every plan in its namespace; SubstrateError naming each request that failed."""
    errors: list[str] = []
    worker = threading.Thread(target=_apply_all, args=(plans, errors), daemon=True)
    worker.start()
    worker.join()
    if errors:
        raise SubstrateError("; ".join(errors[:5]) + (f" (+{len(errors) - 5} more)"
                                                       if len(errors) > 5 else ""))


def _apply_all(plans: dict[str, NsPlan], errors: list[str]) -> None:
    for ns, plan in plans.items():
        try:
            enter_netns(ns)
            failed = _send_all([(f"link add {name} type bridge", _new_bridge(name))
                                for name in plan.bridges])
            if not failed:  # the other requests name the bridges by index
                failed = _send_all(_requests(plan))
            if plan.napi:
                failed += _napi_receive(plan.napi)
        except Exception as exc:  # noqa: BLE001 - relayed to configure(): a thread's
            # exception would otherwise vanish and the plan look applied
            errors.append(f"namespace {ns}: {type(exc).__name__}: {exc}")
            continue
        errors.extend(f"{what} in {ns}: {err}" for what, err in failed)


def _requests(plan: NsPlan) -> list[tuple[str, bytes]]:
    """(description, encoded request) pairs; interface names resolved in this namespace."""
    index = {name: _ifindex(name) for name in {
        *plan.down, *plan.up, *(m for pair in plan.masters for m in pair),
        *(a[0] for a in plan.addrs), *(t[0] for t in plan.tbf)}}
    out = [(f"link set {name} down", _link_flags(index[name], 0)) for name in plan.down]
    out += [(f"link set {name} master {bridge}", _link_master(index[name], index[bridge]))
            for name, bridge in plan.masters]
    out += [(f"link set {name} up", _link_flags(index[name], IFF_UP)) for name in plan.up]
    out += [(f"addr add {addr}/{plen} dev {name}", _addr(index[name], addr, plen))
            for name, addr, plen in plan.addrs]
    out += [(f"qdisc tbf {mbit} mbit on {name}", _tbf(index[name], mbit, burst, latency))
            for name, mbit, burst, latency in plan.tbf]
    out += [(f"route add {dst}/{plen} via {via}", _route(dst, plen, via))
            for dst, plen, via in plan.routes]
    return out


def _napi_receive(ifnames: list[str]) -> list[tuple[str, str]]:
    """GRO on and TSO off on each veth end (see NsPlan.napi); (description, error) pairs."""
    failed = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:  # bound to this netns
        for name in ifnames:
            for cmd, value, what in ((ETHTOOL_STSO, 0, "tso off"), (ETHTOOL_SGRO, 1, "gro on")):
                try:
                    _ethtool_set(sock, name, cmd, value)
                except OSError as exc:
                    failed.append((f"ethtool {name} {what}", exc.strerror or str(exc)))
    return failed


def _ethtool_set(sock: socket.socket, ifname: str, cmd: int, value: int) -> None:
    """One ETHTOOL_S* command: struct ifreq holds the name and a pointer to the
    struct ethtool_value {cmd, data} the kernel reads."""
    arg = ctypes.create_string_buffer(struct.pack("=II", cmd, value))
    ifreq = struct.pack("16sP", ifname.encode(), ctypes.addressof(arg)).ljust(40, b"\0")
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)


def _ifindex(name: str) -> int:
    return LOOPBACK_IFINDEX if name == "lo" else socket.if_nametoindex(name)


def _send_all(requests: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    """Send in chunks, numbering requests by sequence; return (description, error) pairs."""
    failed = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)  # acks without the request echoed
        sock.bind((0, 0))
        for chunk in _chunks(requests):
            payload = bytearray()
            for seq, (_, msg) in enumerate(chunk, start=1):
                payload += msg[:8] + struct.pack("=I", seq) + msg[12:]
            sock.send(payload)
            for seq, err in _acks(sock, len(chunk)):
                failed.append((chunk[seq - 1][0], os.strerror(err)))
    return failed


def _chunks(requests: list[tuple[str, bytes]]) -> list[list[tuple[str, bytes]]]:
    """Runs of at most CHUNK requests and CHUNK_BYTES bytes: one write goes to the kernel as
    one buffer, which must fit the socket's send buffer."""
    chunks: list[list[tuple[str, bytes]]] = [[]]
    size = 0
    for request in requests:
        if chunks[-1] and (len(chunks[-1]) == CHUNK or size + len(request[1]) > CHUNK_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append(request)
        size += len(request[1])
    return [c for c in chunks if c]


def _acks(sock: socket.socket, count: int) -> list[tuple[int, int]]:
    """Read ``count`` acknowledgements; return (sequence, errno) of the failed ones."""
    failed, seen = [], 0
    while seen < count:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + 16 <= len(data):
            length, kind, _, seq, _ = struct.unpack_from("=IHHII", data, offset)
            if kind == NLMSG_ERROR:
                seen += 1
                (code,) = struct.unpack_from("=i", data, offset + 16)
                if code:
                    failed.append((seq, -code))
            offset += (length + 3) & ~3
    return failed


def _nlmsg(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack("=IHHII", 16 + len(body), kind, flags, 0, 0) + body


def _rta(kind: int, value: bytes) -> bytes:
    attr = struct.pack("=HH", 4 + len(value), kind) + value
    return attr + b"\0" * (-len(attr) % 4)


def _ifinfo(ifindex: int, flags: int = 0, change: int = 0) -> bytes:
    # struct ifinfomsg: family, pad, type, index, flags, change
    return struct.pack("=BxHiII", socket.AF_UNSPEC, 0, ifindex, flags, change)


def _link_flags(ifindex: int, flags: int) -> bytes:
    return _nlmsg(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, _ifinfo(ifindex, flags, IFF_UP))


def _link_master(ifindex: int, master: int) -> bytes:
    return _nlmsg(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK,
                  _ifinfo(ifindex) + _rta(IFLA_MASTER, struct.pack("=I", master)))


def _new_bridge(name: str) -> bytes:
    info = _rta(IFLA_INFO_KIND, b"bridge")
    return _nlmsg(RTM_NEWLINK, NEW, _ifinfo(0) + _rta(IFLA_IFNAME, name.encode() + b"\0")
                  + _rta(IFLA_LINKINFO, info))


def _addr(ifindex: int, address: str, prefixlen: int) -> bytes:
    packed = socket.inet_aton(address)
    # struct ifaddrmsg: family, prefixlen, flags, scope, index
    body = struct.pack("=BBBBI", socket.AF_INET, prefixlen, 0, RT_SCOPE_UNIVERSE, ifindex)
    return _nlmsg(RTM_NEWADDR, NEW, body + _rta(IFA_LOCAL, packed) + _rta(IFA_ADDRESS, packed))


def _route(dst: str, prefixlen: int, via: str) -> bytes:
    # struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags
    body = struct.pack("=BBBBBBBBI", socket.AF_INET, prefixlen, 0, 0, RT_TABLE_MAIN,
                       RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNICAST, 0)
    if prefixlen:
        body += _rta(RTA_DST, socket.inet_aton(dst))
    return _nlmsg(RTM_NEWROUTE, NEW, body + _rta(RTA_GATEWAY, socket.inet_aton(via)))


def _tbf(ifindex: int, mbit: float, burst: int, latency_ms: int) -> bytes:
    template = _tbf_template(mbit, burst, latency_ms)
    # struct tcmsg after the 16-byte header: family, pad, pad, ifindex (offset 20)
    return template[:20] + struct.pack("=i", ifindex) + template[24:]


@lru_cache(maxsize=256)
def _tbf_template(mbit: float, burst: int, latency_ms: int) -> bytes:
    """TBF as root qdisc of ifindex 0; pyroute2 computes the parameters and rate table as
    tc(8) does (rate in bytes/s, burst, latency -> limit and buffer in ticks)."""
    if mbit > MAX_TBF_MBIT:
        raise SubstrateError(f"TBF rate {mbit} Mbit/s exceeds the 32-bit rate field")
    params = tc_plugins["tbf"].get_parameters(
        {"rate": int(mbit * 1e6 / 8), "burst": burst, "latency": f"{latency_ms}ms"})
    msg = tcmsg()
    msg["index"], msg["handle"], msg["parent"] = 0, 0, TC_H_ROOT
    msg["attrs"] = [["TCA_KIND", "tbf"], ["TCA_OPTIONS", params]]
    msg["header"]["type"], msg["header"]["flags"] = RTM_NEWQDISC, NEW
    msg.encode()
    return bytes(msg.data)

