"""Time series: throughput adds the flows of one interval, jitter averages them; runs are
averaged."""

from dplab.report.plots import metric_per_interval


def _interval(run_id, plane, flow_id, t_start, mbit, metric="throughput_bps", scale=1e6):
    return {"run_id": run_id, "plane": plane, "flow_id": flow_id, "kind": "tcp",
            "t_start": t_start, "t_end": t_start + 1.0, "metric": metric,
            "value": None if mbit is None else mbit * scale}


def test_flows_of_a_run_are_summed_per_interval_and_runs_averaged():
    intervals = [
        # run a1: two flows whose clocks start 3 ms apart (absolute times)
        _interval("a1", "A", "f1", 500.000, 10), _interval("a1", "A", "f1", 501.000, 12),
        _interval("a1", "A", "f2", 500.003, 20), _interval("a1", "A", "f2", 501.003, None),
        # run a2: relative times
        _interval("a2", "A", "f1", 0.0, 30), _interval("a2", "A", "f2", 0.0, 40),
        # failed run: left out
        _interval("a3", "A", "f1", 0.0, 1000),
    ]
    labels = {(r["run_id"], r["flow_id"]): "tcp" for r in intervals}
    series, width = metric_per_interval(intervals, labels, failed_runs={"a3"})
    assert width == 1.0
    assert dict(series[("tcp", "A")]) == {0: [30e6, 70e6], 1: [12e6]}


def test_jitter_of_the_flows_of_one_interval_is_averaged():
    intervals = [
        _interval("a1", "A", "f1", 0.0, 1.0, "jitter_ms", 1), _interval("a1", "A", "f2", 0.0,
                                                                        3.0, "jitter_ms", 1),
        _interval("a2", "A", "f1", 0.0, 4.0, "jitter_ms", 1),
    ]
    labels = {(r["run_id"], r["flow_id"]): "udp" for r in intervals}
    series, _ = metric_per_interval(intervals, labels, set(), "jitter_ms")
    assert dict(series[("udp", "A")]) == {0: [2.0, 4.0]}
