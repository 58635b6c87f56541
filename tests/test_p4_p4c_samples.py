"""p4c's testdata programs compiled by ours, their P4Info compared with p4c's own output
field by field, ids included (p4c: 8-bit kind prefix + hash of the name).

tests/p4/p4c_samples/ holds p4lang/p4c testdata/p4_16_samples programs (Apache-2.0, header
kept; two CHANGED where they say, in an action body P4Info does not show) and, beside each,
p4c's `*.p4info.txtpb` from testdata/p4_16_samples_outputs (its commit in its first lines).
Two differences come from p4c's version, not from us, and are set aside here:
  * references made before p4c wrote `initial_default_action` (P4Runtime 1.4, p4c PR 4773)
    have none; ours (as p4c now) has one on every table;
  * the newest reference has NoAction annotated `@corelib` as well; older ones (and ours)
    only `@noWarn("unused")`.
"""

from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2, p4types_pb2
from test_p4_compiler import compiled

SAMPLES = Path(__file__).resolve().parent / "p4" / "p4c_samples"
PROGRAMS = sorted(p.name for p in SAMPLES.glob("*.p4"))


def reference(program: str) -> p4info_pb2.P4Info:
    return text_format.Parse((SAMPLES / f"{program}.p4info.txtpb").read_text(),
                             p4info_pb2.P4Info())


def without_version_differences(ours: p4info_pb2.P4Info, p4c: p4info_pb2.P4Info) -> None:
    if not any(t.HasField("initial_default_action") for t in p4c.tables):
        for table in ours.tables:
            table.ClearField("initial_default_action")
    for action in p4c.actions:
        if "@corelib" in action.preamble.annotations:
            action.preamble.annotations.remove("@corelib")


def test_there_are_samples_to_compare() -> None:
    assert len(PROGRAMS) >= 3


@pytest.mark.parametrize("program", PROGRAMS)
def test_p4info_is_p4c_s(program: str, tmp_path: Path) -> None:
    _, ours = compiled(SAMPLES / program, tmp_path)
    p4c = reference(program)
    without_version_differences(ours, p4c)
    assert text_format.MessageToString(ours) == text_format.MessageToString(p4c)


def test_the_action_order_follows_main_not_the_source(tmp_path: Path) -> None:
    # flowlet_switching-bmv2 declares egress before ingress; p4c walks main's arguments,
    # so ingress's actions (after NoAction, which ingress uses first) come first
    _, ours = compiled(SAMPLES / "flowlet_switching-bmv2.p4", tmp_path)
    names = [a.preamble.name for a in ours.actions]
    assert names[:2] == ["NoAction", "ingress._drop"]
    assert names[-2:] == ["egress.rewrite_mac", "egress._drop"]


def test_type_info_is_written_even_when_empty(tmp_path: Path) -> None:
    _, ours = compiled(SAMPLES / "action_profile-bmv2.p4", tmp_path)
    assert ours.HasField("type_info") and ours.type_info == p4types_pb2.P4TypeInfo()
    assert "type_info {\n}" in text_format.MessageToString(ours)
