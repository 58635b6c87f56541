"""Statistics against hand-computed values and scipy; sign of improvement; what is excluded."""

import json
import math

import pytest
from scipy import stats as sps

from dplab.analysis import PLANE, Row
from dplab.analysis.compare import analyse_rows, spec_plane_order
from dplab.analysis.metrics import direction
from dplab.analysis.stats import describe, improvement_pct, is_significant, welch_p


def test_describe_matches_hand_computation():
    # values 10, 12, 14: mean 12, sd = sqrt((4+0+4)/2) = 2, CI = t(0.975, 2) * 2 / sqrt(3)
    d = describe([10.0, 12.0, 14.0])
    assert (d.n, d.mean, d.sd) == (3, 12.0, 2.0)
    assert d.ci95 == pytest.approx(4.302652729749464 * 2.0 / math.sqrt(3))


def test_describe_small_samples():
    assert describe([]).mean is None
    one = describe([5.0])
    assert (one.n, one.mean, one.sd, one.ci95) == (1, 5.0, None, None)


def test_welch_p_equals_scipy_and_is_none_without_a_test():
    a, b = [10.0, 12.0, 14.0], [15.0, 16.0, 19.0, 18.0]
    expected = sps.ttest_ind(a, b, equal_var=False).pvalue
    assert welch_p(a, b) == pytest.approx(expected)
    assert welch_p([1.0], b) is None
    assert welch_p([0.0, 0.0], [0.0, 0.0]) is None


def test_improvement_sign_follows_metric_direction():
    assert improvement_pct("throughput_bps", 100.0, 112.0) == pytest.approx(12.0)
    assert improvement_pct("bytes", 100.0, 90.0) == pytest.approx(-10.0)
    for lower_is_better in ("rtt_ms", "loss_pct", "jitter_ms", "syn_delay_ms"):
        assert direction(lower_is_better) == "lower"
        assert improvement_pct(lower_is_better, 2.0, 1.5) == pytest.approx(25.0)
        assert improvement_pct(lower_is_better, 2.0, 3.0) == pytest.approx(-50.0)
    assert improvement_pct("rtt_ms", 0.0, 1.0) is None
    assert improvement_pct("rtt_ms", None, 1.0) is None
    assert improvement_pct("packets_sent", 1.0, 2.0) is None  # no better side


def test_significance_needs_a_p_value_below_alpha():
    assert is_significant(0.01)
    assert not is_significant(0.05)
    assert not is_significant(None)


def _run(run_id, plane, rep, status="ok"):
    return {"run_id": run_id, "plane": plane, "repetition": rep, "status": status,
            "error": None if status == "ok" else "plane did not come up",
            "started": 0.0, "duration_s": 1.0}


def _flow(run_id, flow_id, kind="tcp", ok=True, params=None):
    return {"run_id": run_id, "flow_id": flow_id, "kind": kind, "src": "h1", "dst": "h2",
            "ok": ok, "error": None if ok else "iperf died",
            "params": json.dumps(params or {"duration": 5})}


def _value(run_id, plane, flow_id, metric, value, kind="tcp"):
    return {"run_id": run_id, "plane": plane, "repetition": 0, "flow_id": flow_id,
            "kind": kind, "src": "h1", "dst": "h2", "metric": metric, "value": value}


def test_per_run_value_is_mean_over_flows_then_repetitions():
    runs = [_run("a1", "A", 1), _run("b1", "B", 1), _run("a2", "A", 2), _run("b2", "B", 2),
            _run("a3", "A", 3, status="failed"), _run("b3", "B", 3)]
    flows = [_flow(r["run_id"], f) for r in runs for f in ("f1", "f2")]
    flows.append(_flow("b3", "f3", ok=False))
    tput = {("a1", "f1"): 10, ("a1", "f2"): 20, ("a2", "f1"): 30, ("a2", "f2"): None,
            ("a3", "f1"): 1000, ("a3", "f2"): 1000,  # failed run: never averaged
            ("b1", "f1"): 40, ("b1", "f2"): 40, ("b2", "f1"): 50, ("b2", "f2"): 70,
            ("b3", "f1"): 60, ("b3", "f2"): 60, ("b3", "f3"): 9999}  # f3 failed: excluded
    summaries = [_value(r, r[0].upper(), f, "throughput_bps", v) for (r, f), v in tput.items()]
    stats = [{"run_id": "b1", "plane": "B", "repetition": 1, "stat": "packet_ins", "value": 7.0}]

    result = analyse_rows(runs, flows, summaries, stats)

    row = Row("tcp", "throughput_bps")
    assert result.planes == ["A", "B"] and result.baseline == "A"
    a, b = result.result(row, "A"), result.result(row, "B")
    assert sorted(a.run_values) == [15.0, 30.0]  # a1: (10+20)/2, a2: only f1 measured
    assert (a.missing, a.failed_runs) == (1, 1)
    assert sorted(b.run_values) == [40.0, 60.0, 60.0]
    assert (b.missing, b.failed_runs) == (1, 0)
    assert a.description.mean == pytest.approx(22.5)
    comparison = result.comparison(row, "B")
    assert comparison.improvement_pct == pytest.approx((160 / 3 - 22.5) / 22.5 * 100)
    assert comparison.p_value == pytest.approx(
        sps.ttest_ind([15.0, 30.0], [40.0, 60.0, 60.0], equal_var=False).pvalue)
    assert comparison.significant == (comparison.p_value < 0.05)
    assert result.comparison(row, "A") is None
    assert [r["run_id"] for r in result.failed_runs] == ["a3"]
    assert [f["flow_id"] for f in result.failed_flows] == ["f3"]
    assert result.result(Row(PLANE, "packet_ins"), "B").run_values == (7.0,)
    assert result.result(Row(PLANE, "packet_ins"), "A").description.n == 0


def test_workloads_of_one_kind_with_different_parameters_stay_apart():
    runs = [_run("a1", "A", 1)]
    flows = [_flow("a1", "slow", "udp", params={"rate_mbit": 10}),
             _flow("a1", "fast", "udp", params={"rate_mbit": 100})]
    summaries = [_value("a1", "A", "slow", "loss_pct", 0.0, "udp"),
                 _value("a1", "A", "fast", "loss_pct", 5.0, "udp")]
    result = analyse_rows(runs, flows, summaries, [])
    assert [r.traffic for r in result.rows] == ["udp rate_mbit=10", "udp rate_mbit=100"]
    assert result.result(Row("udp rate_mbit=100", "loss_pct"), "A").run_values == (5.0,)


def test_baseline_and_spec_order_decide_plane_order():
    runs = [_run("b1", "B", 1), _run("a1", "A", 1)]
    assert analyse_rows(runs, [], [], []).planes == ["B", "A"]
    assert analyse_rows(runs, [], [], [], plane_order=["A", "B"]).planes == ["A", "B"]
    assert analyse_rows(runs, [], [], [], baseline="A").planes == ["A", "B"]
    with pytest.raises(ValueError, match="baseline plane 'C' has no stored runs"):
        analyse_rows(runs, [], [], [], baseline="C")


def test_plane_order_comes_from_the_stored_spec():
    spec = {"planes": [{"kind": "ovs", "label": None, "options": {"mode": "proactive"}},
                       {"kind": "bridge", "label": "linux", "options": {}}]}
    assert spec_plane_order({"spec": spec}) == ["ovs-proactive", "linux"]
    assert spec_plane_order({}) == []
