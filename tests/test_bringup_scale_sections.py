"""benchmarks/bringup_scale.py: each run's figures go to a docs section of their own."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bringup_scale  # noqa: E402  (a script beside its doc_section helper, not a package)


def test_runs_at_other_sizes_or_graphs_keep_their_own_sections():
    names = {bringup_scale.section_name(["p4:program=l3"], [16], None, None, False),
             bringup_scale.section_name(["p4:program=l3"], [8, 12], None, None, False),
             bringup_scale.section_name(["p4:program=l3"], [16], ["backbone/europe"], None,
                                        False),
             bringup_scale.section_name(["p4:program=l3"], [16], None, 10000, False),
             bringup_scale.section_name(["bridge"], [16], None, None, True)}
    assert len(names) == 5
    assert bringup_scale.section_name(["p4:program=l3"], [8, 12], None, None, False) == \
        "bringup_scale_p4_program_l3_k8_12"
