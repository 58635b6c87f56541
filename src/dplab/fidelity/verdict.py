"""Was the host the bottleneck of a run? Pure decisions from what the monitor measured.

Three signs, each a reason of its own (thresholds are module constants, documented in
docs/architecture.md, *fidelity*):

- CPU: every core at least ``CORE_BUSY`` busy in at least ``SATURATED_SHARE`` of the
  sampled traffic time. Nothing was left for the emulation to catch up with; whatever ran
  (our planes, tools, or anything else on the machine) set the pace.
- a sender below its set rate: a UDP flow that sent less than ``SENDER_SHORTFALL`` of its
  ``rate_mbit``, a pps flow whose pktblast offered less than that share of its ``pps``.
  Their senders pace themselves; falling short means the sending host could not keep up,
  before any plane saw a packet. A sender's own shaped link caps it first (its qdisc pushes
  back on the socket), so the set rate counts only up to what that link carries
  (``ceiling``). TCP is left out: it slows down for the network by design.
- a shaped link below its capacity while over-offered: in the sampling intervals where the
  link's queue dropped packets (more was offered than it can carry), it carried less than
  ``LINK_SHORTFALL`` of its rate, summed over at least ``MIN_OVERFLOW_S``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CORE_BUSY = 0.95
SATURATED_SHARE = 0.8
SENDER_SHORTFALL = 0.9
LINK_SHORTFALL = 0.9
MIN_OVERFLOW_S = 1.0
# iperf 2's UDP datagram size when the flow does not set one (-l).
IPERF_UDP_DEFAULT_SIZE = 1470
# iperf 2's UDP rate when the flow does not set one (-b).
IPERF_UDP_DEFAULT_MBIT = 1.0
UDP_FRAME_OVERHEAD = 42  # UDP 8 + IPv4 20 + Ethernet 14 bytes around a datagram
FCS_BYTES = 4  # in a pps flow's frame size, never on a veth


@dataclass(frozen=True)
class Measure:
    """One measured figure of a run's fidelity: e.g. (cpu_busy_pct, cpu0, 97.5)."""

    measure: str
    subject: str
    value: float | None


@dataclass(frozen=True)
class Interval:
    """One sampling interval: how long, and each core's busy share (None: not measured)."""

    seconds: float
    core_busy: dict[str, float | None]


def cpu_saturation(intervals: Sequence[Interval]) -> tuple[float | None, str | None]:
    """(share of the sampled time with every core ≥ CORE_BUSY busy, reason or None)."""
    measured = [i for i in intervals
                if i.core_busy and all(v is not None for v in i.core_busy.values())]
    total = sum(i.seconds for i in measured)
    if total <= 0:
        return None, None
    saturated = sum(i.seconds for i in measured
                    if all(v >= CORE_BUSY for v in i.core_busy.values()))
    share = saturated / total
    if share < SATURATED_SHARE:
        return share, None
    cores = len(measured[0].core_busy)
    return share, (f"all {cores} cores ≥ {CORE_BUSY:.0%} busy for {share:.0%} of the "
                   f"traffic time")


def mean_core_busy(intervals: Sequence[Interval]) -> dict[str, float]:
    """Each core's busy share over all intervals that measured it, time-weighted."""
    sums: dict[str, list[float]] = {}
    for interval in intervals:
        for core, busy in interval.core_busy.items():
            if busy is not None:
                acc = sums.setdefault(core, [0.0, 0.0])
                acc[0] += busy * interval.seconds
                acc[1] += interval.seconds
    return {core: busy / secs for core, (busy, secs) in sums.items() if secs > 0}


@dataclass(frozen=True)
class SenderRate:
    """What a paced sender was asked for and what it achieved, in ``unit``."""

    flow_id: str
    unit: str  # "Mbit/s" or "pps"
    requested: float
    achieved: float | None
    ceiling: float | None = None  # the most the sender's own shaped link carries

    def reason(self) -> str | None:
        due = self.requested if self.ceiling is None else min(self.requested, self.ceiling)
        if self.achieved is None or self.achieved >= SENDER_SHORTFALL * due:
            return None
        if due < self.requested:
            return (f"{self.flow_id} sent {_num(self.achieved)} of the {_num(due)} {self.unit} "
                    f"its link carries ({_num(self.requested)} requested)")
        return (f"{self.flow_id} sent {_num(self.achieved)} of {_num(self.requested)} "
                f"{self.unit} requested")


def udp_sender_rate(flow_id: str, params: dict, summary: dict[str, float | None],
                    link_mbit: float | None = None) -> SenderRate:
    """The UDP sender's rate from the receiver's sequence numbers: ``packets_sent`` counts
    every datagram the sender numbered (lost ones too), over the receive time. Its
    datagrams' share of a ``link_mbit`` link is the ceiling."""
    requested = params.get("rate_mbit") or IPERF_UDP_DEFAULT_MBIT
    size = params.get("size") or IPERF_UDP_DEFAULT_SIZE
    sent, seconds = summary.get("packets_sent"), summary.get("transmission_time_s")
    achieved = None
    if sent is not None and seconds:
        achieved = sent * size * 8 / seconds / 1e6
    ceiling = None if link_mbit is None else link_mbit * size / (size + UDP_FRAME_OVERHEAD)
    return SenderRate(flow_id, "Mbit/s", float(requested), achieved, ceiling)


def pps_sender_rate(flow_id: str, params: dict, summary: dict[str, float | None],
                    link_mbit: float | None = None) -> SenderRate | None:
    target = summary.get("target_pps")
    if not target:
        return None
    frame_bytes = params.get("size", 64) - FCS_BYTES
    ceiling = None if link_mbit is None else link_mbit * 1e6 / 8 / frame_bytes
    return SenderRate(flow_id, "pps", float(target), summary.get("offered_pps"), ceiling)


@dataclass(frozen=True)
class LinkInterval:
    """One shaped link end over one sampling interval: bytes its qdisc sent, drops."""

    seconds: float
    bytes: int
    drops: int


@dataclass(frozen=True)
class LinkLoad:
    subject: str  # e.g. "h1/eth0"
    capacity_mbit: float
    overflow_s: float  # time in intervals where its queue dropped packets
    carried_mbit: float | None  # mean rate over those intervals

    def reason(self) -> str | None:
        if self.carried_mbit is None or self.overflow_s < MIN_OVERFLOW_S:
            return None
        if self.carried_mbit >= LINK_SHORTFALL * self.capacity_mbit:
            return None
        return (f"link {self.subject} carried {_num(self.carried_mbit)} of "
                f"{_num(self.capacity_mbit)} Mbit/s while its queue overflowed "
                f"({self.overflow_s:.1f} s)")


def link_load(subject: str, capacity_mbit: float,
              intervals: Sequence[LinkInterval]) -> LinkLoad:
    full = [i for i in intervals if i.drops > 0 and i.seconds > 0]
    seconds = sum(i.seconds for i in full)
    carried = sum(i.bytes for i in full) * 8 / seconds / 1e6 if seconds else None
    return LinkLoad(subject, capacity_mbit, seconds, carried)


def _num(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2g}"
