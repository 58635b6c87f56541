"""Our rewrites of p4c testdata programs (tests/p4/p4c_rewrites/) compiled by ours: the
P4Info facts p4c's own output for those programs shows (p4lang/p4c
testdata/p4_16_samples_outputs/*.p4info.txtpb), written here by hand. Ids are p4c's: an
8-bit kind prefix and a hash of the name, so the same names give the same numbers."""


import pytest
from p4.config.v1 import p4info_pb2, p4types_pb2
from switch_rig import P4C_REWRITES as REWRITES
from test_p4_compiler import compiled

NO_ACTION = 21257015


@pytest.fixture(scope="module")
def p4info(tmp_path_factory):
    """P4Info of the rewrite called ``name``, compiled once per module."""
    cache: dict[str, p4info_pb2.P4Info] = {}

    def of(name: str) -> p4info_pb2.P4Info:
        if name not in cache:
            cache[name] = compiled(REWRITES / f"{name}.p4", tmp_path_factory.mktemp(name))[1]
        return cache[name]
    return of


def by_name(entities) -> dict:
    return {e.preamble.name: e for e in entities}


def test_action_profile_ids(p4info) -> None:
    info = p4info("action_profile")
    assert {n: t.preamble.id for n, t in by_name(info.tables).items()} == {
        "IngressI.indirect": 46872340, "IngressI.indirect_ws": 38116258}
    assert [(a.preamble.name, a.preamble.id) for a in info.actions] == [
        ("NoAction", NO_ACTION), ("IngressI.drop", 23455883)]  # `empty`, unused, absent
    assert {n: p.preamble.id for n, p in by_name(info.action_profiles).items()} == {
        "ap": 294074782, "ap_ws": 300324846}  # @name as written, no control prefix


def test_action_profile_tables(p4info) -> None:
    tables = by_name(p4info("action_profile").tables)
    for table in tables.values():
        assert [r.id for r in table.action_refs] == [23455883, NO_ACTION]
        assert table.const_default_action_id == NO_ACTION
        assert table.initial_default_action.action_id == NO_ACTION
        assert table.size == 1024
    assert tables["IngressI.indirect"].implementation_id == 294074782
    assert tables["IngressI.indirect_ws"].implementation_id == 300324846


def test_action_profile_profiles(p4info) -> None:
    profiles = by_name(p4info("action_profile").action_profiles)
    assert list(profiles["ap"].table_ids) == [46872340]
    assert not profiles["ap"].with_selector
    assert profiles["ap"].size == 128
    assert list(profiles["ap_ws"].table_ids) == [38116258]
    assert profiles["ap_ws"].with_selector
    assert profiles["ap_ws"].size == 1024


def test_a_shared_selector_is_one_profile_named_by_its_instance(p4info) -> None:
    info = p4info("action_selector_shared")
    assert {n: t.implementation_id for n, t in by_name(info.tables).items()} == {
        "IngressI.indirect_ws": 291652621, "IngressI.indirect_ws_1": 291652621}
    (profile,) = info.action_profiles
    assert (profile.preamble.name, profile.preamble.alias) == ("IngressI.as", "as")
    assert list(profile.table_ids) == [38116258, 33951097]
    assert profile.with_selector and profile.size == 1024


def test_no_action_carries_only_no_warn(p4info) -> None:
    no_action = by_name(p4info("action_selector_shared").actions)["NoAction"]
    assert list(no_action.preamble.annotations) == ['@noWarn("unused")']


FLOWLET_ACTIONS = [  # p4c's order: main's arguments, ingress before the egress declared first
    ("NoAction", NO_ACTION), ("ingress._drop", 19344232),
    ("ingress.set_ecmp_select", 20375000), ("ingress.set_nhop", 29239084),
    ("ingress.lookup_flowlet_map", 27889477), ("ingress.set_dmac", 30489383),
    ("ingress.update_flowlet_id", 17397136), ("egress.rewrite_mac", 23531945),
    ("egress._drop", 25850727)]


def test_flowlet_actions_in_p4c_s_order_and_ids(p4info) -> None:
    info = p4info("flowlet_switching")
    assert [(a.preamble.name, a.preamble.id) for a in info.actions] == FLOWLET_ACTIONS


def test_an_ambiguous_alias_is_the_full_name(p4info) -> None:
    actions = by_name(p4info("flowlet_switching").actions)
    assert actions["ingress._drop"].preamble.alias == "ingress._drop"
    assert actions["egress._drop"].preamble.alias == "egress._drop"
    assert actions["ingress.set_dmac"].preamble.alias == "set_dmac"


def test_flowlet_tables(p4info) -> None:
    tables = by_name(p4info("flowlet_switching").tables)
    assert {n: (t.preamble.id, t.size) for n, t in tables.items()} == {
        "ingress.ecmp_group": (38446407, 1024), "ingress.ecmp_nhop": (41627831, 16384),
        "ingress.flowlet": (42150575, 1024), "ingress.forward": (43289378, 512),
        "ingress.new_flowlet": (43789109, 1024), "egress.send_frame": (49367184, 256)}
    assert {n: [(m.name, m.bitwidth, m.match_type) for m in t.match_fields]
            for n, t in tables.items()} == {
        "ingress.ecmp_group": [("hdr.ipv4.dstAddr", 32, p4info_pb2.MatchField.LPM)],
        "ingress.ecmp_nhop": [("meta.ingress_metadata.ecmp_offset", 14,
                               p4info_pb2.MatchField.EXACT)],
        "ingress.flowlet": [], "ingress.new_flowlet": [],
        "ingress.forward": [("meta.ingress_metadata.nhop_ipv4", 32,
                             p4info_pb2.MatchField.EXACT)],
        "egress.send_frame": [("standard_metadata.egress_port", 9,
                               p4info_pb2.MatchField.EXACT)]}
    assert [r.id for r in tables["ingress.forward"].action_refs] == [
        30489383, 19344232, NO_ACTION]  # the table's own order
    assert not any(t.const_default_action_id for t in tables.values())  # none is const
    assert all(t.initial_default_action.action_id == NO_ACTION for t in tables.values())


def test_flowlet_params(p4info) -> None:
    actions = by_name(p4info("flowlet_switching").actions)
    assert [(p.id, p.name, p.bitwidth) for p in actions["ingress.set_nhop"].params] == [
        (1, "nhop_ipv4", 32), (2, "port", 9)]
    assert [(p.id, p.name, p.bitwidth) for p in actions["ingress.set_ecmp_select"].params] \
        == [(1, "ecmp_base", 8), (2, "ecmp_count", 8)]


def test_flowlet_registers(p4info) -> None:
    registers = by_name(p4info("flowlet_switching").registers)
    assert {n: (r.preamble.id, r.type_spec.bitstring.bit.bitwidth, r.size)
            for n, r in registers.items()} == {
        "ingress.flowlet_id": (384519412, 16, 8192),
        "ingress.flowlet_lasttime": (375147533, 32, 8192)}


def test_pkg_info_arch_is_v1model(p4info) -> None:
    assert p4info("flowlet_switching").pkg_info.arch == "v1model"


def test_type_info_is_written_even_when_empty(p4info) -> None:
    info = p4info("action_profile")
    assert info.HasField("type_info") and info.type_info == p4types_pb2.P4TypeInfo()
