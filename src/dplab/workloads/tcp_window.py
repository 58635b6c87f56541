"""TCP windows beyond what ``iperf -w`` can get, and the window a flow actually used.

``iperf -w W`` sets SO_RCVBUF/SO_SNDBUF, which the kernel caps at net.core.rmem_max /
wmem_max: since Linux 6.10 those are one machine-wide value, read-only inside a network
namespace, so a run cannot raise them for itself. A TCP socket's own buffers start at
``net.ipv4.tcp_rmem`` / ``tcp_wmem``'s default (their middle value) and autotuning keeps
them under their max, and those two ARE per namespace and not capped by rmem_max. So a
window W above the cap is set by giving the hosts' namespaces tcp_rmem and tcp_wmem of
``MIN_BUFFER 2W 2W`` for the flow (2W: the buffer -w W would ask for, the kernel doubles a
setsockopt request to leave room for its bookkeeping, socket(7)), and without -w.

What a flow used is measured, not assumed: ``WindowSampler`` reads tcp_info with ``ss -ti``
while the flow runs and keeps the largest of two figures. At the receiver,
``rcv_ssthresh`` (tcpi_rcv_ssthresh): the most it lets itself advertise now, what its
buffer holds in payload (the buffer's share of skb overhead measured by the kernel, so it
may exceed W: 2W of buffer is more than W of payload); this is the flow's window. At the
sender, ``snd_wnd`` (tcpi_snd_wnd): the window last advertised, which is smaller whenever
the receiving application has not yet read what arrived (the advertised window is the free
part of the buffer).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dplab.substrate.network import SubstrateError

CORE_MAX = (Path("/proc/sys/net/core/rmem_max"), Path("/proc/sys/net/core/wmem_max"))
BUFFER_SYSCTLS = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
MIN_BUFFER = 4096  # the kernel's own tcp_rmem/tcp_wmem minimum (one page)
SAMPLE_S = 0.2  # between ss rounds: the offered window only grows, and few rounds keep
# the sampling light beside the flows it measures (one ss per namespace per round)
SS_TIMEOUT_S = 5.0
_SND_WND = re.compile(r"\bsnd_wnd:(\d+)")
_RCV_SSTHRESH = re.compile(r"\brcv_ssthresh:(\d+)")


@dataclass(frozen=True)
class Seen:
    """One flow's window as the run set and measured it (None: not set that way / no
    sample caught the flow): ``granted`` by the hosts' tcp_rmem, ``offered`` the receiver's
    largest rcv_ssthresh, ``advertised`` the sender's largest snd_wnd."""

    granted: int | None = None
    offered: int | None = None
    advertised: int | None = None


class NsRunner(Protocol):
    def run(self, ns: str, argv: list[str], timeout: float | None = None,
            check: bool = True) -> Any: ...


def setsockopt_limit() -> int:
    """The largest window ``iperf -w`` gets honoured: min(rmem_max, wmem_max), both ends'
    caps (machine-wide)."""
    return min(int(path.read_text()) for path in CORE_MAX)


def namespace_windows(asked: list[tuple[str, int]]) -> dict[str, int]:
    """namespace -> the window its TCP buffers must hold, from (namespace, window) of every
    end of every flow whose window goes by sysctl; ValueError when one namespace would need
    two (its tcp_rmem holds one default for every socket in it)."""
    out: dict[str, int] = {}
    for ns, window in asked:
        if out.setdefault(ns, window) != window:
            raise ValueError(f"windows {out[ns]} and {window} above the {setsockopt_limit()} "
                             f"B that -w can set share namespace {ns}: its tcp_rmem holds one "
                             f"window; run them in separate workloads or runs")
    return out


@contextmanager
def raised_buffers(net: NsRunner, windows: dict[str, int]) -> Iterator[dict[str, int]]:
    """Each namespace's tcp_rmem and tcp_wmem set to hold its window, then put back as they
    were. Yields namespace -> the window the kernel took: half the default receive buffer
    read back (the same halving as for -w)."""
    saved = {ns: {key: _read(net, ns, key) for key in BUFFER_SYSCTLS} for ns in windows}
    try:
        for ns, window in windows.items():
            for key in BUFFER_SYSCTLS:
                _write(net, ns, key, f"{MIN_BUFFER} {2 * window} {2 * window}")
        yield {ns: int(_read(net, ns, BUFFER_SYSCTLS[0]).split()[1]) // 2 for ns in windows}
    finally:
        for ns, values in saved.items():
            for key, value in values.items():
                _write(net, ns, key, value)


def _read(net: NsRunner, ns: str, key: str) -> str:
    return " ".join(net.run(ns, ["sysctl", "-n", key]).stdout.split())


def _write(net: NsRunner, ns: str, key: str, value: str) -> None:
    net.run(ns, ["sysctl", "-q", "-w", f"{key}={value}"])


def connections(ss_output: str) -> Iterator[tuple[int, int, str]]:
    """(local port, peer port, tcp_info text) of each connection ``ss -Htin`` lists: a line
    ending with the local and peer address:port, then its details on a line indented by a
    tab."""
    lines = ss_output.splitlines()
    for head, details in zip(lines, lines[1:], strict=False):
        fields = head.split()
        if head[:1].isspace() or len(fields) < 4 or not details[:1].isspace():
            continue
        local, peer = (address.rsplit(":", 1)[-1] for address in fields[-2:])
        if local.isdigit() and peer.isdigit():
            yield int(local), int(peer), details


def _value(field: re.Pattern[str], details: str) -> int | None:
    found = field.search(details)
    return int(found[1]) if found else None


class WindowSampler:
    """Samples, until stopped, the windows of TCP connections given as (sender namespace,
    receiver namespace, server port): ``offered[port]`` the receiver's largest
    rcv_ssthresh, ``advertised[port]`` the sender's largest snd_wnd. One ``ss`` per
    namespace per round."""

    def __init__(self, net: NsRunner, flows: list[tuple[str, str, int]]) -> None:
        self.net = net
        self.receivers = {(ns, port) for _, ns, port in flows}
        self.senders = {(ns, port) for ns, _, port in flows}
        self.namespaces = sorted({ns for sender, receiver, _ in flows
                                  for ns in (sender, receiver)})
        self.offered: dict[int, int] = {}
        self.advertised: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> WindowSampler:
        if self.namespaces:
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            for ns in self.namespaces:
                self._sample(ns)
            self._stop.wait(SAMPLE_S)

    def _sample(self, ns: str) -> None:
        argv = ["ss", "-Htin", "state", "established"]
        try:
            out = self.net.run(ns, argv, timeout=SS_TIMEOUT_S, check=False).stdout
        except SubstrateError:  # a reading that timed out is a sample missed
            return
        for local, peer, details in connections(out):
            if (ns, local) in self.receivers:
                _keep_largest(self.offered, local, _value(_RCV_SSTHRESH, details))
            if (ns, peer) in self.senders:
                _keep_largest(self.advertised, peer, _value(_SND_WND, details))


def _keep_largest(into: dict[int, int], port: int, value: int | None) -> None:
    if value is not None:
        into[port] = max(value, into.get(port, 0))
