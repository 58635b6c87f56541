"""tuple<...> types and list expressions as arguments (P4_16 7.2.8, 8.12;
dplab/p4/tuples.py) through the real switch (tests/p4/lists.p4: a tuple local indexed and
written, lists for tuple, struct and header `in` parameters of functions and an action, a
nested list), and bad programs refused with their place."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import assert_edit_fails_at

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "lists.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(100, 138))   # after eth + tag: 60-byte frames

# tag a, b, c (2 bytes), d, e, f, g in -> out, worked out from the program's comments
CASES = {
    "plain": (bytes([0x10, 0x20, 0x12, 0x34, 0x40, 0x50, 0xF0, 0x0A]),
              bytes([0x34, 0x23, 0x00, 0x11, 0x50, 0x40, 0xF5, 0x14])),
    "wrap-arounds": (bytes([0xFF, 0xFE, 0xAB, 0xCD, 0x01, 0x02, 0x00, 0x00]),
                     bytes([0xCD, 0x01, 0x00, 0x00, 0x02, 0x01, 0x0F, 0x00])),
}


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "lists")


@pytest.mark.net
def test_tuples_and_list_arguments_through_the_switch(ir_dir: Path) -> None:
    frames = {name: ETH + tag_in + REST for name, (tag_in, _) in CASES.items()}
    got = outputs(PROGRAM, ir_dir, 2, frames)
    assert got == {name: {2: [ETH + tag_out + REST]} for name, (_, tag_out) in CASES.items()}


# (text, its replacement, where in the replacement the error points, the reason)
BAD = [
    ("t[1][7:0]", "t[2][7:0]", "2", "index 2 is outside tuple<bit<8>, bit<16>>"),
    ("t[1][7:0]", "t[hdr.tag.g][7:0]", ".g", "a tuple index must be a compile-time "
     "constant"),
    ("sum({hdr.tag.b, 3})", "sum({hdr.tag.b, 3, 4})", "{", "tuple<bit<8>, bit<8>> has 2 "
     "scalar field(s), the list 3"),
    ("set_pair({hdr.tag.e, hdr.tag.d})", "set_pair({hdr.tag.e, hdr.tag.c})", ".c}",
     "pair_t field y is bit<8>, the item is bit<16>"),
    ("t[0] = t[0] + 1;", "digest<tuple<bit<8>>>(1, {hdr.tag.a, hdr.tag.b});", "<tuple",
     "the digest data does not match tuple<bit<8>>"),
]


@pytest.mark.parametrize(("old", "new", "at", "reason"), BAD)
def test_bad_lists_give_exact_locations(tmp_path: Path, old: str, new: str, at: str,
                                        reason: str) -> None:
    assert_edit_fails_at(PROGRAM.read_text(), old, new, at, reason, tmp_path)
