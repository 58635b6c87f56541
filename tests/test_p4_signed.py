"""Signed int<W> (dplab/p4/signed.py): the IR lowering, the bytes tests/p4/signed_ints.p4
computes in the real switch (checked against Python's own signed arithmetic), bad programs."""

import struct
from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import compile_error, compiled

from dplab.p4.signed import as_signed

ROOT = Path(__file__).resolve().parents[1]
SIGNED = ROOT / "tests" / "p4" / "signed_ints.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb6"
NUMS = "!BBBBBBBBBHBBHBB"   # a, b, sh, then the results (nums_t)
REST = bytes(range(30))
# (a, b, sh): both signs, the extremes, shifts by 0, within and past the width
INPUTS = [(5, 0xFD, 1), (0x80, 0x7F, 3), (0xFF, 0x01, 9), (0x10, 0x10, 0), (0x7F, 0x80, 7),
          (0xF0, 0xFE, 2), (0x64, 0x64, 0), (0x9C, 0x9C, 0), (0x9C, 0x64, 0)]


def expected(a: int, b: int, sh: int) -> bytes:
    x, y = as_signed(a, 8), as_signed(b, 8)
    flags = (x < -1) << 4 | (x < y) << 3 | (x <= y) << 2 | (x > y) << 1 | (x >= y)
    results = [(x + y) & 0xFF, (x - y) & 0xFF, (x * y) & 0xFF, flags, (x >> sh) & 0xFF,
               (x >> 2) & 0xFF, x & 0xFFFF, -x & 0xFF, (x * -3) & 0xFF, (x - 300) & 0xFFFF,
               clamp8(x + y), clamp8(x - y)]
    return ETH + struct.pack(NUMS, a, b, sh, *results) + REST


def clamp8(value: int) -> int:
    """int<8> saturating arithmetic's result (P4_16 8.9.2) as its pattern."""
    return min(max(value, -128), 127) & 0xFF


def test_signed_ops_lower_to_unsigned_ir(tmp_path: Path) -> None:
    ir, _ = compiled(SIGNED, tmp_path)
    body = ir["controls"]["ingress"]["body"]
    flags = next(s for s in body if s["dst"] == {"inst": 2, "field": 6})["src"]
    lt = find(flags, "lt")   # (bit<1>)(x < -1) first: x ^ 0x80 < 0xff ^ 0x80
    assert lt["b"] == {"op": "xor", "w": 8, "a": {"op": "const", "w": 8, "v": "0xff"},
                       "b": {"op": "const", "w": 8, "v": "0x80"}}
    assert lt["a"]["op"] == "xor" and lt["a"]["b"] == {"op": "const", "w": 8, "v": "0x80"}
    ext = next(s for s in body if s["dst"] == {"inst": 2, "field": 9})["src"]
    assert ext["op"] == "sub" and ext["a"]["op"] == "xor" and ext["a"]["a"]["op"] == "cast"


def find(tree: dict, op: str) -> dict | None:
    """The first node of ``op`` in an IR expression, depth first."""
    if tree.get("op") == op:
        return tree
    for key in ("a", "b", "c"):
        found = find(tree[key], op) if key in tree else None
        if found:
            return found
    return None


def test_as_signed() -> None:
    assert [as_signed(v, 8) for v in (0, 0x7F, 0x80, 0xFF)] == [0, 127, -128, -1]


PREFIX = "        hdr.n.sum = (bit<8>)(x + y);"
BAD = [
    ("bit<8> z = x;", 20, "cannot initialise bit<8> with int<8>"),
    ("hdr.n.sum = x;", 21, "cannot assign int<8> to bit<8>"),
    ("hdr.n.sum = (bit<8>)(x + hdr.n.a);", 32, "'+' needs operands of one type, found int<8> "
     "and bit<8> (cast one of them)"),
    ("hdr.n.ext = (bit<16>)x;", 21, "cannot cast int<8> to bit<16>: change the width and the "
     "sign in two casts (P4_16 8.11.1)"),
    ("int<8> z = 200;", 20, "value 200 does not fit in int<8>"),
    ("int<8> z = 8s200;", 20, "value 200 does not fit in int<8>"),
    ("int<8> z = x |+| hdr.n.a;", 22, "'|+|' needs operands of one type, found int<8> "
     "and bit<8> (cast one of them)"),
    ("int<8> z = x >> y;", 25, "a shift amount must be bit<W> or a non-negative constant, "
     "not int<8>"),
    ("bool z = (bool)x;", 18, "cannot cast int<8> to bool: change the width and the sign in "
     "two casts (P4_16 8.11.1)"),
]


@pytest.mark.parametrize(("statement", "col", "reason"), BAD)
def test_bad_signed_programs_give_exact_locations(tmp_path: Path, statement: str, col: int,
                                                  reason: str) -> None:
    text = SIGNED.read_text()
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s == PREFIX) + 1
    error = compile_error(text.replace(PREFIX, PREFIX + "\n        " + statement), tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "signed")


@pytest.mark.net
def test_signed_arithmetic_packets(ir_dir: Path) -> None:
    frames = {(a, b, sh): ETH + struct.pack(NUMS, a, b, sh, *[0] * 12) + REST
              for a, b, sh in INPUTS}
    got = outputs(SIGNED, ir_dir, 2, frames)
    assert got == {key: {2: [expected(*key)]} for key in INPUTS}
