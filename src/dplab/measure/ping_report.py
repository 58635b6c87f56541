"""Parser for iputils ping output run with `-D -O -n` (epoch timestamps, report misses)."""

import re
from dataclasses import dataclass

_REPLY = re.compile(
    r"^\[(?P<ts>\d+\.\d+)\]\s+\d+ bytes from \S+ icmp_seq=(?P<seq>\d+) "
    r"ttl=\d+ time=(?P<rtt>\d+(?:\.\d+)?) ms(?P<dup> \(DUP!\))?"
)
_TOTALS = re.compile(r"^(?P<sent>\d+) packets transmitted, (?P<received>\d+) received")


class PingParseError(ValueError):
    """The output does not hold ping's statistics; the message says why."""


@dataclass(frozen=True)
class PingReply:
    seq: int
    recv_ts: float  # epoch seconds when the reply arrived (ping -D)
    rtt_ms: float

    @property
    def send_ts(self) -> float:
        return self.recv_ts - self.rtt_ms / 1000.0


@dataclass(frozen=True)
class PingReport:
    replies: list[PingReply]  # first reply per sequence number, in arrival order
    packets_sent: int
    packets_received: int


def parse_ping(text: str, source: str = "ping") -> PingReport:
    """Parse one ping run; `source` names it in errors. Duplicate replies are ignored."""
    totals = next((m for ln in text.splitlines() if (m := _TOTALS.match(ln))), None)
    if totals is None:
        raise PingParseError(f"{source}: no 'packets transmitted' line{_tail(text)}")
    replies: list[PingReply] = []
    seen: set[int] = set()
    for line in text.splitlines():
        match = _REPLY.match(line)
        if match is None or match["dup"] or int(match["seq"]) in seen:
            continue
        seen.add(int(match["seq"]))
        replies.append(PingReply(int(match["seq"]), float(match["ts"]), float(match["rtt"])))
    return PingReport(replies, int(totals["sent"]), int(totals["received"]))


def _tail(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines()[-3:]]
    return ": " + "; ".join(lines) if lines else " (output empty)"
