"""A TableEntry Read that names an entry's whole key (its match, and its priority in a
table with priorities) asks the switch for that entry alone (`table_read` by key), not
for the whole table: the answer is the one a whole-table read filtered by the key gives,
and the switch's own count of table reads (`stats`' `table_reads`) shows which it was."""

from __future__ import annotations

from pathlib import Path

import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import compile_with_info
from test_p4runtime_entities import acl, lpm
from test_p4runtime_entry_state import probe

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "rt_features.p4", tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def reads(rig) -> dict[str, int]:
    return rig.client.call("stats")["table_reads"]


def read_counted(rig, client, entity: pb.Entity) -> tuple[list[pb.Entity], dict[str, int]]:
    """What a Read of ``entity`` answers, and how many table reads of each kind the
    switch served for it (this test's server is the switch's only other client)."""
    before = reads(rig)
    found = client.read(entity)
    after = reads(rig)
    return found, {kind: after[kind] - before[kind] for kind in after}


def filtered(everything: list[pb.Entity], keyed: pb.Entity) -> list[pb.Entity]:
    """The entries of a whole-table read that have ``keyed``'s key (what a key read
    answered before it went to the switch by key)."""
    want = keyed.table_entry
    return [e for e in everything
            if sorted(m.SerializeToString() for m in e.table_entry.match)
            == sorted(m.SerializeToString() for m in want.match)
            and (not want.priority or e.table_entry.priority == want.priority)]


def test_a_read_by_whole_key_reads_one_entry_on_the_switch(ctl):
    rig, client, n = ctl
    routes = [lpm(n, f"10.0.{i}.0", 24, "forward", b"\x02") for i in range(1, 9)]
    routes[3].table_entry.metadata = b"fourth"
    rules = [acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255")),
             acl(n, 20, "police", src=("10.0.0.1", "255.255.255.255")),
             acl(n, 30, "NoAction", ttl=(1, 9))]
    client.write(*routes, *rules)
    whole_routes, counted = read_counted(rig, client, probe(n, "fwd_lpm"))
    assert len(whole_routes) == 8 and counted == {"whole": 1, "by_key": 0}
    whole_rules = client.read(probe(n, "acl"))

    present, absent = routes[3], lpm(n, "10.9.9.0", 24, "forward", b"\x02")
    for written, everything in ((present, whole_routes), (absent, whole_routes),
                                (rules[1], whole_rules)):  # with its priority
        keyed = pb.Entity(table_entry=pb.TableEntry(
            table_id=written.table_entry.table_id, priority=written.table_entry.priority,
            match=written.table_entry.match))
        found, counted = read_counted(rig, client, keyed)
        assert found == filtered(everything, keyed)
        assert counted == {"whole": 0, "by_key": 1}
    assert [e.table_entry.metadata for e in client.read(present)] == [b"fourth"]

    # no priority in a table with priorities: every entry with the match, a whole read
    no_priority = pb.Entity(table_entry=pb.TableEntry(table_id=n["acl"],
                                                      match=rules[0].table_entry.match))
    found, counted = read_counted(rig, client, no_priority)
    assert [e.table_entry.priority for e in found] == [10, 20]
    assert counted == {"whole": 1, "by_key": 0}
    # the default entry is in every table read: it never costs the entries
    default, counted = read_counted(rig, client, probe(n, "fwd_lpm",
                                                       is_default_action=True))
    assert [e.table_entry.action.action.action_id for e in default] == [n["drop"]]
    assert counted == {"whole": 1, "by_key": 0}
