"""VoIP flows: one G.711-like RTP stream per flow (rtp_tool), scored with the E-model.

Params: duration in s (default 10), codec "g711" (the only one), packet_ms (default 20),
payload bytes (default 160 = 20 ms of 8 kHz G.711), timeout_s (default: duration
+ 10 % + 5 s), phase_ms (optional: packets leave phase_ms after each whole multiple of
packet_ms on the machine's monotonic clock, which all namespaces share, so concurrent
streams can be set to interleave instead of colliding; without it a stream starts at once),
tos (optional: the IPv4 ToS byte of the RTP packets, 0..255, e.g. 184 = DSCP EF).

Every packet carries its send time; the receiver stamps arrivals in the kernel, and the
hosts share one clock, so each packet's one-way delay is measured exactly. jitter_ms is
RFC 3550 interarrival jitter over the measured send/receive times (so the sender's own
scheduling does not count as network jitter). jitter_eq1_ms: study 000's Eq. 1 term of
the flow (the mean of the per-packet RFC 3550 values); delay_var_ms2: study 004's Eq. 5
squared, the population variance of the one-way delays (the unit the study's tables use).
r_factor/mos: measure.emodel, with the mouth-to-ear delay of emodel.mouth_to_ear_ms and
the loss pattern's BurstR.

A stream of which nothing arrived is ok=False but keeps what was measured, as ping does:
packets_sent, packets_received 0, loss_pct 100; delay, jitter, R and MOS are None.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from dplab.measure import emodel
from dplab.measure.jitter import delay_variance, rfc3550_jitter_series, study000_flow_jitter
from dplab.measure.stats import mean, percentile
from dplab.workloads.measured import (
    Measured,
    check_keys,
    missing,
    positive_int,
    positive_number,
    read_output,
    tos_byte,
)
from dplab.workloads.stream_base import StreamWorkload
from dplab.workloads.waiting import wait_ready

if TYPE_CHECKING:
    from dplab.workloads.flows import Flow, FlowNetwork

METRICS = (
    "owd_ms",
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
    "r_factor",
    "mos",
)
CODECS = ("g711",)
FIRST_PORT = 16384  # RTP's customary range, apart from iperf's 5001+
READY_TIMEOUT_S = 15.0  # a deadline, not a wait: a loaded machine starts tools slowly
ARRIVAL_GRACE_S = 1.0  # how long the receiver may wait for stragglers after the sender ended
MAX_PAYLOAD = 65507 - 12  # largest UDP payload minus the RTP header
BIN_S = 1.0
TOOL = [sys.executable, "-m", "dplab.workloads.rtp_tool"]


@dataclass(frozen=True)
class VoipParams:
    duration_s: float
    codec: str
    packet_ms: float
    payload: int
    timeout_s: float
    phase_ms: float | None = None
    tos: int | None = None

    @property
    def count(self) -> int:
        return max(1, round(self.duration_s * 1000 / self.packet_ms))


def validate(params: dict, where: str) -> VoipParams:
    if not isinstance(params, dict):
        raise ValueError(f"{where}: params must be a mapping, got {type(params).__name__}")
    check_keys(params, {"duration", "codec", "packet_ms", "payload", "timeout_s", "phase_ms",
                        "tos"}, where)
    duration = positive_number(params, "duration", where, 10.0)
    codec = params.get("codec", "g711")
    if codec not in CODECS:
        raise ValueError(f"{where}: codec must be one of {list(CODECS)}, got {codec!r}")
    payload = positive_int(params, "payload", where, 160)
    if not 12 <= payload <= MAX_PAYLOAD:
        raise ValueError(
            f"{where}: payload must be 12..{MAX_PAYLOAD} bytes (it holds the send time and "
            f"index; RTP header + payload must fit one UDP datagram), got {payload}"
        )
    packet_ms = positive_number(params, "packet_ms", where, 20.0)
    return VoipParams(
        duration_s=duration,
        codec=codec,
        packet_ms=packet_ms,
        payload=payload,
        timeout_s=positive_number(params, "timeout_s", where, duration * 1.1 + 5),
        phase_ms=_phase(params, packet_ms, where),
        tos=tos_byte(params, where),
    )


def _phase(params: dict, packet_ms: float, where: str) -> float | None:
    phase = params.get("phase_ms")
    if phase is None:
        return None
    if isinstance(phase, bool) or not isinstance(phase, int | float) or not 0 <= phase < packet_ms:
        raise ValueError(f"{where}: phase_ms must be a number in [0, packet_ms={packet_ms:g}), "
                         f"got {phase!r}")
    return float(phase)


@dataclass
class Stream:
    flow: Flow
    params: VoipParams
    port: int
    records: Path
    receiver_out: IO[str]
    sender_out: IO[str]
    receiver: subprocess.Popen | None = None
    sender: subprocess.Popen | None = None
    problems: list[str] = field(default_factory=list)


class VoipFlows(StreamWorkload[Any]):
    """The VoIP flows of one run_flows call: listen, send together, wait, measure.

    The trace and latency workloads send with the same tools: they override the class
    attributes (``receiver_args``: extra arguments of the receiver), ``sender_argv`` and
    ``measure_stream``."""

    tag = "voip"  # names the tools' files
    first_port = FIRST_PORT
    metrics = METRICS
    check = staticmethod(validate)
    receiver_args: tuple[str, ...] = ()

    def __init__(self, net: FlowNetwork, flows: Sequence[Flow]) -> None:
        super().__init__(net, flows, self.check)
        self.streams: list[Stream] = []

    def listen(self, tmp: Path) -> None:
        """Start every receiver and wait until each is bound (or failed)."""
        for index, (flow, params) in enumerate(zip(self.flows, self.params, strict=True)):
            name = tmp / f"{self.tag}-{index}"
            stream = Stream(
                flow, params, self.first_port + 2 * index, Path(f"{name}-records.txt"),
                open(f"{name}-recv.txt", "w+"),  # noqa: SIM115 - closed in _read
                open(f"{name}-send.txt", "w+"),  # noqa: SIM115 - closed in _read
            )  # fmt: skip
            argv = [*_receiver_argv(stream), *self.receiver_args]
            stream.receiver = self._spawn(flow.dst, argv, stream.receiver_out)
            self.streams.append(stream)
        self._wait_ready()

    def send(self) -> None:
        """Start the senders of every stream whose receiver listens."""
        for stream in self.streams:
            if not stream.problems:
                argv = self.sender_argv(stream, self.net.host_ip(stream.flow.dst))
                stream.sender = self._spawn(stream.flow.src, argv, stream.sender_out)

    def _spawn(self, host: str, argv: list[str], out: IO[str]) -> subprocess.Popen:
        ns = self.net.host_ns(host)
        return self.net.popen(ns, argv, stdout=out, stderr=subprocess.STDOUT, text=True)

    def _wait_ready(self) -> None:
        silent = wait_ready(self.streams, _said_ready, lambda s: s.receiver, READY_TIMEOUT_S)
        for stream in silent:
            stream.problems.append(f"RTP receiver on {stream.flow.dst} did not start")

    def wait(self) -> None:
        """Senders to their end (or timeout), then receivers get a grace for stragglers."""
        for stream in self.streams:
            if stream.sender is None:
                continue
            try:
                stream.sender.wait(timeout=stream.params.timeout_s)
            except subprocess.TimeoutExpired:
                stream.problems.append(f"timed out after {stream.params.timeout_s:g} s")
        grace_end = time.monotonic() + ARRIVAL_GRACE_S
        for stream in self.streams:
            try:
                stream.receiver.wait(timeout=max(grace_end - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                stream.receiver.terminate()  # normal when the last packet was lost
                stream.receiver.wait()

    def kill(self) -> None:
        for stream in self.streams:
            for process in (stream.sender, stream.receiver):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()

    def results(self) -> list[Measured]:
        return [self._result(stream) for stream in self.streams]

    def sender_argv(self, stream: Stream, dst_ip: str) -> list[str]:
        p = stream.params
        phase = [] if p.phase_ms is None else ["--phase-ms", f"{p.phase_ms:g}"]
        tos = [] if p.tos is None else ["--tos", str(p.tos)]
        return [*TOOL, "send", "--dst", dst_ip, "--port", str(stream.port),
                "--count", str(p.count), "--packet-ms", f"{p.packet_ms:g}",
                "--payload", str(p.payload), *phase, *tos]  # fmt: skip

    def measure_stream(self, stream: Stream, report: dict[str, Any],
                       records: list[tuple[int, int, int]], source: str) -> Measured:
        return measure(stream.params, report, records, source)

    def _result(self, stream: Stream) -> Measured:
        source = f"flow '{stream.flow.flow_id}' ({stream.flow.src}->{stream.flow.dst})"
        sender_text = read_output(stream.sender_out)
        receiver_text = read_output(stream.receiver_out)
        report = _sender_report(sender_text)
        if stream.problems or report is None:
            said = (sender_text + receiver_text).strip()[-300:]
            why = "; ".join(stream.problems) or "sender printed no report"
            return missing(self.metrics,
                           f"{source}: {why}" + (f"; tools said: {said}" if said else ""))
        return self.measure_stream(stream, report, _parse_records(stream.records), source)


def _receiver_argv(stream: Stream) -> list[str]:
    count, timeout = stream.params.count, stream.params.timeout_s + ARRIVAL_GRACE_S
    return [*TOOL, "recv", "--port", str(stream.port), "--out", str(stream.records),
            "--count", str(count), "--timeout", f"{timeout:g}"]  # fmt: skip


def _said_ready(stream: Stream) -> bool:
    return "ready" in Path(stream.receiver_out.name).read_text()


def _sender_report(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def _parse_records(path: Path) -> list[tuple[int, int, int]]:
    """(index, send_ns, recv_ns) in arrival order; a file never written means nothing arrived."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        index, _seq, send_ns, recv_ns = (int(v) for v in line.split())
        records.append((index, send_ns, recv_ns))
    return records


def measure(
    params: VoipParams, report: dict[str, Any], records: list[tuple[int, int, int]], source: str
) -> Measured:
    """Metrics of one stream from the sender's report and the receiver's per-packet records."""
    sent = report["packets_sent"]
    arrivals = first_arrivals(records)
    summary: dict[str, float | None] = dict.fromkeys(METRICS)
    summary["packets_sent"] = float(sent)
    summary["packets_received"] = float(len(arrivals))
    summary["loss_pct"] = 100.0 * (sent - len(arrivals)) / sent if sent else None
    errors = [f"{source}: sender could not send {report['send_errors']} packet(s) "
              f"({report['first_error']})"] if report["send_errors"] else []  # fmt: skip
    if not arrivals:
        return Measured(summary, [], "; ".join([*errors, f"{source}: no RTP packet arrived"]))
    owd = [(recv - send) / 1e6 for _, send, recv in arrivals]
    jitter = rfc3550_jitter_series(
        [s / 1e6 for _, s, _ in arrivals], [r / 1e6 for *_, r in arrivals]
    )
    summary.update(
        owd_ms=mean(owd),
        owd_p50_ms=percentile(owd, 50),
        owd_p99_ms=percentile(owd, 99),
        owd_max_ms=max(owd),
        jitter_ms=jitter[-1] if jitter else None,
        jitter_eq1_ms=study000_flow_jitter(jitter),
        delay_var_ms2=delay_variance(owd),
        out_of_order=float(count_out_of_order(arrivals)),
    )
    _score(summary, params, arrivals, sent)
    intervals = _intervals(params, arrivals, [None, *jitter], sent)
    return Measured(summary, intervals, "; ".join(errors) or None)


def first_arrivals(records: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Records without duplicates (a packet counts once, at its first arrival)."""
    seen: set[int] = set()
    unique = []
    for record in records:
        if record[0] not in seen:
            seen.add(record[0])
            unique.append(record)
    return unique


def count_out_of_order(records: list[tuple[int, int, int]]) -> int:
    """Packets that arrived after a packet sent later than them."""
    highest, count = -1, 0
    for index, _, _ in records:
        if index < highest:
            count += 1
        highest = max(highest, index)
    return count


def _score(summary: dict, params: VoipParams, arrivals: list, sent: int) -> None:
    if summary["jitter_ms"] is None or summary["loss_pct"] is None:
        return
    ta = emodel.mouth_to_ear_ms(summary["owd_ms"], summary["jitter_ms"], params.packet_ms)
    arrived = {index for index, _, _ in arrivals}
    burst_r = emodel.burst_ratio([i not in arrived for i in range(sent)])
    r = emodel.r_factor(ta, min(summary["loss_pct"], 100.0), burst_r)
    summary["r_factor"], summary["mos"] = r, emodel.mos(r)


def _intervals(
    params: VoipParams, arrivals: list, jitter_after: list[float | None], sent: int
) -> list[dict[str, float | None]]:
    """1 s bins by scheduled send time (index * packet_ms), so lost packets have a bin too."""

    def bin_of(index: int) -> int:
        return math.floor(index * params.packet_ms / 1000 / BIN_S)

    sent_per_bin: dict[int, int] = {}
    for index in range(sent):
        sent_per_bin[bin_of(index)] = sent_per_bin.get(bin_of(index), 0) + 1
    arrived: dict[int, list[tuple[float, float | None]]] = {}
    for (index, send_ns, recv_ns), jitter in zip(arrivals, jitter_after, strict=True):
        arrived.setdefault(bin_of(index), []).append(((recv_ns - send_ns) / 1e6, jitter))
    return [_bin_row(b, sent_per_bin[b], arrived.get(b, [])) for b in sorted(sent_per_bin)]


def _bin_row(index: int, sent: int, arrived: list[tuple[float, float | None]]) -> dict:
    jitters = [j for _, j in arrived if j is not None]
    return {
        "t_start": index * BIN_S,
        "t_end": (index + 1) * BIN_S,
        "packets_sent": float(sent),
        "packets_received": float(len(arrived)),
        "loss_pct": 100.0 * (sent - len(arrived)) / sent,
        "owd_ms": mean([owd for owd, _ in arrived]),
        "jitter_ms": jitters[-1] if jitters else None,  # RFC 3550 running value at bin end
    }
