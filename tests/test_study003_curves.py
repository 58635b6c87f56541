"""Study 003's performance part from stored data (dplab.study003.curves / curve_report):
lines of code of a P4 or C program (comments and blank lines left out; a C program's lab
headers counted apart), each core's CPU shares, the tables' cells for values that were not
measured or runs that failed, and the figures and report section drawn from a stored
curves.json alone."""

from __future__ import annotations

import copy
import json

from matplotlib.figure import Figure

from dplab.study003 import curve_report, curves

PROGRAM = """\
// a comment line
#include <v1model.p4>

/* a block
   comment */ header h_t { bit<8> f; }  // code before a comment counts
control C() { /* inline */ apply { } }
   /* one-line block */
"""


def _point(kpps, runs):
    return {"kpps": kpps, "runs": runs}


def _echo_run(rtt, offered=None, answered=None, memory=11_000.0):
    run = {"rtt_min_ms": rtt / 2, "rtt_p50_ms": rtt, "rtt_p99_ms": rtt * 3,
           "rtt_max_ms": rtt * 4, "ping_loss_pct": 0.0, "memory_kib": memory}
    if offered is not None:
        run.update(offered_kpps=offered, answered_pct=answered)
    return run


def _forward_run(offered=None, switch_cpu=None, memory=None, program_cpu=None):
    run = {"switch_cpu_pct": switch_cpu, "program_cpu_pct": program_cpu, "memory_kib": memory,
           **{f"cpu{c}_{f}": 10.0 * (c + 1) for c in (0, 1)
              for f in ("user", "system", "softirq")}}
    if offered is not None:
        run.update(offered_kpps=offered, forwarded_kpps=offered)
    return run


STORED = {
    "settings": {"rates_kpps": [0.0, 50.0], "seconds": 2.0, "repetitions": 2,
                 "frame_bytes": 64},
    "machine": {"host": "vm", "kernel": "6.x", "cores": 2, "started": 0.0, "ended": 1.0,
                "load_1min_end": 3.0},
    "echo": {
        "p4 echo.p4": {"kind": "p4", "error": None, "points": [
            _point(0.0, [_echo_run(0.05), _echo_run(0.07)]),
            _point(50.0, [_echo_run(30.0, 49.0, 80.0), {"error": "PlaneError: gone"}])]},
        "xdp echo.bpf.c": {"kind": "xdp", "error": None, "points": [
            _point(0.0, [_echo_run(0.02, memory=28.0), _echo_run(0.02, memory=28.0)]),
            _point(50.0, [_echo_run(0.03, 50.0, 100.0, 28.0),
                          _echo_run(0.05, 50.0, 100.0, 28.0)])]},
    },
    "forward": {
        "kernel router": {"kind": "router", "error": None, "points": [
            _point(0.0, [_forward_run()]), _point(50.0, [_forward_run(48.0)])]},
        "p4 l3_forward.p4": {"kind": "p4", "error": "PlaneError: s1 never came up",
                             "points": [_point(0.0, []), _point(50.0, [])]},
        "xdp l3 (static LPM map)": {"kind": "xdp", "error": None, "points": [
            _point(0.0, [_forward_run(memory=7.0, program_cpu=0.0)]),
            _point(50.0, [_forward_run(50.0, memory=7.0, program_cpu=1.5)])]},
    },
    "loc": [{"case": "I drop", "p4_program": "drop.p4", "p4_lines": 44,
             "xdp_program": "study003/drop.bpf.c", "xdp_lines": 11, "xdp_header_lines": 27},
            {"case": "II pass", "p4_program": None, "p4_lines": None,
             "xdp_program": "study003/pass.bpf.c", "xdp_lines": 11, "xdp_header_lines": 27}],
}


def test_lines_of_code_leave_out_comments_and_blank_lines(tmp_path):
    path = tmp_path / "p.p4"
    path.write_text(PROGRAM)
    assert curves.code_lines(path) == 3


def test_a_c_programs_lab_headers_are_counted_once_beside_it(tmp_path):
    (tmp_path / "own.h").write_text("#pragma once\n// why\nint x;\n")
    program = tmp_path / "p.bpf.c"
    program.write_text('#include "own.h"\n#include "counters.h"\n#include "own.h"\nint y;\n')
    counters = curves.code_lines(curves.XDP / "counters.h")
    assert curves.code_lines(program) == 4
    assert sum(curves.code_lines(h) for h in curves.lab_headers(program)) == 2 + counters


def test_each_cores_share_is_of_that_cores_own_time():
    before = {"cpu0": {"user": 10, "system": 0, "softirq": 0, "total": 100},
              "cpu1": {"user": 0, "system": 0, "softirq": 0, "total": 100}}
    after = {"cpu0": {"user": 60, "system": 10, "softirq": 0, "total": 200},
             "cpu1": {"user": 0, "system": 0, "softirq": 25, "total": 100}}
    assert curves.core_usage(before, after) == {
        "cpu0_user": 50.0, "cpu0_system": 10.0, "cpu0_softirq": 0.0,
        "cpu1_user": None, "cpu1_system": None, "cpu1_softirq": None}


def test_repetitions_give_a_mean_and_its_interval_and_failed_ones_are_left_out():
    rows = curve_report.described(STORED["echo"])
    idle, loaded = rows["p4 echo.p4"]
    assert curve_report.cell(idle["rtt_p50_ms"]) == "0.06 ± 0.127"  # t(0.975, 1) = 12.706
    assert loaded["failed"] == 1 and loaded["rtt_p50_ms"].n == 1  # the failed run: not a 0
    assert curve_report.cell(loaded["rtt_p50_ms"]) == "30"


def test_a_value_not_measured_is_shown_as_missing_not_zero():
    columns = curve_report.forward_columns(STORED)
    assert [key for key, _ in columns][6:9] == ["cpu0_user", "cpu0_system", "cpu0_softirq"]
    rows = curve_report.table_rows(curve_report.described(STORED["forward"]), columns)
    router_idle = dict(zip(["plane", *(k for k, _ in columns)], rows[0], strict=True))
    assert router_idle["switch_cpu_pct"] == "-" and router_idle["memory_kib"] == "-"
    assert router_idle["program_cpu_pct"] == "-"  # no program: not measured, not 0
    xdp_loaded = dict(zip(["plane", *(k for k, _ in columns)], rows[-1], strict=True))
    assert xdp_loaded["program_cpu_pct"] == "1.5"
    assert router_idle["offered_kpps"] == "-" and router_idle["cpu1_softirq"] == "20"
    p4 = [row for row in rows if row[0] == "p4 l3_forward.p4"]
    assert all(c == "-" for row in p4 for c in row[2:])  # never came up: nothing, not zeros


def test_the_markdown_names_what_failed_and_no_p4_program_is_not_zero_lines():
    text = curve_report.markdown(STORED)
    assert "| II pass | - (no P4 program) | - | study003/pass.bpf.c | 11 (+27) |" in text
    assert "p4 l3_forward.p4: PlaneError: s1 never came up" in text
    assert "p4 echo.p4 at 50 kpps: PlaneError: gone" in text


def test_a_point_whose_sender_fell_short_of_the_set_rate_is_marked_host_limited():
    """Fig. 5's sender shares the cores with the switches: where it offered less than the
    set rate by more than the margin, the host, not the plane, limited the point."""
    assert curves.host_limited(400.0, 250.0) is True
    assert curves.host_limited(50.0, 48.0) is False  # within the margin
    assert curves.host_limited(0.0, None) is None  # the idle point asks for no load
    assert curves.host_limited(50.0, None) is None  # not measured: no verdict
    stored = {"xdp echo.bpf.c": {"kind": "xdp", "error": None, "points": [
        _point(0.0, [_echo_run(0.02)]),
        _point(50.0, [_echo_run(0.03, 49.0, 100.0)]),
        # one repetition short of the rate is enough; a failed one tells nothing
        _point(400.0, [_echo_run(0.04, 390.0, 100.0), _echo_run(0.06, 250.0, 100.0),
                       {"error": "PlaneError: gone"}])]}}
    rows = curve_report.described(stored)
    assert [p["host_limited"] for p in rows["xdp echo.bpf.c"]] == [None, False, True]
    table = curve_report.table_rows(rows, curve_report.ECHO_COLUMNS)
    assert [row[3] for row in table] == ["-", "no", "yes"]
    ax = Figure().subplots()
    curve_report._line(ax, rows["xdp echo.bpf.c"], "rtt_p50_ms", "xdp", "C0")
    [ring] = ax.collections[-1:]
    assert ring.get_offsets().tolist() == [[320.0, 0.05]]  # the mean offered, the mean RTT
    assert curve_report.HOST_RING in ax.get_legend_handles_labels()[1]


def test_the_idle_point_is_drawn_at_no_load_and_a_point_without_offered_load_is_not():
    idle, loaded = curve_report.described(STORED["echo"])["xdp echo.bpf.c"]
    assert curve_report._offered(idle).mean == 0.0
    assert curve_report._offered(loaded).mean == 50.0
    assert curve_report._offered({"kpps": 10.0, "offered_kpps": None}) is None


def test_study_003s_report_draws_its_stored_curves_from_the_file_alone(tmp_path):
    """`dplab study run 003` measures the curves at its profile (studies/003/study.yaml),
    stores them, and its report draws the figures and tables from what the file holds."""
    from dplab.study import catalog
    from dplab.study import report as study_report

    study, published = catalog.find("003")
    assert set(study.performance) == {"full", "quick"}  # smoke (the test suite's) has none
    stored = curves.write(copy.deepcopy(STORED), tmp_path / "stored")
    data = curves.load(stored.parent)
    assert data == json.loads(json.dumps(STORED))
    page = study_report.write(study, published, tmp_path, "quick", None, data).read_text()
    assert "Performance: P4 and XDP side by side" in page
    for name in curve_report.FIGURES:
        png = tmp_path / study_report.PERFORMANCE_DIR / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        assert f'alt="{png.stem}"' in page
    assert "<td>xdp echo.bpf.c</td><td>50</td><td>50 ± 0</td><td>no</td><td>100 ± 0</td>" \
        in page
    assert "Failed (left out of every cell and figure)" in page
    assert curves.load(tmp_path / "nothing-here") is None
    plain = study_report.write(study, published, tmp_path, "quick").read_text()
    assert "Performance: P4 and XDP" not in plain


def test_a_resumed_study_run_reads_curves_measured_with_the_same_settings(tmp_path, monkeypatch):
    folder = tmp_path / "performance"
    curves.write(copy.deepcopy(STORED), folder)

    def measured(rates, seconds, repetitions, progress):
        return {**copy.deepcopy(STORED), "settings": {
            "rates_kpps": rates, "seconds": seconds, "repetitions": repetitions}}

    monkeypatch.setattr(curves, "measure", measured)
    data, fresh = curves.stored_or_measured(folder, [0.0, 50.0], 2.0, 2)
    assert not fresh and data == curves.load(folder)
    data, fresh = curves.stored_or_measured(folder, [0.0, 50.0], 2.0, 3)  # more repetitions
    assert fresh and curves.load(folder)["settings"]["repetitions"] == 3
