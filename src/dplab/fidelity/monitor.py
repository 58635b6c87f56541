"""``with FidelityMonitor(net): <traffic>`` then ``record(results)``: was the host the
bottleneck of this run, and where were packets dropped?

While the ``with`` block runs, a thread reads every ``interval_s`` each core's CPU time
(/proc/stat), the root qdisc counters of every shaped link end and the byte and packet
counters of every link end (``series``: per-interval rates per interface); at entry and exit it
reads every interface's drop counters in all the run's namespaces and the AF_PACKET
sockets' drops in the switch namespaces (``counters``). ``record`` adds what the senders
achieved (from the flows' results) and decides (``verdict``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dplab.fidelity import counters, cpu
from dplab.fidelity.verdict import (
    Interval,
    LinkInterval,
    Measure,
    SenderRate,
    cpu_saturation,
    link_load,
    mean_core_busy,
    pps_sender_rate,
    udp_sender_rate,
)
from dplab.planes.base import PlaneError, SeriesPoint

if TYPE_CHECKING:
    from dplab.fidelity.verdict import LinkLoad
    from dplab.planes.base import Plane
    from dplab.substrate.network import Network
    from dplab.workloads.flows import FlowResult

# Each sample dumps the root qdiscs of every namespace with a shaped link (~6 ms each
# through pyroute2): once a second keeps the monitor near 3 % of one core on a 14-namespace
# network, while a 3 s phase still gets three intervals.
SAMPLE_INTERVAL_S = 1.0


@dataclass(frozen=True)
class FidelityRecord:
    """What the store keeps of a run's fidelity (``RunStore.add_run(fidelity=...)``)."""

    host_bound: bool
    reasons: list[str]
    measures: list[Measure] = field(default_factory=list)


@dataclass(frozen=True)
class ShapedEnd:
    """One end of a shaped link: its namespace, interface, capacity and name in records."""

    netns: str
    ifname: str
    capacity_mbit: float
    subject: str


@dataclass
class _Sample:
    time_s: float
    cores: dict[str, cpu.CoreTicks] | None
    qdiscs: dict[str, dict[str, counters.QdiscCount]]  # netns -> ifname -> count
    links: dict[str, dict[str, counters.LinkCount]]  # netns -> link end's ifname -> count


class FidelityMonitor:
    def __init__(self, net: Network, plane: Plane | None = None,
                 interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.plane = plane
        hosts = set(net.topo.hosts())
        self._labels = {net.host_ns(h): h for h in hosts}  # netns -> node (hosts only)
        self._switch_ns = sorted({net.switch_ns(s) for s in net.topo.switches()})
        self.namespaces = sorted(self._labels) + self._switch_ns

        def ns_of(node: str) -> str:
            return net.host_ns(node) if node in hosts else net.switch_ns(node)

        self.shaped = [ShapedEnd(ns_of(end.node), end.ifname, link.bw_mbit,
                                 self._subject(ns_of(end.node), end.ifname))
                       for link in net.links if link.bw_mbit
                       for end in (link.a, link.b)]
        self._shaped_ns = sorted({end.netns for end in self.shaped})
        self._link_ends = sorted({(ns_of(end.node), end.ifname) for link in net.links
                                  for end in (link.a, link.b)})
        # host -> its link's rate: what its senders can get out at most
        self._host_links = {end.node: link.bw_mbit for link in net.links if link.bw_mbit
                            for end in (link.a, link.b) if end.node in hosts}
        self._counters: dict[str, counters.NamespaceCounters] = {}
        self._samples: list[_Sample] = []
        self._readings: list[dict[str, counters.Reading]] = []
        self._sockets: list[dict[str, dict[int, tuple[str, int]]]] = []
        self._udp: list[dict[str, int | None]] = []  # host netns -> RcvbufErrors
        self._plane_drops: list[dict[str, int] | None] = []
        self._stop, self._ready = threading.Event(), threading.Event()
        self._error: Exception | None = None
        self._abandoned = False
        self._thread = threading.Thread(target=self._loop, name="fidelity", daemon=True)

    def __enter__(self) -> FidelityMonitor:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_exc: object) -> None:
        # A block that raised is not recorded: skip the exit readings, teardown waits.
        self._abandoned = exc_type is not None
        self._stop.set()
        self._thread.join()
        if self._error is not None and exc_type is None:
            raise self._error

    def _loop(self) -> None:
        """Everything netlink runs in this one thread (see ``counters``): entry readings,
        a sample every ``interval_s`` until told to stop, exit readings."""
        try:
            self._counters = counters.open_all(self.namespaces)
            try:
                self._ends()
                self._samples.append(self._sample())
                self._ready.set()
                while not self._stop.wait(self.interval_s):
                    self._samples.append(self._sample())
                if not self._abandoned:
                    self._samples.append(self._sample())
                    self._ends()
            finally:
                counters.close_all(self._counters)
        except Exception as exc:  # noqa: BLE001 - handed to the runner's thread
            self._error = exc
        finally:
            self._ready.set()

    def _sample(self) -> _Sample:
        try:
            cores = cpu.read_cores()
        except (OSError, ValueError):
            cores = None
        readings = {ns: self._counters[ns].read() for ns in {ns for ns, _ in self._link_ends}
                    | set(self._shaped_ns)}
        qdiscs = {ns: readings[ns].qdiscs for ns in self._shaped_ns}
        links = {ns: readings[ns].links for ns in readings}
        return _Sample(time.monotonic(), cores, qdiscs, links)

    def _ends(self) -> None:
        """Readings for the drop totals, taken at entry and at exit."""
        self._readings.append({ns: c.read() for ns, c in self._counters.items()})
        self._sockets.append(counters.packet_socket_drops(self._switch_ns))
        self._udp.append({ns: counters.udp_rcvbuf_errors(ns) for ns in self._labels})
        self._plane_drops.append(self._read_plane_drops())

    def _read_plane_drops(self) -> dict[str, int] | None:
        """The plane's own drop counts; None (unmeasured) when it keeps none or a daemon
        does not answer (a dead daemon fails the run through the plane's stats(), not
        here)."""
        if self.plane is None:
            return None
        try:
            return self.plane.drops()
        except (OSError, ValueError, PlaneError):
            return None

    # -- after the block -----------------------------------------------------------------

    def record(self, results: Sequence[FlowResult]) -> FidelityRecord:
        intervals = self._cpu_intervals()
        share, cpu_reason = cpu_saturation(intervals)
        senders = sender_rates(results, self._host_links)
        links = [link_load(end.subject, end.capacity_mbit, self._link_intervals(end))
                 for end in self.shaped]
        reasons = [r for r in [cpu_reason, *(s.reason() for s in senders),
                               *(link.reason() for link in links)] if r]
        measures = [Measure("cpu_saturated_share", "all", share),
                    *(Measure("cpu_busy_pct", core, 100 * busy)
                      for core, busy in sorted(mean_core_busy(intervals).items())),
                    *_sender_measures(senders), *_link_measures(links),
                    *self._drops(pps_sinks(results))]
        return FidelityRecord(bool(reasons), reasons, measures)

    def series(self, traffic_began: float) -> list[SeriesPoint]:
        """Every link end's counters per sample interval: ``{rx,tx}_{bps,pps}:<subject>``
        (bits and frames per second, Ethernet headers counted, FCS not), at the interval's
        end, in s since ``traffic_began`` (a ``time.monotonic()`` reading)."""
        points = []
        for a, b in zip(self._samples, self._samples[1:], strict=False):
            seconds, t = b.time_s - a.time_s, b.time_s - traffic_began
            for ns, ifname in self._link_ends:
                before, after = a.links.get(ns, {}).get(ifname), b.links.get(ns, {}).get(ifname)
                if before is None or after is None or seconds <= 0:
                    continue  # unmeasured: no point, rather than a made-up zero
                subject = self._subject(ns, ifname)
                for way in ("rx", "tx"):
                    sent = getattr(after, f"{way}_bytes") - getattr(before, f"{way}_bytes")
                    frames = getattr(after, f"{way}_packets") - getattr(before, f"{way}_packets")
                    points += [SeriesPoint(t, f"{way}_bps:{subject}", sent * 8 / seconds),
                               SeriesPoint(t, f"{way}_pps:{subject}", frames / seconds)]
        return points

    def _cpu_intervals(self) -> list[Interval]:
        pairs = zip(self._samples, self._samples[1:], strict=False)
        return [Interval(b.time_s - a.time_s, cpu.busy_shares(a.cores, b.cores))
                for a, b in pairs if a.cores is not None and b.cores is not None]

    def _link_intervals(self, end: ShapedEnd) -> list[LinkInterval]:
        out = []
        for a, b in zip(self._samples, self._samples[1:], strict=False):
            before = a.qdiscs.get(end.netns, {}).get(end.ifname)
            after = b.qdiscs.get(end.netns, {}).get(end.ifname)
            if before is not None and after is not None:
                out.append(LinkInterval(b.time_s - a.time_s, after.bytes - before.bytes,
                                        after.drops - before.drops))
        return out

    def _drops(self, unread_hosts: set[str]) -> list[Measure]:
        """Drops between entry and exit: a total per kind (measured zero shows as 0) and a
        row per interface that dropped any. ``unread_hosts`` hold a socket that is never
        read on purpose (a pps flow's sink), so their UDP buffer drops say nothing."""
        if len(self._readings) < 2:
            return []
        per_kind: dict[str, dict[str, int]] = {"qdisc_drops": {}, "rx_dropped": {},
                                               "tx_dropped": {}}
        for ns, before in self._readings[0].items():
            after = self._readings[1].get(ns)
            if after is not None:
                self._interface_drops(ns, before, after, per_kind)
        per_kind["packet_socket_drops"] = self._socket_drops()
        per_kind["udp_rcvbuf_errors"] = self._udp_drops(unread_hosts)
        first, last = self._plane_drops
        if first is not None and last is not None:
            per_kind["plane_drops"] = {where: n - first.get(where, 0) for where, n in last.items()}
        out = []
        for kind, subjects in per_kind.items():
            out.append(Measure(kind, "all", float(sum(subjects.values()))))
            out += [Measure(kind, subject, float(n)) for subject, n in sorted(subjects.items())
                    if n > 0]
        return out

    def _socket_drops(self) -> dict[str, int]:
        before, after = self._sockets
        return {self._subject(ns, ifname): drops
                for ns in set(before) & set(after)
                for ifname, drops in counters.socket_drop_deltas(before[ns], after[ns]).items()}

    def _udp_drops(self, unread_hosts: set[str]) -> dict[str, int]:
        before, after = self._udp
        return {self._labels[ns]: end - start for ns, start in before.items()
                if start is not None and (end := after.get(ns)) is not None
                and self._labels[ns] not in unread_hosts}

    def _interface_drops(self, ns: str, before: counters.Reading, after: counters.Reading,
                         per_kind: dict[str, dict[str, int]]) -> None:
        for ifname, end in after.qdiscs.items():
            start = before.qdiscs.get(ifname)
            if start is not None:
                per_kind["qdisc_drops"][self._subject(ns, ifname)] = end.drops - start.drops
        for ifname, end in after.links.items():
            start = before.links.get(ifname)
            if start is None or ifname == "lo":
                continue
            subject = self._subject(ns, ifname)
            per_kind["rx_dropped"][subject] = end.rx_dropped - start.rx_dropped
            per_kind["tx_dropped"][subject] = end.tx_dropped - start.tx_dropped

    def _subject(self, ns: str, ifname: str) -> str:
        """``h1/eth0`` for a host's interface; a switch port's name already says its
        switch (``s1-eth2``); ``*`` (a packet socket bound to no interface: the p4 switch's
        one receive socket for all its ports) is named by its namespace."""
        host = self._labels.get(ns)
        if host:
            return f"{host}/{ifname}"
        return f"{ns}/*" if ifname == "*" else ifname


def sender_rates(results: Sequence[FlowResult],
                 host_links: dict[str, float] | None = None) -> list[SenderRate]:
    """Requested against achieved rate of every paced sender among the ok flows;
    ``host_links``: each host's shaped link rate (Mbit/s), its senders' ceiling."""
    rates = []
    for result in results:
        flow = result.flow
        link = (host_links or {}).get(flow.src)
        if not result.ok:
            continue
        if flow.kind == "udp":
            rates.append(udp_sender_rate(flow.flow_id, flow.params, result.summary, link))
        elif flow.kind == "pps":
            rate = pps_sender_rate(flow.flow_id, flow.params, result.summary, link)
            if rate is not None:
                rates.append(rate)
    return rates


def pps_sinks(results: Sequence[FlowResult]) -> set[str]:
    """Hosts receiving a pps flow: its UDP sink socket is never read (workloads.pps)."""
    return {r.flow.dst for r in results if r.flow.kind == "pps"}


def _sender_measures(senders: list[SenderRate]) -> list[Measure]:
    unit = {"Mbit/s": "mbit", "pps": "pps"}
    return [m for s in senders for m in (
        Measure(f"sender_requested_{unit[s.unit]}", s.flow_id, s.requested),
        Measure(f"sender_achieved_{unit[s.unit]}", s.flow_id, s.achieved))]


def _link_measures(links: list[LinkLoad]) -> list[Measure]:
    """Rows only for link ends whose queue overflowed: the others were never over-offered,
    so their utilisation says nothing about the host."""
    return [m for link in links if link.overflow_s > 0 for m in (
        Measure("link_capacity_mbit", link.subject, link.capacity_mbit),
        Measure("link_overflow_s", link.subject, link.overflow_s),
        Measure("link_carried_mbit", link.subject, link.carried_mbit))]
