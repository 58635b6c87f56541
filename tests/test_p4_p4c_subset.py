"""What p4c's testdata programs (testdata/p4_16_samples) found in our compiler: forms p4c
takes that we now take too (deprecated `mark_to_drop()` with p4c's warning, `table t()`,
`digest(1, meta.d)` with its type inferred), and plain errors, at the offending place, for
what stays outside our subset (resubmit with a list of fields, a header stack in metadata,
another architecture's include file)."""

import json
from pathlib import Path

import pytest
from test_p4_compiler import compile_error

from dplab.p4.cli import compile_command
from dplab.p4.compiler import compile_with_warnings

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct digest_t { bit<8> a; }
struct meta_t { digest_t d; META }
struct headers { h_t h; }
parser P(packet_in p, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control Tabled(inout headers hdr) { table u { actions = { } } apply { u.apply(); } }
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    LOCALS
    action drop() { mark_to_drop(); }
    action learn() { meta.d.a = hdr.h.a; digest(1, meta.d); }
    table t() { key = { hdr.h.a: exact; } actions = { drop; learn; } }
    apply { t.apply(); }
}
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control V(inout headers hdr, inout meta_t meta) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def program(locals_: str = "", meta: str = "") -> str:
    return PROGRAM.replace("LOCALS", locals_).replace("META", meta)


def test_p4cs_forms_compile(tmp_path: Path) -> None:
    path = tmp_path / "prog.p4"
    path.write_text(program())
    ir = json.loads(compile_command(path, tmp_path / "out")["ir"].read_text())
    assert [(d["name"], d["fields"]) for d in ir["digests"]] == [("digest_t", [{"name": "a",
                                                                              "w": 8}])]
    _, warnings = compile_with_warnings(path)
    assert [(w.loc.line, w.loc.col) for w in warnings] == [(13, 21)]
    assert warnings[0].reason.startswith("mark_to_drop: Using deprecated feature")


def test_argumentless_mark_to_drop_drops_as_the_other(tmp_path: Path) -> None:
    def drop_body(text: str) -> list:
        path = tmp_path / "prog.p4"
        path.write_text(text)
        ir = json.loads(compile_command(path, tmp_path / "out")["ir"].read_text())
        return next(a["body"] for a in ir["actions"] if a["name"] == "I.drop")

    assert drop_body(program()) == drop_body(program().replace("mark_to_drop()",
                                                                "mark_to_drop(sm)"))


@pytest.mark.parametrize(("text", "line", "col", "reason"), [
    (program().replace("learn; }", "learn; resubmit_it; }").replace(
        "    table t", "    action resubmit_it() { resubmit({hdr.h.a}); }\n    table t"), 15, 37,
     "resubmit with fields to keep is not supported: mark them @field_list(N) and call "
     "resubmit_preserving_field_list(..., N)"),
    (program(meta="h_t[2] stack;"), 5, 36,
     "metadata field stack of meta_t must be bit<W>, bool, a header or a struct of them"),
    ("#include <core.p4>\n#include <psa.p4>\n", 2, 1,
     "architecture psa.p4 is not supported: dplab compiles v1model programs only"),
])
def test_outside_the_subset_says_where_and_what(text: str, line: int, col: int, reason: str,
                                                tmp_path: Path) -> None:
    error = compile_error(text, tmp_path)
    assert (error.loc.line, error.loc.col) == (line, col)
    assert reason in error.reason


def test_sub_control_macro_and_deprecated_resubmit(tmp_path: Path) -> None:
    """v1model-special-ops-bmv2's forms: a function-like macro, a control applied from a
    control (inlined: `in` copied, `out` written through), `resubmit({})` (p4c's warning)."""
    text = program(locals_="Fill() fill;").replace(
        "control Tabled(", "#define IS_TYPE(sm, t) (sm.instance_type == t)\n"
        "control Fill(out bit<8> dst, in bit<8> v) { apply { dst = v + 1; } }\ncontrol Tabled(")
    text = text.replace("apply { t.apply(); }", "apply { if (IS_TYPE(sm, 6)) { "
                        "fill.apply(hdr.h.b, 41); } else { resubmit({}); } }")
    path = tmp_path / "prog.p4"
    path.write_text(text)
    ir = json.loads(compile_command(path, tmp_path / "out")["ir"].read_text())
    ingress = json.dumps(ir["controls"]["ingress"]["body"])
    assert '"kind": "resubmit", "field_list": null' in ingress
    assert '"v": "0x29"' in ingress  # the copied-in 41
    _, warnings = compile_with_warnings(path)
    assert any(w.reason.startswith("resubmit: Using deprecated feature resubmit")
               for w in warnings)


def test_struct_list_assignment(tmp_path: Path) -> None:
    """issue1001-bmv2's `h = {}` generalised: `s = {e1, ...}` sets field i to item i (so `{}`
    of a struct without fields sets nothing); a header from a list also becomes valid
    (P4_16 8.12, as p4c's SetHeaders), and a list of the wrong length is an error."""
    text = program().replace("p.extract(hdr.h);", "p.extract(hdr.h); meta.d = {7};")
    path = tmp_path / "prog.p4"
    path.write_text(text)
    ir = json.loads(compile_command(path, tmp_path / "out")["ir"].read_text())
    body = ir["parser"]["states"][0]["body"]
    assert [s["kind"] for s in body] == ["extract", "assign"]
    assert body[1]["src"] == {"op": "const", "w": 8, "v": "0x7"}
    path.write_text(text.replace("meta.d = {7};", "hdr.h = {1, 2};"))
    ir = json.loads(compile_command(path, tmp_path / "out")["ir"].read_text())
    body = ir["parser"]["states"][0]["body"]
    assert [s["kind"] for s in body] == ["extract", "set_valid", "assign", "assign"]
    assert [s["src"]["v"] for s in body[2:]] == ["0x1", "0x2"]
    error = compile_error(text.replace("meta.d = {7};", "hdr.h = {1, 2, 3};"), tmp_path)
    assert "h_t has 2 field(s), the list 3" in error.reason


def test_meter_colour_macros_are_v1models(tmp_path: Path) -> None:
    """p4c's v1model.p4 names execute_meter's colours V1MODEL_METER_COLOR_GREEN/YELLOW/RED
    (0, 1, 2); programs compare colours with them."""
    colours = ("V1MODEL_METER_COLOR_GREEN", "V1MODEL_METER_COLOR_YELLOW",
               "V1MODEL_METER_COLOR_RED")
    sets = " ".join(f"hdr.h.b = {name};" for name in colours)
    text = program().replace("apply { t.apply(); }", f"apply {{ {sets} }}")
    path = tmp_path / "prog.p4"
    path.write_text(text)
    ir = json.loads(compile_command(path, tmp_path / "out")["ir"].read_text())
    written = [s["src"]["v"] for s in ir["controls"]["ingress"]["body"]]
    assert written == ["0x0", "0x1", "0x2"]
