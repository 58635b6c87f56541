"""ICMP echo flows with iputils ping: per-packet RTTs, 1 s bins and a summary.

Params: count (default 10), interval in s (default 1.0; root may go down to 0.002),
size = ICMP payload bytes (default 56), timeout_s (default: count * interval + 5 s).

jitter_ms is the mean absolute difference of consecutive RTTs: RFC 3550 jitter needs
one-way transit times, which ping cannot see.

throughput_bps counts the ICMP payload (`size` bytes) of each answered echo, as iperf counts
UDP/TCP payload, so the kinds compare; the 8-byte ICMP and 20-byte IP headers (and 14 of
Ethernet) are not counted. Per 1 s bin: answered requests sent in the bin x size x 8 / the
bin's share of the send span; summary: all answers x size x 8 / the send span (first
request to one interval after the last; ping's schedule when nothing came back).
"""

import math
from dataclasses import dataclass

from dplab.measure.jitter import mean_abs_consecutive_difference
from dplab.measure.ping_report import PingReply, PingReport, parse_ping
from dplab.measure.stats import mean, percentile
from dplab.spec.model import IcmpWorkload
from dplab.workloads.measured import Measured, positive_number, spec_checked

METRICS = (
    "rtt_ms",
    "rtt_min_ms",
    "rtt_max_ms",
    "rtt_p50_ms",
    "rtt_p99_ms",
    "jitter_ms",
    "loss_pct",
    "packets_sent",
    "packets_received",
    "throughput_bps",
)
REPLY_WAIT_S = 1  # -W: how long ping waits for the last reply
BIN_S = 1.0


@dataclass(frozen=True)
class PingParams:
    count: int
    interval_s: float
    size: int
    timeout_s: float


def validate(params: dict, where: str) -> PingParams:
    """The experiment file's checks and defaults (spec ``IcmpWorkload``) plus ``timeout_s``."""
    spec = spec_checked(IcmpWorkload, "icmp", params, where, frozenset({"timeout_s"}))
    timeout = positive_number(params, "timeout_s", where,
                              spec.count * spec.interval + REPLY_WAIT_S + 4)
    return PingParams(spec.count, spec.interval, spec.size, timeout)


def client_argv(params: PingParams, dst_ip: str) -> list[str]:
    """-D epoch timestamps per reply, -O report misses, -n no DNS."""
    return [
        "ping", "-D", "-O", "-n",
        "-c", str(params.count), "-i", f"{params.interval_s:g}", "-s", str(params.size),
        "-W", str(REPLY_WAIT_S), dst_ip,
    ]  # fmt: skip


def measure(params: PingParams, output: str, source: str) -> Measured:
    """Turn ping's output into metrics; raises PingParseError when it is not ping's report."""
    report = parse_ping(output, source)
    rtts = [reply.rtt_ms for reply in report.replies]
    summary = {
        "rtt_ms": mean(rtts),
        "rtt_min_ms": min(rtts, default=None),
        "rtt_max_ms": max(rtts, default=None),
        "rtt_p50_ms": percentile(rtts, 50),
        "rtt_p99_ms": percentile(rtts, 99),
        "jitter_ms": mean_abs_consecutive_difference(rtts),
        "loss_pct": _loss_pct(report.packets_sent, report.packets_received),
        "packets_sent": float(report.packets_sent),
        "packets_received": float(report.packets_received),
        "throughput_bps": _bps(report.packets_received, params.size,
                               _send_span(report, params.interval_s)),
    }
    error = None if rtts else f"{source}: no echo reply received"
    return Measured(summary, _intervals(report, params.interval_s, params.size), error)


def _loss_pct(sent: int, received: int) -> float | None:
    return None if sent == 0 else 100.0 * (sent - received) / sent


def _bps(packets: int, size: int, seconds: float) -> float | None:
    return None if seconds <= 0 else packets * size * 8 / seconds


def _intervals(report: PingReport, interval_s: float,
               size: int) -> list[dict[str, float | None]]:
    """1 s bins by send time, relative to the first echo request."""
    if not report.replies:
        return []
    send_times = _send_times(report, interval_s)
    t0 = min(send_times.values())
    bins: dict[int, list[int]] = {}
    for seq, sent_at in send_times.items():
        bins.setdefault(math.floor((sent_at - t0) / BIN_S), []).append(seq)
    by_seq = {reply.seq: reply for reply in report.replies}
    span = _send_span(report, interval_s)  # the last bin may be partly outside it
    return [_bin_row(index, bins[index], by_seq, size, min(BIN_S, span - index * BIN_S))
            for index in sorted(bins)]


def _send_span(report: PingReport, interval_s: float) -> float:
    """First request sent to one interval after the last: measured where replies tell the
    send times, ping's schedule (packets x interval) when none came back."""
    if not report.replies:
        return report.packets_sent * interval_s
    times = _send_times(report, interval_s).values()
    return max(times) - min(times) + interval_s


def _send_times(report: PingReport, interval_s: float) -> dict[int, float]:
    """Measured send time of answered requests; lost ones placed on ping's schedule."""
    anchor: PingReply = report.replies[0]
    times = {
        seq: anchor.send_ts + (seq - anchor.seq) * interval_s
        for seq in range(1, report.packets_sent + 1)
    }
    times.update({reply.seq: reply.send_ts for reply in report.replies})
    return times


def _bin_row(index: int, seqs: list[int], by_seq: dict[int, PingReply], size: int,
             seconds: float) -> dict[str, float | None]:
    rtts = [by_seq[seq].rtt_ms for seq in seqs if seq in by_seq]
    return {
        "t_start": index * BIN_S,
        "t_end": (index + 1) * BIN_S,
        "rtt_ms": mean(rtts),
        "packets_sent": float(len(seqs)),
        "packets_received": float(len(rtts)),
        "loss_pct": _loss_pct(len(seqs), len(rtts)),
        "throughput_bps": _bps(len(rtts), size, seconds),
    }
