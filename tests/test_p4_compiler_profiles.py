"""The compiler's action profiles and selectors: IR, P4Info (as p4c writes them for v1model)
and exact error locations for their misuses."""

from pathlib import Path

import pytest
from switch_rig import P4C_REWRITES
from test_p4_compiler import compile_error, compiled

from dplab.p4.compiler import compile_with_warnings

ECMP = Path(__file__).resolve().parent / "p4" / "ecmp_selector.p4"


def test_selector_and_profile_in_ir_and_p4info(tmp_path: Path) -> None:
    ir, info = compiled(ECMP, tmp_path)
    tables = {t["name"]: t for t in ir["tables"]}
    ecmp, l2 = tables["EcmpIngress.ecmp"], tables["EcmpIngress.l2"]
    selector = ir["action_profiles"][ecmp["implementation"]]
    # an inline selector is named after its table, as p4c does
    assert selector["name"] == "EcmpIngress.ecmp"
    assert selector["selector"] == {"algo": "crc16", "output_width": 14,
                                    "size_semantics": None, "max_member_weight": 0}
    assert selector["size"] == 1024 and selector["id"] >> 24 == 0x11
    assert [k["name"] for k in ecmp["keys"]] == ["hdr.ipv4.dst"]   # selector keys apart
    assert [k["name"] for k in ecmp["selector_keys"]] == [
        "hdr.ipv4.src", "hdr.ipv4.dst", "hdr.ipv4.protocol", "hdr.ports.src", "hdr.ports.dst"]
    profile = ir["action_profiles"][l2["implementation"]]
    assert (profile["name"], profile["size"], profile["selector"]) == (
        "EcmpIngress.l2_profile", 64, None)
    by_name = {p.preamble.name: p for p in info.action_profiles}
    p4_tables = {t.preamble.name: t for t in info.tables}
    sel = by_name["EcmpIngress.ecmp"]
    assert (sel.with_selector, sel.size, sel.max_group_size) == (True, 1024, 0)
    assert list(sel.table_ids) == [p4_tables["EcmpIngress.ecmp"].preamble.id]
    assert p4_tables["EcmpIngress.ecmp"].implementation_id == sel.preamble.id
    assert [f.name for f in p4_tables["EcmpIngress.ecmp"].match_fields] == ["hdr.ipv4.dst"]
    plain = by_name["EcmpIngress.l2_profile"]
    assert (plain.with_selector, plain.size) == (False, 64)
    assert p4_tables["EcmpIngress.l2"].implementation_id == plain.preamble.id


def test_a_shared_profile_lists_its_tables_and_max_group_size(tmp_path: Path) -> None:
    text = ECMP.read_text().replace(
        "    action_profile(32w64) l2_profile;",
        "    @max_group_size(8) action_selector(HashAlgorithm.crc32, 32w128, 32w16) shared;")
    text = text.replace("implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);",
                        "implementation = shared;")
    text = text.replace("implementation = l2_profile;", "implementation = shared;")
    path = tmp_path / "shared.p4"
    path.write_text(text)
    ir, info = compiled(path, tmp_path / "out")
    [shared] = info.action_profiles
    assert (shared.preamble.name, shared.max_group_size, shared.size) == (
        "EcmpIngress.shared", 8, 128)
    assert sorted(shared.table_ids) == sorted(t.preamble.id for t in info.tables)
    assert ir["action_profiles"][0]["selector"]["algo"] == "crc32"


BAD = [
    ("HashAlgorithm.crc16, 32w1024", "HashAlgorithm.random, 32w1024", ".random",
     "action_selector needs HashAlgorithm."),
    ("implementation = l2_profile;", "implementation = ecmp_hits;", "ecmp_hits;",
     "implementation must be an action_profile or action_selector"),
    ("        key = { hdr.ethernet.dst: exact; }",
     "        key = { hdr.ethernet.dst: exact; hdr.ethernet.src: selector; }",
     "selector; }", "this table has an action_profile"),
    ("        key = { hdr.ethernet.dst: exact; }\n        actions = { forward; drop; }\n"
     "        implementation = l2_profile;",
     "        key = { hdr.ethernet.dst: exact; hdr.ethernet.src: selector; }\n"
     "        actions = { forward; drop; }", "selector; }",
     "needs implementation = action_selector"),
    ("        actions = { forward; drop; }\n        implementation = l2_profile;",
     "        actions = { forward; drop; }\n        implementation = l2_profile;\n"
     "        default_action = drop();", "drop();", "takes only NoAction"),
    ("        actions = { forward; drop; }\n        implementation = l2_profile;",
     "        actions = { forward; }\n        implementation = l2_profile;\n"
     "        entries = { 0x1 : forward(1); }", "entries", "cannot have entries"),
    ("action_selector(HashAlgorithm.crc16, 32w1024, 32w14)",
     "action_selector(HashAlgorithm.crc16, 32w1024)", "action_selector(HashAlgorithm",
     "takes 3 argument(s)"),
]


@pytest.mark.parametrize(("old", "new", "at", "reason"), BAD)
def test_misuses_give_exact_locations(tmp_path: Path, old: str, new: str, at: str,
                                      reason: str) -> None:
    text = ECMP.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    where = text.index(at, text.index(new))   # `at` in the replaced text
    line, col = text.count("\n", 0, where) + 1, where - text.rfind("\n", 0, where)
    error = compile_error(text, tmp_path)
    assert reason in error.reason
    assert (error.line, error.col) == (line, col)


def test_tables_sharing_a_profile_need_the_same_actions(tmp_path: Path) -> None:
    text = ECMP.read_text().replace(
        "        actions = { forward; drop; }\n        implementation = l2_profile;",
        "        actions = { forward; }\n        implementation = l2_profile;")
    text = text.replace(
        "implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);",
        "implementation = l2_profile;")
    for field in ("hdr.ipv4.src", "hdr.ipv4.dst", "hdr.ipv4.protocol", "hdr.ports.src",
                  "hdr.ports.dst"):
        text = text.replace(f"            {field}: selector;\n", "")
    assert "must have the same actions" in compile_error(text, tmp_path).reason


TERNARY2 = P4C_REWRITES / "ternary2.p4"


@pytest.mark.parametrize("tbl2_field", ["hdrs.data.b2", "hdrs.extra[1].b1"])
def test_tables_sharing_a_profile_bind_each_action_alike(tmp_path: Path,
                                                          tbl2_field: str) -> None:
    """A member runs one IR action in every table of its profile: ternary2's tbl1 and tbl2
    sharing one profile may bind setbyte to one field, not to two."""
    text = TERNARY2.read_text().replace(
        "    table test1 {", "    action_profile(32w4) ap;\n\n    table test1 {")
    for table, field in (("tbl1", "hdrs.data.b2"), ("tbl2", "hdrs.extra[1].b1")):
        old = (f"    table {table} {{\n        key = {{ hdrs.data.f2 : ternary; }}\n"
               f"        actions = {{ setbyte({field}); noop; }}\n"
               "        default_action = noop;\n")
        assert old in text
        bound = field if table == "tbl1" else tbl2_field
        text = text.replace(old, old.split("        actions")[0]
                            + f"        actions = {{ setbyte({bound}); }}\n"
                            "        implementation = ap;\n")
    path = tmp_path / "ternary2_ap.p4"
    path.write_text(text)
    if tbl2_field == "hdrs.data.b2":
        ir, _ = compile_with_warnings(path)
        tables = {t["name"]: t for t in ir["tables"]}
        assert tables["ingress.tbl1"]["actions"] == tables["ingress.tbl2"]["actions"]
        return
    error = compile_error(text, tmp_path)
    assert "tables sharing ingress.ap must bind action ingress.setbyte to the same " \
        "arguments" in error.reason
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "implementation = ap" in s
                and i > text.splitlines().index("    table tbl2 {"))
    assert error.line == line


def test_selector_size_semantics_come_from_p4c_s_annotations(tmp_path: Path) -> None:
    # as p4c (testdata action_selector_shared-bmv2.p4info.txtpb): no annotation, no
    # semantics in P4Info (P4Runtime reads that as sum_of_weights); given, written
    _, default_info = compiled(ECMP, tmp_path / "default")
    by_name = {p.preamble.name: p for p in default_info.action_profiles}
    assert by_name["EcmpIngress.ecmp"].WhichOneof("selector_size_semantics") is None
    assert by_name["EcmpIngress.l2_profile"].WhichOneof("selector_size_semantics") is None
    weights = tmp_path / "weights.p4"
    weights.write_text(ECMP.read_text().replace(
        INLINE_SELECTOR, '@selector_size_semantics("sum_of_weights") ' + INLINE_SELECTOR))
    ir, info = compiled(weights, tmp_path / "weights")
    selector = next(p for p in ir["action_profiles"] if p["name"] == "EcmpIngress.ecmp")
    assert selector["selector"]["size_semantics"] == "sum_of_weights"
    written = next(p for p in info.action_profiles if p.preamble.name == "EcmpIngress.ecmp")
    assert written.WhichOneof("selector_size_semantics") == "sum_of_weights"
    text = ECMP.read_text().replace(
        "    action_profile(32w64) l2_profile;",
        '    action_profile(32w64) l2_profile;\n    @max_group_size(4) '
        '@selector_size_semantics("sum_of_members") @max_member_weight(100)\n'
        "    action_selector(HashAlgorithm.crc16, 32w64, 32w14) by_members;")
    text = text.replace("implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);",
                        "implementation = by_members;")
    path = tmp_path / "members.p4"
    path.write_text(text)
    _, info = compiled(path, tmp_path / "out")
    profile = next(p for p in info.action_profiles if p.preamble.name.endswith("by_members"))
    assert (profile.max_group_size, profile.sum_of_members.max_member_weight) == (4, 100)
    error = compile_error(text.replace('"sum_of_members"', '"sum_of_bits"'), tmp_path)
    assert "must be one of sum_of_weights, sum_of_members" in error.reason
    assert text.splitlines()[error.line - 1].count("sum_of_members") == 1


def test_selector_annotations_on_a_profile_warn_and_are_ignored(tmp_path: Path) -> None:
    # as p4c's testdata action_profile_sum_of_members_annotation.p4: on an action_profile
    # (no selector) @max_group_size, @selector_size_semantics and @max_member_weight mean
    # nothing; p4c warns "Ignoring annotation @... on action profile '...', which does not
    # have a selector" at the instance's name and writes max_group_size 0
    old = "    action_profile(32w64) l2_profile;"
    text = ECMP.read_text().replace(old, '    @max_group_size(200) @selector_size_semantics('
                                    '"sum_of_members") @max_member_weight(4000)\n' + old)
    path = tmp_path / "annotated.p4"
    path.write_text(text)
    ir, found = compile_with_warnings(path)
    line = text.splitlines().index(old) + 1
    col = old.index("l2_profile") + 1
    assert [(w.loc.line, w.loc.col, w.reason) for w in found] == [
        (line, col, f"Ignoring annotation @{anno} on action profile 'EcmpIngress.l2_profile', "
                    "which does not have a selector")
        for anno in ("max_group_size", "selector_size_semantics", "max_member_weight")]
    profile = next(p for p in ir["action_profiles"] if p["name"] == "EcmpIngress.l2_profile")
    assert (profile["max_group_size"], profile["selector"]) == (0, None)


INLINE_SELECTOR = "implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);"


def test_annotations_on_an_inline_selector_s_property_apply(tmp_path: Path) -> None:
    # p4c (getTableImplementationAnnotations) reads an inline constructor's annotations from
    # the table property: `@max_group_size(4) implementation = action_selector(...);`
    text = ECMP.read_text().replace(
        INLINE_SELECTOR, '@max_group_size(4) @selector_size_semantics("sum_of_members") '
        "@max_member_weight(100) " + INLINE_SELECTOR)
    path = tmp_path / "inline.p4"
    path.write_text(text)
    _, info = compiled(path, tmp_path / "out")
    profile = next(p for p in info.action_profiles if p.preamble.name == "EcmpIngress.ecmp")
    assert (profile.max_group_size, profile.sum_of_members.max_member_weight) == (4, 100)


def test_selector_annotations_on_an_inline_profile_warn_at_the_property(tmp_path: Path) -> None:
    old = "        implementation = l2_profile;"
    text = ECMP.read_text().replace(old, "        @max_group_size(200) @max_member_weight(9) "
                                    "implementation = action_profile(32w64);")
    path = tmp_path / "inline_profile.p4"
    path.write_text(text)
    ir, found = compile_with_warnings(path)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "action_profile(32w64);" in s)
    col = text.splitlines()[line - 1].index("implementation") + 1
    ignored = [(w.loc.line, w.loc.col, w.reason) for w in found if "Ignoring" in w.reason]
    assert ignored == [
        (line, col, f"Ignoring annotation @{anno} on action profile 'EcmpIngress.l2', "
                    "which does not have a selector")
        for anno in ("max_group_size", "max_member_weight")]
    profile = next(p for p in ir["action_profiles"] if p["name"] == "EcmpIngress.l2")
    assert (profile["max_group_size"], profile["selector"]) == (0, None)
