"""CDN video flows: real H.264 content served to several clients, over HTTP (HLS) or RTP.

A flow is one viewer: `src` is the client (viewer), `dst` the server (the CDN), as in
study 000's cdn pairs (H1..H4 -> H8 means four viewers of H8). Params (spec VideoWorkload):
mode "http"|"rtp", duration (content s), resolution "WxH", fps, bitrate_kbit, segment_s,
frame_at (s), max_buffer_s, timeout_s, tos (the IPv4 ToS byte of the server's packets, a
multiple of 4: ffmpeg's rtp output sets the DSCP only; http viewers of one content with
different tos get one server each). Content comes from video_content (cached encode).

http: one video_server per (server host, content), shared by its viewers; each viewer runs
video_player (real TCP downloads, playout buffer in wall-clock time). rtp: per viewer, an
ffmpeg on the server sends the content live (-re) over RTP/UDP; on the client
video_rtp_recv records every packet and hands it to an ffmpeg that decodes the stream.

Frames: at frame_at seconds, what the viewer sees and what was sent are written as PNGs.
rtp: the client's ffmpeg writes its (frame_at * fps)-th decoded frame (counted from 0, the
moment frame_at of the stream), the sent one is the content's frame at frame_at. http: the
player does not decode; TCP delivers the content's bytes unchanged, so the viewer's
picture is the content's frame at the playout position at frame_at wall seconds after the
request (behind by the startup delay and stalls), the sent one the content's frame at
frame_at. frame_diff_pct compares them. rtp also stores study 000's Eq. 1 jitter
(jitter_eq1_ms, the mean of the per-packet RFC 3550 values) and study 004's Eq. 5 delay
variance (delay_var_ms2, over arrival minus media time: the sender's pacing counts, as in
RFC 3550 jitter). The PNGs are kept only inside
`keep_frames(folder)`, as <folder>/<flow_id>-sent.png and <flow_id>-received.png.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from dplab.measure import video as vm
from dplab.measure.jitter import (
    delay_variance,
    mean_abs_consecutive_difference,
    study000_flow_jitter,
)
from dplab.measure.stats import mean
from dplab.workloads import video_content
from dplab.workloads.measured import (
    Measured,
    check_keys,
    missing,
    positive_int,
    positive_number,
    tos_byte,
)
from dplab.workloads.stream_base import StreamWorkload
from dplab.workloads.video_content import FFMPEG, Content, ContentSpec
from dplab.workloads.waiting import bound_ports, wait_ready

if TYPE_CHECKING:
    from dplab.workloads.flows import Flow, FlowNetwork

# What every viewer reports, live or not: data, rate and its player's start and stalls.
PLAYER_METRICS = (
    "bytes",
    "throughput_bps",
    "transmission_time_s",
    "startup_delay_ms",
    "rebuffers",
    "rebuffer_time_s",
)
HTTP_METRICS = (
    *PLAYER_METRICS,
    "segment_time_ms",
    "jitter_ms",
    "segments_received",
    "frame_lag_s",
    "frame_diff_pct",
)
RTP_METRICS = (
    *PLAYER_METRICS,
    "packets_received",
    "loss_pct",
    "out_of_order",
    "jitter_ms",
    "jitter_eq1_ms",
    "delay_var_ms2",
    "frame_diff_pct",
)
MODES = ("http", "rtp")
KEYS = {
    "mode",
    "duration",
    "resolution",
    "fps",
    "bitrate_kbit",
    "segment_s",
    "frame_at",
    "max_buffer_s",
    "jitter_buffer_ms",
    "timeout_s",
    "tos",
}
HTTP_FIRST_PORT = 8080  # one per (server host, content)
RTP_FIRST_PORT = 20000  # per viewer, even (ffmpeg sends RTCP to port + 1)
DECODER_FIRST_PORT = 30000  # the client's ffmpeg, on its loopback
READY_TIMEOUT_S = 10.0
RTP_IDLE_S = 2.0  # a receiver ends this long after the stream's last packet
DECODER_GRACE_S = 3.0
POLL_S = 0.05  # readiness polls run `ss` per RTP viewer: not as often as waiting's
PYTHON = [sys.executable, "-m"]

_frames_folder: ContextVar[Path | None] = ContextVar("video_frames_folder", default=None)


@contextmanager
def keep_frames(folder: Path) -> Iterator[Path]:
    """Video flows run inside this keep their frame PNGs in folder (created when needed)."""
    token = _frames_folder.set(folder)
    try:
        yield folder
    finally:
        _frames_folder.reset(token)


@dataclass(frozen=True)
class VideoParams:
    mode: str
    content: ContentSpec
    frame_at_s: float
    max_buffer_s: float
    timeout_s: float
    jitter_buffer_s: float = 0.2
    tos: int | None = None  # of the server's packets (the video's direction)


def validate(params: dict, where: str) -> VideoParams:
    if not isinstance(params, dict):
        raise ValueError(f"{where}: params must be a mapping, got {type(params).__name__}")
    check_keys(params, KEYS, where)
    mode = params.get("mode", "http")
    if mode not in MODES:
        raise ValueError(f"{where}: mode must be one of {list(MODES)}, got {mode!r}")
    duration = positive_number(params, "duration", where, 10.0)
    width, height = _resolution(params.get("resolution", "1280x720"), where)
    frame_at = positive_number(params, "frame_at", where, duration / 2)
    if frame_at >= duration:
        raise ValueError(
            f"{where}: frame_at ({frame_at:g} s) must be within the content "
            f"(duration {duration:g} s)"
        )
    content = ContentSpec(
        width,
        height,
        positive_int(params, "fps", where, 25),
        positive_int(params, "bitrate_kbit", where, 2000),
        duration,
        positive_number(params, "segment_s", where, 2.0),
    )
    timeout = positive_number(params, "timeout_s", where, duration * 2 + 10)
    buffer_ms = params.get("jitter_buffer_ms", 200.0)
    if not isinstance(buffer_ms, int | float) or buffer_ms < 0:
        raise ValueError(f"{where}: jitter_buffer_ms must be a number >= 0, got {buffer_ms!r}")
    return VideoParams(
        mode,
        content,
        frame_at,
        positive_number(params, "max_buffer_s", where, 30.0),
        timeout,
        buffer_ms / 1000,
        tos_byte(params, where, dscp_only=True),
    )


def _resolution(value: object, where: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)x(\d+)", value) if isinstance(value, str) else None
    if not match or any(int(v) < 16 or int(v) % 2 for v in match.groups()):
        raise ValueError(
            f"{where}: resolution must be 'WIDTHxHEIGHT' with even sizes >= 16 "
            f"(H.264 4:2:0), e.g. '1280x720', got {value!r}"
        )
    return int(match[1]), int(match[2])


@dataclass
class _Viewer:
    """One flow's processes and files."""

    flow: Flow
    params: VideoParams
    folder: Path  # this viewer's files (tool outputs, records, frames)
    content: Content | None = None
    port: int = 0  # http: its server's port; rtp: the receiver's UDP port
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)  # role -> process
    problems: list[str] = field(default_factory=list)
    sender_started: float | None = None  # rtp: wall time (s) the server's ffmpeg was started

    def output(self, role: str) -> IO[str]:
        return open(self.folder / f"{role}.txt", "w")  # noqa: SIM115 - the child owns it

    def said(self, role: str) -> str:
        path = self.folder / f"{role}.txt"
        return path.read_text() if path.exists() else ""


@dataclass
class _Server:
    host: str
    content: Content
    port: int
    process: subprocess.Popen
    out: Path  # its output, where it says "ready"


class VideoFlows(StreamWorkload[VideoParams]):
    """The video flows of one run_flows call: listen, send together, wait, measure."""

    def __init__(self, net: FlowNetwork, flows: Sequence[Flow]) -> None:
        super().__init__(net, flows, validate)
        self.viewers: list[_Viewer] = []
        self.servers: dict[tuple[str, str, int | None], _Server] = {}

    def listen(self, tmp: Path) -> None:
        """Content ready, HTTP servers and RTP receivers started, each waited for."""
        for index, (flow, params) in enumerate(zip(self.flows, self.params, strict=True)):
            viewer = _Viewer(flow, params, tmp / f"video-{index}")
            viewer.folder.mkdir()
            self.viewers.append(viewer)
            try:
                viewer.content = video_content.ensure(params.content)
            except video_content.ContentError as exc:
                viewer.problems.append(str(exc))
                continue
            if params.mode == "http":
                self._serve(viewer, tmp)
            else:
                self._receive(viewer, index)
        self._wait_ready()

    def _serve(self, viewer: _Viewer, tmp: Path) -> None:
        tos = viewer.params.tos
        key = (viewer.flow.dst, viewer.content.spec.key, tos)
        if key not in self.servers:
            number = len(self.servers)
            port, out = HTTP_FIRST_PORT + number, tmp / f"video-server-{number}.txt"
            argv = [
                *PYTHON,
                "dplab.workloads.video_server",
                "--dir",
                str(viewer.content.hls),
                "--port",
                str(port),
                *([] if tos is None else ["--tos", str(tos)]),
            ]
            process = self._spawn(viewer.flow.dst, argv, open(out, "w"))  # noqa: SIM115 - _spawn closes it
            self.servers[key] = _Server(viewer.flow.dst, viewer.content, port, process, out)
        viewer.port = self.servers[key].port

    def _receive(self, viewer: _Viewer, index: int) -> None:
        viewer.port = RTP_FIRST_PORT + 2 * index
        decoder_port = DECODER_FIRST_PORT + 2 * index
        sdp = viewer.folder / "stream.sdp"
        sdp.write_text(viewer.content.receiver_sdp(decoder_port))
        recv = [
            *PYTHON,
            "dplab.workloads.video_rtp_recv",
            "--port",
            str(viewer.port),
            "--relay-port",
            str(decoder_port),
            "--out",
            str(viewer.folder / "packets.txt"),
            "--timeout",
            f"{viewer.params.timeout_s:g}",
            "--idle",
            f"{RTP_IDLE_S:g}",
        ]
        # By frame count, not time: the stream's RTP timestamps start at a random offset and
        # ffmpeg's estimate of the start put every frame one frame early in our runs.
        frame = round(viewer.params.frame_at_s * viewer.params.content.fps)
        select = f"select='gte(n,{frame})'"
        decode = [
            *FFMPEG,
            "-protocol_whitelist",
            "file,udp,rtp",
            "-i",
            str(sdp),
            "-vf",
            select,
            "-frames:v",
            "1",
            "-update",
            "1",
            "-y",
            str(viewer.folder / "received.png"),
        ]
        viewer.processes["receiver"] = self._spawn(viewer.flow.src, recv, viewer.output("receiver"))
        viewer.processes["decoder"] = self._spawn(viewer.flow.src, decode, viewer.output("decoder"))

    def _spawn(self, host: str, argv: list[str], out: IO[str]) -> subprocess.Popen:
        with out:
            return self.net.popen(
                self.net.host_ns(host), argv, stdout=out, stderr=subprocess.STDOUT, text=True
            )

    def _wait_ready(self) -> None:
        """Servers, then RTP receivers and their decoders, within one READY_TIMEOUT_S."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        servers = list(self.servers.values())
        for server in wait_ready(servers, _server_ready, lambda s: s.process, READY_TIMEOUT_S,
                                 POLL_S):
            self._fail_viewers_of(
                server,
                f"video server on {server.host} did not start: "
                f"{server.out.read_text().strip()[-300:]}",
            )
        receivers = [v for v in self.viewers if v.params.mode == "rtp" and not v.problems]
        left = max(deadline - time.monotonic(), 0.0)
        for viewer in wait_ready(receivers, self._receiving, lambda v: v.processes["receiver"],
                                 left, POLL_S):
            if "ready" not in viewer.said("receiver"):
                viewer.problems.append(f"RTP receiver on {viewer.flow.src} did not start")
            else:
                viewer.problems.append(
                    f"decoder on {viewer.flow.src} did not start: "
                    f"{viewer.said('decoder').strip()[-300:]}"
                )

    def _receiving(self, viewer: _Viewer) -> bool:
        return "ready" in viewer.said("receiver") and self._decoder_bound(viewer)

    def _decoder_bound(self, viewer: _Viewer) -> bool:
        port = viewer.port - RTP_FIRST_PORT + DECODER_FIRST_PORT
        return port in bound_ports(self.net, self.net.host_ns(viewer.flow.src), udp=True)

    def _fail_viewers_of(self, server: _Server, problem: str) -> None:
        for viewer in self.viewers:  # each server has its own port
            if viewer.params.mode == "http" and viewer.port == server.port:
                viewer.problems.append(problem)

    def send(self) -> None:
        """Players start (http) or the server's ffmpeg starts streaming (rtp), all at once."""
        for viewer in self.viewers:
            if viewer.problems:
                continue
            if viewer.params.mode == "http":
                url = f"http://{self.net.host_ip(viewer.flow.dst)}:{viewer.port}/index.m3u8"
                argv = [
                    *PYTHON,
                    "dplab.workloads.video_player",
                    "--url",
                    url,
                    "--max-buffer",
                    f"{viewer.params.max_buffer_s:g}",
                    "--timeout",
                    f"{viewer.params.timeout_s:g}",
                ]
                viewer.processes["player"] = self._spawn(
                    viewer.flow.src, argv, viewer.output("player")
                )
            else:
                dst = f"rtp://{self.net.host_ip(viewer.flow.src)}:{viewer.port}"
                if viewer.params.tos is not None:  # ffmpeg's rtp protocol sets DSCP only
                    dst += f"?dscp={viewer.params.tos >> 2}"
                argv = [
                    *FFMPEG,
                    "-re",
                    "-i",
                    str(viewer.content.mp4),
                    "-c",
                    "copy",
                    "-an",
                    "-f",
                    "rtp",
                    dst,
                ]
                viewer.sender_started = time.time()  # the receive stamps' clock
                viewer.processes["sender"] = self._spawn(
                    viewer.flow.dst, argv, viewer.output("sender")
                )

    def wait(self) -> None:
        """Players/senders to their end (or timeout), then receivers and decoders."""
        started = time.monotonic()
        for viewer in self.viewers:
            for role in ("player", "sender"):
                if role in viewer.processes:
                    left = viewer.params.timeout_s + 5 - (time.monotonic() - started)
                    self._wait(viewer, role, left)
        for viewer in self.viewers:
            if "receiver" in viewer.processes:
                self._wait(viewer, "receiver", RTP_IDLE_S + 2)
                self._wait(viewer, "decoder", DECODER_GRACE_S, quiet=True)

    def _wait(self, viewer: _Viewer, role: str, timeout: float, quiet: bool = False) -> None:
        try:
            viewer.processes[role].wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            viewer.processes[role].kill()
            viewer.processes[role].wait()
            if not quiet:  # a decoder that never reached frame_at just has no frame
                viewer.problems.append(f"{role} on {viewer.flow.flow_id} timed out")

    def kill(self) -> None:
        processes = [p for v in self.viewers for p in v.processes.values()]
        processes += [s.process for s in self.servers.values()]
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()

    def results(self) -> list[Measured]:
        return [_result(viewer) for viewer in self.viewers]


def _server_ready(server: _Server) -> bool:
    return "ready" in server.out.read_text()


def _result(viewer: _Viewer) -> Measured:
    source = f"flow '{viewer.flow.flow_id}' ({viewer.flow.dst}->{viewer.flow.src})"
    metrics = HTTP_METRICS if viewer.params.mode == "http" else RTP_METRICS
    if viewer.problems and not viewer.processes:
        return missing(metrics, f"{source}: " + "; ".join(viewer.problems))
    measured = _http(viewer) if viewer.params.mode == "http" else _rtp(viewer)
    errors = [f"{source}: {p}" for p in viewer.problems]
    if measured.error:
        errors.append(f"{source}: {measured.error}")
    measured.error = "; ".join(errors) or None
    return measured


def _http(viewer: _Viewer) -> Measured:
    text = viewer.said("player")
    report = next(
        (json.loads(line) for line in reversed(text.splitlines()) if line.startswith("{")), None
    )
    if report is None:
        return missing(HTTP_METRICS, f"player printed no report: {text.strip()[-300:]}")
    playout = vm.Playout()
    for _, duration, _, done, _ in report["segments"]:
        playout.arrived(done, duration)
    summary = http_summary(report, playout)
    position = playout.position_s(viewer.params.frame_at_s)
    summary["frame_lag_s"] = None if position is None else viewer.params.frame_at_s - position
    if position is not None:
        summary["frame_diff_pct"] = _frames(viewer, position)
    intervals = vm.byte_bins(report["chunks"])
    for row in intervals:
        row["buffer_s"] = playout.buffer_s(row["t_end"])
    return Measured(summary, intervals, report["error"])


def http_summary(report: dict, playout: vm.Playout) -> dict[str, float | None]:
    """Summary of one player's report (see video_player) and its replayed playout."""
    summary: dict[str, float | None] = dict.fromkeys(HTTP_METRICS)
    chunks, segments = report["chunks"], report["segments"]
    if not chunks:
        return summary
    received = sum(size for _, size in chunks)
    elapsed = max(t for t, _ in chunks)
    times = [done - requested for _, _, requested, done, _ in segments]
    summary.update(
        bytes=float(received),
        transmission_time_s=elapsed,
        throughput_bps=received * 8 / elapsed if elapsed > 0 else None,
        segments_received=float(len(segments)),
        segment_time_ms=None if not times else mean(times) * 1000,
        jitter_ms=None if len(times) < 2 else mean_abs_consecutive_difference(times) * 1000,
    )
    if playout.started_at is not None:
        summary.update(
            startup_delay_ms=playout.started_at * 1000,
            rebuffers=float(playout.rebuffers),
            rebuffer_time_s=playout.rebuffer_s,
        )
    return summary


def _rtp(viewer: _Viewer) -> Measured:
    packets = _packets(viewer.folder / "packets.txt")
    sender = viewer.processes.get("sender")
    problem = None
    if sender is not None and sender.returncode not in (0, None):
        problem = f"sender ffmpeg failed: {viewer.said('sender').strip()[-300:]}"
    if not packets:
        return missing(RTP_METRICS, problem or "no RTP packet arrived")
    summary, intervals = rtp_summary(packets)
    summary.update(_live_playout(packets, viewer))
    summary["frame_diff_pct"] = _frames(viewer, viewer.params.frame_at_s, decoded=True)
    return Measured(summary, intervals, problem)


def _packets(path: Path) -> list[vm.RtpPacket]:
    if not path.exists():
        return []
    packets = []
    for line in path.read_text().splitlines():
        recv_ns, seq, timestamp, size = (int(v) for v in line.split())
        packets.append(vm.RtpPacket(recv_ns / 1e9, seq, timestamp, size))
    return packets


def rtp_summary(packets: list[vm.RtpPacket]) -> tuple[dict[str, float | None], list[dict]]:
    """Summary and 1 s intervals (from the first arrival) of one received RTP stream."""
    stats = vm.rtp_stats(packets)
    first = packets[0].recv_s
    elapsed = packets[-1].recv_s - first
    summary: dict[str, float | None] = dict.fromkeys(RTP_METRICS)
    summary.update(
        bytes=float(stats.bytes),
        transmission_time_s=elapsed,
        throughput_bps=stats.bytes * 8 / elapsed if elapsed > 0 else None,
        packets_received=float(stats.packets_received),
        loss_pct=stats.loss_pct,
        out_of_order=float(stats.out_of_order),
        jitter_ms=stats.jitter_ms[-1] if stats.jitter_ms else None,
        jitter_eq1_ms=study000_flow_jitter(stats.jitter_ms),
        # a constant offset does not change a variance: the transit up to one is enough
        delay_var_ms2=delay_variance(stats.transit_ms),
    )
    intervals = vm.byte_bins([(p.recv_s - first, p.size) for p in packets])
    jitter_after = [None, *stats.jitter_ms]
    for row in intervals:
        inside = [i for i, p in enumerate(packets) if _within(row, p.recv_s - first)]
        row["packets_received"] = float(len(inside))
        row["jitter_ms"] = jitter_after[inside[-1]] if inside else None
    return summary, intervals


def _live_playout(packets: list[vm.RtpPacket], viewer: _Viewer) -> dict[str, float]:
    """Startup delay (sender started -> first frame shown after the jitter buffer; includes
    ffmpeg's own start, the same on every plane) and stalls of a live player."""
    playout = vm.live_playout(vm.frame_arrivals(packets), viewer.params.jitter_buffer_s)
    if playout is None or viewer.sender_started is None:
        return {}
    return {
        "startup_delay_ms": (playout.started_at - viewer.sender_started) * 1000,
        "rebuffers": float(playout.rebuffers),
        "rebuffer_time_s": playout.rebuffer_s,
    }


def _within(row: dict, t: float) -> bool:
    return row["t_start"] <= t < row["t_end"]


def _frames(viewer: _Viewer, received_at_s: float, decoded: bool = False) -> float | None:
    """Write sent.png (content at frame_at) and received.png, keep them if asked, compare.

    decoded: the client's ffmpeg already wrote received.png (rtp); else (http) it is the
    content's frame at received_at_s."""
    sent, received = viewer.folder / "sent.png", viewer.folder / "received.png"
    try:
        video_content.extract_frame(viewer.content.mp4, viewer.params.frame_at_s, sent)
        if not decoded:
            video_content.extract_frame(viewer.content.mp4, received_at_s, received)
    except video_content.ContentError as exc:
        viewer.problems.append(str(exc))
        return None
    if not received.exists():
        return None
    _keep(viewer, sent, received)
    a, b = video_content.decode_rgb(sent), video_content.decode_rgb(received)
    return vm.frame_diff_pct(a, b) if len(a) == len(b) else None


def _keep(viewer: _Viewer, sent: Path, received: Path) -> None:
    folder = _frames_folder.get()
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sent, folder / f"{viewer.flow.flow_id}-sent.png")
    shutil.copyfile(received, folder / f"{viewer.flow.flow_id}-received.png")
