"""Video metrics as pure functions: a player's playout buffer, RTP stream statistics, frames.

Times are seconds on one clock (a player's: seconds since it asked for the playlist; an RTP
receiver's: kernel receive stamps). Nothing measured gives None, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dplab.measure.jitter import rfc3550_jitter_series

RTP_CLOCK_HZ = 90_000  # H.264 over RTP (RFC 6184) always uses a 90 kHz clock
SEQ_MOD = 1 << 16
TS_MOD = 1 << 32


@dataclass
class Playout:
    """A player's playout buffer, in wall-clock seconds.

    Playback starts when the first segment has fully arrived (the startup delay). Each
    further segment adds its duration to the buffered content; when a segment arrives
    after the buffered content ran out, playback had stalled from that moment until the
    arrival (one rebuffer) and resumes with that segment, as it started.
    """

    started_at: float | None = None
    play_end: float = 0.0  # wall time at which the buffered content runs out
    rebuffers: int = 0
    rebuffer_s: float = 0.0
    stalls: list[tuple[float, float]] = field(default_factory=list)  # (from, to) wall times
    arrivals: list[tuple[float, float]] = field(default_factory=list)  # (wall time, duration)

    def arrived(self, t: float, duration_s: float) -> None:
        """A segment of duration_s content seconds finished downloading at wall time t."""
        self.arrivals.append((t, duration_s))
        if self.started_at is None:
            self.started_at, self.play_end = t, t + duration_s
        elif t > self.play_end:
            self.stalls.append((self.play_end, t))
            self.rebuffers += 1
            self.rebuffer_s += t - self.play_end
            self.play_end = t + duration_s
        else:
            self.play_end += duration_s

    def buffer_s(self, t: float) -> float:
        """Content seconds buffered ahead of the playhead at wall time t (0 before start).

        Valid for any past t too: what had arrived by t minus what had been played by t.
        """
        position = self.position_s(t)
        if position is None:
            return 0.0
        return sum(d for at, d in self.arrivals if at <= t) - position

    def position_s(self, t: float) -> float | None:
        """Content time on screen at wall time t: played time minus stalls; None before start."""
        if self.started_at is None or t < self.started_at:
            return None
        stalled = sum(min(end, t) - start for start, end in self.stalls if start < t)
        return min(t, self.play_end) - self.started_at - stalled


def byte_bins(chunks: Sequence[tuple[float, int]], bin_s: float = 1.0) -> list[dict]:
    """1 s rows (t_start, t_end, bytes, throughput_bps) from (time, bytes) arrivals.

    Every bin from 0 up to the last arrival's has a row, so an idle second shows as 0 bytes
    (a measured zero: the receiver was listening and nothing came).
    """
    if not chunks:
        return []
    last = max(t for t, _ in chunks)
    counts = [0] * (math.floor(last / bin_s) + 1)
    for t, size in chunks:
        counts[math.floor(max(t, 0.0) / bin_s)] += size
    return [
        {
            "t_start": i * bin_s,
            "t_end": (i + 1) * bin_s,
            "bytes": float(n),
            "throughput_bps": n * 8 / bin_s,
        }
        for i, n in enumerate(counts)
    ]


@dataclass(frozen=True)
class RtpPacket:
    recv_s: float  # receive time, s
    seq: int  # RTP sequence number (16 bit)
    timestamp: int  # RTP timestamp (32 bit, 90 kHz)
    size: int  # UDP payload bytes (RTP header included)


def unwrap(values: Sequence[int], modulus: int) -> list[int]:
    """Extend wrapping counters (RTP seq, timestamp): each value lands closest to the previous."""
    out: list[int] = []
    for value in values:
        if not out:
            out.append(value)
            continue
        step = (value - out[-1]) % modulus
        out.append(out[-1] + (step if step < modulus // 2 else step - modulus))
    return out


@dataclass(frozen=True)
class RtpStats:
    packets_received: int
    bytes: int
    loss_pct: float | None
    out_of_order: int
    jitter_ms: list[float]  # RFC 3550 running value after each packet from the second on
    # arrival minus media time per packet, ms: the one-way delay up to a constant offset
    transit_ms: list[float]


def rtp_stats(packets: Sequence[RtpPacket]) -> RtpStats:
    """Loss from sequence numbers (RFC 3550 A.3: expected = highest - first + 1, so packets
    lost after the last arrival are not seen), RFC 3550 jitter from the 90 kHz timestamps
    against arrival times, reordering (arrived after a higher sequence number)."""
    seqs = unwrap([p.seq for p in packets], SEQ_MOD)
    distinct = set(seqs)
    expected = max(seqs) - min(seqs) + 1 if seqs else 0
    highest, late = -math.inf, 0
    for seq in seqs:
        late += seq < highest
        highest = max(highest, seq)
    media = [t / RTP_CLOCK_HZ for t in unwrap([p.timestamp for p in packets], TS_MOD)]
    jitter = rfc3550_jitter_series(media, [p.recv_s for p in packets])
    return RtpStats(
        packets_received=len(distinct),
        bytes=sum(p.size for p in packets),
        loss_pct=100.0 * (expected - len(distinct)) / expected if expected else None,
        out_of_order=late,
        jitter_ms=[j * 1000 for j in jitter],
        transit_ms=[(p.recv_s - m) * 1000 for p, m in zip(packets, media, strict=True)],
    )


def frame_arrivals(packets: Sequence[RtpPacket]) -> list[tuple[float, float]]:
    """Per video frame (packets sharing an RTP timestamp): (media time in s after the
    earliest frame, arrival of its last packet), in media-time order."""
    stamps = unwrap([p.timestamp for p in packets], TS_MOD)
    last: dict[int, float] = {}
    for stamp, packet in zip(stamps, packets, strict=True):
        last[stamp] = max(last.get(stamp, -math.inf), packet.recv_s)
    origin = min(last, default=0)
    return [((stamp - origin) / RTP_CLOCK_HZ, last[stamp]) for stamp in sorted(last)]


@dataclass(frozen=True)
class LivePlayout:
    started_at: float  # wall time the first frame was shown
    rebuffers: int
    rebuffer_s: float


def live_playout(frames: Sequence[tuple[float, float]], buffer_s: float) -> LivePlayout | None:
    """A live player with a jitter buffer of buffer_s: it shows the first frame buffer_s
    after that frame arrived and every later frame at its media time on that clock. A frame
    that has not arrived by its time freezes the picture until it does (one rebuffer); the
    clock then runs that much later. frames: frame_arrivals(...)."""
    if not frames:
        return None
    started = frames[0][1] + buffer_s
    late_by, rebuffers, stalled = 0.0, 0, 0.0
    for media_s, arrived in frames:
        due = started + media_s + late_by
        if arrived > due:
            rebuffers += 1
            stalled += arrived - due
            late_by += arrived - due
    return LivePlayout(started, rebuffers, stalled)


def frame_diff_pct(a: bytes, b: bytes) -> float:
    """Mean absolute difference of two same-sized 8-bit images, in % of full scale (255).

    0 = identical pictures; a frame damaged by loss or showing another moment scores higher.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"frame_diff_pct: images differ in size ({len(a)} vs {len(b)} bytes)")
    diff = np.abs(np.frombuffer(a, np.uint8).astype(np.int16) - np.frombuffer(b, np.uint8))
    return 100.0 * float(diff.mean()) / 255
