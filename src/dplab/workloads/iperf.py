"""TCP and UDP flows with iperf 2.1.8: one server per flow (its own port), one client.

Params: duration in s (-t, default 10) or bytes (-n); rate_mbit (-b: UDP offered rate,
iperf's default 1 Mbit/s when absent; TCP a cap); window in bytes (-w, set on both ends, or
above what -w can get through the hosts' tcp_rmem/tcp_wmem: workloads.tcp_window);
size = UDP datagram bytes (-l); tos = the IPv4 ToS byte of the client's packets (-S, 0..255,
e.g. 0xb8 = DSCP EF; the server's replies keep the default); timeout_s (default: expected
time + 10 % + 5 s).

Metrics come from the receiver (the server: what arrived), the TCP connect time from the
client's `ct=`. TCP loss and delay come from the sender's kernel (the client's -e columns):
retransmits = segments retransmitted over the transfer; tcp_loss_pct = 100 x retransmits /
segments sent, where segments sent = retransmits + the bytes written / MSS, rounded up (iperf
prints no segment count; every write is 128 KiB, so all but the last segment are full);
srtt_ms = the mean of the smoothed RTT (tcpi_rtt) the sender read at the end of each 1 s
interval (the final reading when the transfer was shorter). UDP runs with --trip-times: the
hosts share one kernel clock, so iperf's latency columns are exact one-way delays (owd_*_ms);
delay_var_ms2 (study 004's Eq. 5, squared: the unit of its tables) is the square of iperf's
standard deviation of those delays (printed to the µs), jitter_eq1_ms study 000's Eq. 1 term
of the flow (see _eq1_jitter).
"""

import math
from dataclasses import dataclass

from dplab.measure.iperf_report import (
    IperfParseError,
    IperfReport,
    IperfRow,
    SenderReport,
    SenderRow,
    connect_time_ms,
    iperf_complaints,
    parse_iperf,
    parse_tcp_sender,
    socket_buffer_bytes,
)
from dplab.measure.stats import mean
from dplab.spec.model import TcpWorkload, UdpWorkload
from dplab.workloads import tcp_window
from dplab.workloads.measured import Measured, positive_number, spec_checked

TCP_METRICS = (
    "throughput_bps", "bytes", "transmission_time_s", "syn_delay_ms", "connect_ms",
    "retransmits", "tcp_loss_pct", "srtt_ms",
    "window_asked_bytes", "window_granted_bytes", "window_clamped", "window_by_sysctl",
    "window_used_bytes", "window_advertised_max_bytes",
)
UDP_METRICS = (
    "throughput_bps",
    "throughput_pps",
    "bytes",
    "transmission_time_s",
    "loss_pct",
    "jitter_ms",
    "out_of_order",
    "packets_sent",
    "packets_received",
    "owd_ms",
    "owd_min_ms",
    "owd_max_ms",
    "jitter_eq1_ms",
    "delay_var_ms2",
)
UNBOUNDED_BYTES_TIMEOUT_S = 120.0  # -n without a rate: we cannot predict the time
REPORT_ARGS = ["-e", "-i", "1", "-f", "b"]  # enhanced, 1 s intervals, exact bytes and bit/s


@dataclass(frozen=True)
class IperfParams:
    udp: bool
    duration_s: float | None
    bytes: int | None
    rate_mbit: float | None
    window: int | None
    size: int | None
    timeout_s: float
    tos: int | None = None
    # The window is above what -w can get (tcp_window.setsockopt_limit): the hosts'
    # tcp_rmem/tcp_wmem set it, and iperf runs without -w.
    window_by_sysctl: bool = False


def validate(kind: str, params: dict, where: str) -> IperfParams:
    """The experiment file's checks and defaults (spec ``TcpWorkload`` / ``UdpWorkload``)
    plus ``timeout_s``."""
    udp = kind == "udp"
    spec = spec_checked(UdpWorkload if udp else TcpWorkload, kind, params, where,
                        frozenset({"timeout_s"}))
    rate = spec.rate_mbit
    expected = spec.duration or (spec.bytes * 8 / (rate * 1e6) if rate else None)
    default_timeout = expected * 1.1 + 5 if expected else UNBOUNDED_BYTES_TIMEOUT_S
    return IperfParams(
        udp=udp,
        duration_s=spec.duration,
        bytes=spec.bytes,
        rate_mbit=rate,
        window=None if udp else spec.window,
        size=spec.size if udp else None,
        timeout_s=positive_number(params, "timeout_s", where, default_timeout),
        tos=spec.tos,
        window_by_sysctl=(not udp and spec.window is not None
                          and spec.window > tcp_window.setsockopt_limit()),
    )


def server_argv(params: IperfParams, port: int) -> list[str]:
    """-P 1: the server exits after its one client, printing its final report."""
    argv = ["iperf", "-s", "-P", "1", "-p", str(port), *REPORT_ARGS]
    if params.udp:
        argv.append("-u")
        if params.size:
            argv += ["-l", str(params.size)]  # read buffer must hold a whole datagram
    argv += _window_args(params)
    return argv


def client_argv(params: IperfParams, dst_ip: str, port: int) -> list[str]:
    argv = ["iperf", "-c", dst_ip, "-p", str(port), *REPORT_ARGS]
    argv += ["-n", str(params.bytes)] if params.bytes else ["-t", f"{params.duration_s:g}"]
    if params.rate_mbit:
        argv += ["-b", str(round(params.rate_mbit * 1e6))]
    argv += _window_args(params)
    if params.tos is not None:
        argv += ["-S", str(params.tos)]
    if params.udp:
        argv += ["-u", "--trip-times"]
        if params.size:
            argv += ["-l", str(params.size)]
    return argv


def _window_args(params: IperfParams) -> list[str]:
    if params.window is None or params.window_by_sysctl:
        return []
    return ["-w", str(params.window)]


def measure(params: IperfParams, client_out: str, server_out: str, source: str,
            window: tcp_window.Seen | None = None) -> Measured:
    """Metrics of one flow; raises IperfParseError naming both ends' complaints. ``window``:
    the window as the run set and sampled it (window_metrics)."""
    try:
        received = parse_iperf(server_out, f"{source} receiver")
    except IperfParseError as exc:
        raise IperfParseError(f"{exc}; sender said{iperf_complaints(client_out)}") from exc
    if params.udp:
        return Measured(_udp_summary(received), [_udp_row(r) for r in received.intervals])
    try:
        sender: SenderReport | None = parse_tcp_sender(client_out, f"{source} sender")
    except IperfParseError:  # what arrived is still measured; the sender's view is missing
        sender = None
    summary = {**_tcp_summary(received, connect_time_ms(client_out)), **_sender_summary(sender),
               **window_metrics(params.window, client_out, server_out,
                                window or tcp_window.Seen())}
    return Measured(summary,
                    [{**_common(r), **_sender_row(sender, r)} for r in received.intervals])


def window_metrics(asked: int | None, client_out: str, server_out: str,
                   seen: tcp_window.Seen) -> dict[str, float | None]:
    """The window asked for, the one the kernel granted, and the one the flow used.

    ``window_granted_bytes``: with -w, half the smaller of the two ends' socket buffers
    iperf prints (getsockopt reports SO_RCVBUF doubled, socket(7)); a window above
    net.core.rmem_max/wmem_max (machine-wide, read-only in a namespace) is granted as that
    cap, and ``window_clamped`` (1.0) says so. Above the cap the hosts' tcp_rmem/tcp_wmem
    set it instead (``window_by_sysctl`` 1.0): ``seen.granted``, half the default receive
    buffer the kernel took. Measured with or without a window asked (tcp_window):
    ``window_used_bytes``, the receiver's largest rcv_ssthresh (the window it offered), and
    ``window_advertised_max_bytes``, the largest window the sender saw advertised (lower
    while the receiving application lags); None when no sample caught the flow. Without a
    window the other four are None (autotuning sizes it)."""
    if asked is None:
        granted = None
    elif seen.granted is not None:
        granted = float(seen.granted)
    else:
        ends = [socket_buffer_bytes(text) for text in (client_out, server_out)]
        found = [b / 2 for b in ends if b is not None]
        granted = min(found) if found else None
    return {"window_asked_bytes": None if asked is None else float(asked),
            "window_granted_bytes": granted,
            "window_clamped": None if granted is None else float(granted < asked),
            "window_by_sysctl": None if asked is None else float(seen.granted is not None),
            "window_used_bytes": _float(seen.offered),
            "window_advertised_max_bytes": _float(seen.advertised)}


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


def _sender_summary(sender: SenderReport | None) -> dict[str, float | None]:
    if sender is None:
        return {"retransmits": None, "tcp_loss_pct": None, "srtt_ms": None}
    final = sender.final
    segments = None if not sender.mss else final.retransmits + math.ceil(final.bytes / sender.mss)
    samples = [row.srtt_ms for row in sender.intervals] or [final.srtt_ms]
    return {
        "retransmits": float(final.retransmits),
        "tcp_loss_pct": 100.0 * final.retransmits / segments if segments else None,
        "srtt_ms": mean(samples),
    }


def _sender_row(sender: SenderReport | None, row: IperfRow) -> dict[str, float | None]:
    """The sender's interval with the receiver row's bounds (they differ near the end)."""
    match: SenderRow | None = None
    if sender is not None:
        match = next((s for s in sender.intervals
                      if (s.t_start, s.t_end) == (row.t_start, row.t_end)), None)
    if match is None:
        return {"retransmits": None, "srtt_ms": None}
    return {"retransmits": float(match.retransmits), "srtt_ms": match.srtt_ms}


def _common(row: IperfRow) -> dict[str, float | None]:
    return {
        "t_start": row.t_start,
        "t_end": row.t_end,
        "throughput_bps": row.bps,
        "bytes": float(row.bytes),
    }


def _tcp_summary(received: IperfReport, connect_ms: float | None) -> dict[str, float | None]:
    """syn_delay_ms is filled in by flows from the packet capture (None until then)."""
    final = received.final
    return {
        "throughput_bps": final.bps,
        "bytes": float(final.bytes),
        "transmission_time_s": final.t_end - final.t_start,
        "syn_delay_ms": None,
        "connect_ms": connect_ms,
    }


def _udp_row(row: IperfRow) -> dict[str, float | None]:
    return {
        **_common(row),
        "jitter_ms": row.jitter_ms,
        "loss_pct": _loss_pct(row),
        "out_of_order": float(row.out_of_order),
        "packets_received": _received(row),
        "throughput_pps": _pps(row),
        "owd_ms": row.latency_avg_ms,
    }


def _udp_summary(received: IperfReport) -> dict[str, float | None]:
    final = received.final
    return {
        "throughput_bps": final.bps,
        "throughput_pps": _pps(final),
        "bytes": float(final.bytes),
        "transmission_time_s": final.t_end - final.t_start,
        "loss_pct": _loss_pct(final),
        "jitter_ms": final.jitter_ms,
        "out_of_order": float(final.out_of_order),
        # the receiver's count from sequence numbers, consistent with its lost count
        "packets_sent": None if final.total is None else float(final.total),
        "packets_received": _received(final),
        "owd_ms": final.latency_avg_ms,
        "owd_min_ms": final.latency_min_ms,
        "owd_max_ms": final.latency_max_ms,
        "jitter_eq1_ms": _eq1_jitter(received.intervals),
        "delay_var_ms2": None if final.latency_sd_ms is None else final.latency_sd_ms ** 2,
    }


def _eq1_jitter(rows: list[IperfRow]) -> float | None:
    """Study 000's Eq. 1 term of one flow, the mean of its per-packet RFC 3550 jitter, from
    the running value iperf prints at the end of each interval, weighted by the datagrams
    that arrived in it (iperf prints no per-packet values)."""
    weighted = [(row.jitter_ms, _received(row)) for row in rows]
    weighted = [(j, n) for j, n in weighted if j is not None and n]
    total = sum(n for _, n in weighted)
    return sum(j * n for j, n in weighted) / total if total else None


def _loss_pct(row: IperfRow) -> float | None:
    if row.lost is None or not row.total:
        return None
    return 100.0 * row.lost / row.total


def _pps(row: IperfRow) -> float | None:
    """Datagrams that arrived per second of the row's interval."""
    received = _received(row)
    span = row.t_end - row.t_start
    return None if received is None or span <= 0 else received / span


def _received(row: IperfRow) -> float | None:
    if row.lost is None or row.total is None:
        return None
    return float(row.total - row.lost)
