"""Controls and parsers instantiated inside controls and parsers (dplab/p4/sub_parsers.py,
Compiler.inline_control, dplab/p4/sub_controls.py) through the real switch: a control
holding a table, actions and a register instantiated twice (tests/p4/sub_controls.p4: each
instance its own objects, named under its instance path as p4c names them), one instance
of it applied four times (tests/p4/reapply.p4: one set of objects) and a parser applied
from two states
(tests/p4/sub_parsers.p4: its accept goes on in the caller, its reject rejects); bad
programs refused with their place."""

from pathlib import Path

import pytest
from switch_rig import ir_folder, mac, outputs
from test_p4_compiler import assert_edit_fails_at, compiled

ROOT = Path(__file__).resolve().parents[1]
CONTROLS = ROOT / "tests" / "p4" / "sub_controls.p4"
PARSERS = ROOT / "tests" / "p4" / "sub_parsers.p4"
REAPPLY = ROOT / "tests" / "p4" / "reapply.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
REST = bytes(range(100, 142))


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "sub_blocks")


def test_sub_control_objects_are_named_by_instance_path(tmp_path: Path) -> None:
    ir, _ = compiled(CONTROLS, tmp_path)
    assert [t["name"] for t in ir["tables"]] == ["Ingress.first.t", "Ingress.second.t"]
    assert [a["name"] for a in ir["actions"]] == [
        "Ingress.first.set", "Ingress.first.miss", "Ingress.second.set", "Ingress.second.miss"]
    assert [r["name"] for r in ir["registers"]] == ["Ingress.first.last",
                                                    "Ingress.second.last"]


def test_an_instance_applied_again_shares_its_objects(tmp_path: Path) -> None:
    ir, _ = compiled(REAPPLY, tmp_path)
    assert [t["name"] for t in ir["tables"]] == ["ReIngress.counter.t"]
    assert [r["name"] for r in ir["registers"]] == ["ReIngress.counter.calls"]
    body = ir["controls"]["ingress"]["body"]
    assert [s["table"] for s in body if s["kind"] == "apply"] == [0, 0, 0, 0]


@pytest.mark.net
def test_sub_controls_and_sub_parsers_through_the_switch(ir_dir: Path) -> None:
    # tag a, b in; c, d: each instance's table result for its key (0xee: a miss); e, f:
    # each instance's register, the result it kept from the packet before
    controls = {"keys 1, 2": bytes([1, 2, 0, 0, 0, 0]),
                "keys 2, 9, after": bytes([2, 9, 0, 0, 0, 0])}
    got = outputs(CONTROLS, ir_dir, 2, {n: ETH + tag + REST for n, tag in controls.items()})
    assert got == {"keys 1, 2": {2: [ETH + bytes([1, 2, 0x11, 0x22, 0, 0]) + REST]},
                   "keys 2, 9, after": {2: [ETH + bytes([2, 9, 0x22, 0xEE, 0x11, 0x22]) + REST]}}
    # a and b: a hit adds the entry's value and step, 1 again at each apply (2 + 0x20 + 1,
    # not + 2 after a's hit); c, d, f: the
    # one register, counting the applies of both packets (f: the fourth, then the eighth);
    # e: the loop's two applies, the second a miss on the value the first made
    reapplied = {"hits": ([1, 2, 0, 0, 1, 0], [0x12, 0x23, 0, 1, 0x12, 3]),
                 "after": ([2, 9, 0, 0, 2, 0], [0x23, 9, 4, 5, 0x23, 7])}
    got = outputs(REAPPLY, ir_dir, 2, {n: ETH + bytes(tag) + REST
                                       for n, (tag, _) in reapplied.items()})
    assert got == {n: {2: [ETH + bytes(out) + REST]} for n, (_, out) in reapplied.items()}
    # items (kind, value): kind 0 ends the list, 0xff makes the sub-parser reject
    parsers = {"one item": (b"\x00\x41", b"\x00\x41\x01"),
               "two items": (b"\x01\x41\x00\x42", b"\x01\x41\x00\x42\x02"),
               "first rejected": (b"\xff\x41", b"\xff\x41"),
               "second rejected": (b"\x01\x41\xff\x42", b"\x01\x41\xff\x42")}
    got = outputs(PARSERS, ir_dir, 2, {n: ETH + items + REST
                                       for n, (items, _) in parsers.items()})
    assert got == {n: {2: [ETH + out + REST]} for n, (_, out) in parsers.items()}


# (program, text, its replacement, where in the replacement the error points, the reason)
BAD = [
    (CONTROLS, "Classify() second;", "Classify(3) second;", "Classify", "control "
     "'Classify' takes no constructor arguments"),
    (PARSERS, "items.apply(packet, hdr.second, meta.items);", "items.apply(packet, "
     "hdr.second);", ".apply", "parser ItemParser takes 3 argument(s), found 2"),
    (PARSERS, "items.apply(packet, hdr.second, meta.items);", "items.apply(meta.items, "
     "hdr.second, meta.items);", ".items,", "parameter packet needs the packet_in"),
    (PARSERS, "items.apply(packet, hdr.second, meta.items);", "{ items.apply(packet, hdr.second, "
     "meta.items); }", ".apply", "parser instance "
     "MainParser.items: '.apply' is supported only as 'apply(...)', a statement of its own "
     "in a parser state (not inside an if or a block)"),
    (PARSERS, "parser ItemParser(packet_in packet, out item_t item, inout bit<8> seen) {\n"
     "    state start", "parser ItemParser(packet_in packet, out item_t item, inout bit<8> "
     "seen) {\n    state begin", "parser", "parser ItemParser has no 'start' state"),
]


@pytest.mark.parametrize(("program", "old", "new", "at", "reason"), BAD)
def test_bad_sub_blocks_give_exact_locations(tmp_path: Path, program: Path, old: str,
                                             new: str, at: str, reason: str) -> None:
    assert_edit_fails_at(program.read_text(), old, new, at, reason, tmp_path)
