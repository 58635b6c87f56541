"""Study 004's DMB-RL arithmetic (dplab.qos.dmbrl) on values computed by hand."""

from __future__ import annotations

import pytest

from dplab.qos.dmbrl import Limits, Step, next_interval, next_rate, step, used_bandwidth

# Rates 1..8 Mbit/s, load thresholds 2 and 6 Mbit/s, intervals 0.25..4 s.
LIMITS = Limits(rate_min_bps=1e6, rate_max_bps=8e6, theta_low_bps=2e6, theta_high_bps=6e6,
                interval_min_s=0.25, interval_max_s=4.0)
TEN_MBIT = 10e6


def test_used_bandwidth_is_bytes_times_8_over_the_interval():
    assert used_bandwidth(1_000, 251_000, 0.5) == 4e6      # 250 000 B in 0.5 s
    assert used_bandwidth(7, 7, 2.0) == 0.0


@pytest.mark.parametrize("before, after, interval", [(10, 9, 1.0), (0, 1, 0.0), (0, 1, -1)])
def test_used_bandwidth_refuses_a_reset_counter_or_no_interval(before, after, interval):
    with pytest.raises(ValueError):
        used_bandwidth(before, after, interval)


@pytest.mark.parametrize("arrival, remaining, rate", [
    (3e6, TEN_MBIT, 3e6),        # within bounds: the arrival rate itself
    (0.2e6, TEN_MBIT, 1e6),      # raised to Rmin
    (9.5e6, TEN_MBIT, 8e6),      # cut to Rmax
    (5e6, 4e6, 4e6),             # capped by the remaining capacity
    (0.2e6, 0.5e6, 0.5e6),       # the cap wins over Rmin
    (3e6, -1e6, 0.0),            # nothing remaining: no rate
])
def test_next_rate(arrival, remaining, rate):
    assert next_rate(arrival, remaining, LIMITS) == rate


@pytest.mark.parametrize("load, interval, following", [
    (7e6, 1.0, 0.5),      # above θhigh: halved
    (7e6, 0.25, 0.25),    # ... but not below the shortest
    (1e6, 1.0, 2.0),      # below θlow: doubled
    (1e6, 4.0, 4.0),      # ... but not above the longest
    (6e6, 1.0, 1.0),      # at a threshold: kept
    (2e6, 1.0, 1.0),
    (4e6, 1.0, 1.0),      # between: kept
])
def test_next_interval(load, interval, following):
    assert next_interval(load, interval, LIMITS) == following


def test_step_from_two_readings():
    # 875 000 B in 1 s = 7 Mbit/s: rate 7 Mbit/s, load above θhigh so the interval halves.
    assert step(125_000, 1_000_000, 1.0, TEN_MBIT, LIMITS) == Step(7e6, 7e6, 0.5)
    # 50 000 B in 2 s = 0.2 Mbit/s: rate raised to Rmin, interval doubled.
    assert step(0, 50_000, 2.0, TEN_MBIT, LIMITS) == Step(0.2e6, 1e6, 4.0)


@pytest.mark.parametrize("field, value", [("rate_min_bps", 9e6), ("theta_low_bps", 7e6),
                                          ("interval_min_s", 0.0), ("interval_min_s", 5.0)])
def test_limits_refuse_inverted_or_empty_bounds(field, value):
    bounds = {**LIMITS.__dict__, field: value}
    with pytest.raises(ValueError, match="DMB-RL limits"):
        Limits(**bounds)
