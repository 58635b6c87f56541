"""P4_16 1.2.4 `for` loops, unrolled at compile time (dplab/p4/loops.py), through the real
switch (tests/p4/loops.p4: each loop writes one byte of the tag header), and loops the
compiler cannot unroll, refused with their place."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import assert_edit_fails_at, compile_error, compiled

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "loops.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(100, 135))   # the payload after eth + tag + items: 60-byte frames

# (tag bytes a..h, the three items) in -> tag bytes out (the items leave unchanged),
# worked out from the spec; the program's comments say which loop writes which byte
CASES = {
    "h 2, c inside the range": (
        [10, 20, 5, 7, 9, 0x28, 1, 2], [1, 2, 3],
        # a: i = 0..4 (i < j with j = 10..6) sum 10, +1 per update: 25; b: 6 (i, j) pairs
        # with j <= i, 2 with j == 2 skipped; c: 1..4 before 5; d: 7 + 9 + 3 (e read
        # before the body writes it), e: 3 nonzero items; f: bit 3 of 0x28; g: 1 + 1 + 2 + 3
        [25, 24, 4, 19, 3, 3, 7, 2]),
    "zeros: no break, items skipped": (
        [250, 0, 0, 0, 0, 0, 0xFF, 1], [0x10, 0x20, 0x30],
        # a wraps (265); b: 3 pairs with j == 1 skipped; c: no break, 8; d: 0 + 0 + 3,
        # e: one nonzero item; f: no bit set, 0xff; g: 0xff + 0x60 wraps
        [9, 3, 8, 3, 1, 0xFF, 0x5F, 1]),
    "break at once, bit 7": (
        [0, 0xFE, 1, 0x80, 0x90, 0x80, 0, 7], [0, 0, 0xFF],
        [15, 4, 0, 0x13, 3, 7, 0xFF, 7]),
}


def test_loop_bodies_are_unrolled(tmp_path: Path) -> None:
    ir, _ = compiled(PROGRAM, tmp_path)
    kinds = {json_kind for json_kind in _kinds(ir["controls"]["ingress"]["body"])}
    assert not any(kind.startswith("$") for kind in kinds)   # no marker left
    # the for-in over the stack copies each element into the loop variable's header
    action = next(a for a in ir["actions"] if a["name"] == "LoopIngress.sum_items")
    assert [s["kind"] for s in action["body"]].count("copy_header") == 3


def _kinds(stmts: list[dict]):
    for stmt in stmts:
        yield stmt["kind"]
        for key in ("then", "else"):
            yield from _kinds(stmt.get(key, []))


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "loops")


@pytest.mark.net
def test_loops_packets(ir_dir: Path) -> None:
    frames = {name: ETH + bytes(tag) + bytes(items) + REST
              for name, (tag, items, _) in CASES.items()}
    got = outputs(PROGRAM, ir_dir, 2, frames)
    assert got == {name: {2: [ETH + bytes(out) + bytes(items) + REST]}
                   for name, (_, items, out) in CASES.items()}


# (text, its replacement, where in the replacement the error points, the reason)
BAD = [
    ("i <= 3;", "i <= hdr.tag.h;", "<=", "a for loop's condition must be known at compile "
     "time (loops are unrolled): compare its loop variables with constants"),
    ("i <= 3; i = i + 1", "i <= 3; i = i + hdr.tag.h", "+", "the update of loop variable i "
     "must be a compile-time value (the loop is unrolled at compile time)"),
    ("hdr.tag.a = hdr.tag.a + i;", "i = hdr.tag.a;", "i", "loop variable i cannot be "
     "assigned in the loop's body: the loop is unrolled at compile time, so only its update "
     "may change it"),
    ("bit<8> i = 0, bit<8> j = 10", "bit<8> i = hdr.tag.a, bit<8> j = 10", ".a",
     "loop variable i must start from a compile-time value (the loop is unrolled at "
     "compile time)"),
    ("1 .. 8", "1 .. hdr.tag.h", ".h", "a range's bounds must be compile-time values "
     "(the loop is unrolled at compile time)"),
    ("for (bit<8> i in 1 .. 8)", "for (bit<16> i in 0 .. 5000)", "for", "this loop runs "
     "more than 1024 times when unrolled at compile time"),
    ("hdr.tag.c = before;", "break;", "break", "'break' is allowed only inside a for loop"),
    ("item_t it in", "tag_t it in", "tag_t", "the elements of this stack are item_t, not "
     "tag_t"),
    ("{hdr.tag.d, hdr.tag.e, 3}", "hdr.tag.d", ".d", "a for loop can go over a range "
     "(lo .. hi), a list {...} or a header stack"),
    ("packet.extract(hdr.tag);", "for (bit<8> i in 0 .. 1) { }", "for",
     "'for' is not allowed in parser states"),
]


@pytest.mark.parametrize(("old", "new", "at", "reason"), BAD)
def test_bad_loops_give_exact_locations(tmp_path: Path, old: str, new: str, at: str,
                                        reason: str) -> None:
    assert_edit_fails_at(PROGRAM.read_text(), old, new, at, reason, tmp_path)


def test_nested_loops_are_bounded_as_a_whole(tmp_path: Path) -> None:
    # 1000 * 10 copies of an empty body: each loop is within its own bound
    old = "bit<8> before = 0;"
    text = PROGRAM.read_text().replace(
        old, "for (bit<16> k in 0 .. 999) for (bit<8> l in 0 .. 9) { } " + old, 1)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if old in s)
    error = compile_error(text, tmp_path)
    assert (error.line, error.reason) == (line, "the program's loops make more than 4096 "
                                          "copies of loop bodies when unrolled at compile "
                                          "time")
