"""Control-plane names and P4Info ids as p4c gives them: `@name`, `@id`, hashed ids, aliases.

The expected ids below are p4c's own output for two of its test programs:
  p4lang/p4c testdata/p4_16_samples_outputs/basic_routing-bmv2.p4.p4info.txtpb
  p4lang/p4c testdata/p4_16_samples_outputs/flowlet_switching-bmv2.p4.p4info.txtpb
Ids depend only on names, so the programs here declare the same controls, tables, actions,
registers and `@name`s as those samples (p4lang/p4c testdata/p4_16_samples/*.p4), written
shorter; `NoAction` is p4c's well-known 21257015.
"""

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from test_p4_compiler import compile_error
from test_p4_compiler import compiled as compiled_file

from dplab.p4.ids import field_ids, jenkins_one_at_a_time
from dplab.p4runtime.codec import P4InfoIndex, action_to_switch
from dplab.p4runtime.errors import P4RuntimeError

HEAD = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ipv4_t { bit<64> a; bit<32> src; bit<32> dst; }
struct ingress_metadata_t { bit<12> vrf; bit<16> bd; bit<16> nexthop_index; }
struct metadata { ingress_metadata_t ingress_metadata; }
struct headers { eth_t ethernet; ipv4_t ipv4; }
parser ParserImpl(packet_in p, out headers hdr, inout metadata meta,
                  inout standard_metadata_t sm) {
    @name("start") state start { p.extract(hdr.ethernet); transition accept; }
}
control verifyChecksum(inout headers hdr, inout metadata meta) { apply { } }
control computeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control DeparserImpl(packet_out p, in headers hdr) { apply { p.emit(hdr.ethernet); } }
"""
TAIL = """
V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
"""

BASIC_ROUTING = HEAD + """
control egress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action on_miss() { }
    action rewrite_src_dst_mac(bit<48> smac, bit<48> dmac) {
        hdr.ethernet.src = smac; hdr.ethernet.dst = dmac;
    }
    table rewrite_mac {
        key = { meta.ingress_metadata.nexthop_index: exact; }
        actions = { on_miss; rewrite_src_dst_mac; }
    }
    apply { rewrite_mac.apply(); }
}
control ingress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set_vrf(bit<12> vrf) { meta.ingress_metadata.vrf = vrf; }
    action on_miss() { }
    action fib_hit_nexthop(bit<16> nexthop_index) {
        meta.ingress_metadata.nexthop_index = nexthop_index;
    }
    action set_egress_details(bit<9> egress_spec) { sm.egress_spec = egress_spec; }
    action set_bd(bit<16> bd) { meta.ingress_metadata.bd = bd; }
    table bd { key = { meta.ingress_metadata.bd: exact; } actions = { set_vrf; } }
    table ipv4_fib {
        key = { meta.ingress_metadata.vrf: exact; hdr.ipv4.dst: exact; }
        actions = { on_miss; fib_hit_nexthop; }
    }
    table ipv4_fib_lpm {
        key = { meta.ingress_metadata.vrf: exact; hdr.ipv4.dst: lpm; }
        actions = { on_miss; fib_hit_nexthop; }
    }
    table nexthop {
        key = { meta.ingress_metadata.nexthop_index: exact; }
        actions = { on_miss; set_egress_details; }
    }
    table port_mapping { key = { sm.ingress_port: exact; } actions = { set_bd; } }
    apply {
        port_mapping.apply();
        bd.apply();
        switch (ipv4_fib.apply().action_run) { on_miss: { ipv4_fib_lpm.apply(); } }
        nexthop.apply();
    }
}
""" + TAIL
BASIC_ROUTING_IDS = {
    "ingress.bd": 48392551, "ingress.ipv4_fib": 41084491, "ingress.ipv4_fib_lpm": 42875950,
    "ingress.nexthop": 43581057, "ingress.port_mapping": 39645634,
    "egress.rewrite_mac": 40309161, "NoAction": 21257015, "ingress.set_vrf": 33505590,
    "ingress.on_miss": 22594144, "ingress.fib_hit_nexthop": 26104220,
    "ingress.set_egress_details": 19738113, "ingress.set_bd": 27500220,
    "egress.on_miss": 28864280, "egress.rewrite_src_dst_mac": 28966416}

# flowlet_switching names every object with a relative @name, as p4c's P4_14 converter does
FLOWLET = HEAD + """
control egress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    @name("rewrite_mac") action rewrite_mac(bit<48> smac) { hdr.ethernet.src = smac; }
    @name("_drop") action _drop() { mark_to_drop(sm); }
    @name("send_frame") table send_frame {
        actions = { rewrite_mac; _drop; NoAction; }
        key = { sm.egress_port: exact; }
        default_action = NoAction();
    }
    apply { send_frame.apply(); }
}
control ingress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    @name("flowlet_id") register<bit<16>>(32w8192) flowlet_id;
    @name("flowlet_lasttime") register<bit<32>>(32w8192) flowlet_lasttime;
    @name("_drop") action _drop() { mark_to_drop(sm); }
    @name("set_nhop") action set_nhop(bit<32> nhop_ipv4, bit<9> port) {
        sm.egress_spec = port;
    }
    @name("update_flowlet_id") action update_flowlet_id() {
        flowlet_id.write(32w0, meta.ingress_metadata.bd);
    }
    @name("ecmp_nhop") table ecmp_nhop {
        actions = { _drop; set_nhop; NoAction; }
        key = { meta.ingress_metadata.nexthop_index: exact; }
        default_action = NoAction();
    }
    @name("new_flowlet") table new_flowlet {
        actions = { update_flowlet_id; NoAction; }
        default_action = NoAction();
    }
    apply {
        @atomic { new_flowlet.apply(); }
        ecmp_nhop.apply();
        flowlet_lasttime.write(32w0, 32w1);
    }
}
""" + TAIL
FLOWLET_IDS = {
    "egress.rewrite_mac": 23531945, "egress._drop": 25850727, "egress.send_frame": 49367184,
    "ingress.flowlet_id": 384519412, "ingress.flowlet_lasttime": 375147533,
    "ingress._drop": 19344232, "ingress.set_nhop": 29239084,
    "ingress.update_flowlet_id": 17397136, "ingress.ecmp_nhop": 41627831,
    "ingress.new_flowlet": 43789109, "NoAction": 21257015}


def compiled(text: str, tmp_path: Path) -> tuple[dict, p4info_pb2.P4Info]:
    path = tmp_path / "prog.p4"
    path.write_text(text)
    return compiled_file(path, tmp_path / "out")


def preambles(info: p4info_pb2.P4Info) -> dict[str, p4info_pb2.Preamble]:
    groups = (info.tables, info.actions, info.counters, info.direct_counters, info.meters,
              info.direct_meters, info.registers, info.digests, info.value_sets,
              info.action_profiles, info.controller_packet_metadata)
    return {m.preamble.name: m.preamble for group in groups for m in group}


@pytest.mark.parametrize(("program", "expected"), [(BASIC_ROUTING, BASIC_ROUTING_IDS),
                                                   (FLOWLET, FLOWLET_IDS)])
def test_ids_equal_p4cs(tmp_path: Path, program: str, expected: dict[str, int]) -> None:
    _, info = compiled(program, tmp_path)
    found = preambles(info)
    assert {name: found[name].id for name in expected} == expected


def test_aliases_are_shortest_unique_suffixes(tmp_path: Path) -> None:
    # as in p4c's basic_routing output: on_miss exists in both controls
    _, info = compiled(BASIC_ROUTING, tmp_path)
    found = preambles(info)
    assert found["ingress.on_miss"].alias == "ingress.on_miss"
    assert found["egress.on_miss"].alias == "egress.on_miss"
    assert found["ingress.bd"].alias == "bd"
    assert found["egress.rewrite_src_dst_mac"].alias == "rewrite_src_dst_mac"


# p4c's basic_routing-bmv2.p4.p4info.txtpb: every table (none has a default_action) lists
# its actions in source order, then NoAction with scope DEFAULT_ONLY and annotation
# "@defaultonly"; NoAction is among the actions; no table has a const_default_action_id.
BASIC_ROUTING_ACTION_REFS = {
    "ingress.bd": [33505590], "ingress.ipv4_fib": [22594144, 26104220],
    "ingress.ipv4_fib_lpm": [22594144, 26104220], "ingress.nexthop": [22594144, 19738113],
    "ingress.port_mapping": [27500220], "egress.rewrite_mac": [28864280, 28966416]}


def test_tables_without_default_action_get_defaultonly_no_action(tmp_path: Path) -> None:
    ir, info = compiled(BASIC_ROUTING, tmp_path)
    default_only = (21257015, p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"])
    for table in info.tables:
        refs = [(r.id, r.scope, list(r.annotations)) for r in table.action_refs]
        expected = [(i, p4info_pb2.ActionRef.TABLE_AND_DEFAULT, [])
                    for i in BASIC_ROUTING_ACTION_REFS[table.preamble.name]]
        assert refs == expected + [default_only]
        assert table.const_default_action_id == 0
    assert "NoAction" in [a.preamble.name for a in info.actions]
    for table in ir["tables"]:   # the IR: NoAction is the (changeable) default and listed
        default = table["default_action"]
        assert ir["actions"][default["action"]]["name"] == "NoAction"
        assert not default["const"]
        assert {"action": default["action"], "scope": "default_only"} in table["actions"]


def test_a_listed_no_action_is_not_added_twice(tmp_path: Path) -> None:
    # p4c adds @defaultonly NoAction only when the list does not name NoAction already
    program = BASIC_ROUTING.replace("actions = { set_vrf; }", "actions = { set_vrf; NoAction; }")
    _, info = compiled(program, tmp_path)
    bd = next(t for t in info.tables if t.preamble.name == "ingress.bd")
    assert [(r.id, r.scope) for r in bd.action_refs] == [
        (33505590, p4info_pb2.ActionRef.TABLE_AND_DEFAULT),
        (21257015, p4info_pb2.ActionRef.TABLE_AND_DEFAULT)]


def test_jenkins_hash_and_collision_probing() -> None:
    # Bob Jenkins' published test vector for one-at-a-time: "a" -> 0xca2e9442
    assert jenkins_one_at_a_time("a") == 0xCA2E9442
    assert field_ids([None, None, None]) == [1, 2, 3]


NAMED = HEAD + """
@name("NamedControl")
control egress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    @name(".top_level_drop") action drop() { mark_to_drop(sm); }
    @name("fwd") action forward(@name("out_port") bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
    }
    @name("hits") counter(32w16, CounterType.packets) c;
    @name("limit") meter(32w4, MeterType.bytes) m;
    @name(".regs") register<bit<8>>(32w4) r;
    @name("per_entry") direct_counter(CounterType.packets) dc;
    @name("ports") table t {
        key = { sm.egress_port: exact @name("port"); hdr.ethernet.dst: ternary; }
        actions = { forward; drop; }
        counters = dc;
    }
    apply {
        switch (t.apply().action_run) { drop: { c.count(32w1); } forward: { } }
    }
}
control ingress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { }
}
""" + TAIL


def test_name_annotations_name_objects_as_p4c(tmp_path: Path) -> None:
    _, info = compiled(NAMED, tmp_path)
    found = preambles(info)
    for name in ("NamedControl.ports", "NamedControl.fwd", "top_level_drop",
                 "NamedControl.hits", "NamedControl.limit", "regs"):
        prefix = {"ports": 2, "fwd": 1, "top_level_drop": 1, "hits": 0x12, "limit": 0x14,
                  "regs": 0x16}[name.split(".")[-1]]
        assert found[name].id == prefix << 24 | jenkins_one_at_a_time(name) & 0xFFFFFF
    table = next(t for t in info.tables if t.preamble.name == "NamedControl.ports")
    assert [(f.id, f.name) for f in table.match_fields] == [(1, "port"), (2, "hdr.ethernet.dst")]
    fwd = next(a for a in info.actions if a.preamble.name == "NamedControl.fwd")
    assert [(p.id, p.name) for p in fwd.params] == [(1, "out_port"), (2, "tag")]
    assert table.direct_resource_ids == [found["NamedControl.per_entry"].id]


GIVEN_IDS = HEAD + """
control egress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    @id(7) action a(@id(5) bit<8> x, bit<8> y, bit<8> z) { }
    @id(0x01000009) action b() { }
    @id(3) counter(32w2, CounterType.packets) c;
    @id(0x2000011) table t {
        key = { sm.egress_port: exact @id(2); sm.ingress_port: exact; }
        actions = { a; b; }
    }
    apply { t.apply(); c.count(32w0); }
}
control ingress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { }
}
""" + TAIL


def test_id_annotations_get_the_prefix_byte(tmp_path: Path) -> None:
    _, info = compiled(GIVEN_IDS, tmp_path)
    found = preambles(info)
    assert found["egress.a"].id == 0x01000007
    assert found["egress.b"].id == 0x01000009
    assert found["egress.c"].id == 0x12000003
    assert found["egress.t"].id == 0x02000011
    table = info.tables[0]
    # p4c's FieldIdAllocator: @id kept, the others their position, past taken ids
    assert [(f.id, f.name) for f in table.match_fields] == [(2, "sm.egress_port"),
                                                              (3, "sm.ingress_port")]
    a = next(x for x in info.actions if x.preamble.name == "egress.a")
    assert [(p.id, p.name) for p in a.params] == [(5, "x"), (2, "y"), (3, "z")]


@pytest.mark.parametrize(("old", "new", "line", "col", "reason"), [
    ("@id(0x01000009) action b", "@id(0x01000007) action b", 18, 9, "given to two objects"),
    ("@id(3) counter", "@id(0x13000003) counter", 19, 9, "prefix byte 0x13"),
    ("@id(0x2000011) table", "@id(0x1000011) table", 20, 9, "prefix byte 0x01"),
    ("bit<8> y, bit<8> z", "bit<8> y, @id(5) bit<8> z", 17, 52, "@id 5 is used twice"),
    ("exact @id(2);", "exact @id(0);", 21, 43, "0 is not a valid @id"),
    ("@id(7) action", "@id(x) action", 17, 9, "one unsigned 32-bit integer"),
    ("@id(7) action", "@name(7) action", 17, 11, "@name takes one non-empty string"),
])
def test_bad_ids_and_names_give_exact_locations(tmp_path: Path, old: str, new: str, line: int,
                                                col: int, reason: str) -> None:
    assert old in GIVEN_IDS
    err = compile_error(GIVEN_IDS.replace(old, new), tmp_path)
    assert (err.line, err.col) == (line, col)
    assert reason in err.reason


def test_tuple_value_set_is_refused_as_by_p4c(tmp_path: Path) -> None:
    # P4_16 grammar allows value_set<tuple<...>>; p4c's P4Info generation refuses it
    # (P4RuntimeSerializer::addValueSet: "Unsupported type argument for Value Set")
    program = Path(__file__).parent / "data" / "p4" / "value_sets.p4"
    text = program.read_text()
    old = "value_set<pair_t>(2) tagged;"
    line = text[:text.index(old)].count("\n") + 1
    col = text.index(old) - text.rfind("\n", 0, text.index(old)) + len("value_set<")
    err = compile_error(text.replace(old, "@id(9) value_set<tuple<bit<16>, bit<8>>>(2) tagged;"),
                        tmp_path)
    assert (err.line, err.col) == (line, col + len("@id(9) "))
    assert "struct of bit<W> fields" in err.reason


def test_the_server_keeps_the_added_no_action_for_the_default_entry(tmp_path: Path) -> None:
    # P4Runtime spec 9.1.2: a DEFAULT_ONLY action in a match entry is PERMISSION_DENIED;
    # the server's codec (dplab.p4runtime) checks scopes from this P4Info
    _, info = compiled(BASIC_ROUTING, tmp_path)
    index = P4InfoIndex(info)
    bd = next(t for t in info.tables if t.preamble.name == "ingress.bd")
    no_action = p4runtime_pb2.Action(action_id=21257015)
    assert action_to_switch(index, bd, no_action, default=True) == {"action": 21257015,
                                                                    "args": []}
    with pytest.raises(P4RuntimeError) as refused:
        action_to_switch(index, bd, no_action, default=False)
    assert refused.value.code == "PERMISSION_DENIED"


CONTROLLER_AND_DIGEST = HEAD.replace("header eth_t", """
@name("cpu_in_header_t") @controller_header("packet_in")
header packet_in_t { @name("port") bit<9> ingress_port; bit<7> pad; }
@name(".mac_learn_t") struct learn_t { @name("mac") bit<48> src; bit<9> port; bit<7> pad; }
header eth_t""").replace("struct headers { eth_t ethernet;",
                         "struct headers { packet_in_t cpu; eth_t ethernet;") + """
control egress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { }
}
control ingress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { digest<learn_t>(1, { hdr.ethernet.src, sm.ingress_port, 7w0 }); }
}
""" + TAIL


def test_digest_and_controller_header_names_as_p4c(tmp_path: Path) -> None:
    # p4c (P4RuntimeSerializer addControllerHeader, v1model getDigestCall): a digest is
    # named by its struct type's control-plane name (@name, leading "." dropped) and its
    # type_info struct and members likewise; a controller header's preamble name and alias
    # are its role, its id the hash of its header type's control-plane name
    _, info = compiled(CONTROLLER_AND_DIGEST, tmp_path)
    digest = info.digests[0]
    assert (digest.preamble.name, digest.preamble.alias) == ("mac_learn_t", "mac_learn_t")
    assert digest.preamble.id == 0x17 << 24 | jenkins_one_at_a_time("mac_learn_t") & 0xFFFFFF
    assert digest.type_spec.struct.name == "mac_learn_t"
    members = info.type_info.structs["mac_learn_t"].members
    assert [m.name for m in members] == ["mac", "port", "pad"]
    header = info.controller_packet_metadata[0]
    assert (header.preamble.name, header.preamble.alias) == ("packet_in", "packet_in")
    assert header.preamble.id == 0x04 << 24 | jenkins_one_at_a_time("cpu_in_header_t") & 0xFFFFFF
    assert [(m.id, m.name, m.bitwidth) for m in header.metadata] == [(1, "port", 9),
                                                                     (2, "pad", 7)]


def test_controller_header_ids_equal_p4cs() -> None:
    # p4c's ids for header types packet_in_header_t / packet_out_header_t, as in P4Info
    # files it generated (sonic-net/sonic-pins p4rt_app tests: 81826293, 76689799)
    assert 0x04 << 24 | jenkins_one_at_a_time("packet_in_header_t") & 0xFFFFFF == 81826293
    assert 0x04 << 24 | jenkins_one_at_a_time("packet_out_header_t") & 0xFFFFFF == 76689799
