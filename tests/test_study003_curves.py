"""benchmarks/study003_curves.py's pure parts: lines of code of a P4 program (comments and
blank lines left out) and the tables' cells for values that were not measured."""

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
    assert study003_curves.p4_lines(path) == 3


def test_a_value_not_measured_is_shown_as_missing_not_zero():
    rows = {"kernel": [{"kpps": 10.0, "switch_cpu_pct": None, "softirq_pct": 0.0}]}
    columns = (("kpps", "kpps"), ("switch_cpu_pct", "cpu"), ("softirq_pct", "softirq"))
    assert study003_curves.table(rows, columns).splitlines()[-1] == "| kernel | 10 | - | 0 |"
