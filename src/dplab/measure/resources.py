"""CPU and memory used while traffic flows: the plane's own processes and the whole machine.

A ``ResourceSampler`` runs a thread that every 0.5 s reads, from the kernel's accounting
in ``/proc``:

- the plane's processes: every process whose network namespace is one of the run's switch
  namespaces (daemons, controller, P4 switch), found like ``ip netns pids`` does it (same
  namespace inode), minus traffic tools. ``utime``/``stime`` from ``/proc/<pid>/stat``,
  ``VmRSS`` from ``/proc/<pid>/status``;
- the machine: the ``cpu`` line of ``/proc/stat`` (user, system, softirq, ...). A kernel
  data path (Linux bridge, router) does its work in softirq, outside any process.

Figures (``summarise``), over the sampled time:

- ``cpu_user_pct``, ``cpu_sys_pct``: plane processes, % of one core (2 busy cores = 200);
- ``mem_rss_mb``: peak of the plane processes' summed resident memory, MiB;
- ``host_user_pct``, ``host_sys_pct``, ``host_softirq_pct``: whole machine, % of all cores.

A plane without user-space processes (bridge, router) gets None for the process figures:
there was nothing to measure, which is not the same as a process using no CPU. The
machine figures include everything else running on the host at the time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE_INTERVAL_S = 0.5
TRAFFIC_TOOLS = frozenset({"iperf", "iperf3", "ping", "tcpdump"})
HOST_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

Metrics = dict[str, float | None]


@dataclass(frozen=True)
class ProcCpu:
    """One process at one moment: cumulative CPU ticks and resident memory."""

    utime: int
    stime: int
    rss_kib: int | None


@dataclass(frozen=True)
class Snapshot:
    time_s: float  # monotonic
    procs: dict[int, ProcCpu] = field(default_factory=dict)
    host: dict[str, int] | None = None  # /proc/stat cpu line, HOST_FIELDS -> ticks


def parse_pid_stat(text: str) -> tuple[str, int, int]:
    """(comm, utime, stime) from a /proc/<pid>/stat line (comm may hold spaces and ')')."""
    left, right = text.index("("), text.rindex(")")
    rest = text[right + 2:].split()  # rest[0] is field 3 (state); utime is field 14
    return text[left + 1:right], int(rest[11]), int(rest[12])


def parse_vmrss_kib(text: str) -> int | None:
    """VmRSS in KiB from /proc/<pid>/status; None for kernel threads (no such line)."""
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def parse_proc_stat(text: str) -> dict[str, int]:
    """The machine-wide ``cpu`` line of /proc/stat as HOST_FIELDS -> ticks."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            return dict(zip(HOST_FIELDS, map(int, parts[1:1 + len(HOST_FIELDS)]), strict=True))
    raise ValueError("/proc/stat has no 'cpu' line")


def summarise(snapshots: list[Snapshot], ticks_per_s: float) -> Metrics:
    """The figures of the module docstring from the first to the last snapshot; every
    figure None when fewer than two snapshots span any time."""
    names = ("cpu_user_pct", "cpu_sys_pct", "mem_rss_mb",
             "host_user_pct", "host_sys_pct", "host_softirq_pct")
    out: Metrics = dict.fromkeys(names)
    if len(snapshots) < 2 or snapshots[-1].time_s <= snapshots[0].time_s:
        return out
    out.update(_process_figures(snapshots, ticks_per_s))
    out.update(_host_figures(snapshots[0].host, snapshots[-1].host))
    return out


def _process_figures(snapshots: list[Snapshot], ticks_per_s: float) -> Metrics:
    first, elapsed = snapshots[0], snapshots[-1].time_s - snapshots[0].time_s
    last_seen: dict[int, ProcCpu] = {}
    for snap in snapshots:
        last_seen.update(snap.procs)
    if not last_seen:
        return {}
    # A process absent from the first snapshot started during the sampling: all its CPU
    # counts. A process that exited loses the CPU of its last < 0.5 s.
    base = {pid: first.procs.get(pid, ProcCpu(0, 0, None)) for pid in last_seen}
    user = sum(p.utime - base[pid].utime for pid, p in last_seen.items())
    system = sum(p.stime - base[pid].stime for pid, p in last_seen.items())
    rss = [sum(p.rss_kib for p in s.procs.values() if p.rss_kib is not None)
           for s in snapshots if s.procs]
    return {"cpu_user_pct": 100.0 * user / ticks_per_s / elapsed,
            "cpu_sys_pct": 100.0 * system / ticks_per_s / elapsed,
            "mem_rss_mb": max(rss) / 1024.0}


def _host_figures(before: dict[str, int] | None, after: dict[str, int] | None) -> Metrics:
    if before is None or after is None:
        return {}
    delta = {k: after[k] - before[k] for k in HOST_FIELDS}
    total = sum(delta.values())
    if total <= 0:
        return {}
    return {"host_user_pct": 100.0 * (delta["user"] + delta["nice"]) / total,
            "host_sys_pct": 100.0 * delta["system"] / total,
            "host_softirq_pct": 100.0 * delta["softirq"] / total}


class ProcReader:
    """Reads snapshots from a /proc tree (a directory argument, so tests can fake one)."""

    def __init__(self, namespaces: Iterable[str], proc: Path = Path("/proc"),
                 netns_dir: Path = Path("/run/netns")) -> None:
        self.proc = proc
        self.netns = set()
        for ns in set(namespaces):
            try:
                self.netns.add(_inode(netns_dir / ns))
            except FileNotFoundError:
                raise ValueError(f"resource sampler: no network namespace {ns!r} "
                                 f"({netns_dir / ns} is missing)") from None

    def snapshot(self) -> Snapshot:
        procs = {}
        for pid in self._plane_pids():
            sample = self._read_process(pid)
            if sample is not None:
                procs[pid] = sample
        return Snapshot(time.monotonic(), procs, self._read_host())

    def _plane_pids(self) -> list[int]:
        pids = []
        for entry in self.proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if _inode(entry / "ns" / "net") in self.netns:
                    pids.append(int(entry.name))
            except OSError:  # gone since listed, or not ours to look at
                continue
        return pids

    def _read_process(self, pid: int) -> ProcCpu | None:
        try:
            comm, utime, stime = parse_pid_stat((self.proc / str(pid) / "stat").read_text())
            if comm in TRAFFIC_TOOLS:
                return None
            rss = parse_vmrss_kib((self.proc / str(pid) / "status").read_text())
        except (OSError, ValueError, IndexError):  # exited between the two reads
            return None
        return ProcCpu(utime, stime, rss)

    def _read_host(self) -> dict[str, int] | None:
        try:
            return parse_proc_stat((self.proc / "stat").read_text())
        except (OSError, ValueError):
            return None


def _inode(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


class ResourceSampler:
    """``with ResourceSampler(namespaces): <traffic>`` then ``stats()``.

    Samples at once on entry, every ``interval_s`` in a thread, and once more on exit, so
    the figures cover exactly the time inside the ``with``.
    """

    def __init__(self, namespaces: Iterable[str], interval_s: float = SAMPLE_INTERVAL_S,
                 reader: ProcReader | None = None) -> None:
        self.reader = reader or ProcReader(namespaces)
        self.interval_s = interval_s
        self.snapshots: list[Snapshot] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="resource-sampler",
                                        daemon=True)

    def __enter__(self) -> ResourceSampler:
        self.snapshots.append(self.reader.snapshot())
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.snapshots.append(self.reader.snapshot())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.snapshots.append(self.reader.snapshot())

    def stats(self) -> Metrics:
        return summarise(self.snapshots, os.sysconf("SC_CLK_TCK"))
