"""One-shot action selector programming (P4Runtime spec 9.2.3) over real P4Runtime against
a real dplab-switch running tests/p4/oneshot_selector.p4, checked with real packets and
with the switch's own state (its control socket): a TableEntry with an action set spreads
flows over its actions and keeps each flow on one, reads back as written, moves traffic
when modified, and leaves no hidden member or group behind when deleted, refused or rolled
back; the spec's status codes."""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
import p4runtime_rig
import profile_flows
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import Names, compile_with_info, update_code_of, update_codes
from profile_flows import (
    DST_MAC,
    FLOWS,
    flows,
    forward,
    group_of,
    member,
    ports_of_flows,
    profile_id,
    table_read,
    used_ports,
)
from switch_rig import Rig, mac

from dplab.p4runtime import entries as entries_file
from dplab.p4runtime import installer

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
Code = grpc.StatusCode
INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
ECMP_SEL_SIZE, MAX_GROUP_SIZE = 16, 8  # as oneshot_selector.p4 declares them


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "oneshot_selector.p4", tmp_path_factory.mktemp("p4"))


served = profile_flows.served
ctl = p4runtime_rig.ctl


def action_set(n: Names, weights: list[tuple[int, int]]) -> pb.ActionProfileActionSet:
    """forward(port) with its weight, for each (port, weight), in order."""
    out = pb.ActionProfileActionSet()
    for port, weight in weights:
        out.action_profile_actions.add(action=forward(n, port), weight=weight)
    return out


def route(n: Names, weights: list[tuple[int, int]], table: str = "ecmp",
          prefix: str = "10.1.0.0") -> pb.Entity:
    """A one-shot entry: ``ecmp`` for prefix/16, or ``ecmp_by_src`` for source ``prefix``."""
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id = n[table]
    if table == "ecmp":
        entry.match.add(field_id=1).lpm.CopyFrom(
            pb.FieldMatch.LPM(value=socket.inet_aton(prefix), prefix_len=16))
    else:
        entry.match.add(field_id=1).exact.value = socket.inet_aton(prefix)
    entry.action.action_profile_action_set.CopyFrom(action_set(n, weights))
    return entity


def hidden(rig, n: Names, selector: str = "ecmp_sel") -> tuple[int, int]:
    """(members, groups) the switch itself holds in the selector (its control socket)."""
    pid = profile_id(n, selector)
    return (len(rig.client.call("profile_member_read", profile=pid)["members"]),
            len(rig.client.call("profile_group_read", profile=pid)["groups"]))


def test_an_entries_file_action_set_is_installed_as_a_one_shot(program, tmp_path):
    """The p4 plane's static entries (installer): ``actions`` in the file. A server of its
    own: the installer asks to be primary with election id 1, which must find no other
    test's client stream still closing."""
    address = f"unix:{tmp_path}/p4rt.sock"
    with p4runtime_rig.rig_with_server(address, n_ports=4) as rig:
        _install_entries_file(rig, address, program, tmp_path)


def _install_entries_file(rig, address: str, program, tmp_path: Path) -> None:
    ir_path, info = program
    path = tmp_path / "entries.yaml"
    path.write_text("entries:\n"
                    "  - table: ecmp\n"
                    "    match: {hdr.ipv4.dst: 10.1.0.0/16}\n"
                    "    actions:\n"
                    "      - {action: forward, params: {port: 2}}\n"
                    "      - {action: forward, params: {port: 4}, weight: 2}\n")
    config = pb.ForwardingPipelineConfig(p4info=info, p4_device_config=ir_path.read_bytes())
    installer.install(address, 1, config, entries_file.load(path, info), str(path))
    rig.drain()
    assert used_ports(rig) == {2, 4}
    assert hidden(rig, Names(info)) == (2, 1)


def test_a_one_shot_spreads_flows_over_its_actions_and_reads_back_as_written(ctl):
    rig, client, n = ctl
    client.write(route(n, [(2, 1), (3, 2), (4, 1)]))
    seen = ports_of_flows(rig, flows(FLOWS), copies=3)
    for flow, ports in seen.items():
        assert len(ports) == 1, f"flow {flow} left by {ports}"  # all 3 copies, one port
    assert {port for ports in seen.values() for port in ports} == {2, 3, 4}
    read = table_read(n)
    read.table_entry.counter_data.SetInParent()
    [entry] = client.read(read)
    assert entry.table_entry.action.action_profile_action_set == action_set(
        n, [(2, 1), (3, 2), (4, 1)])
    assert entry.table_entry.counter_data.packet_count == 3 * FLOWS
    # the desugared members and group exist in the switch, never in P4Runtime reads
    assert hidden(rig, n) == (3, 1)
    for kind in ("action_profile_member", "action_profile_group"):
        wildcard = pb.Entity()
        getattr(wildcard, kind).SetInParent()
        assert client.read(wildcard) == []


def test_equal_actions_are_not_merged_and_order_is_kept(ctl):
    rig, client, n = ctl
    written = [(3, 2), (2, 1), (3, 1)]
    client.write(route(n, written))
    [entry] = client.read(table_read(n))
    assert entry.table_entry.action.action_profile_action_set == action_set(n, written)
    assert hidden(rig, n) == (3, 1)  # each action counts as a member (9.2.3)


def test_modify_moves_traffic_and_delete_leaves_nothing_hidden(ctl):
    rig, client, n = ctl
    client.write(route(n, [(2, 1), (3, 1)]))
    assert used_ports(rig) == {2, 3}
    client.write(route(n, [(4, 1)]), op=MODIFY)
    assert used_ports(rig) == {4}
    assert hidden(rig, n) == (1, 1)  # the replaced set's members and group are gone
    client.write(route(n, [(3, 1), (4, 3)]), op=MODIFY)
    assert used_ports(rig) == {3, 4}
    [entry] = client.read(table_read(n))
    assert entry.table_entry.action.action_profile_action_set == action_set(
        n, [(3, 1), (4, 3)])
    client.write(route(n, []), op=DELETE)
    assert hidden(rig, n) == (0, 0)
    assert used_ports(rig, 4) == set()  # a miss: dropped


def test_the_spec_status_codes(ctl):
    rig, client, n = ctl
    write = client.write
    client.write(route(n, [(2, 1)]))
    before = hidden(rig, n)
    refused = {
        "weight 0": (route(n, [(2, 0)], "ecmp_by_src"), INSERT, Code.INVALID_ARGUMENT),
        "over max_group_size": (route(n, [(2, 5), (3, 4)], "ecmp_by_src"), INSERT,
                                Code.INVALID_ARGUMENT),
        "entry exists": (route(n, [(3, 1)]), INSERT, Code.ALREADY_EXISTS),
        "no such entry": (route(n, [(3, 1)], prefix="10.9.0.0"), MODIFY, Code.NOT_FOUND),
    }
    for what, (entity, op, code) in refused.items():
        assert update_code_of(lambda e=entity, o=op: write(e, op=o)) == code, what
    stranger = route(n, [(2, 1)], "ecmp_by_src")
    stranger.table_entry.action.action_profile_action_set.action_profile_actions[
        0].action.action_id = n["NoAction"]
    # NoAction is the table's @defaultonly action (as p4c lists it): spec 9.1.2
    assert update_code_of(lambda: write(stranger)) == Code.PERMISSION_DENIED
    watched = route(n, [(2, 1)], "ecmp_by_src")
    watched.table_entry.action.action_profile_action_set.action_profile_actions[
        0].watch_port = b"\x09"  # not a port of the switch
    assert update_code_of(lambda: write(watched)) == Code.INVALID_ARGUMENT
    # an action profile without selector takes no one shot
    on_profile = pb.Entity()
    on_profile.table_entry.table_id = n["l2"]
    on_profile.table_entry.match.add(field_id=1).exact.value = mac(DST_MAC)
    on_profile.table_entry.action.action_profile_action_set.CopyFrom(action_set(n, [(2, 1)]))
    assert update_code_of(lambda: write(on_profile)) == Code.INVALID_ARGUMENT
    assert hidden(rig, n) == before  # nothing refused left anything behind


def test_one_shots_and_members_never_mix_on_a_selector(ctl):
    rig, client, n = ctl
    write = client.write
    client.write(route(n, [(2, 1)]))
    # ecmp_sel holds one shots: no member, group or entry naming one (shared table too)
    assert update_code_of(lambda: write(member(n, "ecmp_sel", 1, 3))) == Code.INVALID_ARGUMENT
    assert update_code_of(lambda: write(member(n, "ecmp_sel", 1, 3), op=DELETE)
                          ) == Code.INVALID_ARGUMENT
    by_member = route(n, [], "ecmp_by_src")
    by_member.table_entry.action.action_profile_member_id = 1
    assert update_code_of(lambda: write(by_member)) == Code.INVALID_ARGUMENT
    # the other way round: wide's selector holds a member, so no one shot there
    client.write(member(n, "wide", 1, 3))
    one_shot = pb.Entity()
    one_shot.table_entry.table_id = n["wide"]
    one_shot.table_entry.match.add(field_id=1).exact.value = b"\x40"
    one_shot.table_entry.action.action_profile_action_set.CopyFrom(action_set(n, [(2, 1)]))
    assert update_code_of(lambda: write(one_shot)) == Code.INVALID_ARGUMENT
    # once its last one shot is deleted, a selector takes members again
    client.write(route(n, []), op=DELETE)
    client.write(member(n, "ecmp_sel", 1, 3))
    assert hidden(rig, n) == (1, 0)


def test_what_the_selector_cannot_hold_is_resource_exhausted(ctl):
    rig, client, n = ctl
    eight = [(2 + i % 3, 1) for i in range(MAX_GROUP_SIZE)]
    for i in range(ECMP_SEL_SIZE // MAX_GROUP_SIZE):  # fills ecmp_sel's 16 members
        client.write(route(n, eight, "ecmp_by_src", prefix=f"10.0.0.{i + 1}"))
    full = route(n, [(2, 1)])
    assert update_code_of(lambda: client.write(full)) == Code.RESOURCE_EXHAUSTED
    assert hidden(rig, n) == (ECMP_SEL_SIZE, 2)
    # without max_group_size, the weights must fit what the selector holds (its size)
    heavy = pb.Entity()
    heavy.table_entry.table_id = n["wide"]
    heavy.table_entry.match.add(field_id=1).exact.value = b"\x40"
    heavy.table_entry.action.action_profile_action_set.CopyFrom(action_set(n, [(2, 5000)]))
    assert update_code_of(lambda: client.write(heavy)) == Code.RESOURCE_EXHAUSTED
    assert hidden(rig, n, "wide") == (0, 0)


def test_the_selector_size_bounds_the_weights_of_all_groups_together(ctl):
    """ecmp_sel holds 16 of weight (sum_of_weights, p4info.proto ActionProfile.size):
    groups weighing 16 in all fit exactly, one more unit is RESOURCE_EXHAUSTED, for
    ActionProfileGroups and for one shots alike (members are far from running out), and a
    refused write changes nothing: groups, hidden members, traffic."""
    rig, client, n = ctl
    client.write(*(member(n, "ecmp_sel", port, port) for port in (2, 3, 4)))
    for group_id, weights in ((1, {2: 4, 3: 4}), (2, {4: 7}), (3, {2: 1})):  # 16 of 16
        client.write(sel_group(n, group_id, weights))
    client.write(group_route(n, 2))
    groups = pb.Entity()
    groups.action_profile_group.action_profile_id = profile_id(n, "ecmp_sel")
    before = client.read(groups)
    for write in (lambda: client.write(sel_group(n, 4, {3: 1})),
                  lambda: client.write(sel_group(n, 3, {2: 2}), op=MODIFY)):
        assert update_code_of(write) == Code.RESOURCE_EXHAUSTED
    assert client.read(groups) == before
    assert used_ports(rig) == {4}
    for group_id in (1, 2, 3):  # the selector emptied: one shots may take it
        if group_id == 2:
            client.write(group_route(n, 2), op=DELETE)
        client.write(sel_group(n, group_id, {}), op=DELETE)
    for port in (2, 3, 4):
        client.write(member(n, "ecmp_sel", port, port), op=DELETE)
    client.write(route(n, [(2, 8)], "ecmp_by_src", prefix="10.0.0.1"))
    client.write(route(n, [(3, 8)], "ecmp_by_src", prefix="10.0.0.2"))  # 16 of 16
    assert update_code_of(lambda: client.write(route(n, [(4, 1)]))) == \
        Code.RESOURCE_EXHAUSTED
    assert hidden(rig, n) == (2, 2)


def sel_group(n: Names, group_id: int, weights: dict[int, int]) -> pb.Entity:
    return group_of(n, "ecmp_sel", group_id, weights)


def group_route(n: Names, group_id: int) -> pb.Entity:
    entity = route(n, [])
    entity.table_entry.action.action_profile_group_id = group_id
    return entity


def test_rollback_undoes_one_shot_writes_completely(ctl):
    rig, client, n = ctl
    client.write(route(n, [(2, 1), (3, 1)]))
    client.write(route(n, [(4, 1)], "ecmp_by_src", prefix="10.9.9.1"))
    entries_before = client.read(table_read(n)) + client.read(table_read(n, "ecmp_by_src"))
    hidden_before = hidden(rig, n)
    req = pb.WriteRequest(device_id=1, election_id=client.election,
                          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    for entity, op in ((route(n, [(4, 2)]), MODIFY),
                       (route(n, [(2, 1)], "ecmp_by_src", prefix="10.9.9.1"), DELETE),
                       (route(n, [(3, 1)], "ecmp_by_src", prefix="10.9.9.2"), INSERT),
                       (route(n, [(2, 1)]), MODIFY),   # the entry modified twice
                       (route(n, [(2, 0)], "ecmp_by_src", prefix="10.9.9.3"), INSERT)):
        req.updates.add(type=op, entity=entity)
    with pytest.raises(grpc.RpcError) as failed:
        client.stub.Write(req)
    codes = update_codes(failed.value)
    assert codes[-1] == Code.INVALID_ARGUMENT.value[0]
    assert set(codes[:-1]) == {Code.ABORTED.value[0]}
    after = client.read(table_read(n)) + client.read(table_read(n, "ecmp_by_src"))
    assert after == entries_before
    assert hidden(rig, n) == hidden_before == (3, 2)
    assert used_ports(rig) == {2, 3}


def test_a_rolled_back_first_one_shot_leaves_the_selector_free(ctl):
    rig, client, n = ctl
    req = pb.WriteRequest(device_id=1, election_id=client.election,
                          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    req.updates.add(type=INSERT, entity=route(n, [(2, 1)]))
    req.updates.add(type=INSERT, entity=route(n, [(2, 1)], prefix="10.2.0.0"))
    req.updates.add(type=INSERT, entity=route(n, [(2, 1)]))  # exists: fails
    with pytest.raises(grpc.RpcError):
        client.stub.Write(req)
    assert client.read(table_read(n)) == []
    assert hidden(rig, n) == (0, 0)
    client.write(member(n, "ecmp_sel", 1, 3))  # no one shot left: members are welcome


def test_one_shots_read_back_as_written_after_a_server_restart(program, tmp_path):
    """The one-shot mark lives on the switch: a new server process that takes the running
    switch over (RECONCILE_AND_COMMIT of the same config, which keeps its state) reads the
    entry back as its action set, still hides its members and group, still refuses members
    on its selector, and the packets still take the set's ports."""
    reconcile = pb.SetForwardingPipelineConfigRequest.RECONCILE_AND_COMMIT
    with Rig(n_ports=4) as rig:
        with p4runtime_rig.server_process(rig, f"unix:{tmp_path}/first.sock"), \
                p4runtime_rig.primary_client(f"unix:{tmp_path}/first.sock", program) as (
                    client, _):
            n = Names(program[1])
            client.write(route(n, [(2, 1), (3, 2)]))
            written = client.read(table_read(n))
        with p4runtime_rig.server_process(rig, f"unix:{tmp_path}/second.sock"), \
                p4runtime_rig.primary_client(f"unix:{tmp_path}/second.sock", program,
                                             action=reconcile) as (client, won):
            assert p4runtime_rig.is_primary(won)
            assert client.read(table_read(n)) == written
            assert written[0].table_entry.action.HasField("action_profile_action_set")
            members, groups = pb.Entity(), pb.Entity()
            members.action_profile_member.SetInParent()
            groups.action_profile_group.SetInParent()
            assert client.read(members) == client.read(groups) == []
            assert hidden(rig, n) == (2, 1)
            assert update_code_of(lambda: client.write(member(n, "ecmp_sel", 9, 4))) == \
                Code.INVALID_ARGUMENT
            assert used_ports(rig) == {2, 3}
            client.write(route(n, []), op=DELETE)
            assert hidden(rig, n) == (0, 0)


def test_an_entries_file_action_set_is_checked(program, tmp_path):
    _, info = program
    one = "[{action: forward, params: {port: 2}}]"
    bad = [("table: l2, match: {hdr.ethernet.dst: 1}, actions: " + one,
            "has no action selector"),
           ("table: ecmp, action: drop, actions: " + one, "not both"),
           ("table: ecmp, actions: [{action: forward, params: {port: 2}, weight: 0}]",
            "weight"),
           ("table: l2, match: {hdr.ethernet.dst: 1}, action: NoAction",
            r"NoAction is not an action of table OneShotIngress.l2 \(@defaultonly\)"),
           ("table: l2, default: true, action: NoAction", None),
           ("table: ecmp, actions: [{action: NoAction}]",
            r"NoAction is not an action of table OneShotIngress.ecmp \(@defaultonly\)")]
    for text, message in bad:
        path = tmp_path / "entries.yaml"
        path.write_text(f"- {{{text}}}\n")
        if message is None:  # allowed: the default entry may take a @defaultonly action
            entries_file.load(path, info)
            continue
        with pytest.raises(entries_file.EntriesError, match=message) as err:
            entries_file.load(path, info)
        assert "entry 0" in str(err.value)
