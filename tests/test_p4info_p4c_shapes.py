"""P4Info fields as p4c writes them, checked against p4c's own output (its testdata
p4_16_samples_outputs/*.p4info.txtpb and source; the programs here are ours, declaring the
same things):

  * default-action-arg-bmv2.p4.p4info.txtpb: `const default_action = add(10, 0)` with
    bit<32> parameters gives `const_default_action_id` and `initial_default_action {
    action_id, arguments { param_id: 1 value: "\\000\\000\\000\\n" } ... }` (every argument
    at its parameter's full width); issue-4969-bmv2: a plain `default_action = NoAction()`
    gives `initial_default_action { action_id: <NoAction> }` and no const id. A table without
    `default_action` gets NoAction from p4c's front end (flowlet_switching-bmv2-frontend.p4),
    so it has the same.
  * action_profile-bmv2.p4.p4info.txtpb: `@name("ap") implementation = action_profile(...)`
    names the profile "ap", without its control's prefix; p4c (p4RuntimeArchHandler's
    getExternInstanceFromProperty) refuses an inline one without `@name` ("Table '...' has an
    anonymous table property 'implementation' with no name annotation").
  * p4RuntimeSerializer's addControllerHeader: the header type's annotations, in source
    order, on the preamble (`@controller_header("packet_in")` is one of them); each field's
    own on its metadata (stratum's fabric P4Info: `annotations: "@padding"`). v1model's
    digest preamble carries none (p4RuntimeArchStandard's getDigestCall passes no
    annotations), whatever its struct declares.
"""

from pathlib import Path

from test_p4_compiler import compiled

from dplab.p4.compiler import compile_with_warnings

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
@brief("to the controller") @my_cpu_header @controller_header("packet_in") @layout[v=1]
header packet_in_t { @my_port bit<9> ingress_port; @padding bit<7> _pad; }
struct headers { packet_in_t packet_in; h_t h; }
@my_digest struct learn_t { @my_field bit<8> a; }
struct metadata { }
parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { packet.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.packet_in); packet.emit(hdr.h); }
}
"""
INGRESS = """
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action add(bit<32> va, bit<9> port) { sm.egress_spec = port; }
    action learn() { digest<learn_t>(1, {hdr.h.a}); }
    table fixed {
        key = { hdr.h.a: exact; }
        actions = { add; }
        const default_action = add(10, 3);
    }
    table plain {
        key = { hdr.h.b: exact; }
        actions = { learn; NoAction; }
        default_action = NoAction();
    }
    table bare { key = { hdr.h.a: exact; } actions = { learn; } }
    table spread {
        key = { hdr.h.a: exact; hdr.h.b: selector; }
        actions = { add; }
        @name("ap_ws") @brief("spreads flows") @my_profile
        implementation = action_selector(HashAlgorithm.identity, 32w1024, 32w10);
    }
    table spread_too {
        key = { hdr.h.b: exact; hdr.h.a: selector; }
        actions = { add; }
        implementation = action_selector(HashAlgorithm.identity, 32w64, 32w10);
    }
    apply { fixed.apply(); plain.apply(); bare.apply(); spread.apply(); spread_too.apply(); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.p4"
    path.write_text(HEAD + INGRESS)
    return path


def test_initial_default_actions_as_p4c(tmp_path: Path) -> None:
    _, info = compiled(program(tmp_path), tmp_path / "out")
    tables = {t.preamble.alias: t for t in info.tables}
    action_ids = {a.preamble.alias: a.preamble.id for a in info.actions}
    fixed = tables["fixed"]
    assert fixed.const_default_action_id == action_ids["add"]
    assert fixed.initial_default_action.action_id == action_ids["add"]
    assert [(a.param_id, a.value) for a in fixed.initial_default_action.arguments] == [
        (1, b"\x00\x00\x00\n"), (2, b"\x00\x03")]   # bit<32> 10, bit<9> 3: full width
    for alias in ("plain", "bare"):   # `default_action = NoAction()`, and none at all
        assert tables[alias].const_default_action_id == 0
        assert tables[alias].HasField("initial_default_action")
        assert tables[alias].initial_default_action.action_id == action_ids["NoAction"]
        assert not tables[alias].initial_default_action.arguments


def test_an_inline_profile_is_named_by_its_name_annotation(tmp_path: Path) -> None:
    path = program(tmp_path)
    _, info = compiled(path, tmp_path / "out")
    profiles = {p.preamble.name: p for p in info.action_profiles}
    assert set(profiles) == {"ap_ws", "I.spread_too"}
    named = profiles["ap_ws"]
    assert (named.preamble.alias, list(named.preamble.annotations)) == ("ap_ws", ["@my_profile"])
    assert named.preamble.doc.brief == "spreads flows"
    spread = next(t for t in info.tables if t.preamble.alias == "spread")
    assert spread.implementation_id == named.preamble.id
    # without @name p4c stops; we keep the table's name and say so at the property
    _, warnings = compile_with_warnings(path)
    lines = (HEAD + INGRESS).splitlines()
    line = next(i for i, s in enumerate(lines, 1) if "32w64" in s)
    assert [(w.loc.line, w.loc.col) for w in warnings] == [(line, 9)]
    assert "'I.spread_too' has an anonymous table property 'implementation' with no " \
           "name annotation" in warnings[0].reason


def test_controller_header_and_digest_annotations_as_p4c(tmp_path: Path) -> None:
    _, info = compiled(program(tmp_path), tmp_path / "out")
    (header,) = info.controller_packet_metadata
    assert (header.preamble.name, header.preamble.alias) == ("packet_in", "packet_in")
    assert list(header.preamble.annotations) == ["@my_cpu_header",
                                                 '@controller_header("packet_in")']
    assert header.preamble.doc.brief == "to the controller"
    assert [a.name for a in header.preamble.structured_annotations] == ["layout"]
    assert [(m.name, list(m.annotations)) for m in header.metadata] == [
        ("ingress_port", ["@my_port"]), ("_pad", ["@padding"])]
    (digest,) = info.digests
    assert digest.preamble.name == "learn_t"
    assert not digest.preamble.annotations and not digest.preamble.HasField("doc")
