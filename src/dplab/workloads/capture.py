"""Packet captures: tcpdump on chosen interfaces inside a run's namespaces.

Used two ways: the runner's `capture:` list (full pcaps kept with the results) and the
TCP flows' SYN-delay measurement (SYN/SYN-ACK only, read back by measure.syn_delay).
A capture that could not start is reported, never silently empty.
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol

from dplab.substrate.network import HOST_IF
from dplab.topology.model import Topology
from dplab.workloads.waiting import wait_ready

READY_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0
SYN_FILTER = "tcp[tcpflags] & tcp-syn != 0"  # SYNs and SYN-ACKs


class CaptureNetwork(Protocol):
    def popen(self, ns: str, argv: list[str], **kw: Any) -> subprocess.Popen: ...


@dataclass(frozen=True)
class CapturePoint:
    """One interface to capture: namespace, interface name, pcap file to write."""

    ns: str
    ifname: str
    path: Path


@dataclass
class _Tcpdump:
    point: CapturePoint
    log: IO[str]
    process: subprocess.Popen


class Captures:
    """tcpdump on every point while the `with` block runs; `problems` says which failed."""

    def __init__(self, net: CaptureNetwork, points: list[CapturePoint],
                 bpf_filter: str | None = None) -> None:
        self.net = net
        self.points = points
        self.bpf_filter = bpf_filter
        self.problems: list[str] = []
        self._running: list[_Tcpdump] = []

    def __enter__(self) -> Captures:
        for point in self.points:
            point.path.parent.mkdir(parents=True, exist_ok=True)
            log = open(point.path.with_suffix(".log"), "w+")  # noqa: SIM115 - closed in _stop
            process = self.net.popen(point.ns, self._argv(point), stdout=subprocess.DEVNULL,
                                     stderr=log, text=True)
            self._running.append(_Tcpdump(point, log, process))
        self._wait_listening()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for dump in self._running:
            if dump.process.poll() is None:
                dump.process.send_signal(signal.SIGINT)  # tcpdump flushes its buffer on SIGINT
        for dump in self._running:
            self._stop(dump)

    def _argv(self, point: CapturePoint) -> list[str]:
        # Immediate mode: libpcap's TPACKET_V3 ring otherwise hands packets over only when a
        # block retires (1 s), and a block still open at SIGINT is lost. -U: write each
        # packet at once; nano stamps so sub-µs delays stay visible.
        argv = ["tcpdump", "-i", point.ifname, "-n", "--immediate-mode", "-U", "-s", "256",
                "--time-stamp-precision=nano", "-w", str(point.path)]
        return [*argv, self.bpf_filter] if self.bpf_filter else argv

    def _wait_listening(self) -> None:
        silent = wait_ready(self._running, _said_listening, lambda d: d.process,
                            READY_TIMEOUT_S)
        for dump in silent:
            self.problems.append(f"capture on {dump.point.ns}/{dump.point.ifname} did not "
                                     f"start: {_log_text(dump).strip()[-200:]}")

    def _stop(self, dump: _Tcpdump) -> None:
        try:
            dump.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            dump.process.kill()
            dump.process.wait()
            self.problems.append(f"capture on {dump.point.ifname} had to be killed")
        dump.log.close()
        dump.point.path.with_suffix(".log").unlink(missing_ok=True)


def _said_listening(dump: _Tcpdump) -> bool:
    return "listening on" in _log_text(dump)


def _log_text(dump: _Tcpdump) -> str:
    dump.log.flush()
    dump.log.seek(0)
    return dump.log.read()


def requested_interfaces(topo: Topology, requests: list[str]) -> list[tuple[str, str]]:
    """(node, interface) pairs an experiment's `capture:` list names: `h1` (its eth0), `s2`
    (every port of s2) or `s2:s2-eth3` (one port). Raises ValueError naming the entry."""
    hosts, switches = set(topo.hosts()), set(topo.switches())
    ports = topo.port_numbers()
    chosen: list[tuple[str, str]] = []
    for index, request in enumerate(requests):
        node, _, ifname = request.partition(":")
        if node in hosts:
            interfaces = [HOST_IF]
        elif node in switches:
            interfaces = [f"{node}-eth{p}" for (n, _), p in sorted(ports.items()) if n == node]
        else:
            raise ValueError(f"capture.{index}: {node!r} is not a host or switch of "
                             f"topology {topo.name!r}")
        if ifname and ifname not in interfaces:
            raise ValueError(f"capture.{index}: {node} has no interface {ifname!r} "
                             f"(it has: {', '.join(sorted(interfaces))})")
        chosen += [(node, i) for i in ([ifname] if ifname else interfaces)
                   if (node, i) not in chosen]
    return chosen
