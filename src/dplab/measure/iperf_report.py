"""Parser for iperf 2.1.8 human-readable enhanced output (`-e -f b -i <s>`).

With `-f b` iperf prints exact byte and bit/s counts; its CSV style (`-y C`) drops the
connect time (`ct=`), the one-way latency and rounds interval bounds to 0.1 s, so we read
the text reports. One report per iperf process carrying one flow (one stream ID).
"""

import re
from dataclasses import dataclass, replace

_ROW = re.compile(
    r"^\[\s*(?P<id>\d+)\]\s+(?P<start>\d+\.\d+)-\s*(?P<end>\d+\.\d+)\s+sec\s+"
    r"(?P<bytes>\d+)\s+Bytes\s+(?P<bps>\d+(?:\.\d+)?)\s+bits/sec(?P<rest>.*)$"
)
_UDP_COLUMNS = re.compile(r"^\s+(?P<jitter>\d+\.\d+)\s+ms\s+(?P<lost>-?\d+)/\s*(?P<total>\d+)\s")
_LATENCY = re.compile(
    r"\)\s+(?P<avg>-?\d+\.\d+)/(?P<min>-?\d+\.\d+)/(?P<max>-?\d+\.\d+)/(?P<sd>-?\d+\.\d+)\s+ms"
)
_OUT_OF_ORDER = re.compile(
    r"^\[\s*\d+\]\s+(?P<start>\d+\.\d+)-\s*(?P<end>\d+\.\d+)\s+sec\s+"
    r"(?P<count>\d+)\s+datagrams received out-of-order"
)
_WINDOW = re.compile(r"TCP window size:\s*(?P<n>[\d.]+)\s*(?P<unit>[KMG]?)Byte")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
# Client (sender) TCP columns with -e: Write/Err, Rtry, Cwnd/RTT(var) in µs, NetPwr. RTT is
# the kernel's smoothed RTT (tcp_info tcpi_rtt) when the row was printed; Rtry counts the
# segments retransmitted in the row's span (tcpi_total_retrans differences).
_SENDER_TCP = re.compile(
    r"^\s+\d+/\d+\s+(?P<retry>\d+)\s+\S+/(?P<rtt>\d+)\((?P<var>\d+)\)\s+us"
)
_MSS = re.compile(r"icwnd/mss/irtt=\d+/(?P<mss>\d+)/")
_CONNECT_TIME = re.compile(r"\(ct=(?P<ms>\d+(?:\.\d+)?) ms\)")
_ERROR_HINTS = ("failed", "error", "refused", "unreachable", "no route", "warning")


class IperfParseError(ValueError):
    """The output does not hold the report we need; the message says what is missing."""


@dataclass(frozen=True)
class IperfRow:
    """One report line: an interval, or the final summary over the whole transfer."""

    t_start: float
    t_end: float
    bytes: int
    bps: float
    jitter_ms: float | None = None
    lost: int | None = None
    total: int | None = None
    latency_avg_ms: float | None = None
    latency_min_ms: float | None = None
    latency_max_ms: float | None = None
    latency_sd_ms: float | None = None  # iperf's standard deviation of the one-way delays
    out_of_order: int = 0


@dataclass(frozen=True)
class IperfReport:
    """What one iperf receiver (server) reported about its single flow."""

    intervals: list[IperfRow]
    final: IperfRow


def parse_iperf(text: str, source: str = "iperf") -> IperfReport:
    """Parse one iperf process's output; `source` names it in errors (e.g. "server h2").

    The final summary is the last data row and starts at 0; a process that ends without
    one (failed connect, killed mid-transfer) raises IperfParseError with its complaints.
    """
    rows = _data_rows(text.splitlines())
    if not rows or rows[-1].t_start != 0.0:
        raise IperfParseError(f"{source}: no final summary in iperf output{iperf_complaints(text)}")
    return IperfReport(
        intervals=rows[:-1],
        final=rows[-1],
    )


def _data_rows(lines: list[str]) -> list[IperfRow]:
    rows: list[IperfRow] = []
    reordered: dict[tuple[float, float], int] = {}
    for line in lines:
        if match := _OUT_OF_ORDER.match(line):
            reordered[(float(match["start"]), float(match["end"]))] = int(match["count"])
        elif match := _ROW.match(line):
            rows.append(_row(match))
    return [_with_out_of_order(row, reordered) for row in rows]


def _row(match: re.Match[str]) -> IperfRow:
    rest = match["rest"]
    udp = _UDP_COLUMNS.match(rest)
    latency = _LATENCY.search(rest) if udp else None
    return IperfRow(
        t_start=float(match["start"]),
        t_end=float(match["end"]),
        bytes=int(match["bytes"]),
        bps=float(match["bps"]),
        jitter_ms=float(udp["jitter"]) if udp else None,
        lost=int(udp["lost"]) if udp else None,
        total=int(udp["total"]) if udp else None,
        latency_avg_ms=float(latency["avg"]) if latency else None,
        latency_min_ms=float(latency["min"]) if latency else None,
        latency_max_ms=float(latency["max"]) if latency else None,
        latency_sd_ms=float(latency["sd"]) if latency else None,
    )


def _with_out_of_order(row: IperfRow, reordered: dict[tuple[float, float], int]) -> IperfRow:
    # iperf prints an out-of-order line only when the count is above zero.
    count = reordered.get((row.t_start, row.t_end), 0)
    if count == 0:
        return row
    return replace(row, out_of_order=count)


@dataclass(frozen=True)
class SenderRow:
    """One TCP client report line: what the sender's kernel said about the connection."""

    t_start: float
    t_end: float
    bytes: int  # written by the application in the span
    retransmits: int
    srtt_ms: float


@dataclass(frozen=True)
class SenderReport:
    intervals: list[SenderRow]
    final: SenderRow
    mss: int | None  # bytes, from the connect line's icwnd/mss/irtt


def parse_tcp_sender(text: str, source: str = "iperf client") -> SenderReport:
    """The TCP client's -e report (retransmissions, smoothed RTT); raises IperfParseError
    when it has no final row with those columns."""
    rows = []
    for line in text.splitlines():
        row = _ROW.match(line)
        columns = _SENDER_TCP.match(row["rest"]) if row else None
        if row and columns:
            rows.append(SenderRow(float(row["start"]), float(row["end"]), int(row["bytes"]),
                                  int(columns["retry"]), int(columns["rtt"]) / 1000.0))
    if not rows or rows[-1].t_start != 0.0:
        raise IperfParseError(f"{source}: no final TCP sender summary (Rtry, Cwnd/RTT) "
                              f"in iperf output{iperf_complaints(text)}")
    mss = _MSS.search(text)
    return SenderReport(rows[:-1], rows[-1], int(mss["mss"]) if mss else None)


def connect_time_ms(text: str) -> float | None:
    """The TCP connect time iperf -e prints as `(ct=0.52 ms)`; None if absent."""
    match = _CONNECT_TIME.search(text)
    return float(match["ms"]) if match else None


def socket_buffer_bytes(text: str) -> float | None:
    """The socket buffer iperf reports as ``TCP window size: N Byte``: getsockopt's
    SO_RCVBUF, which Linux reports doubled (socket(7)); None if absent."""
    match = _WINDOW.search(text)
    return float(match["n"]) * _UNITS[match["unit"]] if match else None


def iperf_complaints(text: str) -> str:
    """iperf's own error lines as ': a; b', to make a failure message say why."""
    if not text.strip():
        return " (output empty)"
    lines = [ln.strip() for ln in text.splitlines() if any(h in ln.lower() for h in _ERROR_HINTS)]
    return ": " + "; ".join(lines) if lines else " (no error printed)"
