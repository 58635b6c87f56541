"""Study 004's dynamic meter-based rate limiter (DMB-RL), the control loop's arithmetic:
from two readings of a class's byte counter, the bandwidth it used (the study's equation 2),
the meter rate for the next interval (equation 1, capped by the link's remaining capacity as
the study's algorithm does) and the next sampling interval (equation 3). Pure functions; the
loop that reads counters and writes MeterEntry rates over P4Runtime is not here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """The rate bounds (bit/s), the load thresholds θlow/θhigh (bit/s) and the bounds of the
    sampling interval (seconds)."""

    rate_min_bps: float
    rate_max_bps: float
    theta_low_bps: float
    theta_high_bps: float
    interval_min_s: float
    interval_max_s: float

    def __post_init__(self) -> None:
        pairs = {"rate": (self.rate_min_bps, self.rate_max_bps),
                 "theta": (self.theta_low_bps, self.theta_high_bps),
                 "interval": (self.interval_min_s, self.interval_max_s)}
        for name, (low, high) in pairs.items():
            if not 0 <= low <= high:
                raise ValueError(f"DMB-RL limits: {name} bounds must be 0 <= low <= high, "
                                 f"not {low} .. {high}")
        if self.interval_min_s == 0:
            raise ValueError("DMB-RL limits: the shortest sampling interval must be > 0")


@dataclass(frozen=True)
class Step:
    used_bps: float      # bandwidth the class used over the interval just ended
    rate_bps: float      # meter rate for the next interval
    interval_s: float    # length of the next interval


def used_bandwidth(previous_bytes: int, current_bytes: int, interval_s: float) -> float:
    """Equation 2: (C_curr - C_prev) * 8 / T_s, in bit/s."""
    if interval_s <= 0:
        raise ValueError(f"sampling interval must be > 0 s, not {interval_s}")
    if current_bytes < previous_bytes:
        raise ValueError(f"byte counter went back from {previous_bytes} to {current_bytes} "
                         "(was it reset?)")
    return (current_bytes - previous_bytes) * 8 / interval_s


def next_rate(arrival_bps: float, remaining_bps: float, limits: Limits) -> float:
    """Equation 1, min(max(Λ, Rmin), Rmax), then no more than the remaining capacity (which
    wins over Rmin: the link cannot give what it has not got)."""
    rate = min(max(arrival_bps, limits.rate_min_bps), limits.rate_max_bps)
    return max(0.0, min(rate, remaining_bps))


def next_interval(load_bps: float, interval_s: float, limits: Limits) -> float:
    """Equation 3: halved above θhigh, doubled below θlow, kept otherwise; always within
    the interval bounds."""
    if load_bps > limits.theta_high_bps:
        interval_s /= 2
    elif load_bps < limits.theta_low_bps:
        interval_s *= 2
    return min(max(interval_s, limits.interval_min_s), limits.interval_max_s)


def step(previous_bytes: int, current_bytes: int, interval_s: float, remaining_bps: float,
         limits: Limits) -> Step:
    """One turn of the loop: two counter readings ``interval_s`` apart -> what to set next."""
    used = used_bandwidth(previous_bytes, current_bytes, interval_s)
    return Step(used, next_rate(used, remaining_bps, limits),
                next_interval(used, interval_s, limits))
