"""The P4 compiler: accepted programs give the expected IR and P4Info; bad ones exact errors."""

import contextlib
import json
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from switch_rig import P4C_REWRITES

from dplab.p4 import P4Error
from dplab.p4.cli import compile_command

ROOT = Path(__file__).resolve().parents[1]
BASIC = ROOT / "tests" / "p4" / "dst_mac_fwd.p4"
FEATURES = ROOT / "tests" / "data" / "p4" / "features.p4"


def compiled(path: Path, tmp_path: Path) -> tuple[dict, p4info_pb2.P4Info]:
    files = compile_command(path, tmp_path)
    ir = json.loads(files["ir"].read_text())
    info = p4info_pb2.P4Info()
    info.ParseFromString(files["p4info_bin"].read_bytes())
    text = text_format.Parse(files["p4info_txt"].read_text(), p4info_pb2.P4Info())
    assert text == info
    return ir, info


def compile_error(text: str, tmp_path: Path) -> P4Error:
    """The error compiling ``text`` (written to tmp_path/bad.p4) raises."""
    path = tmp_path / "bad.p4"
    path.write_text(text)
    with pytest.raises(P4Error) as info:
        compile_command(path, tmp_path / "out")
    return info.value


def assert_edit_fails_at(text: str, old: str, new: str, at: str, reason: str,
                         tmp_path: Path) -> None:
    """``text`` with its first ``old`` replaced by ``new`` fails to compile with ``reason``,
    located where ``at`` (a part of ``new``) lands: line and column."""
    edited = text.replace(old, new, 1)
    start = text.index(old) + new.index(at)
    line, col = edited.count("\n", 0, start) + 1, start - edited.rfind("\n", 0, start)
    error = compile_error(edited, tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)


def test_dst_mac_fwd_ir_and_p4info(tmp_path: Path) -> None:
    ir, info = compiled(BASIC, tmp_path)
    assert ir["instances"][0]["name"] == "standard_metadata"
    names = [i["name"] for i in ir["instances"]]
    assert names[1:5] == ["hdr.packet_out", "hdr.packet_in", "hdr.ethernet", "hdr.ipv4"]
    assert ir["instances"][4]["bits"] == 160
    table = ir["tables"][0]
    assert table["name"] == "BasicIngress.mac_exact" and table["size"] == 4096
    assert table["keys"][0]["match"] == "exact" and table["keys"][0]["w"] == 48
    assert ir["actions"][table["default_action"]["action"]]["name"] == "BasicIngress.send_to_cpu"
    assert ir["deparser"]["emit"] == [2, 3, 4]
    assert set(ir["controller_headers"]) == {"packet_in", "packet_out"}
    assert [t.preamble.name for t in info.tables] == ["BasicIngress.mac_exact"]
    assert info.tables[0].preamble.id >> 24 == 0x02
    assert info.tables[0].preamble.id == table["id"]
    forward = next(a for a in info.actions if a.preamble.name == "BasicIngress.forward")
    assert [(p.id, p.name, p.bitwidth) for p in forward.params] == [(1, "port", 9)]
    meta = {m.preamble.name: [(f.name, f.bitwidth) for f in m.metadata]
            for m in info.controller_packet_metadata}
    assert meta["packet_in"][0] == ("ingress_port", 9)
    assert meta["packet_out"][0] == ("egress_port", 9)


def test_parser_select_of_dst_mac_fwd(tmp_path: Path) -> None:
    ir, _ = compiled(BASIC, tmp_path)
    states = ir["parser"]["states"]
    start = states[ir["parser"]["start"]]
    assert start["transition"]["cases"][0]["sets"] == [{"kind": "exact", "v": "0xff"}]
    eth = next(s for s in states if s["name"] == "parse_ethernet")
    assert eth["body"] == [{"kind": "extract", "inst": 3}]
    assert eth["transition"]["cases"][-1]["next"] == -1


def test_features_program(tmp_path: Path) -> None:
    ir, info = compiled(FEATURES, tmp_path)
    tables = {t["name"]: t for t in ir["tables"]}
    acl = tables["I.acl"]
    assert [k["match"] for k in acl["keys"]] == ["ternary", "range", "optional"]
    assert acl["const_entries"][0]["matches"][0] == {"kind": "ternary", "v": "0xa000000",
                                                     "m": "0xff000000"}
    assert acl["const_entries"][0]["priority"] > acl["const_entries"][1]["priority"]
    assert tables["I.routes"]["direct_counter"] == 0
    assert tables["I.smac"]["default_action"]["const"] is True
    assert ir["stacks"][0]["size"] == 3 and ir["errors"][7] == "BadVersion"
    assert ir["field_lists"]["1"]
    assert {r.preamble.name for r in info.registers} == {"I.last_seen"}
    assert info.digests[0].type_spec.struct.name == "learn_t"
    assert info.direct_counters[0].direct_table_id == tables["I.routes"]["id"]
    kinds = json.dumps(ir["controls"])
    for kind in ("hit_dest", "switch", "meter_execute", "register_write", "hash", "clone",
                 "recirculate", "log", "stack_pop", "update_checksum", "counter_count"):
        assert kind in kinds


BAD = [
    ("header h_t { bit<7> a; }", 1, 1, "whole number of bytes"),
    ("const bit<8> X = 300;", 1, 18, "does not fit"),
    ("const bit<8> X = 8w1 + 16w1;", 1, 22, "one type"),
    ("const bit<8> X = Y;", 1, 18, "'Y' is not declared"),
    ("typedef varbit<4000> v_t;", 1, 9, "width 4000 is outside 1..2048 bits"),
    ("const bit<8> X = 1\nconst bit<8> Y = 2;", 2, 1, "expected ';'"),
]


@pytest.mark.parametrize(("source", "line", "col", "reason"), BAD)
def test_bad_programs_give_exact_locations(tmp_path: Path, source: str, line: int,
                                           col: int, reason: str) -> None:
    error = compile_error(source + "\n", tmp_path)
    assert (error.line, error.col) == (line, col)
    assert reason in error.reason
    assert error.file == str(tmp_path / "bad.p4")


def test_error_inside_the_pipeline_points_at_the_statement(tmp_path: Path) -> None:
    text = BASIC.read_text().replace("standard_metadata.mcast_grp = 1;",
                                     "standard_metadata.mcast_grp = hdr.ipv4.ttl;")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "mcast_grp = hdr" in s)
    error = compile_error(text, tmp_path)
    assert error.line == line
    assert "cannot assign bit<8> to bit<16>" in error.reason


def test_garbled_programs_never_crash(tmp_path: Path) -> None:
    """Truncated and garbled versions of a good program give P4Error, never a traceback."""
    text = BASIC.read_text()
    path = tmp_path / "g.p4"
    variants = [text[:n] for n in range(0, len(text), 97)]
    variants += [text[:n] + "}{;)(" + text[n + 5:] for n in range(0, len(text), 131)]
    for variant in variants:
        path.write_text(variant)
        with contextlib.suppress(P4Error):
            compile_command(path, tmp_path / "out")


DIR_PARAMS = ROOT / "tests" / "p4" / "dir_params.p4"


def test_directional_parameters_specialise_the_action_per_binding(tmp_path: Path) -> None:
    ir, info = compiled(DIR_PARAMS, tmp_path)
    fields = {i["name"]: n for n, i in enumerate(ir["instances"])}
    tag, meta = fields["hdr.tag"], fields["meta"]
    add_to = [a for a in ir["actions"] if a["name"] == "DirIngress.add_to"]
    assert len(add_to) == 2 and add_to[0]["id"] == add_to[1]["id"]   # table + direct call
    adder = next(t for t in ir["tables"] if t["name"] == "DirIngress.adder")
    bound = ir["actions"][adder["actions"][0]["action"]]
    assert bound["params"] == [{"name": "extra", "w": 8, "id": 1}]
    copy_in, _, write = bound["body"]
    assert copy_in["src"] == {"op": "field", "w": 8, "inst": tag, "field": 1}   # in: hdr.tag.b
    assert write["dst"] == {"inst": tag, "field": 0}                            # inout: hdr.tag.a
    marker = next(t for t in ir["tables"] if t["name"] == "DirIngress.marker")
    assert marker["default_action"]["args"] == ["0x33"]
    assert ir["actions"][marker["default_action"]["action"]]["body"][0]["dst"] == \
        {"inst": meta, "field": 0}
    calls = [s for s in ir["controls"]["ingress"]["body"] if s["kind"] == "call"]
    assert ir["actions"][calls[0]["action"]]["body"][0]["dst"] == {"inst": 0, "field": 1}
    assert calls[1]["action"] == ir["actions"].index(add_to[1])
    actions = {a.preamble.name: [(p.id, p.name) for p in a.params] for a in info.actions}
    assert [a.preamble.name for a in info.actions].count("DirIngress.add_to") == 1
    assert actions["DirIngress.add_to"] == [(1, "extra")]
    assert actions["set_port"] == [(1, "v")] and actions["DirIngress.swap_macs"] == []


TERNARY2 = P4C_REWRITES / "ternary2.p4"


def test_one_action_bound_differently_in_each_table(tmp_path: Path) -> None:
    """ternary2's setbyte(out reg, val): four tables bind `reg` to four fields.
    One IR action per binding, all under setbyte's one P4Info id; each table lists its own."""
    ir, info = compiled(TERNARY2, tmp_path)
    instances = {inst["name"]: i for i, inst in enumerate(ir["instances"])}
    tables = {t["name"]: t for t in ir["tables"]}
    written = {}
    for table, field in (("ex1", ("hdrs.extra[0]", 1)), ("tbl1", ("hdrs.data", 4)),
                         ("tbl2", ("hdrs.extra[1]", 1)), ("tbl3", ("hdrs.extra[2]", 2))):
        [setbyte] = [ir["actions"][a["action"]] for a in tables[f"ingress.{table}"]["actions"]
                     if ir["actions"][a["action"]]["name"] == "ingress.setbyte"]
        [write] = setbyte["body"]
        assert write["dst"] == {"inst": instances[field[0]], "field": field[1]}
        assert setbyte["params"] == [{"name": "val", "w": 8, "id": 1}]
        written[table] = setbyte["id"]
    [p4_setbyte] = [a for a in info.actions if a.preamble.name == "ingress.setbyte"]
    assert set(written.values()) == {p4_setbyte.preamble.id}
    assert [(p.id, p.name) for p in p4_setbyte.params] == [(1, "val")]


DIR_BAD = [
    ("action mark(out bit<8> dst, bit<8> v) {",
     "action mark(bit<8> v, out bit<8> dst) {", "dst) {", "follows an action-data"),
    ("add_to(meta.x, 1, 0);", "add_to(8w7, 1, 0);", "8w7", "must be an l-value"),
    ("add_to(hdr.tag.a, hdr.tag.b);", "add_to(hdr.tag.a);", "add_to(hdr.tag.a);",
     "binds exactly those, found 1"),
    ("mark(meta.x);\n", "mark;\n", "mark;", "binds exactly those, found 0"),
    ("default_action = mark(meta.x, 0x33);", "default_action = mark(hdr.tag.d, 0x33);",
     "mark(hdr.tag.d", "is not in the actions of table"),
    ("NoAction;\n", "NoAction;\n            add_to(hdr.tag.d, hdr.tag.b);\n",
     "add_to(hdr.tag.d", "is listed twice in the actions of table DirIngress.adder"),
]


@pytest.mark.parametrize(("old", "new", "at", "reason"), DIR_BAD)
def test_bad_directional_bindings_give_exact_locations(tmp_path: Path, old: str, new: str,
                                                       at: str, reason: str) -> None:
    text = DIR_PARAMS.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if at in s)
    error = compile_error(text, tmp_path)
    assert reason in error.reason
    assert (error.line, error.col) == (line, text.splitlines()[line - 1].index(at) + 1)
