"""Fuzzing the P4Runtime server with a real gRPC client: seeded mutants of valid Write and
Read requests and of StreamChannel messages. A client's mistake gets a status naming it
(never INTERNAL or UNKNOWN as its own code), the server never dies, and a refused write
leaves the switch's entries as they were."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import TOP_ELECTION, Client, compile_with_info, primary_client
from test_p4runtime_server import DST, TABLE, forward_entry

from dplab.p4runtime import errors

pytestmark = pytest.mark.net
ROOT = Path(__file__).resolve().parents[1]
SERVER_FAULTS = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
WRITE_MUTANTS = 150


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(ROOT / "tests" / "p4" / "dst_mac_fwd.p4",
                             tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def _odd_bytes(rng: random.Random) -> bytes:
    # (a 4 KB value is test_a_long_wrong_value_keeps_its_update_code's case)
    return rng.choice([b"", b"\x00", b"\xff" * 7, bytes(300), b"\x00\x00\x00\x01",
                       bytes([rng.randrange(256)]) * rng.randint(1, 20)])


def _odd_id(rng: random.Random, good: int) -> int:
    return rng.choice([0, 1, 2, good ^ 1, 0xFFFFFFFF, good + 0x01000000, rng.getrandbits(32)])


def mutant(base: pb.Entity, rng: random.Random) -> pb.Entity:
    """`base` (a valid table entry) with one to three random faults."""
    entity = pb.Entity()
    entity.CopyFrom(base)
    entry = entity.table_entry
    faults = [
        lambda: setattr(entry, "table_id", _odd_id(rng, entry.table_id)),
        lambda: setattr(entry.match[0], "field_id", _odd_id(rng, 1)),
        lambda: setattr(entry.match[0].exact, "value", _odd_bytes(rng)),
        lambda: entry.match[0].ternary.CopyFrom(pb.FieldMatch.Ternary(
            value=_odd_bytes(rng), mask=_odd_bytes(rng))),
        lambda: entry.match[0].lpm.CopyFrom(pb.FieldMatch.LPM(value=_odd_bytes(rng),
                                                              prefix_len=rng.randint(-5, 99))),
        lambda: entry.match.add(field_id=_odd_id(rng, 1)).exact.CopyFrom(
            pb.FieldMatch.Exact(value=_odd_bytes(rng))),
        lambda: entry.ClearField("match"),
        lambda: setattr(entry.action.action, "action_id",
                        _odd_id(rng, entry.action.action.action_id)),
        lambda: setattr(entry.action.action.params[0], "param_id", _odd_id(rng, 1)),
        lambda: setattr(entry.action.action.params[0], "value", _odd_bytes(rng)),
        lambda: entry.action.action.params.add(param_id=rng.randint(0, 9), value=b"\x01"),
        lambda: entry.action.action.ClearField("params"),
        lambda: setattr(entry, "priority", rng.choice([-1, 1, 2**31 - 1, -2**31])),
        lambda: setattr(entry, "idle_timeout_ns", rng.choice([-1, 1, 2**63 - 1])),
        lambda: setattr(entry.action, "action_profile_member_id", rng.getrandbits(32)),
        lambda: setattr(entry, "is_default_action", True),
        lambda: entry.meter_config.CopyFrom(pb.MeterConfig(cir=-1, cburst=-1, pir=-5, pburst=0)),
        lambda: entry.counter_data.CopyFrom(pb.CounterData(byte_count=-1, packet_count=-1)),
        lambda: setattr(entry, "metadata", bytes(rng.randint(0, 70000))),
        lambda: entity.register_entry.CopyFrom(pb.RegisterEntry(register_id=_odd_id(rng, 0))),
        lambda: entity.counter_entry.CopyFrom(pb.CounterEntry(
            counter_id=_odd_id(rng, 0), index=pb.Index(index=rng.choice([-1, 2**62])))),
        lambda: entity.packet_replication_engine_entry.multicast_group_entry.CopyFrom(
            pb.MulticastGroupEntry(multicast_group_id=rng.choice([0, 2**32 - 1]),
                                   replicas=[pb.Replica(egress_port=rng.getrandbits(32))] * 2)),
        lambda: entity.value_set_entry.CopyFrom(pb.ValueSetEntry(value_set_id=_odd_id(rng, 0))),
        lambda: entity.digest_entry.CopyFrom(pb.DigestEntry(digest_id=_odd_id(rng, 0))),
    ]
    for _ in range(rng.randint(1, 3)):
        with contextlib.suppress(IndexError):   # a match or a parameter already cleared
            rng.choice(faults)()
    return entity


def table_state(client: Client, table_id: int) -> list[bytes]:
    probe = pb.Entity()
    probe.table_entry.table_id = table_id
    return sorted(e.SerializeToString(deterministic=True) for e in client.read(probe))


def reset(client: Client, base: pb.Entity) -> None:
    probe = pb.Entity()
    probe.table_entry.table_id = base.table_entry.table_id
    for entity in client.read(probe):
        client.write(entity, op=pb.Update.DELETE)
    client.write(base)


def test_mutated_writes_get_a_client_status_and_change_nothing_when_refused(ctl):
    _, client, n = ctl
    base = forward_entry(n.info, DST, 2)
    client.write(base)
    table_id = base.table_entry.table_id
    rng = random.Random(33)
    faults: list[str] = []
    for i in range(WRITE_MUTANTS):
        entity = mutant(base, rng)
        op = rng.choice([pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE])
        before = table_state(client, table_id)
        try:
            client.write(entity, op=op)
        except grpc.RpcError as failed:
            code = errors.update_code(failed)
            if code in SERVER_FAULTS:
                faults.append(f"#{i} {pb.Update.Type.Name(op)} {code.name}: {failed.details()}"
                              f" for {entity}")
            assert table_state(client, table_id) == before, f"#{i} refused yet changed"
            continue
        reset(client, base)   # accepted (a fault that is no fault): start from the base again
    assert not faults, "\n".join(faults[:5])


def test_mutated_reads_get_a_client_status(ctl):
    _, client, n = ctl
    rng = random.Random(34)
    faults = []
    for i in range(60):
        entity = mutant(forward_entry(n.info, DST, 2), rng)
        try:
            client.read(entity)
        except grpc.RpcError as failed:
            code = errors.update_code(failed)
            if code in SERVER_FAULTS:
                faults.append(f"#{i} {code.name}: {failed.details()}")
    assert not faults, "\n".join(faults[:5])


def stream_mutants(rng: random.Random, n) -> list[pb.StreamMessageRequest]:
    out = []
    for _ in range(40):
        msg = pb.StreamMessageRequest()
        kind = rng.choice(["packet", "digest_ack", "arbitration", "other", "empty"])
        if kind == "packet":
            msg.packet.payload = _odd_bytes(rng)
            for _ in range(rng.randint(0, 3)):
                msg.packet.metadata.add(metadata_id=rng.randint(0, 5), value=_odd_bytes(rng))
        elif kind == "digest_ack":
            msg.digest_ack.digest_id = rng.getrandbits(32)
            msg.digest_ack.list_id = rng.getrandbits(64)
        elif kind == "arbitration":
            msg.arbitration.device_id = rng.choice([0, 1, 2, 2**64 - 1])
            msg.arbitration.election_id.low = rng.choice([0, 10, 2**64 - 1])
            msg.arbitration.role.name = rng.choice(["", "x" * 1000])
        elif kind == "other":
            msg.other.type_url = "type.googleapis.com/nothing.Known"
            msg.other.value = _odd_bytes(rng)
        out.append(msg)
    return out


def test_mutated_stream_messages_never_kill_the_server(ctl, served, program):
    rig, client, n = ctl
    _, address = served
    for msg in stream_mutants(random.Random(35), n):
        client.send(msg)
    reply = client.next("error", timeout=1.0)   # drains what came back
    assert reply is None or isinstance(reply, (pb.StreamError, grpc.RpcError))
    client.close()
    with primary_client(address, program, election=TOP_ELECTION) as (fresh, won):
        assert won.status.code == 0
        fresh.write(forward_entry(n.info, DST, 3))
        assert len(fresh.read(pb.Entity(table_entry=pb.TableEntry(table_id=n[TABLE])))) == 1
    assert rig.switch_alive()


def test_a_long_wrong_value_keeps_its_update_code(ctl):
    _, client, n = ctl
    entity = forward_entry(n.info, DST, 2)
    entity.table_entry.match[0].exact.value = bytes(4096)
    with pytest.raises(grpc.RpcError) as failed:
        client.write(entity)
    assert errors.update_codes(failed.value) == [grpc.StatusCode.INVALID_ARGUMENT]
    assert len(failed.value.details()) < 1000  # the value is not echoed whole
