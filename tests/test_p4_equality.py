"""`==` and `!=` on header unions, tuples, structs and headers (dplab/p4/equality.py)
through the real switch (tests/p4/equality.p4), and a comparison of unlike types refused
with its place."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import compile_error

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "equality.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(60))

# (kind, a, b, the union member's byte or None) -> res, worked out from the spec: bit 0
# hdr.u == v (u.one valid with x == a), 1 t1 == t2 (a == b), 2 s1 != s2 (a != b),
# 3 an invalid two_t == hdr.u.two, 4 hdr.u == an all-invalid union
CASES = {
    "one, x == a == b": ((1, 5, 5, 5), 0b01011),
    "one, x != a != b": ((1, 5, 6, 7), 0b01100),
    "two": ((2, 1, 2, 9), 0b00100),
    "no member": ((0, 3, 3, None), 0b11010),
}


def frame(kind: int, a: int, b: int, member: int | None, res: int) -> bytes:
    return ETH + bytes([kind, a, b, res]) + (b"" if member is None else bytes([member])) + REST


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "equality")


@pytest.mark.net
def test_compound_equality_packets(ir_dir: Path) -> None:
    got = outputs(PROGRAM, ir_dir, 2, {name: frame(*fields, 0)
                                       for name, (fields, _) in CASES.items()})
    assert got == {name: {2: [frame(*fields, res)]} for name, (fields, res) in CASES.items()}


def test_unlike_types_are_refused(tmp_path: Path) -> None:
    text = PROGRAM.read_text().replace("if (h == hdr.u.two)", "if (h == hdr.u.one)")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "h == hdr.u.one" in s)
    error = compile_error(text, tmp_path)
    assert (error.line, error.reason) == (line, "'==' needs operands of one type, found "
                                          "two_t and one_t")
