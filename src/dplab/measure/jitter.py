"""Jitter definitions used by the studies, as pure functions over timestamps in seconds.

Every function returns None when the input holds too few samples to define the value,
so a missing measurement never turns into a zero.
"""

from collections.abc import Sequence
from math import sqrt


def _check_pairs(send_ts: Sequence[float], recv_ts: Sequence[float]) -> None:
    if len(send_ts) != len(recv_ts):
        raise ValueError(
            f"jitter: send_ts has {len(send_ts)} timestamps but recv_ts has {len(recv_ts)}"
        )


def transit_times(send_ts: Sequence[float], recv_ts: Sequence[float]) -> list[float]:
    """One-way transit time of each packet (receive minus send)."""
    _check_pairs(send_ts, recv_ts)
    return [r - s for s, r in zip(send_ts, recv_ts, strict=True)]


def rfc3550_jitter_series(send_ts: Sequence[float], recv_ts: Sequence[float]) -> list[float]:
    """RFC 3550 §6.4.1 interarrival jitter after each packet from the second on.

    J(i) = J(i-1) + (|D(i-1, i)| - J(i-1)) / 16, with D the difference of consecutive
    transit times. Packets must be given in arrival order. Unit: that of the timestamps.
    """
    transits = transit_times(send_ts, recv_ts)
    series: list[float] = []
    jitter = 0.0
    for previous, current in zip(transits, transits[1:], strict=False):
        jitter += (abs(current - previous) - jitter) / 16.0
        series.append(jitter)
    return series


def rfc3550_jitter(send_ts: Sequence[float], recv_ts: Sequence[float]) -> float | None:
    """RFC 3550 interarrival jitter at the last packet; None with fewer than two packets."""
    series = rfc3550_jitter_series(send_ts, recv_ts)
    return series[-1] if series else None


def study000_jitter(per_packet_jitter_by_flow: Sequence[Sequence[float]]) -> float | None:
    """Study 000, Eq. 1: (1/M) * sum over flows f of (sum_i J_fi / N_f).

    The mean over the M flows of each flow's mean per-packet jitter. Flows without any
    jitter sample are left out of M (their mean is undefined); None if no flow remains.
    """
    flow_means = [sum(j) / len(j) for j in per_packet_jitter_by_flow if len(j) > 0]
    if not flow_means:
        return None
    return sum(flow_means) / len(flow_means)


def study000_flow_jitter(per_packet_jitter: Sequence[float]) -> float | None:
    """One flow's term of Eq. 1, sum_i J_fi / N_f: its mean per-packet jitter (the stored
    per-flow metric; the tables' mean over a class's flows completes the 1/M sum)."""
    return study000_jitter([per_packet_jitter])


def delay_variance(delays: Sequence[float]) -> float | None:
    """Population variance of delays, (1/N) * sum (D_i - mean(D))^2.

    Study 004 reports its jitter in ms² ("2038.39 ms²"), i.e. this variance of the
    per-packet delays D_i; give delays in ms to get ms².
    """
    if not delays:
        return None
    mean = sum(delays) / len(delays)
    return sum((d - mean) ** 2 for d in delays) / len(delays)


def study004_jitter(delays: Sequence[float]) -> float | None:
    """Study 004, Eq. 5 as printed: J = sqrt((1/N) * sum (D_i - mean(D))^2).

    The population standard deviation of the delays (same unit as the delays). The study's
    tables quote ms², the square of this; see delay_variance.
    """
    variance = delay_variance(delays)
    return None if variance is None else sqrt(variance)


def mean_abs_consecutive_difference(values: Sequence[float]) -> float | None:
    """Mean of |v(i) - v(i-1)| over consecutive values; None with fewer than two values.

    Used as ping's jitter: RFC 3550 jitter needs one-way transit times, ping only sees
    round trips, so we report the mean absolute change between consecutive RTTs.
    """
    if len(values) < 2:
        return None
    diffs = [abs(b - a) for a, b in zip(values, values[1:], strict=False)]
    return sum(diffs) / len(diffs)
