"""Frame-size latency and jitter: timestamped UDP frames of one size at a low rate, as study
002's Tables 3 and 4 (latency and jitter against the frame size).

Params: ``size`` (Ethernet frame bytes, FCS included, as the pps workload: 64..9018; the
UDP payload is size - 46 and holds the send stamp), ``interval_ms`` (default 10, so 100
frames/s: low enough that no queue builds), ``duration`` (s, default 5), ``timeout_s``.

The frames are rtp_tool's ``--bare`` datagrams (workloads.voip's machinery): the sender
stamps each with CLOCK_REALTIME just before sendto and sets don't-fragment, the receiver
takes the kernel's receive stamp (SO_TIMESTAMPNS); the hosts share one clock, so receive
minus send is the one-way delay. A frame larger than a link's MTU is not sent (EMSGSIZE),
which fails the flow, rather than being measured as fragments.

Metrics: one-way delay ``owd_min_ms``, ``owd_ms`` (mean), ``owd_p50_ms``, ``owd_p99_ms``,
``owd_max_ms``; packet delay variation (RFC 3393, as ITU-T Y.1540 quotes it) ``pdv_ms`` =
p99 - min of the one-way delays, and ``ipdv_ms`` = the mean absolute IPDV, |D(i) - D(i-1)|
over consecutive frames that both arrived (``ipdv_max_ms`` the largest); ``loss_pct``,
``out_of_order``, ``packets_sent``, ``packets_received``, ``frame_bytes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dplab.measure.stats import mean, percentile
from dplab.workloads import voip
from dplab.workloads.measured import Measured, check_keys, positive_int, positive_number

METRICS = (
    "owd_min_ms", "owd_ms", "owd_p50_ms", "owd_p99_ms", "owd_max_ms", "pdv_ms", "ipdv_ms",
    "ipdv_max_ms", "loss_pct", "out_of_order", "packets_sent", "packets_received",
    "frame_bytes",
)  # fmt: skip
# Ethernet header + FCS + IPv4 header + UDP header: the frame bytes around the payload.
FRAME_OVERHEAD = 14 + 4 + 20 + 8
MIN_SIZE = FRAME_OVERHEAD + 12  # the payload holds the 12-byte send stamp
MAX_SIZE = 9018  # a 9000-byte IP packet: the usual jumbo frame
FIRST_PORT = 17384  # apart from voip's ports, so both can run in one phase


@dataclass(frozen=True)
class LatencyParams:
    size: int
    interval_ms: float
    duration_s: float
    timeout_s: float
    phase_ms: None = None  # rtp_tool's phase: frames leave at once
    tos: None = None  # the socket's default ToS

    @property
    def count(self) -> int:
        return max(1, math.floor(self.duration_s * 1000 / self.interval_ms))

    @property
    def packet_ms(self) -> float:
        return self.interval_ms

    @property
    def payload(self) -> int:
        return self.size - FRAME_OVERHEAD


def validate(params: dict, where: str) -> LatencyParams:
    if not isinstance(params, dict):
        raise ValueError(f"{where}: params must be a mapping, got {type(params).__name__}")
    check_keys(params, {"size", "interval_ms", "duration", "timeout_s"}, where)
    size = positive_int(params, "size", where, 64)
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"{where}: size must be {MIN_SIZE}..{MAX_SIZE} frame bytes (FCS "
                         f"included; the payload holds a 12-byte send stamp), got {size}")
    duration = positive_number(params, "duration", where, 5.0)
    return LatencyParams(
        size=size,
        interval_ms=positive_number(params, "interval_ms", where, 10.0),
        duration_s=duration,
        timeout_s=positive_number(params, "timeout_s", where, duration * 1.1 + 5),
    )


class LatencyFlows(voip.VoipFlows):
    """The latency flows of one run_flows call (voip's listen/send/wait with bare frames)."""

    tag = "latency"
    first_port = FIRST_PORT
    metrics = METRICS
    check = staticmethod(validate)
    receiver_args = ("--bare",)

    def sender_argv(self, stream: voip.Stream, dst_ip: str) -> list[str]:
        return [*super().sender_argv(stream, dst_ip), "--bare"]

    def measure_stream(self, stream: voip.Stream, report: dict[str, Any],
                       records: list[tuple[int, int, int]], source: str) -> Measured:
        return measure(stream.params, report, records, source)


def measure(params: LatencyParams, report: dict[str, Any],
            records: list[tuple[int, int, int]], source: str) -> Measured:
    """Metrics of one flow from the sender's report and the receiver's (index, send_ns,
    recv_ns) records in arrival order."""
    sent = report["packets_sent"]
    arrivals = voip.first_arrivals(records)
    summary: dict[str, float | None] = dict.fromkeys(METRICS)
    summary.update(frame_bytes=float(params.size), packets_sent=float(sent),
                   packets_received=float(len(arrivals)),
                   loss_pct=100.0 * (sent - len(arrivals)) / sent if sent else None)
    errors = [f"{source}: sender could not send {report['send_errors']} frame(s) "
              f"({report['first_error']})"] if report["send_errors"] else []  # fmt: skip
    if not arrivals:
        return Measured(summary, [], "; ".join([*errors, f"{source}: no frame arrived"]))
    delay = {index: (recv - send) / 1e6 for index, send, recv in arrivals}
    owd = list(delay.values())
    ipdv = [abs(delay[i] - delay[i - 1]) for i in sorted(delay) if i - 1 in delay]
    summary.update(
        owd_min_ms=min(owd), owd_ms=mean(owd), owd_p50_ms=percentile(owd, 50),
        owd_p99_ms=percentile(owd, 99), owd_max_ms=max(owd),
        pdv_ms=percentile(owd, 99) - min(owd),
        ipdv_ms=mean(ipdv) if ipdv else None, ipdv_max_ms=max(ipdv) if ipdv else None,
        out_of_order=float(voip.count_out_of_order(arrivals)),
    )  # fmt: skip
    return Measured(summary, [], "; ".join(errors) or None)
