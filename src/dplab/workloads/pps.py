"""Fixed-rate packet flows: copies of one frame of a set size at a set pps, A -> B.

Params: size (Ethernet frame bytes, FCS included, 64..1500; default 64), pps (frames per
second, required), duration (s) or count (frames), protocol "udp" (default) or "icmp"
(echo requests: an echo server on the way, e.g. p4src/study003/echo.p4, answers them),
timeout_s (default: the send time + 10 s), dst_mac "resolved" (default) or "host".

The frame is built from the hosts' real addresses: A's MAC and IP (as the substrate
set them), B's IP, and as
destination MAC the one A's kernel resolved for the next hop towards B (`ip route get`,
then A's neighbour table), after one ordinary ping A -> B made it resolve it; with dst_mac
"host", B's own MAC as the lab set it, no ARP: a plane that forwards nothing (a drop
program) lets no ARP reply through, so nothing could be resolved.
dplab-pktblast (switch/src/bin/pktblast, AF_PACKET transmit ring) sends it from A's eth0 at
the rate and reports what it really sent.

Counted (frame_count, a filtered packet socket that counts without reading, so the count
does not depend on how fast a process runs): at B's eth0 the flow's frames (by addresses
and UDP port or ICMP id), and for icmp at A's eth0 the echo replies to them. Counters
start before the sender and stop ARRIVAL_GRACE_S after it ended.

Metrics: frames_offered (pktblast's `sent`), frames_not_sent (refused by A's device),
offered_pps and target_pps, rate_error_pct (100 x (offered - target) / target, pktblast's
own report), send_s, frames_received (at B), loss_pct ((offered - received) / offered),
replies_received (icmp: echo replies at A; None for udp). A value that was not measured is
None, never 0.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from dplab.substrate.network import HOST_IF
from dplab.workloads import frames
from dplab.workloads.measured import (
    Measured,
    check_keys,
    missing,
    positive_int,
    positive_number,
    read_output,
)
from dplab.workloads.stream_base import StreamWorkload
from dplab.workloads.waiting import wait_ready

if TYPE_CHECKING:
    from dplab.workloads.flows import Flow, FlowNetwork

METRICS = (
    "frames_offered",
    "frames_not_sent",
    "offered_pps",
    "target_pps",
    "rate_error_pct",
    "send_s",
    "frames_received",
    "loss_pct",
    "replies_received",
)
PROTOCOLS = ("udp", "icmp")
DST_MACS = ("resolved", "host")
PKTBLAST = Path(__file__).resolve().parents[3] / "switch" / "target" / "release" / "dplab-pktblast"
COUNTER = [sys.executable, "-m", "dplab.workloads.frame_count"]
FIRST_PORT = 40000  # UDP ports (source and destination) and ICMP ids: FIRST_PORT + flow index
MAX_PPS = 10_000_000
READY_TIMEOUT_S = 15.0  # a deadline, not a wait: a loaded machine starts tools slowly
ARRIVAL_GRACE_S = 1.0  # frames still queued in a switch when the sender ends
RESOLVE_TIMEOUT_S = 10.0
COUNT_DEADLINE_SLACK = 1.1  # with a count, pktblast's own deadline: 10 % + 1 s over the plan


@dataclass(frozen=True)
class PpsParams:
    size: int
    pps: float
    duration_s: float | None
    count: int | None
    protocol: str
    timeout_s: float
    dst_mac: str = "resolved"

    @property
    def send_s(self) -> float:
        """How long the sender may send: the duration, or the count's time with slack."""
        if self.duration_s is not None:
            return self.duration_s
        return self.count / self.pps * COUNT_DEADLINE_SLACK + 1


def validate(params: dict, where: str) -> PpsParams:
    if not isinstance(params, dict):
        raise ValueError(f"{where}: params must be a mapping, got {type(params).__name__}")
    check_keys(params, {"size", "pps", "duration", "count", "protocol", "timeout_s",
                         "dst_mac"}, where)
    size = frames.check_size(params.get("size", 64), where)
    if "pps" not in params:
        raise ValueError(f"{where}: parameter 'pps' (frames per second) is required")
    pps = positive_number(params, "pps", where, None)
    if pps > MAX_PPS:
        raise ValueError(f"{where}: parameter 'pps' must be at most {MAX_PPS}, got {pps:g}")
    duration = positive_number(params, "duration", where, None)
    count = positive_int(params, "count", where, None)
    if (duration is None) == (count is None):
        raise ValueError(f"{where}: give exactly one of 'duration' (seconds) or 'count' "
                         "(frames)")
    protocol = params.get("protocol", "udp")
    if protocol not in PROTOCOLS:
        raise ValueError(f"{where}: parameter 'protocol' must be one of {list(PROTOCOLS)}, "
                         f"got {protocol!r}")
    dst_mac = params.get("dst_mac", "resolved")
    if dst_mac not in DST_MACS:
        raise ValueError(f"{where}: parameter 'dst_mac' must be one of {list(DST_MACS)}, "
                         f"got {dst_mac!r}")
    plan = PpsParams(size, pps, duration, count, protocol, 0.0)
    timeout = positive_number(params, "timeout_s", where, plan.send_s + 10)
    return PpsParams(size, pps, duration, count, protocol, timeout, dst_mac)


@dataclass
class _Stream:
    flow: Flow
    params: PpsParams
    ident: int  # UDP port or ICMP id that tells this flow's frames apart
    outputs: dict[str, IO[str]]  # "sender", "at_dst", "replies" -> output files
    frame: bytes = b""
    sender: subprocess.Popen | None = None
    counters: dict[str, subprocess.Popen] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class PpsFlows(StreamWorkload[PpsParams]):
    """The pps flows of one run_flows call: counters first, senders together, then count."""

    def __init__(self, net: FlowNetwork, flows: Sequence[Flow]) -> None:
        super().__init__(net, flows, validate)
        self.streams: list[_Stream] = []

    def listen(self, tmp: Path) -> None:
        """Build each flow's frame (resolving B's MAC), start its counters and wait until
        they count, so that send() only starts the senders."""
        for index, (flow, params) in enumerate(zip(self.flows, self.params, strict=True)):
            roles = ("sender", "at_dst", "replies") if params.protocol == "icmp" else (
                "sender", "at_dst")
            outputs = {role: open(tmp / f"pps-{index}-{role}.txt", "w+")  # noqa: SIM115
                       for role in roles}  # closed in _read
            stream = _Stream(flow, params, FIRST_PORT + index, outputs)
            self.streams.append(stream)
            try:
                stream.frame = self._frame(stream)
            except (ValueError, subprocess.SubprocessError) as exc:
                stream.problems.append(str(exc))
                continue
            self._start_counters(stream)
        silent = wait_ready([(s, role) for s in self.streams for role in s.counters],
                            _said_ready, lambda item: item[0].counters[item[1]],
                            READY_TIMEOUT_S)
        for stream, role in silent:
            host = stream.flow.src if role == "replies" else stream.flow.dst
            stream.problems.append(f"frame counter on {host} did not start")

    def send(self) -> None:
        """Start pktblast for every flow whose frame is built and whose counters count."""
        for stream in self.streams:
            if not stream.problems:
                stream.sender = self._spawn(stream.flow.src, _sender_argv(stream),
                                            stream.outputs["sender"])

    def wait(self) -> None:
        """Senders to their end, then the counts."""
        self.wait_senders()
        self.stop_counting()

    def wait_senders(self) -> None:
        """Until every sender has ended (or timed out: then stopped, and it still reports)."""
        for stream in self.streams:
            if stream.sender is None:
                continue
            try:
                stream.sender.wait(timeout=stream.params.timeout_s)
            except subprocess.TimeoutExpired:
                stream.problems.append(f"timed out after {stream.params.timeout_s:g} s")
                stream.sender.send_signal(signal.SIGTERM)  # it still reports what it sent
                stream.sender.wait()

    def stop_counting(self) -> None:
        """After a grace for frames still in flight, the counters stop and report."""
        if any(stream.sender is not None for stream in self.streams):
            time.sleep(ARRIVAL_GRACE_S)
        for stream in self.streams:
            for counter in stream.counters.values():
                counter.send_signal(signal.SIGTERM)
            for counter in stream.counters.values():
                counter.wait(timeout=READY_TIMEOUT_S)

    def kill(self) -> None:
        for stream in self.streams:
            for process in (stream.sender, *stream.counters.values()):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()

    def results(self) -> list[Measured]:
        return [_result(stream) for stream in self.streams]

    def _start_counters(self, stream: _Stream) -> None:
        flow, ident = stream.flow, stream.ident
        src_ip, dst_ip = self.net.host_ip(flow.src), self.net.host_ip(flow.dst)
        if stream.params.protocol == "udp":
            at_dst = f"udp and src host {src_ip} and dst host {dst_ip} and dst port {ident}"
            sink = ["--sink-udp", str(ident)]
        else:
            at_dst = (f"icmp[icmptype] == icmp-echo and icmp[4:2] == {ident} "
                      f"and src host {src_ip} and dst host {dst_ip}")
            sink = []
            replies = (f"icmp[icmptype] == icmp-echoreply and icmp[4:2] == {ident} "
                       f"and src host {dst_ip} and dst host {src_ip}")
            stream.counters["replies"] = self._spawn(
                flow.src, _counter_argv(replies), stream.outputs["replies"])
        stream.counters["at_dst"] = self._spawn(
            flow.dst, [*_counter_argv(at_dst), *sink], stream.outputs["at_dst"])

    def _frame(self, stream: _Stream) -> bytes:
        flow, p = stream.flow, stream.params
        src_ip, dst_ip = self.net.host_ip(flow.src), self.net.host_ip(flow.dst)
        dst_mac = (self.net.host_mac(flow.dst) if p.dst_mac == "host"
                   else self.resolved_mac(flow.src, dst_ip))
        src_mac = self.net.host_mac(flow.src)
        if p.protocol == "udp":
            return frames.udp_frame(p.size, src_mac, dst_mac, src_ip, dst_ip, stream.ident,
                                    stream.ident)
        return frames.icmp_echo_frame(p.size, src_mac, dst_mac, src_ip, dst_ip, stream.ident)

    def resolved_mac(self, host: str, dst_ip: str) -> str:
        """The MAC that host's kernel resolved for its next hop to dst_ip, after one ping."""
        ns = self.net.host_ns(host)
        self.net.run(ns, ["ping", "-c", "1", "-W", "2", "-n", dst_ip],
                     timeout=RESOLVE_TIMEOUT_S, check=False)
        route = json.loads(self.net.run(ns, ["ip", "-j", "route", "get", dst_ip],
                                        timeout=RESOLVE_TIMEOUT_S).stdout)[0]
        hop = route.get("gateway", dst_ip)
        neighbours = json.loads(self.net.run(ns, ["ip", "-j", "neigh", "show", "to", hop, "dev",
                                                  route["dev"]], timeout=RESOLVE_TIMEOUT_S).stdout)
        macs = [n["lladdr"] for n in neighbours if "lladdr" in n
                and n.get("state", ["FAILED"])[0] not in ("FAILED", "INCOMPLETE")]
        if not macs:
            raise ValueError(f"{host}: its kernel did not resolve a MAC for {hop} (next hop to "
                             f"{dst_ip}), so there is no frame to send")
        return macs[0]

    def _spawn(self, host: str, argv: list[str], out: IO[str]) -> subprocess.Popen:
        ns = self.net.host_ns(host)
        return self.net.popen(ns, argv, stdout=out, stderr=subprocess.STDOUT, text=True)


def _counter_argv(expression: str) -> list[str]:
    return [*COUNTER, "--iface", HOST_IF, "--filter", expression]


def _sender_argv(stream: _Stream) -> list[str]:
    p = stream.params
    count = [] if p.count is None else ["--count", str(p.count)]
    return [str(PKTBLAST), "--iface", HOST_IF, "--frame", stream.frame.hex(), "--seconds",
            f"{p.send_s:g}", "--pps", f"{p.pps:g}", *count]


def _said_ready(item: tuple[_Stream, str]) -> bool:
    stream, role = item
    return "ready" in Path(stream.outputs[role].name).read_text()


def _result(stream: _Stream) -> Measured:
    source = f"flow '{stream.flow.flow_id}' ({stream.flow.src}->{stream.flow.dst})"
    texts = {role: read_output(out) for role, out in stream.outputs.items()}
    report = _last_json(texts["sender"])
    if stream.sender is None or report is None:
        said = "; ".join(t.strip()[-300:] for t in texts.values() if t.strip())
        why = "; ".join(stream.problems) or "pktblast printed no report"
        return missing(METRICS, f"{source}: {why}" + (f"; tools said: {said}" if said else ""))
    counts = {role: _last_json(text) for role, text in texts.items() if role != "sender"}
    return measure(stream.params, report, counts, source, stream.problems)


def measure(params: PpsParams, report: dict[str, Any], counts: dict[str, dict | None],
            source: str, problems: Sequence[str] = ()) -> Measured:
    """Metrics of one flow from pktblast's report and the counters' final counts."""
    summary: dict[str, float | None] = dict.fromkeys(METRICS)
    offered = report["sent"]
    summary.update(
        frames_offered=float(offered),
        frames_not_sent=float(report["not_sent"]),
        offered_pps=report["pps"] if offered else None,
        target_pps=params.pps,
        rate_error_pct=100.0 * report["rate_error"] if offered else None,
        send_s=report["seconds"],
    )
    errors = [f"{source}: {problem}" for problem in problems]
    received = counts.get("at_dst")
    if received is None:
        errors.append(f"{source}: the counter at the destination reported nothing")
    else:
        summary["frames_received"] = float(received["frames"])
        if offered:
            summary["loss_pct"] = 100.0 * (offered - received["frames"]) / offered
    if params.protocol == "icmp":
        replies = counts.get("replies")
        if replies is None:
            errors.append(f"{source}: the echo-reply counter at the source reported nothing")
        else:
            summary["replies_received"] = float(replies["frames"])
    if not offered:
        errors.append(f"{source}: pktblast sent no frame")
    return Measured(summary, [], "; ".join(errors) or None)


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None
