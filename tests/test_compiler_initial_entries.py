"""Initial table entries (P4_16 `entries` / `const entries`): the compiler keeps them in the
IR, each marked `const` when the program says so, and its P4Info says what P4Runtime 1.5
prescribes (spec 9.1.4 "Constant Tables", 9.1.5 "Preinitialized tables": `is_const_table`
only for `const entries`, `has_initial_entries` for a non-empty list of either kind)."""

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4runtime_rig import ethernet_program
from test_p4_compiler import compiled as compiled_file

from dplab.p4 import P4Error

TABLES = """
    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    table preset {
        key = { hdr.ethernet.dst: exact; }
        actions = { forward; NoAction; }
        entries = {
            0x000000000001 : forward(1);
            const 0x000000000002 : forward(2);
        }
    }
    table fixed {
        key = { hdr.ethernet.src: ternary; }
        actions = { forward; NoAction; }
        const entries = { 0x000000000001 &&& 0xffffffffffff : forward(3); _ : forward(4); }
    }
    table empty_list {
        key = { hdr.ethernet.ether_type: exact; }
        actions = { forward; NoAction; }
        entries = { }
    }
    table plain {
        key = { hdr.ethernet.ether_type: exact; }
        actions = { forward; NoAction; }
    }
    apply { preset.apply(); fixed.apply(); empty_list.apply(); plain.apply(); }
"""


def compiled(source: str, tmp_path: Path) -> tuple[dict, p4info_pb2.P4Info]:
    path = tmp_path / "initial.p4"
    path.write_text(ethernet_program("In", "bit<1> unused;", source))
    return compiled_file(path, tmp_path)


def test_initial_entries_reach_the_ir_and_the_p4info(tmp_path: Path) -> None:
    ir, info = compiled(TABLES, tmp_path)
    tables = {t["name"].split(".")[-1]: t for t in ir["tables"]}
    preset = tables["preset"]
    assert preset["is_const"] is False
    assert [e["matches"][0]["v"] for e in preset["const_entries"]] == ["0x1", "0x2"]
    assert [e.get("const", False) for e in preset["const_entries"]] == [False, True]
    assert tables["fixed"]["is_const"] is True
    assert [e["priority"] for e in tables["fixed"]["const_entries"]] == [2, 1]
    flags = {t.preamble.name.split(".")[-1]: (t.is_const_table, t.has_initial_entries)
             for t in info.tables}
    assert flags == {"preset": (False, True), "fixed": (True, True),
                     "empty_list": (False, False), "plain": (False, False)}


def test_a_const_mark_needs_an_entry_after_it(tmp_path: Path) -> None:
    bad = TABLES.replace("const 0x000000000002 : forward(2);", "const : forward(2);")
    with pytest.raises(P4Error) as failed:
        compiled(bad, tmp_path)
    lines = (tmp_path / "initial.p4").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, start=1) if "const : forward" in text)
    column = lines[line - 1].index(":") + 1
    assert (failed.value.loc.line, failed.value.loc.col) == (line, column)
    assert failed.value.reason == "expected an expression, found ':'"
