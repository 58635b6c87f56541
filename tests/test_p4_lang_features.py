"""The P4_16 language of issue 23 (dplab/p4/inlining.py and the compiler): functions,
inout copy-back, compound assignment, parameter defaults, `_`, @priority, switch on a value,
slices of slices, % and / by powers of two and a negative literal's width, through the real
switch (tests/p4/lang_features.p4, each feature writing one byte of the tag header), and bad
programs refused with their place."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import assert_edit_fails_at, compiled

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "lang_features.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(100, 138))   # the payload after eth + tag: 60-byte frames

# tag bytes a..h in -> out (worked out from the spec; the program's comments say which
# feature writes which byte)
CASES = {
    "big c, f all ones, g 0x1X, h low": (
        [10, 20, 150, 7, 0x30, 0xFF, 0x15, 0x12],
        # a+3, b+1 (copied out over the direct write of 77), c clamped to 100, d+2,
        # ((e|0x0f)>>1)-2, f from pair's second out, @priority(1) entry, h[5:4] = 3
        [13, 21, 100, 9, 0x1D, 0xA5, 0x22, 0x32]),
    "wrap-arounds, f % 16 + f / 64, g 0x80, h mid": (
        [250, 255, 100, 255, 0x81, 0x37, 0x80, 0x50],
        [253, 0, 100, 1, 0x45, 7, 0x11, 0xEE]),
    "zeros, f 0xc3, h high": (
        [0, 0, 0, 0, 0, 0xC3, 0x1F, 0x90],
        [3, 1, 0, 2, 5, 3 + 3, 0x22, 0xEE]),
}


def test_inout_copied_out_only_where_the_body_could_tell(tmp_path: Path) -> None:
    ir, _ = compiled(PROGRAM, tmp_path)
    names = {i["name"]: n for n, i in enumerate(ir["instances"])}
    tag, local_inst = names["hdr.tag"], names["$locals"]
    keep = next(a for a in ir["actions"] if a["name"] == "LangIngress.keep")
    # keep writes hdr.tag.b itself: v is a temporary, copied in first and out last
    assert keep["body"][0]["dst"]["inst"] == local_inst
    assert keep["body"][0]["src"] == {"op": "field", "w": 8, "inst": tag, "field": 1}
    assert keep["body"][-1] == {"kind": "assign", "dst": {"inst": tag, "field": 1},
                                "src": {**keep["body"][0]["dst"], "op": "field", "w": 8}}
    # bump touches only its parameter: bound to hdr.tag.d itself, no temporary
    locals_ = [f["name"].split("$")[0] for f in ir["instances"][local_inst]["fields"]]
    assert locals_.count("v") == 1


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "lang_features")


@pytest.mark.net
def test_lang_features_packets(ir_dir: Path) -> None:
    frames = {name: ETH + bytes(tag_in) + REST for name, (tag_in, _) in CASES.items()}
    got = outputs(PROGRAM, ir_dir, 2, frames)
    assert got == {name: {2: [ETH + bytes(tag_out) + REST]}
                   for name, (_, tag_out) in CASES.items()}


# (text, its replacement, where in the replacement the error points, the reason)
BAD = [
    ("hdr.tag.a = add(hdr.tag.a);", "hdr.tag.a = add(hdr.tag.a, 1, 2);", "add",
     "function add takes 2 argument(s), found 3"),
    ("return x + y;", "return add(x, y);", "add", "function add calls itself (P4 has no "
     "recursion)"),
    ("v += 1;", "v += 1; exit;", "exit", "'exit' is not allowed in a function bump"),
    ("hdr.tag.b = 77;", "hdr.tag.b = 77; return 1;", "1;", "a return value is allowed "
     "only in a function that returns one"),
    ("return x;", "return;", "return", "function clamp must return a bit<8>"),
    ("return Kind.High;", "return 8w1;", "8w1", "function kind_of returns Kind, not bit<8>"),
    ("hdr.tag.f % 16", "hdr.tag.f % 0", "0", "division by zero"),
    ("Kind.Mid:", "Kind.Low:", "Kind", "this label is already listed"),
    ("Kind.Mid:", "hdr.tag.a:", "hdr", "a switch label must be a compile-time Kind"),
    ("switch (kind_of(hdr.tag.h))", "switch (hdr.tag.h == 1)", "switch", "switch needs "
     "table.apply().action_run or a bit<W>, int<W> or enum value, not bool"),
    ("hdr.tag.g: ternary;", "add(hdr.tag.g): ternary;", "add", "this call is only "
     "supported inside a statement (assign its result to a variable first)"),
    ("@priority(1) 8w0x10", "priority = 1 : 8w0x10", "1 :", "entries give priorities "
     "both as @priority(N) and as 'priority = N': use one"),
    ("pair(_, hdr.tag.f);", "pair(hdr.tag.f, 1);", "1)", "the argument of out parameter "
     "second must be an l-value (a field, variable, header or struct)"),
    ("bit<8> add(in", "bit<8> add<T>(in", "<T>", "generic functions (add<...>) are not "
     "supported, found '<'"),
]


@pytest.mark.parametrize(("old", "new", "at", "reason"), BAD)
def test_bad_programs_give_exact_locations(tmp_path: Path, old: str, new: str, at: str,
                                           reason: str) -> None:
    assert_edit_fails_at(PROGRAM.read_text(), old, new, at, reason, tmp_path)
