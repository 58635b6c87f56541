"""Action profiles and selectors over real P4Runtime (ActionProfileMember,
ActionProfileGroup, TableEntry naming a member or group) against a real dplab-switch
running tests/p4/ecmp_selector.p4, checked with real packets: a group spreads flows over
every member's port and keeps each flow on one; the spec's status codes (9.2)."""

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
    SRC_MAC,
    flows,
    forward,
    group_of,
    member,
    ports_of_flows,
    profile_id,
    table_read,
    used_ports,
)
from switch_rig import mac

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
Code = grpc.StatusCode


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "ecmp_selector.p4", tmp_path_factory.mktemp("p4"))


served = profile_flows.served
ctl = p4runtime_rig.ctl


def group(n: Names, group_id: int, weights: dict[int, int], max_size: int = 0) -> pb.Entity:
    return group_of(n, "ecmp", group_id, weights, max_size)


def route(n: Names, *, group_id: int = 0, member_id: int = 0) -> pb.Entity:
    """The ecmp entry for 10.1.0.0/16, naming a group or a member."""
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id = n["ecmp"]
    entry.match.add(field_id=1).lpm.CopyFrom(
        pb.FieldMatch.LPM(value=socket.inet_aton("10.1.0.0"), prefix_len=16))
    if group_id:
        entry.action.action_profile_group_id = group_id
    else:
        entry.action.action_profile_member_id = member_id
    return entity


def l2_entry(n: Names, member_id: int) -> pb.Entity:
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id = n["l2"]
    entry.match.add(field_id=1).exact.value = mac(DST_MAC)
    entry.action.action_profile_member_id = member_id
    return entity


def ecmp_group(client, n: Names, weights: dict[int, int]) -> None:
    """Members 2, 3, 4 forwarding to ports 2, 3, 4; group 1 with ``weights``; the route."""
    client.write(*(member(n, "ecmp", port, port) for port in (2, 3, 4)))
    client.write(group(n, 1, weights))
    client.write(route(n, group_id=1))


def test_a_group_spreads_flows_over_every_member_and_keeps_each_flow(ctl):
    rig, client, n = ctl
    ecmp_group(client, n, {2: 1, 3: 2, 4: 1})
    seen = ports_of_flows(rig, flows(FLOWS), copies=3)
    for flow, ports in seen.items():
        assert len(ports) == 1, f"flow {flow} left by {ports}"  # all 3 copies, one port
    used = {port for ports in seen.values() for port in ports}
    assert used == {2, 3, 4}
    # the entry's direct counter counts every packet the group forwarded
    read = table_read(n)
    read.table_entry.counter_data.SetInParent()
    [entry] = client.read(read)
    assert entry.table_entry.counter_data.packet_count == 3 * FLOWS
    assert entry.table_entry.action.action_profile_group_id == 1


def test_a_member_modify_moves_the_flows_of_its_slots(ctl):
    rig, client, n = ctl
    ecmp_group(client, n, {2: 1, 3: 1})
    client.write(member(n, "ecmp", 3, 4), op=pb.Update.MODIFY)  # member 3 now to port 4
    assert used_ports(rig, 24) == {2, 4}
    # a group shrunk to one member sends everything there
    client.write(group(n, 1, {2: 1}), op=pb.Update.MODIFY)
    assert used_ports(rig, 12) == {2}


def test_an_empty_group_acts_as_a_miss(ctl):
    rig, client, n = ctl
    ecmp_group(client, n, {2: 1})
    client.write(group(n, 1, {}), op=pb.Update.MODIFY)
    assert ports_of_flows(rig, flows(4)) == {f: set() for f in flows(4)}  # dropped


def test_a_profile_table_forwards_through_its_member_and_reads_back(ctl):
    rig, client, n = ctl
    client.write(member(n, "l2_profile", 7, 3))
    client.write(l2_entry(n, 7))
    arp_like = mac(DST_MAC) + mac(SRC_MAC) + b"\x88\xb5" + bytes(46)
    rig.send(1, arp_like)
    got = rig.capture()
    assert [len(got[p]) for p in (2, 3, 4)] == [0, 1, 0]
    read = pb.Entity()
    read.action_profile_member.SetInParent()  # wildcard: every member of every profile
    [m] = [e.action_profile_member for e in client.read(read)]
    assert (m.action_profile_id, m.member_id) == (profile_id(n, "l2_profile"), 7)
    assert m.action == forward(n, 3)
    [entry] = client.read(table_read(n, "l2"))
    assert entry.table_entry.action.action_profile_member_id == 7


def test_groups_read_back_by_id_and_wildcard(ctl):
    _, client, n = ctl
    ecmp_group(client, n, {2: 1, 3: 2})
    client.write(group(n, 5, {4: 3}, max_size=8))
    everything = pb.Entity()
    everything.action_profile_group.SetInParent()
    groups = {e.action_profile_group.group_id: e.action_profile_group
              for e in client.read(everything)}
    assert set(groups) == {1, 5}
    assert [(m.member_id, m.weight) for m in groups[1].members] == [(2, 1), (3, 2)]
    [five] = client.read(group(n, 5, {}))
    assert five.action_profile_group.max_size == 8
    assert [(m.member_id, m.weight) for m in five.action_profile_group.members] == [(4, 3)]


def test_the_spec_status_codes(ctl):
    _, client, n = ctl
    ecmp_group(client, n, {2: 1})
    write = client.write
    unknown = member(n, "ecmp", 9, 2)
    unknown.action_profile_member.action_profile_id = 0x11000001
    assert update_code_of(lambda: write(unknown)) == Code.NOT_FOUND
    assert update_code_of(lambda: write(member(n, "ecmp", 2, 2))) == Code.ALREADY_EXISTS
    assert update_code_of(lambda: write(group(n, 2, {9: 1}))) == Code.NOT_FOUND
    assert update_code_of(lambda: write(route(n, group_id=2),
                                        op=pb.Update.MODIFY)) == Code.NOT_FOUND
    assert update_code_of(lambda: write(group(n, 2, {3: 0}))) == Code.INVALID_ARGUMENT
    # in use: by a group, by an entry
    assert update_code_of(lambda: write(member(n, "ecmp", 2, 2),
                                        op=pb.Update.DELETE)) == Code.FAILED_PRECONDITION
    assert update_code_of(lambda: write(group(n, 1, {}),
                                        op=pb.Update.DELETE)) == Code.FAILED_PRECONDITION
    # weights beyond the group's max_size, or beyond what the selector holds
    assert update_code_of(lambda: write(group(n, 3, {3: 2, 4: 2}, max_size=3))
                          ) == Code.RESOURCE_EXHAUSTED
    assert update_code_of(lambda: write(group(n, 3, {3: 2000}))) == Code.RESOURCE_EXHAUSTED
    # a member bound to its tables' @defaultonly action (NoAction, as p4c lists it)
    stranger = member(n, "ecmp", 8, 2)
    stranger.action_profile_member.action.action_id = n["NoAction"]
    assert update_code_of(lambda: write(stranger)) == Code.PERMISSION_DENIED
    # a direct action on a profile table, a member on... a group on a profile without selector
    direct = route(n, member_id=2)
    direct.table_entry.action.action.CopyFrom(forward(n, 2))
    assert update_code_of(lambda: write(direct, op=pb.Update.MODIFY)) == Code.INVALID_ARGUMENT
    on_profile = l2_entry(n, 1)
    on_profile.table_entry.action.action_profile_group_id = 1
    assert update_code_of(lambda: write(on_profile)) == Code.INVALID_ARGUMENT
    no_groups = group(n, 1, {})
    no_groups.action_profile_group.action_profile_id = profile_id(n, "l2_profile")
    assert update_code_of(lambda: write(no_groups)) == Code.INVALID_ARGUMENT
    assert update_code_of(lambda: write(group(n, 1, {2: 1}, max_size=4),
                                        op=pb.Update.MODIFY)) == Code.INVALID_ARGUMENT


def test_rollback_undoes_member_and_group_writes(ctl):
    _, client, n = ctl
    client.write(member(n, "ecmp", 2, 2))
    req = pb.WriteRequest(device_id=1, election_id=client.election,
                          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    for entity, op in ((member(n, "ecmp", 3, 3), pb.Update.INSERT),
                       (member(n, "ecmp", 2, 4), pb.Update.MODIFY),
                       (group(n, 1, {2: 1, 3: 1}), pb.Update.INSERT),
                       (route(n, group_id=9), pb.Update.INSERT)):  # no group 9: fails
        req.updates.add(type=op, entity=entity)
    with pytest.raises(grpc.RpcError) as failed:
        client.stub.Write(req)
    codes = update_codes(failed.value)
    assert codes[-1] == Code.NOT_FOUND.value[0]
    assert set(codes[:-1]) == {Code.ABORTED.value[0]}
    members = pb.Entity()
    members.action_profile_member.action_profile_id = profile_id(n, "ecmp")
    [only] = [e.action_profile_member for e in client.read(members)]
    assert only.member_id == 2 and only.action == forward(n, 2)
    groups = pb.Entity()
    groups.action_profile_group.SetInParent()
    assert client.read(groups) == []
