"""Header- and struct-typed local variables (dplab/p4/local_vars.py): the IR they compile to,
the bytes tests/p4/header_locals.p4 sends through the real switch, and bad programs."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import compile_error, compiled

from dplab.p4.compiler import compile_with_warnings

ROOT = Path(__file__).resolve().parents[1]
LOCALS = ROOT / "tests" / "p4" / "header_locals.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01")
SWAPPED = mac("02:00:00:00:01:01") + mac("02:00:00:00:02:02")
TAGGED = b"\x88\xb5"
REST = bytes(range(100, 144))   # the payload after eth + tag: 60-byte frames


def tag_frame(op: int, val: int) -> bytes:
    return ETH + TAGGED + bytes([op, val]) + REST


# frame in -> the one frame expected on port 2
CASES = {
    "no tag: an action's local header becomes hdr.tag": (
        ETH + b"\x08\x00" + bytes(2) + REST,
        ETH + TAGGED + bytes([9, 0x42]) + bytes(2) + REST),
    "op 1: a copy of hdr.eth swaps the MACs": (
        tag_frame(1, 7), SWAPPED + TAGGED + bytes([1, 7]) + REST),
    "op 2: an uninitialised local is invalid, copying it removes the tag": (
        tag_frame(2, 7), ETH + b"\x08\x00" + REST),
    "op 3: struct locals holding a header, copied whole": (
        tag_frame(3, 7), ETH + TAGGED + bytes([3, 8]) + REST),
    "op 4: a list initialiser makes a local header valid": (
        tag_frame(4, 7), ETH + TAGGED + bytes([5, 6]) + REST),
    "op 5: a block's local shadows the control's": (
        tag_frame(5, 7), ETH + b"\x00\xee" + bytes([5, 7]) + REST),
    "op 6: an action's in header parameter is a copy": (
        tag_frame(6, 7), ETH + b"\x00\x77" + bytes([6, 7]) + REST),
}


def test_header_locals_are_hidden_header_instances(tmp_path: Path) -> None:
    ir, _ = compiled(LOCALS, tmp_path)
    names = {i["name"]: n for n, i in enumerate(ir["instances"])}
    hidden = [n for n in names if n.startswith("$local.")]
    assert {n.split("$")[1] for n in hidden} == {"local.peek", "local.saved", "local.t",
                                                 "local.tmp", "local.gone", "local.p.h",
                                                 "local.q.h", "local.l", "local.h"}
    assert all(ir["instances"][names[n]]["kind"] == "header" for n in hidden)
    assert ir["deparser"]["emit"] == [names["hdr.eth"], names["hdr.tag"]]
    tag_state = next(s for s in ir["parser"]["states"] if s["name"] == "tag")
    peek = names[next(n for n in hidden if "peek" in n)]
    assert tag_state["body"] == [{"kind": "extract", "inst": peek},
                                 {"kind": "copy_header", "dst": names["hdr.tag"], "src": peek}]
    start = ir["parser"]["states"][ir["parser"]["start"]]
    assert start["body"][0] == {"kind": "set_invalid", "inst": peek}


def test_shadowing_header_local_warns(tmp_path: Path) -> None:
    _, warnings = compile_with_warnings(LOCALS)
    line = next(i for i, s in enumerate(LOCALS.read_text().splitlines(), 1)
                if "tag_t saved;  " in s)
    assert [(w.loc.line, w.reason) for w in warnings] == [
        (line, "var 'saved' shadows a declaration of the same name")]


BAD = [
    ("tag_t t;", "nosuch_t t;", 1, "unknown type 'nosuch_t'"),
    ("tag_t t;", "tag_t t = hdr.eth;", 14, "cannot assign eth_t to tag_t"),
    ("tag_t t;", "stk_t t;", 1, "local variable t: field s is a header stack (tag_t[2]); "
     "header stacks in local variables are not supported"),
    ("hdr.tag = t;", "hdr.eth = t;", 11, "cannot assign tag_t to eth_t"),
    ("t.val = v;", "t.val = t;", 9, "expected a value, found a header"),
    ("copy_in(hdr.tag);", "copy_in(hdr.eth);", 12, "parameter h is tag_t, the argument is "
     "eth_t"),
    ("copy_in(hdr.tag);", "copy_in(1);", 9, "the argument of in parameter h must be a "
     "header or struct"),
]


@pytest.mark.parametrize(("old", "new", "col_offset", "reason"), BAD)
def test_bad_header_locals_give_exact_locations(tmp_path: Path, old: str, new: str,
                                                col_offset: int, reason: str) -> None:
    text = LOCALS.read_text().replace(
        "struct meta_t { }", "struct meta_t { }\nstruct stk_t { tag_t[2] s; }")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if old in s)
    col = text.splitlines()[line - 1].index(old) + col_offset
    error = compile_error(text.replace(old, new, 1), tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "locals")


@pytest.mark.net
def test_header_locals_packets(ir_dir: Path) -> None:
    got = outputs(LOCALS, ir_dir, 3, {name: frame for name, (frame, _) in CASES.items()})
    assert got == {name: {2: [out]} for name, (_, out) in CASES.items()}
