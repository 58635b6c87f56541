"""benchmarks/study003_curves.py's pure parts: lines of code of a P4 or C program (comments
and blank lines left out; a C program's lab headers counted apart), each core's CPU shares
and the tables' cells for values that were not measured."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import study003_curves  # noqa: E402  (a script beside the other benchmarks, not a package)

PROGRAM = """\
// a comment line
#include <v1model.p4>

/* a block
   comment */ header h_t { bit<8> f; }  // code before a comment counts
control C() { /* inline */ apply { } }
   /* one-line block */
"""


def test_lines_of_code_leave_out_comments_and_blank_lines(tmp_path):
    path = tmp_path / "p.p4"
    path.write_text(PROGRAM)
    assert study003_curves.code_lines(path) == 3


def test_a_value_not_measured_is_shown_as_missing_not_zero():
    rows = {"kernel": [{"kpps": 10.0, "switch_cpu_pct": None, "softirq_pct": 0.0}]}
    columns = (("kpps", "kpps"), ("switch_cpu_pct", "cpu"), ("softirq_pct", "softirq"))
    assert study003_curves.table(rows, columns).splitlines()[-1] == "| kernel | 10 | - | 0 |"


def test_a_c_programs_lab_headers_are_counted_once_beside_it(tmp_path):
    (tmp_path / "own.h").write_text("#pragma once\n// why\nint x;\n")
    program = tmp_path / "p.bpf.c"
    program.write_text('#include "own.h"\n#include "counters.h"\n#include "own.h"\nint y;\n')
    counters = study003_curves.code_lines(study003_curves.XDP / "counters.h")
    assert study003_curves.c_lines(program) == (4, 2 + counters)


def test_each_cores_share_is_of_that_cores_own_time():
    before = {"cpu0": {"user": 10, "system": 0, "softirq": 0, "total": 100},
              "cpu1": {"user": 0, "system": 0, "softirq": 0, "total": 100}}
    after = {"cpu0": {"user": 60, "system": 10, "softirq": 0, "total": 200},
             "cpu1": {"user": 0, "system": 0, "softirq": 25, "total": 100}}
    assert study003_curves.core_usage(before, after) == {
        "cpu0_user": 50.0, "cpu0_system": 10.0, "cpu0_softirq": 0.0,
        "cpu1_user": None, "cpu1_system": None, "cpu1_softirq": None}


def test_repetitions_give_a_mean_and_its_interval_and_leave_out_what_was_not_measured():
    got = study003_curves.described([{"rtt": 1.0, "cpu": None}, {"rtt": 3.0, "cpu": None}])
    assert study003_curves._cell(got["rtt"]) == "2 ± 12.7"  # t(0.975, 1) = 12.706
    assert study003_curves._cell(got["cpu"]) == "-"
    assert study003_curves._cell(study003_curves.described([{"rtt": 5.0}])["rtt"]) == "5"
