"""P4Info details as p4c writes them: annotations, action order, pkg_info.

Reference files (p4c's own output; the programs here are our own, declaring what matters):
  * p4lang/p4c testdata/p4_16_samples_outputs/annotation-inline-propagate.p4.p4info.txtpb:
    a table's `@my_anno_4 @name("inner_table")` gives `annotations: "@my_anno_4"` (no @name);
    NoAction carries `annotations: "@noWarn(\\"unused\\")"` (core.p4 declares it so);
    `pkg_info { arch: "v1model" }` and nothing else.
  * p4lang/p4c testdata/p4_16_samples_outputs/action_profile_max_group_size_annotation.p4
    .p4info.txtpb: `@max_group_size(200)` on an inline selector is not repeated as text.
  * sonic-net/sonic-pins sai_p4/instantiations/google/middleblock.p4info.pb.txt (p4c-made):
    unstructured bodies are their tokens joined by one blank (`@sai_field(A / IP)`,
    `@refers_to(vrf_table , vrf_id)` on match fields), strings keep their quotes
    (`@p4runtime_role("sdn_controller")`), an action ref keeps its element's annotations
    (`@proto_id(1)`), `@pkginfo(name=..., version=..., organization=...)` fills pkg_info.
  * the advanced_tunnel P4Info quoted in a Scala P4Runtime client (see
    test_p4_field_programs.py): actions in declaration order, NoAction first.
"""

from pathlib import Path

from p4.config.v1 import p4info_pb2
from test_p4_compiler import compile_error, compiled
from test_p4_field_programs import FIELD

from dplab.p4.compiler import compile_with_warnings

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { packet.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.h); } }
"""
INGRESS = """
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    @brief("counts per a") @my_counter counter(256, CounterType.packets) hits;
    action first() { hits.count((bit<32>)hdr.h.a); }
    @sai_action(SAI_PACKET_ACTION_FORWARD) action second(@format(PORT) bit<9> port) {
        sm.egress_spec = port;
    }
    @my_anno_4 @name("inner_table") @id(7) @nonessential_for_upgrade
    @entry_restriction("a != 0;") @p4runtime_role("sdn_controller")
    @tags[level=3, owner="lab", on=true] @refs[1, "two"]
    table t {
        key = { hdr.h.a: exact @sai_field(SAI_ACL_TABLE_ATTR_FIELD_ACL_IP_TYPE / IP)
                         @refers_to(vrf_table, vrf_id) @name("a"); }
        actions = { @proto_id(1) second; @proto_id(2) first; }
        @max_group_size(200) @my_profile @name("t_selector")
        implementation = action_selector(HashAlgorithm.identity, 32w1024, 32w10);
    }
    apply { t.apply(); }
}
"""
MAIN = "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"


def info_of(text: str, tmp_path: Path) -> p4info_pb2.P4Info:
    path = tmp_path / "prog.p4"
    path.write_text(text)
    return compiled(path, tmp_path / "out")[1]


def test_advanced_tunnel_lists_actions_as_p4c(tmp_path: Path) -> None:
    """The tables use ipv4_forward first; p4c lists NoAction (core.p4) and then the
    control's actions in the order they are declared."""
    _, info = compiled(FIELD / "advanced_tunnel.p4", tmp_path)
    assert [a.preamble.name for a in info.actions] == [
        "NoAction", "MyIngress.drop", "MyIngress.ipv4_forward", "MyIngress.myTunnel_ingress",
        "MyIngress.myTunnel_forward", "MyIngress.myTunnel_egress"]
    assert list(info.actions[0].preamble.annotations) == ['@noWarn("unused")']
    assert all(not a.preamble.annotations for a in info.actions[1:])
    assert all(not t.preamble.annotations for t in info.tables)
    assert info.pkg_info == p4info_pb2.PkgInfo(arch="v1model")


def test_declaration_annotations_reach_p4info_as_p4c_writes_them(tmp_path: Path) -> None:
    info = info_of(HEAD + INGRESS + MAIN, tmp_path)
    (table,) = info.tables
    assert table.preamble.id == 0x02000007 and table.preamble.name == "I.inner_table"
    assert list(table.preamble.annotations) == [
        "@my_anno_4", "@nonessential_for_upgrade", '@entry_restriction("a != 0;")',
        '@p4runtime_role("sdn_controller")']
    (key,) = table.match_fields
    assert (key.name, list(key.annotations)) == (
        "a", ["@sai_field(SAI_ACL_TABLE_ATTR_FIELD_ACL_IP_TYPE / IP)",
              "@refers_to(vrf_table , vrf_id)"])
    assert [(r.scope, list(r.annotations)) for r in table.action_refs] == [
        (p4info_pb2.ActionRef.TABLE_AND_DEFAULT, ["@proto_id(1)"]),
        (p4info_pb2.ActionRef.TABLE_AND_DEFAULT, ["@proto_id(2)"]),
        (p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"])]   # the NoAction p4c adds
    actions = {a.preamble.name: a for a in info.actions}
    assert list(actions["I.second"].preamble.annotations) == [
        "@sai_action(SAI_PACKET_ACTION_FORWARD)"]
    assert list(actions["I.second"].params[0].annotations) == ["@format(PORT)"]
    (counter,) = info.counters
    assert list(counter.preamble.annotations) == ["@my_counter"]
    assert counter.preamble.doc.brief == "counts per a"
    (profile,) = info.action_profiles
    assert list(profile.preamble.annotations) == ["@my_profile"]
    assert profile.max_group_size == 200


def test_structured_annotations_are_structured(tmp_path: Path) -> None:
    info = info_of(HEAD + INGRESS + MAIN, tmp_path)
    tags, refs = info.tables[0].preamble.structured_annotations
    assert tags.name == "tags"
    assert [(p.key, p.value.WhichOneof("value")) for p in tags.kv_pair_list.kv_pairs] == [
        ("level", "int64_value"), ("owner", "string_value"), ("on", "bool_value")]
    assert [p.value.int64_value for p in tags.kv_pair_list.kv_pairs][0] == 3
    assert tags.kv_pair_list.kv_pairs[1].value.string_value == "lab"
    assert refs.name == "refs"
    assert [e.int64_value or e.string_value for e in refs.expression_list.expressions] == \
        [1, "two"]


def test_actions_are_listed_in_declaration_order_not_use_order(tmp_path: Path) -> None:
    info = info_of(HEAD + INGRESS + MAIN, tmp_path)
    # the table lists second before first; P4Info keeps the source's order
    assert [a.preamble.name for a in info.actions] == ["NoAction", "I.first", "I.second"]
    assert [r.id for r in info.tables[0].action_refs] == \
        [info.actions[i].preamble.id for i in (2, 1, 0)]


def test_pkginfo_fills_pkg_info(tmp_path: Path) -> None:
    main = ('@pkginfo(name="middle.p4", version="2.3.0", organization="Lab")\n'
            '@brief("a test program")\n' + MAIN)
    info = info_of(HEAD + INGRESS + main, tmp_path)
    assert info.pkg_info == p4info_pb2.PkgInfo(
        name="middle.p4", version="2.3.0", organization="Lab", arch="v1model",
        doc=p4info_pb2.Documentation(brief="a test program"))


def test_main_s_other_annotations_go_to_pkg_info(tmp_path: Path) -> None:
    # as p4c's own test (test/gtest/p4runtime.cpp, P4RuntimePkgInfo UnknownAnnotations and
    # OverrideArch): main's annotations other than @pkginfo, in source order, empty brackets
    # dropped; @pkginfo(arch=...) replaces the architecture, with a warning
    main = ('@my_annotation_1 @my_annotation_2() @pkginfo(name="m.p4", arch="v1")\n'
            '@my_annotation_3(test) @my_annotation_4("test") @tag[level=2]\n' + MAIN)
    path = tmp_path / "annotated_main.p4"
    path.write_text(HEAD + INGRESS + main)
    info = info_of(HEAD + INGRESS + main, tmp_path)
    assert list(info.pkg_info.annotations) == [
        "@my_annotation_1", "@my_annotation_2", "@my_annotation_3(test)",
        '@my_annotation_4("test")']
    assert [a.name for a in info.pkg_info.structured_annotations] == ["tag"]
    assert (info.pkg_info.name, info.pkg_info.arch) == ("m.p4", "v1")
    _, warnings = compile_with_warnings(path)
    assert [w.reason for w in warnings] == [
        "The 'arch' field in PkgInfo should be set by the compiler, not by the user"]


def test_pkginfo_mistakes(tmp_path: Path) -> None:
    error = compile_error(HEAD + INGRESS + "@pkginfo(name=3)\n" + MAIN, tmp_path)
    assert (error.line, error.col) == (32, 10)
    assert "@pkginfo takes key=\"string\" pairs" in error.reason
    path = tmp_path / "warned.p4"
    path.write_text(HEAD + INGRESS + '@pkginfo(name="x", colour="red")\n' + MAIN)
    _, warnings = compile_with_warnings(path)
    assert [(w.loc.line, w.loc.col) for w in warnings] == [(32, 20)]
    assert "unknown @pkginfo key 'colour'" in warnings[0].reason


def test_structured_annotation_mistakes_are_located(tmp_path: Path) -> None:
    bad = INGRESS.replace('@refs[1, "two"]', "@refs[1 + 2]")
    error = compile_error(HEAD + bad + MAIN, tmp_path)
    assert (error.line, error.col) == (22, 48)
    assert "string, integer or boolean literals" in error.reason
    bad = INGRESS.replace('@brief("counts per a")', "@brief(3)")
    error = compile_error(HEAD + bad + MAIN, tmp_path)
    assert (error.line, error.col) == (15, 5)
    assert "@brief takes one string" in error.reason
