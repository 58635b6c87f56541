"""The throughput time series adds flows of one interval and averages runs."""

from dplab.report.plots import throughput_per_interval


def _interval(run_id, plane, flow_id, t_start, mbit):
    return {"run_id": run_id, "plane": plane, "flow_id": flow_id, "kind": "tcp",
            "t_start": t_start, "t_end": t_start + 1.0, "metric": "throughput_bps",
            "value": None if mbit is None else mbit * 1e6}


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
    series, width = throughput_per_interval(intervals, labels, failed_runs={"a3"})
    assert width == 1.0
    assert dict(series[("tcp", "A")]) == {0: [30e6, 70e6], 1: [12e6]}
