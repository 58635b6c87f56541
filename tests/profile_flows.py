"""Shared pieces of the action-profile tests (test_p4runtime_selector.py,
test_p4runtime_oneshot.py): a 4-port rig behind our server, flows of distinct UDP frames
sent into port 1 and the ports each left by, and the P4Runtime messages for members and
table reads."""

from __future__ import annotations

import socket
import struct

import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import Names
from switch_rig import ipv4_checksum, mac

SRC_MAC, DST_MAC = "00:00:00:00:00:01", "00:00:00:00:00:02"
FLOWS = 48


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A rig switch with 4 ports (1 in, 2-4 out) behind our server on a unix socket."""
    address = f"unix:{tmp_path_factory.mktemp('grpc')}/p4rt.sock"
    with p4runtime_rig.rig_with_server(address, n_ports=4) as rig:
        yield rig, address


def udp(src_ip: str, sport: int, dst_ip: str = "10.1.0.9", ttl: int = 64) -> bytes:
    """An Ethernet/IPv4/UDP frame of one flow (its addresses and ports)."""
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + 18, 1, 0, ttl, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    return (mac(DST_MAC) + mac(SRC_MAC) + b"\x08\x00" + ip
            + struct.pack("!HHHH", sport, 80, 26, 0) + bytes(18))


def flows(count: int) -> list[tuple[str, int]]:
    return [(f"10.0.{i // 8}.{i % 8 + 1}", 1000 + 7 * i) for i in range(count)]


def ports_of_flows(rig, flow_list: list[tuple[str, int]], copies: int = 1) -> dict:
    """The output ports each flow's packets left by (``copies`` packets per flow)."""
    seen: dict[tuple[str, int], set[int]] = {}
    for flow in flow_list:
        for _ in range(copies):
            rig.send(1, udp(*flow))
        got = rig.capture()
        seen[flow] = {port for port, frames in got.items() for _ in frames}
    return seen


def used_ports(rig, count: int = 24) -> set[int]:
    """The output ports the first ``count`` flows left by, all together."""
    return {p for ports in ports_of_flows(rig, flows(count)).values() for p in ports}


def table_read(n: Names, table: str = "ecmp") -> pb.Entity:
    """A read of every entry of ``table``."""
    read = pb.Entity()
    read.table_entry.table_id = n[table]
    return read


def profile_id(n: Names, name: str) -> int:
    return next(p.preamble.id for p in n.info.action_profiles if p.preamble.alias == name)


def forward(n: Names, port: int) -> pb.Action:
    action = pb.Action(action_id=n["forward"])
    action.params.add(param_id=1, value=bytes([port]))
    return action


def member(n: Names, profile: str, member_id: int, port: int) -> pb.Entity:
    entity = pb.Entity()
    entity.action_profile_member.CopyFrom(pb.ActionProfileMember(
        action_profile_id=profile_id(n, profile), member_id=member_id,
        action=forward(n, port)))
    return entity


def group_of(n: Names, profile: str, group_id: int, weights: dict[int, int],
             max_size: int = 0) -> pb.Entity:
    """An action profile group: member id -> weight."""
    entity = pb.Entity()
    g = entity.action_profile_group
    g.action_profile_id, g.group_id, g.max_size = profile_id(n, profile), group_id, max_size
    for member_id, weight in weights.items():
        g.members.add(member_id=member_id, weight=weight)
    return entity
