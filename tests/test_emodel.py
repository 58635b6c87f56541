"""E-model (G.107, G.711) against values worked out by hand in the comments."""

import pytest

from dplab.measure import emodel


def test_perfect_call_scores_the_default_r_and_mos_4_41():
    # Ta = 0, Ppl = 0: Idd = 0, Ie,eff = 0 -> R = 93.2
    assert emodel.r_factor(0.0, 0.0) == pytest.approx(93.2)
    # 1 + 0.035*93.2 + 93.2*33.2*6.8*7e-6 = 1 + 3.262 + 0.14729 = 4.4093
    assert emodel.mos(93.2) == pytest.approx(4.4093, abs=1e-4)


def test_delay_below_100_ms_costs_nothing():
    assert emodel.delay_impairment(100.0) == 0.0
    assert emodel.r_factor(80.0, 0.0) == pytest.approx(93.2)


def test_delay_impairment_by_hand():
    # Ta = 200: X = log2(2) = 1; 25*(2^(1/6) - 3*(1+(1/3)^6)^(1/6) + 2)
    #         = 25*(1.122462 - 3.000686 + 2) = 3.0444
    assert emodel.delay_impairment(200.0) == pytest.approx(3.0444, abs=1e-3)
    # Ta = 400: X = 2; 25*(65^(1/6) - 3*(1+(2/3)^6)^(1/6) + 2)
    #         = 25*(2.00517 - 3.04237 + 2) = 24.070
    assert emodel.delay_impairment(400.0) == pytest.approx(24.070, abs=1e-2)
    assert emodel.r_factor(400.0, 0.0) == pytest.approx(93.2 - 24.070, abs=1e-2)


def test_loss_impairment_by_hand():
    # 1 % random loss, PLC (Bpl 25.1): 95*1/(1+25.1) = 3.6398 -> R = 89.560
    assert emodel.r_factor(0.0, 1.0) == pytest.approx(89.560, abs=1e-3)
    # 2 % random loss, no PLC (Bpl 4.3): 95*2/(2+4.3) = 30.159 -> R = 63.041
    assert emodel.r_factor(0.0, 2.0, plc=False) == pytest.approx(63.041, abs=1e-3)
    # 5 % bursty loss (BurstR 2), PLC: 95*5/(5/2+25.1) = 17.210 -> R = 75.990
    assert emodel.r_factor(0.0, 5.0, burst_r=2.0) == pytest.approx(75.990, abs=1e-3)


def test_mos_curve_and_its_ends():
    # R = 50: 1 + 1.75 + 50*(-10)*50*7e-6 = 2.575
    assert emodel.mos(50.0) == pytest.approx(2.575)
    assert emodel.mos(-5.0) == 1.0
    assert emodel.mos(105.0) == 4.5


def test_mouth_to_ear_adds_packetisation_and_a_2x_jitter_buffer():
    # 20 ms packet + 60 ms network + 2*5 ms buffer = 90 ms
    assert emodel.mouth_to_ear_ms(60.0, 5.0, 20.0) == pytest.approx(90.0)


def test_burst_ratio_of_a_loss_pattern():
    lost = [False, True, True, False, False, False, True, True, False, False]
    # after a received packet: T F F T F -> p = 2/5; after a lost one: T F T F -> q = 2/4
    assert emodel.burst_ratio(lost) == pytest.approx(1 / 0.9)
    assert emodel.burst_ratio([False] * 10) == 1.0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="packet loss"):
        emodel.r_factor(0.0, 120.0)
    with pytest.raises(ValueError, match="mouth-to-ear"):
        emodel.delay_impairment(-1.0)
