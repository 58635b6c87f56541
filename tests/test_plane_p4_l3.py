"""The p4 plane's ``program: l3`` entries: built straight into P4Runtime entities, they are
the very entities its record (l3_entries.json) parses into through the entries file."""

from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2

from dplab.p4.cli import compile_command
from dplab.p4runtime import entries as entries_file
from dplab.planes import l3_routes, p4_l3
from dplab.planes.p4 import L3_PROGRAM
from dplab.substrate import Network
from dplab.topology import catalog


@pytest.fixture(scope="module")
def info(tmp_path_factory) -> p4info_pb2.P4Info:
    compiled = compile_command(L3_PROGRAM, tmp_path_factory.mktemp("l3"))
    return p4info_pb2.P4Info.FromString(compiled["p4info_bin"].read_bytes())


@pytest.mark.parametrize("topology", ["fattree", "grid"])
def test_built_entries_are_what_their_record_parses_into(info, topology) -> None:
    tables, _ = l3_routes.lpm_tables(Network(catalog.build(topology)))
    built = p4_l3.entries(tables, info)
    parsed = entries_file.parse(p4_l3.record(tables), info, "l3_entries.json")
    assert len(built) == sum(len(t.routes) + len(t.arp) for t in tables) > 0
    assert [(e.index, e.switches, e.entity) for e in built] == [
        (e.index, e.switches, e.entity) for e in parsed]


def test_a_program_without_the_l3_tables_is_named(info) -> None:
    lacking = p4info_pb2.P4Info()
    lacking.CopyFrom(info)
    del lacking.tables[:]
    with pytest.raises(p4_l3.ProgramMismatch, match="no table ipv4_lpm"):
        p4_l3.entries([], lacking)
