"""Study 004's data plane (p4src/study004/dmbrl.p4) compiles, and its P4Info has what the
control loop and the entries file rely on: the classifying table with its action, the
indirect byte meter, the counters, the forwarding tables; the entries file loads against it."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4runtime_rig import compile_with_info

from dplab.p4runtime import entries as entries_file

STUDY = Path(__file__).resolve().parents[1] / "p4src" / "study004"
MatchType = p4info_pb2.MatchField.MatchType


@pytest.fixture(scope="module")
def info(tmp_path_factory) -> p4info_pb2.P4Info:
    return compile_with_info(STUDY / "dmbrl.p4", tmp_path_factory.mktemp("study004"))[1]


def by_alias(objects) -> dict:
    return {obj.preamble.alias: obj for obj in objects}


def test_tables_keys_and_actions(info):
    tables, actions = by_alias(info.tables), by_alias(info.actions)
    names = {a.preamble.id: a.preamble.alias for a in info.actions}
    expected = {  # table -> (keys with match kinds, actions)
        "tos_class": ([("hdr.ipv4.diffserv", MatchType.TERNARY, 8),
                       ("meta.recirculated", MatchType.TERNARY, 1)], {"set_class"}),
        "ipv4_lpm": ([("hdr.ipv4.dst_addr", MatchType.LPM, 32)], {"forward", "drop"}),
        "low_routes": ([("hdr.ipv4.dst_addr", MatchType.LPM, 32),
                        ("meta.route", MatchType.EXACT, 16)], {"forward", "drop"}),
        "port_fwd": ([("standard_metadata.ingress_port", MatchType.EXACT, 9)],
                     {"forward", "drop"}),
    }
    assert set(tables) == set(expected)
    for name, (keys, acts) in expected.items():
        table = tables[name]
        assert [(m.name, m.match_type, m.bitwidth) for m in table.match_fields] == keys, name
        assert {names[r.id] for r in table.action_refs} == acts, name
    assert [(p.name, p.bitwidth) for p in actions["set_class"].params] == [
        ("class_id", 8), ("meter_index", 32)]
    assert [(p.name, p.bitwidth) for p in actions["forward"].params] == [("port", 9)]


def test_indirect_meter_and_counters(info):
    (meter,) = info.meters
    assert meter.preamble.alias == "class_meter"
    assert (meter.spec.unit, meter.size) == (p4info_pb2.MeterSpec.BYTES, 64)
    assert not info.direct_meters and not info.direct_counters
    counters = {c.preamble.alias: (c.spec.unit, c.size) for c in info.counters}
    assert counters == {"class_bytes": (p4info_pb2.CounterSpec.BYTES, 64),
                        "colour_packets": (p4info_pb2.CounterSpec.PACKETS, 6)}


def test_entries_file_loads_against_the_program(info):
    loaded = entries_file.load(STUDY / "dmbrl_entries.yaml", info)
    tables = {t.preamble.id: t.preamble.alias for t in info.tables}
    per_table: dict[str, int] = {}
    meters = [e.entity.meter_entry for e in loaded if e.entity.HasField("meter_entry")]
    for entry in loaded:
        if entry.entity.HasField("table_entry"):
            name = tables[entry.entity.table_entry.table_id]
            per_table[name] = per_table.get(name, 0) + 1
    assert per_table == {"tos_class": 2, "ipv4_lpm": 2, "low_routes": 6, "port_fwd": 2}
    # The static meter: one config per class cell (EF 1, AF41 2, best effort 0).
    assert sorted((m.index.index, m.config.pir) for m in meters) == [
        (0, 375000), (1, 187500), (2, 375000)]
