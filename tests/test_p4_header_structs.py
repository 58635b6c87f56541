"""Struct-typed header fields (dplab/p4/header_structs.py): the flattened layout, the bytes
tests/p4/header_structs.p4 writes through the real switch, and bad programs."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import compile_error, compiled

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "header_structs.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(40))

# rec_t bytes: kind, a (hi, lo nibbles), b.v, b.p (hi, lo), tail (16 bits)
CASES = {
    # a.hi = a.lo; b.p swapped; b.v = b.p as it was; a.lo 5 hits by_lo: tail 0xabcd
    "hit": (bytes.fromhex("11 35 77 9c 0102"), bytes.fromhex("11 55 9c c9 abcd")),
    "miss": (bytes.fromhex("00 12 00 0f beef"), bytes.fromhex("00 22 0f f0 beef")),
}


def test_struct_fields_flatten_in_wire_order(tmp_path: Path) -> None:
    ir, _ = compiled(PROGRAM, tmp_path)
    rec = next(i for i in ir["instances"] if i["name"] == "hdr.rec")
    assert [(f["name"], f["w"], f["offset"]) for f in rec["fields"]] == [
        ("kind", 8, 0), ("a.hi", 4, 8), ("a.lo", 4, 12), ("b.v", 8, 16), ("b.p.hi", 4, 24),
        ("b.p.lo", 4, 28), ("tail", 16, 32)]


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "header_structs")


@pytest.mark.net
def test_header_structs_packets(ir_dir: Path) -> None:
    got = outputs(PROGRAM, ir_dir, 2, {name: ETH + rec + REST
                                       for name, (rec, _) in CASES.items()})
    assert got == {name: {2: [ETH + out + REST]} for name, (_, out) in CASES.items()}


BAD = [
    ("struct pair_t {", "header pair_t {", "pair_t a;", "pair_t", "header fields must be "
     "bit<W>, int<W>, bool, an enum or a struct of them, not header pair_t"),
    ("hdr.rec.a.hi = hdr.rec.a.lo;", "hdr.rec.a.mid = hdr.rec.a.lo;", "hdr.rec.a.mid",
     ".mid", "pair_t has no field 'mid'"),
]


@pytest.mark.parametrize(("old", "new", "line_text", "at", "reason"), BAD)
def test_bad_header_structs(tmp_path: Path, old: str, new: str, line_text: str, at: str,
                            reason: str) -> None:
    text = PROGRAM.read_text().replace(old, new, 1)
    lines = text.splitlines()
    line = next(i for i, s in enumerate(lines, 1) if line_text in s)
    col = lines[line - 1].index(line_text) + line_text.index(at) + 1
    error = compile_error(text, tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)
