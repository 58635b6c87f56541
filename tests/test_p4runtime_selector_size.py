"""Selector size semantics (P4Info `sum_of_members` with `max_member_weight`, P4Runtime
1.3+) enforced over real gRPC on a real dplab-switch: a group's size counts its members,
not their weights; a weight over `max_member_weight` is INVALID_ARGUMENT; the selector's
`size` bounds the members of all its groups together (p4info.proto, ActionProfile.size)."""

from __future__ import annotations

from pathlib import Path

import grpc
import p4runtime_rig
import profile_flows
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import Names, compile_text, update_code_of
from profile_flows import group_of, member, profile_id, used_ports
from test_p4runtime_selector import route

pytestmark = pytest.mark.net
ECMP = Path(__file__).resolve().parent / "p4" / "ecmp_selector.p4"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    out = tmp_path_factory.mktemp("p4")
    text = ECMP.read_text().replace(
        "implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);",
        "implementation = by_members;").replace(
        "    action_profile(32w64) l2_profile;",
        "    action_profile(32w64) l2_profile;\n    @max_group_size(2) "
        '@selector_size_semantics("sum_of_members") @max_member_weight(100)\n'
        "    action_selector(HashAlgorithm.crc16, 32w8, 32w14) by_members;")
    return compile_text(text, "by_members.p4", out)


served = profile_flows.served
ctl = p4runtime_rig.ctl


def group(n: Names, weights: dict[int, int], max_size: int = 2, group_id: int = 1
          ) -> pb.Entity:
    return group_of(n, "by_members", group_id, weights, max_size)


def test_sum_of_members_counts_members_and_caps_each_weight(ctl):
    rig, client, n = ctl
    client.write(*(member(n, "by_members", port, port) for port in (2, 3, 4)))
    assert update_code_of(lambda: client.write(group(n, {2: 101}))) == \
        grpc.StatusCode.INVALID_ARGUMENT
    assert update_code_of(lambda: client.write(group(n, {2: 1, 3: 1, 4: 1}))) == \
        grpc.StatusCode.RESOURCE_EXHAUSTED
    client.write(group(n, {2: 100, 3: 100}))  # 200 of weight, 2 members: fits
    client.write(route(n, group_id=1))
    assert used_ports(rig) == {2, 3}


def read_groups(client, n: Names) -> list[pb.Entity]:
    probe = pb.Entity()
    probe.action_profile_group.action_profile_id = profile_id(n, "by_members")
    return client.read(probe)


def test_the_selector_size_bounds_the_members_of_all_groups_together(ctl):
    """by_members holds 8 (sum_of_members): four groups of two members fill it exactly; a
    fifth group, or a member more in a group, is RESOURCE_EXHAUSTED and changes nothing;
    the traffic keeps its group's ports; a deleted group frees its share."""
    rig, client, n = ctl
    client.write(*(member(n, "by_members", port, port) for port in (2, 3, 4)))
    for group_id in range(1, 4):
        client.write(group(n, {2: 1, 3: 1}, group_id=group_id))
    client.write(group(n, {4: 1}, group_id=4))  # 7 of 8
    client.write(group(n, {3: 5, 4: 5}, group_id=4), op=pb.Update.MODIFY)  # 8 of 8
    client.write(route(n, group_id=4))
    before = read_groups(client, n)
    assert update_code_of(lambda: client.write(group(n, {2: 1}, group_id=5))) == \
        grpc.StatusCode.RESOURCE_EXHAUSTED
    assert update_code_of(lambda: client.write(
        group(n, {2: 1, 3: 1}, max_size=0, group_id=5))) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert read_groups(client, n) == before
    assert used_ports(rig) == {3, 4}
    client.write(group(n, {2: 1}, group_id=1), op=pb.Update.DELETE)
    client.write(group(n, {2: 1, 4: 1}, group_id=5))  # 8 of 8 again
    assert len(read_groups(client, n)) == 4
