"""Header stack indices known only at run time (dplab/p4/stack_index.py) and run-time `/`
and `%` (the IR's div/mod): the bytes tests/p4/stack_index_div.p4 gives in the real switch,
worked out here from BMv2's behaviour (p4c's HSIndexSimplifier; StackOutOfBounds in a
parser), and bad programs with their places."""

import struct
from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import compile_error

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "p4" / "stack_index_div.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(20))
STACK = (0x11, 0x22, 0x33)
# (i, j, k, a, b): every index in and past the stack, a zero divisor
INPUTS = [(0, 1, 2, 200, 7), (2, 0, 1, 9, 3), (1, 2, 0, 255, 16), (3, 1, 2, 5, 0),
          (0, 3, 1, 77, 1), (1, 1, 9, 100, 200), (255, 2, 255, 0, 5)]


def frame(i: int, j: int, k: int, a: int, b: int) -> bytes:
    return ETH + bytes([i, j, k, a, b, 0, 0, 0, 0, 0, 0, *STACK]) + REST


def expected(i: int, j: int, k: int, a: int, b: int) -> bytes:
    """The program's effect, statement by statement, with BMv2's rules for an index past
    the stack: a read gives 0, an `if` takes its else, a write does nothing, and in the
    parser the packet is rejected with StackOutOfBounds (and still goes to the ingress)."""
    stack, valid = list(STACK), [True] * 3
    perr, pv = (0, stack[j]) if j < 3 else (1, 0)
    got = stack[i] if i < 3 else 0
    is_valid = 1 if i < 3 else 2
    if j < 3:
        stack[j] = a
    if k < 3:
        valid[k] = False
    q, r = (a // b, a % b) if b else (0, 0)
    ctl = struct.pack("!11B", i, j, k, a, b, got, is_valid, q, r, perr, pv)
    return ETH + ctl + bytes(v for v, ok in zip(stack, valid, strict=True) if ok) + REST


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "stack_index")


@pytest.mark.net
def test_run_time_stack_indices_and_division_packets(ir_dir: Path) -> None:
    got = outputs(PROGRAM, ir_dir, 2, {key: frame(*key) for key in INPUTS})
    assert got == {key: {2: [expected(*key)]} for key in INPUTS}


READ = "        meta.pv = hdr.s[hdr.ctl.j].v;"
APPLY = "        hdr.ctl.q = hdr.ctl.a / hdr.ctl.b;"
BAD = [
    (READ, "        transition select(hdr.s[hdr.ctl.j].v) { 0: accept; default: reject; }",
     "transition accept;", 40, "a header stack index that is not a compile-time constant "
     "is supported only in statements (not in a table key or a select expression)"),
    (APPLY, "        hdr.ctl.q = hdr.ctl.a / 0;", None, 33, "division by zero"),
    (APPLY, "        hdr.ctl.q = (bit<8>)((int<8>)hdr.ctl.a % (int<8>)hdr.ctl.b);", None, 48,
     "'%' is defined only on bit<W> and on integers without width, not on int<8>"),
]


@pytest.mark.parametrize(("anchor", "added", "dropped", "col", "reason"), BAD)
def test_bad_programs_give_exact_locations(tmp_path: Path, anchor: str, added: str,
                                           dropped: str | None, col: int,
                                           reason: str) -> None:
    text = PROGRAM.read_text()
    line = next(n for n, s in enumerate(text.splitlines(), 1) if s == anchor) + 1
    changed = text.replace(anchor, anchor + "\n" + added)
    if dropped:   # the state's own transition, after the added one
        changed = changed.replace(added + "\n        " + dropped, added)
    error = compile_error(changed, tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)
