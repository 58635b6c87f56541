"""Headers in the metadata struct (docs/p4-ir.md §3): header instances that start each
packet invalid and are never emitted, through tests/p4/meta_headers.p4 in the real switch,
and the places where they stay refused."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import compile_error, compiled

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "meta_headers.p4"
MACS = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01")
REST = bytes(range(40))


def test_metadata_headers_are_header_instances(tmp_path: Path) -> None:
    ir, _ = compiled(PROGRAM, tmp_path)
    kinds = {i["name"]: (i["kind"], [f["name"] for f in i["fields"]]) for i in ir["instances"]}
    assert kinds["meta"] == ("metadata", ["n", "inner.n"])
    assert kinds["meta.inner.h"] == ("header", ["op", "val"])
    assert kinds["meta.saved"] == ("header", ["op", "val"])


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "meta_headers")


@pytest.mark.net
def test_metadata_headers_packets(ir_dir: Path) -> None:
    tagged = MACS + b"\x88\xb5" + bytes([1, 5]) + REST
    plain = MACS + b"\x08\x00" + REST
    got = outputs(PROGRAM, ir_dir, 2, {"tagged": tagged, "plain": plain})
    # the tag went through meta.saved (extracted there, so not in the output by itself)
    # into hdr.tag (val + 1) and meta.inner.h (the egress sets op + 0x10 from it)
    assert got == {"tagged": {2: [MACS + b"\x88\xb5" + bytes([0x11, 6]) + REST]},
                   "plain": {2: [MACS + b"\x00\x01" + REST]}}


ANCHOR = "struct meta_t { bit<8> n; inner_t inner; tag_t saved; }"
BAD = [
    ("header vb_t { varbit<16> x; }\nstruct meta_t { bit<8> n; inner_t inner; vb_t saved; }",
     47, "metadata field saved of header type vb_t, which has a varbit field, is not "
     "supported"),
    ("struct meta_t { bit<8> n; inner_t inner; tag_t[2] saved; }", 51,
     "metadata field saved of meta_t must be bit<W>, bool, a header or a struct of them: "
     "tag_t[2] in metadata is not supported"),
]


@pytest.mark.parametrize(("replacement", "col", "reason"), BAD)
def test_bad_metadata_headers_give_exact_locations(tmp_path: Path, replacement: str,
                                                   col: int, reason: str) -> None:
    text = PROGRAM.read_text()
    line = next(n for n, s in enumerate(text.splitlines(), 1) if s == ANCHOR)
    line += replacement.count("\n")
    error = compile_error(text.replace(ANCHOR, replacement), tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)
