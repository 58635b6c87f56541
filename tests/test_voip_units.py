"""VoIP measurement from per-packet records, against values worked out by hand."""

import pytest

from dplab.spec.model import VoipWorkload
from dplab.workloads import rtp_tool, voip

MS = 1_000_000  # ns


def report(sent: int, errors: int = 0) -> dict:
    return {"packets_sent": sent, "send_errors": errors, "first_error": "No route to host"}


def record(index: int, owd_ms: float) -> tuple[int, int, int]:
    send = index * 20 * MS
    return index, send, send + round(owd_ms * MS)


def test_validate_defaults_and_packet_count():
    params = voip.validate({"duration": 3}, "flow 'v'")
    assert (params.codec, params.packet_ms, params.payload) == ("g711", 20.0, 160)
    assert params.count == 150


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"codec": "opus"}, "codec must be one of"),
        ({"colour": 1}, r"unknown parameter\(s\) \['colour'\]"),
        ({"payload": 8}, "payload must be 12.."),
        ({"duration": -1}, "'duration' must be a number > 0"),
        ({"phase_ms": 20}, r"phase_ms must be a number in \[0, packet_ms=20\)"),
        ({"phase_ms": "late"}, "phase_ms must be a number"),
    ],
)
def test_bad_params_are_named(params, message):
    with pytest.raises(ValueError, match=f"flow 'v'.*{message}"):
        voip.validate(params, "flow 'v'")


def test_summary_of_a_stream_with_loss_reordering_and_a_duplicate():
    params = voip.validate({"duration": 0.2}, "flow 'v'")
    # 10 sent; 6 lost; 2 delayed by 25 ms so 3 overtakes it; 4 arrives twice.
    owd = {0: 1, 1: 1, 2: 25, 3: 1, 4: 1, 5: 1, 7: 1, 8: 1, 9: 1}
    order = [0, 1, 3, 2, 4, 5, 7, 8, 9, 4]
    records = [record(i, owd[i]) for i in order]
    m = voip.measure(params, report(10), records, "flow 'v'")
    s = m.summary
    assert m.error is None
    assert (s["packets_sent"], s["packets_received"]) == (10, 9)
    assert s["loss_pct"] == pytest.approx(10.0)
    assert s["out_of_order"] == 1  # packet 2, after 3
    # OWD: eight at 1 ms, one at 25 ms -> mean 33/9, median 1, max 25
    assert s["owd_ms"] == pytest.approx(33 / 9)
    assert (s["owd_p50_ms"], s["owd_max_ms"]) == (pytest.approx(1.0), pytest.approx(25.0))
    # transits in arrival order 1,1,1,25,1,1,1,1,1: |D| = 0,0,24,24,0,0,0,0
    # J = 0, 0, 1.5, 1.5 + 22.5/16 = 2.90625, then four times *15/16 -> 2.245008
    assert s["jitter_ms"] == pytest.approx(2.90625 * (15 / 16) ** 4)
    # Ta = 20 + 3.667 + 2*2.245 = 28.2 ms -> Idd 0. Loss pattern: packet 6 only:
    # p = 1/8 (8 transitions after a received packet, 1 to lost), q = 1 -> BurstR = 1/1.125
    # Ie,eff = 95*10 / (10*1.125 + 25.1) = 950/36.35 = 26.1348 -> R = 67.0652
    assert s["r_factor"] == pytest.approx(67.0652, abs=1e-3)
    # MOS = 1 + 0.035*67.0652 + 67.0652*7.0652*32.9348*7e-6 = 1 + 2.34728 + 0.10924 = 3.4565
    assert s["mos"] == pytest.approx(3.4565, abs=1e-3)


def test_intervals_are_1_s_bins_by_send_schedule():
    params = voip.validate({"duration": 2}, "flow 'v'")
    lost = {10, 11, 60}  # two in the first second, one in the second
    records = [record(i, 2.0) for i in range(100) if i not in lost]
    m = voip.measure(params, report(100), records, "flow 'v'")
    first, second = m.intervals
    assert (first["t_start"], first["t_end"], second["t_start"]) == (0.0, 1.0, 1.0)
    assert (first["packets_sent"], first["packets_received"]) == (50, 48)
    assert first["loss_pct"] == pytest.approx(4.0)
    assert second["loss_pct"] == pytest.approx(2.0)
    assert first["owd_ms"] == pytest.approx(2.0)
    assert first["jitter_ms"] == pytest.approx(0.0)  # constant delay: no jitter


def test_nothing_arrived_keeps_the_counts_and_leaves_the_rest_missing():
    params = voip.validate({"duration": 1}, "flow 'v'")
    m = voip.measure(params, report(50), [], "flow 'v'")
    assert "no RTP packet arrived" in m.error
    s = m.summary
    assert (s["packets_sent"], s["packets_received"], s["loss_pct"]) == (50, 0, 100.0)
    assert all(s[k] is None for k in ("owd_ms", "jitter_ms", "r_factor", "mos", "out_of_order"))
    assert m.intervals == []


def test_send_errors_make_the_flow_fail_but_keep_what_arrived():
    params = voip.validate({"duration": 0.1}, "flow 'v'")
    m = voip.measure(params, report(3, errors=2), [record(i, 1.0) for i in range(3)], "flow 'v'")
    assert "could not send 2 packet(s) (No route to host)" in m.error
    assert m.summary["packets_received"] == 3


def test_the_spec_workload_gives_params_the_voip_flow_accepts():
    workload = VoipWorkload(kind="voip", duration=3)
    assert workload.pairs == "voip"
    params = workload.model_dump(exclude={"kind", "pairs"}, exclude_none=True)  # as the runner
    assert voip.validate(params, "flow 'v'").count == 150


def test_a_phase_puts_the_first_send_on_the_clock_s_period_grid():
    period = 5 * MS
    # now = 12.3 ms: with phase 2.5 ms the next grid point is 12.5 ms, with phase 0 it is 15
    assert rtp_tool.first_send_ns(12_300_000, period, 2_500_000) == 12_500_000
    assert rtp_tool.first_send_ns(12_300_000, period, 0) == 15_000_000
    assert rtp_tool.first_send_ns(12_300_000, period, None) == 12_300_000  # no phase: now
    # two streams half a period apart never send within a quarter period of each other
    a = rtp_tool.first_send_ns(7_100_000, period, 0)
    b = rtp_tool.first_send_ns(7_900_000, period, 2_500_000)
    assert (b - a) % period == 2_500_000


def test_the_spec_workload_takes_a_phase_within_the_period():
    workload = VoipWorkload(kind="voip", duration=1, packet_ms=5, phase_ms=2.5)
    params = workload.model_dump(exclude={"kind", "pairs"}, exclude_none=True)
    assert voip.validate(params, "flow 'v'").phase_ms == 2.5
    with pytest.raises(ValueError, match="phase_ms .* must be less than packet_ms"):
        VoipWorkload(kind="voip", packet_ms=5, phase_ms=5)
