"""Study 003's P4 programs compile with our compiler into the P4Info they are written for
(tables, keys, actions, counters), their entries files load against that P4Info, the
scenarios parse, and entries files describe multicast groups (with clear errors)."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4runtime_rig import compile_with_info
from study003_rig import PROGRAMS, ROOT, entries_of, program

from dplab.p4runtime.entries import EntriesError, load
from dplab.spec import load as load_experiment

MatchType = p4info_pb2.MatchField.MatchType

# table -> (its keys with their match kinds, its actions)
TABLES = {
    "drop": {},
    "echo": {"EchoIngress.port_fwd": ({"standard_metadata.ingress_port": MatchType.EXACT},
                                      {"EchoIngress.forward", "EchoIngress.drop"})},
    "l3_forward": {
        "L3Ingress.ipv4_lpm": ({"hdr.ipv4.dst_addr": MatchType.LPM},
                               {"L3Ingress.set_next_hop", "L3Ingress.drop"}),
        "L3Ingress.arp_fwd": ({"hdr.arp.target_ip": MatchType.LPM},
                              {"L3Ingress.forward", "L3Ingress.drop"}),
    },
    "broadcast": {"BcastIngress.mac_fwd": ({"hdr.ethernet.dst_addr": MatchType.EXACT},
                                           {"BcastIngress.forward", "BcastIngress.drop"}),
                  # a wireless AP's wlan port, whose own copy is kept (docs/wireless.md)
                  "BcastIngress.shared_medium": (
                      {"standard_metadata.ingress_port": MatchType.EXACT},
                      {"BcastIngress.keep_own_copy"})},
}
# counter -> (size, unit)
COUNTERS = {
    "drop": {"DropIngress.dropped": (512, p4info_pb2.CounterSpec.BOTH)},
    "echo": {"EchoIngress.echo_replies": (512, p4info_pb2.CounterSpec.PACKETS)},
    "l3_forward": {"L3Ingress.ttl_expired": (512, p4info_pb2.CounterSpec.PACKETS)},
    "broadcast": {},
}
ENTRY_COUNTS = {"echo": 2, "l3_forward": 8, "broadcast": 5}


@pytest.fixture(scope="module")
def infos(tmp_path_factory) -> dict[str, p4info_pb2.P4Info]:
    out = tmp_path_factory.mktemp("study003_compile")
    return {name: compile_with_info(program(name), out)[1] for name in PROGRAMS}


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_has_the_tables_and_counters_it_is_written_for(infos, name):
    info = infos[name]
    actions = {a.preamble.id: a.preamble.name for a in info.actions}
    tables = {t.preamble.name: ({k.name: k.match_type for k in t.match_fields},
                                {actions[ref.id] for ref in t.action_refs} - {"NoAction"})
              for t in info.tables}
    assert tables == TABLES[name]
    counters = {c.preamble.name: (c.size, c.spec.unit) for c in info.counters}
    assert counters == COUNTERS[name]


@pytest.mark.parametrize("name", sorted(ENTRY_COUNTS))
def test_entries_file_loads_against_its_program(infos, name):
    assert len(load(entries_of(name), infos[name])) == ENTRY_COUNTS[name]


# The wireless access point's entries (docs/wireless.md): one port, the wlan port, per AP.
WIRELESS_ENTRY_COUNTS = {"echo": 1, "l3_forward": 8, "broadcast": 6}


@pytest.mark.parametrize("name", sorted(WIRELESS_ENTRY_COUNTS))
def test_wireless_entries_file_loads_against_its_program(infos, name):
    entries = load(entries_of(f"{name}_wireless"), infos[name])
    assert len(entries) == WIRELESS_ENTRY_COUNTS[name]


def test_broadcast_entries_give_group_1_every_port(infos):
    group, *_ = load(entries_of("broadcast"), infos["broadcast"])
    written = group.entity.packet_replication_engine_entry.multicast_group_entry
    assert written.multicast_group_id == 1 and group.switches is None
    assert [(r.egress_port, r.instance) for r in written.replicas] == [
        (1, 0), (2, 0), (3, 0), (4, 0)]
    assert not group.is_default


def test_multicast_group_replicas_may_name_an_instance(tmp_path, infos):
    path = tmp_path / "groups.yaml"
    path.write_text("- {multicast_group: 7, replicas: [3, {port: 4, instance: 2}],"
                    " switches: s2}\n")
    (group,) = load(path, infos["broadcast"])
    written = group.entity.packet_replication_engine_entry.multicast_group_entry
    assert [(r.egress_port, r.instance) for r in written.replicas] == [(3, 0), (4, 2)]
    assert group.switches == ["s2"]


@pytest.mark.parametrize(("text", "problem"), [
    ("- {multicast_group: 0, replicas: [1]}", "'multicast_group' must be a whole number in"),
    ("- {multicast_group: 70000, replicas: [1]}", "in 1..65535, not 70000"),
    ("- {multicast_group: 1}", "'replicas' must be a non-empty list"),
    ("- {multicast_group: 1, replicas: []}", "'replicas' must be a non-empty list"),
    ("- {multicast_group: 1, replicas: [1, 512]}", "replicas[1]: port must be a whole number"),
    ("- {multicast_group: 1, replicas: [{port: 1, rid: 2}]}", "replicas[0]: must be a port"),
    ("- {multicast_group: 1, replicas: [{port: 1, instance: -1}]}", "replicas[0]: instance"),
    ("- {multicast_group: 1, replicas: [1], table: mac_fwd}", "unknown key 'table' for a"),
])
def test_bad_multicast_groups_name_file_entry_and_problem(tmp_path, infos, text, problem):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(EntriesError) as bad:
        load(path, infos["broadcast"])
    assert str(bad.value).startswith(f"{path}: entry 0: ")
    assert problem in str(bad.value)


@pytest.mark.parametrize("name", ["echo", "l3", "broadcast"])
def test_scenarios_name_existing_files(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    (plane,) = load_experiment(ROOT / "scenarios" / f"study003_{name}.yaml").planes
    assert plane.kind == "p4"
    assert Path(str(plane.options["program"])).is_file()
    assert Path(str(plane.options["entries"])).is_file()
