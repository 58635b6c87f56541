"""Trace replay: the packets of a recorded trace (trace_file: pcap or CSV of time, size, tos)
sent from one host to another at their recorded times, each its recorded size and ToS.

Params (spec TraceWorkload): file, tos (optional: one ToS byte for every packet instead of
the trace's), timeout_s (default: the trace's length + 10 % + 5 s). The packets are UDP
datagrams sent by rtp_tool on absolute deadlines, so the replay keeps the trace's timing;
each carries its send time, so every packet's one-way delay is measured as VoIP's is. A
packet's size is its IPv4 length; packets under MIN_SIZE bytes (IP + UDP + RTP headers and
the send stamp) are sent at MIN_SIZE, the trace's over the 1500-byte MTU are refused.

Metrics, like udp's: packets_sent/received, loss_pct, out_of_order, bytes (IPv4 bytes of the
packets that arrived), throughput_bps (those bytes over the trace's length), owd_*_ms,
jitter_ms (RFC 3550), jitter_eq1_ms and delay_var_ms2 (study 000 Eq. 1 and study 004 Eq. 5,
as voip's); intervals: 1 s bins by recorded send time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dplab.measure.jitter import delay_variance, rfc3550_jitter_series, study000_flow_jitter
from dplab.measure.stats import mean, percentile
from dplab.substrate.network import MTU
from dplab.workloads import rtp_tool, trace_file
from dplab.workloads.measured import Measured, check_keys, positive_number, tos_byte
from dplab.workloads.voip import TOOL, Stream, VoipFlows, count_out_of_order, first_arrivals

HEADERS = 20 + 8 + rtp_tool.RTP_HEADER.size  # IPv4 + UDP + RTP
MIN_SIZE = HEADERS + rtp_tool.STAMP.size
FIRST_PORT = 18432  # apart from voip's 16384 + 2 i
BIN_S = 1.0
METRICS = (
    "throughput_bps",
    "bytes",
    "owd_ms",
    "owd_min_ms",
    "owd_p50_ms",
    "owd_p99_ms",
    "owd_max_ms",
    "jitter_ms",
    "jitter_eq1_ms",
    "delay_var_ms2",
    "loss_pct",
    "out_of_order",
    "packets_sent",
    "packets_received",
)


@dataclass(frozen=True)
class TraceParams:
    file: str
    packets: tuple[trace_file.TracePacket, ...]
    timeout_s: float

    @property
    def count(self) -> int:
        return len(self.packets)

    @property
    def length_s(self) -> float:
        return self.packets[-1].offset_s


def validate(params: dict, where: str) -> TraceParams:
    if not isinstance(params, dict):
        raise ValueError(f"{where}: params must be a mapping, got {type(params).__name__}")
    check_keys(params, {"file", "tos", "timeout_s"}, where)
    if not isinstance(params.get("file"), str):
        raise ValueError(f"{where}: parameter 'file' (a pcap or CSV trace) is required")
    tos = tos_byte(params, where)
    try:
        packets = trace_file.load(Path(params["file"]))
    except trace_file.TraceError as exc:
        raise ValueError(f"{where}: {exc}") from None
    for number, packet in enumerate(packets, start=1):
        if packet.size > MTU or (packet.tos is not None and not 0 <= packet.tos <= 255):
            raise ValueError(f"{where}: trace {params['file']}, packet {number}: size "
                             f"{packet.size} must be <= {MTU} and tos 0..255")
    if tos is not None:
        packets = [trace_file.TracePacket(p.offset_s, p.size, tos) for p in packets]
    timeout = positive_number(params, "timeout_s", where, packets[-1].offset_s * 1.1 + 5)
    return TraceParams(params["file"], tuple(packets), timeout)


class TraceFlows(VoipFlows):
    """The trace flows of one run_flows call, on VoIP's sender and receiver."""

    tag = "trace"
    first_port = FIRST_PORT
    metrics = METRICS
    check = staticmethod(validate)

    def sender_argv(self, stream: Stream, dst_ip: str) -> list[str]:
        schedule = stream.records.with_name(f"{stream.records.stem}-schedule.txt")
        rtp_tool.write_schedule(schedule, [
            rtp_tool.Slot(round(p.offset_s * 1e9), max(p.size, MIN_SIZE) - HEADERS, p.tos)
            for p in stream.params.packets
        ])
        return [*TOOL, "send", "--dst", dst_ip, "--port", str(stream.port),
                "--schedule", str(schedule)]

    def measure_stream(self, stream: Stream, report: dict[str, Any],
                       records: list[tuple[int, int, int]], source: str) -> Measured:
        return measure(stream.params, report, records, source)


def measure(params: TraceParams, report: dict[str, Any], records: list[tuple[int, int, int]],
            source: str) -> Measured:
    """Metrics of one replay from the sender's report and the receiver's per-packet records."""
    sent = report["packets_sent"]
    arrivals = first_arrivals(records)
    summary: dict[str, float | None] = dict.fromkeys(METRICS)
    received_bytes = sum(_size(params, index) for index, _, _ in arrivals)
    summary.update(
        packets_sent=float(sent),
        packets_received=float(len(arrivals)),
        loss_pct=100.0 * (sent - len(arrivals)) / sent if sent else None,
        bytes=float(received_bytes),
        throughput_bps=received_bytes * 8 / params.length_s if params.length_s > 0 else None,
    )
    errors = [f"{source}: sender could not send {report['send_errors']} packet(s) "
              f"({report['first_error']})"] if report["send_errors"] else []  # fmt: skip
    if not arrivals:
        return Measured(summary, [], "; ".join([*errors, f"{source}: no packet arrived"]))
    owd = [(recv - send) / 1e6 for _, send, recv in arrivals]
    jitter = rfc3550_jitter_series([s / 1e6 for _, s, _ in arrivals],
                                   [r / 1e6 for *_, r in arrivals])
    summary.update(
        owd_ms=mean(owd),
        owd_min_ms=min(owd),
        owd_p50_ms=percentile(owd, 50),
        owd_p99_ms=percentile(owd, 99),
        owd_max_ms=max(owd),
        jitter_ms=jitter[-1] if jitter else None,
        jitter_eq1_ms=study000_flow_jitter(jitter),
        delay_var_ms2=delay_variance(owd),
        out_of_order=float(count_out_of_order(arrivals)),
    )
    return Measured(summary, _intervals(params, arrivals, [None, *jitter]),
                    "; ".join(errors) or None)


def _size(params: TraceParams, index: int) -> int:
    return max(params.packets[index].size, MIN_SIZE)


def _intervals(params: TraceParams, arrivals: list[tuple[int, int, int]],
               jitter_after: list[float | None]) -> list[dict[str, float | None]]:
    """1 s bins by recorded send time, so lost packets have a bin too."""
    def bin_of(index: int) -> int:
        return math.floor(params.packets[index].offset_s / BIN_S)

    sent: dict[int, int] = {}
    for index in range(params.count):
        sent[bin_of(index)] = sent.get(bin_of(index), 0) + 1
    arrived: dict[int, list[tuple[int, float, float | None]]] = {}
    for (index, send_ns, recv_ns), jitter in zip(arrivals, jitter_after, strict=True):
        arrived.setdefault(bin_of(index), []).append(
            (_size(params, index), (recv_ns - send_ns) / 1e6, jitter))
    return [_bin_row(b, sent[b], arrived.get(b, [])) for b in sorted(sent)]


def _bin_row(index: int, sent: int, arrived: list[tuple[int, float, float | None]]) -> dict:
    jitters = [j for *_, j in arrived if j is not None]
    received_bytes = sum(size for size, _, _ in arrived)
    return {
        "t_start": index * BIN_S,
        "t_end": (index + 1) * BIN_S,
        "packets_sent": float(sent),
        "packets_received": float(len(arrived)),
        "loss_pct": 100.0 * (sent - len(arrived)) / sent,
        "bytes": float(received_bytes),
        "throughput_bps": received_bytes * 8 / BIN_S,
        "owd_ms": mean([owd for _, owd, _ in arrived]),
        "jitter_ms": jitters[-1] if jitters else None,
    }
