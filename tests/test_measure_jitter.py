import math

import numpy as np
import pytest

from dplab.measure.jitter import (
    delay_variance,
    mean_abs_consecutive_difference,
    rfc3550_jitter,
    rfc3550_jitter_series,
    study000_jitter,
    study004_jitter,
    transit_times,
)
from dplab.measure.stats import mean, percentile

SEND = [0.0, 1.0, 2.0, 3.0]
RECV = [0.5, 1.7, 2.5, 3.9]  # transit 0.5, 0.7, 0.5, 0.9 -> |D| = 0.2, 0.2, 0.4


def test_rfc3550_jitter_by_hand():
    # J1 = 0.2/16; J2 = J1 + (0.2 - J1)/16; J3 = J2 + (0.4 - J2)/16
    assert transit_times(SEND, RECV) == pytest.approx([0.5, 0.7, 0.5, 0.9])
    assert rfc3550_jitter_series(SEND, RECV) == pytest.approx(
        [0.0125, 0.02421875, 0.047705078125]
    )
    assert rfc3550_jitter(SEND, RECV) == pytest.approx(0.047705078125)


def test_rfc3550_constant_delay_has_no_jitter_and_one_packet_has_none():
    assert rfc3550_jitter([0, 1, 2], [0.3, 1.3, 2.3]) == pytest.approx(0.0)
    assert rfc3550_jitter([0.0], [0.1]) is None


def test_rfc3550_rejects_mismatched_lists():
    with pytest.raises(ValueError, match="send_ts has 2 .* recv_ts has 1"):
        rfc3550_jitter([0, 1], [0.5])


def test_study000_eq1_is_mean_over_flows_of_flow_means():
    # flow means: (1+2+3)/3 = 2 and 10/1 = 10 -> (2 + 10) / 2 = 6, not the pooled 4
    assert study000_jitter([[1.0, 2.0, 3.0], [10.0]]) == pytest.approx(6.0)
    assert study000_jitter([[1.0, 3.0], [], [2.0, 2.0, 2.0]]) == pytest.approx(2.0)
    assert study000_jitter([[], []]) is None


def test_study004_eq5_and_its_square():
    delays = [1.0, 2.0, 3.0, 4.0]  # mean 2.5; squares 2.25 + .25 + .25 + 2.25 = 5; / 4
    assert delay_variance(delays) == pytest.approx(1.25)
    assert study004_jitter(delays) == pytest.approx(math.sqrt(1.25))
    assert delay_variance([]) is None and study004_jitter([]) is None


def test_ping_jitter_is_mean_absolute_rtt_change():
    assert mean_abs_consecutive_difference([1.0, 3.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert mean_abs_consecutive_difference([5.0]) is None


@pytest.mark.parametrize("pct", [0, 25, 50, 90, 99, 100])
def test_percentile_matches_numpy_linear(pct):
    values = [7.0, 1.0, 3.0, 9.0, 4.0, 4.5]
    assert percentile(values, pct) == pytest.approx(float(np.percentile(values, pct)))


def test_percentile_by_hand_and_edges():
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile([1, 2, 3, 4], 99) == pytest.approx(3.97)
    assert percentile([], 50) is None
    assert mean([]) is None
    with pytest.raises(ValueError, match="0..100"):
        percentile([1.0], 101)
