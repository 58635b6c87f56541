"""Parser value sets over real P4Runtime (spec 9.7 "ValueSetEntry") and explicit entry
priorities (P4_16 1.2.4 "Entry priorities"): tests/data/p4/value_sets.p4 on a rig switch
behind our server, programmed by a gRPC client built from the p4runtime stubs. Crafted
frames show which members the parser's select matched and which entry won a lookup."""

from __future__ import annotations

from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import compile_with_info, update_code_of, update_codes

pytestmark = pytest.mark.net
ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "data" / "p4" / "value_sets.p4"
INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
IN_SET, NOT_IN_SET = 2, 3   # the program's output ports


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(PROGRAM, tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def frame(etype: int, tag: int, dst: int = 0x0A0000000001) -> bytes:
    head = dst.to_bytes(6, "big") + bytes.fromhex("0a0000000002") + etype.to_bytes(2, "big")
    return (head + bytes([tag])).ljust(60, b"\x00")


def out_port(rig, data: bytes) -> int | None:
    """Where a frame sent in on port 1 leaves (None: dropped)."""
    rig.drain()
    rig.send(1, data)
    ports = [port for port, frames in rig.capture().items() if frames]
    assert len(ports) <= 1
    return ports[0] if ports else None


def set_id(program, name: str) -> int:
    return next(v.preamble.id for v in program[1].value_sets if v.preamble.name == name)


def members_entity(program, name: str, *members: list[pb.FieldMatch]) -> pb.Entity:
    entity = pb.Entity()
    entity.value_set_entry.value_set_id = set_id(program, name)
    for fields in members:
        entity.value_set_entry.members.add().match.extend(fields)
    return entity


def exact(field_id: int, value: int) -> pb.FieldMatch:
    return pb.FieldMatch(field_id=field_id, exact=pb.FieldMatch.Exact(
        value=value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")))


def ternary(field_id: int, value: int, mask: int) -> pb.FieldMatch:
    return pb.FieldMatch(field_id=field_id, ternary=pb.FieldMatch.Ternary(
        value=bytes([value]), mask=bytes([mask])))


def read_members(client, program, name: str) -> list[list[pb.FieldMatch]]:
    got = client.read(members_entity(program, name))
    assert len(got) == 1
    return [list(m.match) for m in got[0].value_set_entry.members]


def test_value_set_members_steer_the_parser(ctl, program):
    rig, client, _ = ctl
    assert read_members(client, program, "P.allowed_types") == []  # empty at load
    assert out_port(rig, frame(0x88B5, 0)) == NOT_IN_SET
    client.write(members_entity(program, "P.allowed_types", [exact(1, 0x88B5)],
                                [exact(1, 0x88B6)]), op=MODIFY)
    assert [out_port(rig, frame(t, 0)) for t in (0x88B5, 0x88B6, 0x88B7)] == [
        IN_SET, IN_SET, NOT_IN_SET]
    client.write(members_entity(program, "P.allowed_types", [exact(1, 0x88B7)]),
                 op=MODIFY)   # replaces the set as a whole
    assert [out_port(rig, frame(t, 0)) for t in (0x88B5, 0x88B7)] == [NOT_IN_SET, IN_SET]
    assert read_members(client, program, "P.allowed_types") == [[exact(1, 0x88B7)]]
    client.write(members_entity(program, "P.allowed_types"), op=MODIFY)  # emptied
    assert out_port(rig, frame(0x88B7, 0)) == NOT_IN_SET


def test_struct_value_set_with_a_ternary_field(ctl, program):
    rig, client, _ = ctl
    client.write(members_entity(program, "P.pairs_of.tagged",
                                [exact(1, 0x9000), ternary(2, 0x20, 0xF0)],
                                [exact(1, 0x9001)]),   # kind left out: don't care
                 op=MODIFY)
    sent = [frame(0x9000, 0x2A), frame(0x9000, 0x30), frame(0x9001, 0x77),
            frame(0x9002, 0x20)]
    assert [out_port(rig, f) for f in sent] == [IN_SET, NOT_IN_SET, IN_SET, NOT_IN_SET]
    assert read_members(client, program, "P.pairs_of.tagged") == [
        [exact(1, 0x9000), ternary(2, 0x20, 0xF0)], [exact(1, 0x9001)]]
    every = client.read(pb.Entity(value_set_entry=pb.ValueSetEntry()))  # id 0: all sets
    assert sorted(e.value_set_entry.value_set_id for e in every) == sorted(
        v.preamble.id for v in program[1].value_sets)


def test_wrong_value_set_writes_get_the_spec_codes(ctl, program):
    rig, client, _ = ctl
    good = members_entity(program, "P.allowed_types", [exact(1, 0x88B5)])
    client.write(good, op=MODIFY)
    codes = {
        "insert": update_code_of(lambda: client.write(good, op=INSERT)),
        "delete": update_code_of(lambda: client.write(good, op=DELETE)),
        "too many": update_code_of(lambda: client.write(members_entity(
            program, "P.allowed_types", *[[exact(1, 0x88B0 + i)] for i in range(5)]),
            op=MODIFY)),
        "twice": update_code_of(lambda: client.write(members_entity(
            program, "P.allowed_types", [exact(1, 1)], [exact(1, 1)]), op=MODIFY)),
        "too wide": update_code_of(lambda: client.write(members_entity(
            program, "P.allowed_types", [exact(1, 0x10000)]), op=MODIFY)),
        "no such field": update_code_of(lambda: client.write(members_entity(
            program, "P.allowed_types", [exact(2, 1)]), op=MODIFY)),
        "exact left out": update_code_of(lambda: client.write(members_entity(
            program, "P.pairs_of.tagged", [ternary(2, 1, 1)]), op=MODIFY)),
    }
    unknown = pb.Entity(value_set_entry=pb.ValueSetEntry(value_set_id=0x03FFFFFF))
    codes["unknown id"] = update_code_of(lambda: client.write(unknown, op=MODIFY))
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert codes == {"insert": invalid, "delete": invalid,
                     "too many": grpc.StatusCode.RESOURCE_EXHAUSTED,
                     "twice": grpc.StatusCode.ALREADY_EXISTS, "too wide": invalid,
                     "no such field": invalid, "exact left out": invalid,
                     "unknown id": grpc.StatusCode.NOT_FOUND}
    with pytest.raises(grpc.RpcError) as failed:
        client.read(unknown)
    assert update_codes(failed.value) == [grpc.StatusCode.NOT_FOUND.value[0]]
    # every refused write left the set as it was
    assert read_members(client, program, "P.allowed_types") == [[exact(1, 0x88B5)]]
    assert out_port(rig, frame(0x88B5, 0)) == IN_SET


def test_rolled_back_batch_restores_the_members(ctl, program):
    rig, client, _ = ctl
    client.write(members_entity(program, "P.allowed_types", [exact(1, 0x88B5)]),
                 op=MODIFY)
    req = pb.WriteRequest(device_id=1, election_id=client.election,
                          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    req.updates.add(type=MODIFY, entity=members_entity(
        program, "P.allowed_types", [exact(1, 0x88B6)]))
    req.updates.add(type=INSERT, entity=members_entity(program, "P.pairs_of.tagged"))  # refused
    with pytest.raises(grpc.RpcError) as failed:
        client.stub.Write(req)
    assert update_codes(failed.value) == [grpc.StatusCode.ABORTED.value[0],
                                          grpc.StatusCode.INVALID_ARGUMENT.value[0]]
    assert read_members(client, program, "P.allowed_types") == [[exact(1, 0x88B5)]]
    assert [out_port(rig, frame(t, 0)) for t in (0x88B5, 0x88B6)] == [IN_SET, NOT_IN_SET]


def test_explicit_entry_priorities_pick_the_winner(ctl):
    rig, client, n = ctl
    found = client.read(pb.Entity(table_entry=pb.TableEntry(table_id=n["classify"])))
    ports = {e.table_entry.priority: e.table_entry.action.action for e in found}
    assert sorted(ports) == [40, 45, 50]   # as the source gives and derives them
    # 02:..:07 matches the entries of 50 and 40: 50 wins (port 2, not 3)
    assert out_port(rig, frame(0x0800, 1, dst=0x020000000007)) == 2
    # 06:..:01 matches those of 45 (drop) and 40: 45 wins
    assert out_port(rig, frame(0x0800, 1, dst=0x060000000001)) is None
    assert out_port(rig, frame(0x0800, 1, dst=0x080000000001)) == 3   # only 40
