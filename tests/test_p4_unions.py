"""header_union (P4_16 8.20, dplab/p4/unions.py) through the real switch: which member is
valid after extract, setValid, setInvalid and assignment, seen in the emitted bytes and in
the program's sel.seen byte (tests/p4/header_union.p4); a stack of unions filled by
`extract(us.next.m)` (tests/p4/union_stack.p4); bad programs refused with their place."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import assert_edit_fails_at

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "header_union.p4"
STACK = ROOT / "tests" / "p4" / "union_stack.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(100, 143))   # after eth + sel: frames of at least 60 bytes

# (sel.kind, sel.op, union bytes in) -> (sel.seen, union bytes out), worked out from 8.20
# (invalidating a member as BMv2 does: dplab/p4/unions.py);
# seen: bit 0 u valid after parsing, bit 1 u.one, bit 2 u.two, bit 4 u valid at the end
CASES = {
    "one extracted, widened to two by setValid": ((1, 1, b"\x42"), (0x13, b"\x01\x42")),
    "two extracted, a valid header assigned to one": ((2, 2, b"\xab\xcd"), (0x15, b"\x77")),
    "two extracted, setInvalid of one: two kept": ((2, 3, b"\xab\xcd"),
                                                    (0x15, b"\xab\xcd")),
    "one extracted, setInvalid of one": ((1, 3, b"\x42"), (0x03, b"")),
    "one then two extracted: two left": ((3, 0, b"\x11\x22\x33"), (0x15, b"\x22\x33")),
    "an invalid header assigned to one: two kept": ((3, 4, b"\x11\x22\x33"),
                                                    (0x15, b"\x22\x33")),
    "an invalid header assigned to one that was valid": ((1, 4, b"\x42"), (0x03, b"")),
    "copied to a local and back by an action": ((1, 5, b"\x42"), (0x13, b"\x42")),
    "no member extracted": ((0, 0, b""), (0x00, b"")),
}


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "header_union")


@pytest.mark.net
def test_union_members_through_the_switch(ir_dir: Path) -> None:
    frames = {name: ETH + bytes([kind, op, 0]) + union + REST
              for name, ((kind, op, union), _) in CASES.items()}
    got = outputs(PROGRAM, ir_dir, 2, frames)
    want = {name: {2: [ETH + bytes([kind, op, seen]) + union + REST]}
            for name, ((kind, op, _), (seen, union)) in CASES.items()}
    assert got == want


# sel.kind -> the union bytes in, and sel.seen (bit 0: us[0] valid, 1: us[0].one, 2: us[1]
# valid, 3: us[1].two, 7: StackOutOfBounds); the bytes go out as they came in
STACK_CASES = {
    "one, one": (1, b"\x41\x42", 0x07),
    "one, two": (2, b"\x41\xb0\xb1", 0x0F),
    "two, one": (3, b"\xa0\xa1\x42", 0x05),
    "a third element: out of bounds": (4, b"\x41\x42\x43", 0x87),
    "none": (0, b"", 0x00),
}


@pytest.mark.net
def test_union_stack_through_the_switch(ir_dir: Path) -> None:
    frames = {name: ETH + bytes([kind, 0]) + union + REST
              for name, (kind, union, _) in STACK_CASES.items()}
    got = outputs(STACK, ir_dir, 2, frames)
    assert got == {name: {2: [ETH + bytes([kind, seen]) + union + REST]}
                   for name, (kind, union, seen) in STACK_CASES.items()}


# (program, text, its replacement, where in the replacement the error points, the reason)
BAD = [
    (PROGRAM, "    two_t two;\n}", "    bit<8> two;\n}", "bit", "header_union u_t: member two "
     "must be a header, not bit<8>"),
    (PROGRAM, "hdr.u.one.setInvalid();", "hdr.u.setInvalid();", ".setInvalid", "u_t has no "
     "field 'setInvalid'"),
    (PROGRAM, "hdr.u.one.setInvalid();", "hdr.u.isValid();", ".isValid", "isValid() result "
     "is unused"),
    (STACK, "standard_metadata.egress_spec = 2;", "hdr.us.next.one.x = 1;", ".next",
     "'.next' of a stack of header unions is only allowed in a parser"),
    (STACK, "hdr.us[1].two.isValid()", "hdr.us[2].two.isValid()", "2", "index 2 is outside "
     "the stack (size 2)"),
    (STACK, "packet.extract(hdr.us.next.two);\n        transition accept;",
     "packet.extract(hdr.us.next.three);\n        transition accept;", ".three",
     "header_union u_t has no member 'three'"),
]


@pytest.mark.parametrize(("program", "old", "new", "at", "reason"), BAD)
def test_bad_unions_give_exact_locations(tmp_path: Path, program: Path, old: str, new: str,
                                         at: str, reason: str) -> None:
    assert_edit_fails_at(program.read_text(), old, new, at, reason, tmp_path)
