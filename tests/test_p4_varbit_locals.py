"""varbit<W> local variables (dplab/p4/varbit.py `local`): tests/p4/varbit_locals.p4 swaps
two header varbits through a local in the real switch, and bad locals give their place."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import compile_error

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "varbit_locals.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(100, 140))
X, Y = bytes([1, 2, 3, 4]), bytes([0xA, 0xB, 0xC, 0xD])
SIZES = [(1, 3), (4, 0), (0, 2), (2, 4), (3, 3)]


def frame(a: int, b: int) -> bytes:
    return ETH + bytes([a, b]) + X[:a] + Y[:b] + REST


def expected(a: int, b: int) -> bytes:
    """x and y swapped (each keeps the other's length); x empty when b is 4."""
    x, y = Y[:b], X[:a]
    return ETH + bytes([a, b]) + (b"" if b == 4 else x) + y + REST


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "varbit_locals")


@pytest.mark.net
def test_varbit_locals_packets(ir_dir: Path) -> None:
    got = outputs(PROGRAM, ir_dir, 2, {key: frame(*key) for key in SIZES})
    assert got == {key: {2: [expected(*key)]} for key in SIZES}


ANCHOR = "        varbit<32> empty;"
BAD = [
    ("        varbit<12> odd;", 9, "varbit<12>: the maximum width must be a multiple of 8 in "
     "8..2048"),
    ("        varbit<16> short = hdr.x.d;", 33, "cannot assign varbit<32> to varbit<16>: "
     "only a varbit<16> field can be assigned to it"),
    ("        varbit<32> n = hdr.len.a;", 31, "cannot assign bit<8> to varbit<32>: only a "
     "varbit<32> field can be assigned to it"),
]


@pytest.mark.parametrize(("added", "col", "reason"), BAD)
def test_bad_varbit_locals_give_exact_locations(tmp_path: Path, added: str, col: int,
                                                reason: str) -> None:
    text = PROGRAM.read_text()
    line = next(n for n, s in enumerate(text.splitlines(), 1) if s == ANCHOR) + 1
    error = compile_error(text.replace(ANCHOR, ANCHOR + "\n" + added), tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)
