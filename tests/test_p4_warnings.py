"""Compiler warnings: where p4c warns (unused tables and instances, shadowing, entry
priorities per P4_16 1.2.4 "Entry priorities"), the program still compiles and each warning
names its exact place."""

from pathlib import Path

import pytest
from test_p4_compiler import compile_error

from dplab.p4.cli import compile_command
from dplab.p4.compiler import compile_with_warnings

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct meta_t { bit<8> kind; }
struct headers { eth_t eth; }
parser P(packet_in p, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { p.extract(hdr.eth); transition accept; }
}
control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.eth); } }
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(32w4, CounterType.packets) hits;
    @noWarn("unused") counter(32w4, CounterType.packets) spare;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action mark(bit<8> meta) { }
    table spare_table { key = { hdr.eth.dst: exact; } actions = { fwd; } }
    table acl {
        key = { hdr.eth.etype: ternary; }
        actions = { fwd; mark; }
        const entries = {
            16w0x0800 &&& 16w0xffff: fwd(9w1);
        }
    }
    table classify {
        key = { hdr.eth.etype: ternary; }
        actions = { fwd; }
        entries = {
            priority = 10: 16w0x0800 &&& 16w0xffff: fwd(9w1);
            priority = 20: 16w0x86dd &&& 16w0xffff: fwd(9w2);
            priority = 20: 16w0x0806 &&& 16w0xffff: fwd(9w3);
        }
    }
    apply { acl.apply(); classify.apply(); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def warnings_of(text: str, tmp_path: Path) -> list[tuple[int, int, str]]:
    path = tmp_path / "prog.p4"
    path.write_text(text)
    _, found = compile_with_warnings(path)
    assert all(w.loc.file == str(path) for w in found)
    return [(w.loc.line, w.loc.col, w.reason) for w in found]


def test_each_warning_at_its_place(tmp_path: Path) -> None:
    found = warnings_of(PROGRAM, tmp_path)
    places = [(line, col) for line, col, _ in found]
    assert places == [(14, 40), (17, 24), (18, 11), (31, 13), (32, 13)]
    reasons = [reason for _, _, reason in found]
    assert "counter hits is never used" in reasons[0]
    assert "parameter 'meta' shadows" in reasons[1]
    assert "table spare_table is never applied" in reasons[2]
    assert "(priority 20)" in reasons[3] and "out of priority order" in reasons[3]
    assert "the one on line 31 have the same priority 20" in reasons[4]


def test_a_clean_program_has_no_warnings(tmp_path: Path) -> None:
    clean = PROGRAM.replace("    counter(32w4, CounterType.packets) hits;\n", "") \
        .replace("action mark(bit<8> meta)", "action mark(bit<8> kind)") \
        .replace("apply { acl.apply();", "apply { spare_table.apply(); acl.apply();") \
        .replace("priority = 10:", "priority = 30:").replace(
            "priority = 20: 16w0x0806", "priority = 5: 16w0x0806")
    assert warnings_of(clean, tmp_path) == []


# the added property line moves the entries one line down
@pytest.mark.parametrize(("largest_wins", "expected"), [("true", []),
                                                        ("false", [(32, 13), (33, 13)])])
def test_order_follows_largest_priority_wins(tmp_path: Path, largest_wins: str,
                                            expected: list) -> None:
    text = PROGRAM.replace("priority = 10:", "priority = 30:").replace(
        "priority = 20: 16w0x0806", "priority = 5: 16w0x0806").replace(
        "actions = { fwd; }\n        entries", f"actions = {{ fwd; }}\n        "
        f"largest_priority_wins = {largest_wins};\n        entries")
    found = [(line, col) for line, col, reason in warnings_of(text, tmp_path)
             if "priority" in reason]
    assert found == expected


def test_compile_command_prints_warnings_and_still_writes(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "prog.p4"
    path.write_text(PROGRAM)
    files = compile_command(path, tmp_path / "out")
    assert files["ir"].stat().st_size > 0 and files["p4info_bin"].stat().st_size > 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5
    assert lines[0].startswith(f"{path}:14:40: warning: counter hits is never used")


# p4c's ResolveReferences::checkShadowing (frontends/common/resolveReferences): in any block
# (also `apply` and action bodies) a declaration that hides a name in scope is a warning;
# one named like a parameter of its parser, control or action is an error.
SHADOWS = PROGRAM.replace(
    "    apply { acl.apply(); classify.apply(); }",
    """    apply {
        bit<8> acl = 8w1;
        const bit<8> fwd = 8w2;
        {
            bit<8> acl = 8w3;
            meta.kind = acl + fwd;
        }
        classify.apply();
    }""").replace("table acl {", "table acl_table {")


def test_declarations_in_apply_that_shadow_warn(tmp_path: Path) -> None:
    found = [(line, col, reason) for line, col, reason in warnings_of(SHADOWS, tmp_path)
             if "shadows" in reason]
    assert [(line, col) for line, col, _ in found] == [(17, 24), (37, 22), (39, 20)]
    assert "const 'fwd' shadows" in found[1][2]  # the action fwd
    assert "var 'acl' shadows" in found[2][2]    # the variable of the enclosing block


@pytest.mark.parametrize(("old", "new", "line", "col"), [
    ("bit<8> acl = 8w1;", "bit<8> hdr = 8w1;", 36, 16),                 # control parameter
    ("const bit<8> fwd = 8w2;", "const bit<8> sm = 8w2;", 37, 22),      # control parameter
    ("{ sm.egress_spec = port; }", "{ bit<9> port2 = port; bit<9> port = 1; }", 16, 59),
    ("counter(32w4, CounterType.packets) hits;", "counter(32w4, CounterType.packets) meta;",
     14, 40),                                                          # instance
])
def test_a_declaration_shadowing_a_parameter_is_an_error(tmp_path: Path, old: str, new: str,
                                                         line: int, col: int) -> None:
    assert old in SHADOWS
    err = compile_error(SHADOWS.replace(old, new), tmp_path)
    assert (err.line, err.col) == (line, col)
    assert "shadows a parameter" in err.reason
