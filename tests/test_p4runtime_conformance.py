"""The P4Runtime server's answers to wrong and malformed requests, as the specification
(1.5.0) prescribes them, and its survival of requests no client should send: a real gRPC
client from the p4runtime package's stubs against a rig switch running dst_mac_fwd.p4 (tests/p4)."""

from __future__ import annotations

from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    Client,
    Names,
    code_of,
    compile_with_info,
    served_on_unix_socket,
    update_code_of,
    update_codes,
)
from switch_rig import udp_frame
from test_p4runtime_server import DST, TABLE, forward_entry

pytestmark = pytest.mark.net
ROOT = Path(__file__).resolve().parents[1]
SET_PIPELINE = pb.SetForwardingPipelineConfigRequest
OK, INVALID = 0, grpc.StatusCode.INVALID_ARGUMENT.value[0]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(ROOT / "tests" / "p4" / "dst_mac_fwd.p4",
                             tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def table_probe(n: Names) -> pb.Entity:
    probe = pb.Entity()
    probe.table_entry.table_id = n[TABLE]
    return probe


def pipeline_request(client: Client, action, config: pb.ForwardingPipelineConfig | None):
    req = SET_PIPELINE(device_id=1, election_id=client.election, action=action)
    if config is not None:
        req.config.CopyFrom(config)
    return req


def loaded_config(program) -> pb.ForwardingPipelineConfig:
    ir_path, info = program
    return pb.ForwardingPipelineConfig(p4info=info, p4_device_config=ir_path.read_bytes(),
                                       cookie=pb.ForwardingPipelineConfig.Cookie(cookie=7))


def test_a_failed_update_is_reported_as_a_batch_error_and_rpc_wide_errors_are_not(ctl):
    """Spec 12.4: UNKNOWN with one p4.v1.Error per update, even for one update; an error
    before any update is tried (bad device, not primary) is the RPC's own, no details."""
    _, client, n = ctl
    client.write(forward_entry(n.info, DST, 2))
    with pytest.raises(grpc.RpcError) as failed:
        client.write(forward_entry(n.info, DST, 3))
    assert failed.value.code() == grpc.StatusCode.UNKNOWN
    assert update_codes(failed.value) == [grpc.StatusCode.ALREADY_EXISTS.value[0]]
    for req, code in ((pb.WriteRequest(device_id=9, election_id=client.election),
                       grpc.StatusCode.NOT_FOUND),
                      (pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=3)),
                       grpc.StatusCode.PERMISSION_DENIED)):
        req.updates.add(type=pb.Update.INSERT, entity=forward_entry(n.info, "00:00:00:00:00:05", 2))
        with pytest.raises(grpc.RpcError) as refused:
            client.stub.Write(req)
        assert refused.value.code() == code
        assert "grpc-status-details-bin" not in dict(refused.value.trailing_metadata() or ())
    assert len(client.read(table_probe(n))) == 1  # nothing refused was written


def test_a_bad_read_request_fails_alone(ctl):
    """Spec 11.2: the valid requests of a Read batch are answered, the status is UNKNOWN
    with one p4.v1.Error per request (OK for the valid ones)."""
    _, client, n = ctl
    client.write(forward_entry(n.info, DST, 2))
    unknown_table = pb.Entity()
    unknown_table.table_entry.table_id = 12345
    empty = pb.Entity()  # no entity kind: INVALID_ARGUMENT, not a wildcard over everything
    req = pb.ReadRequest(device_id=1, entities=[table_probe(n), unknown_table, empty])
    answers = client.stub.Read(req)
    found = [e for reply in _until_error(answers) for e in reply.entities]
    assert [e.table_entry.match[0].exact.value for e in found] == [bytes.fromhex("02")]
    assert answers.code() == grpc.StatusCode.UNKNOWN
    assert update_codes(answers) == [OK, grpc.StatusCode.NOT_FOUND.value[0], INVALID]


def extern_entry(type_id: int, instance: int) -> pb.Entity:
    entity = pb.Entity()
    entity.extern_entry.extern_type_id, entity.extern_entry.extern_id = type_id, instance
    return entity


def read_codes(client: Client, *entities: pb.Entity) -> tuple[list[pb.Entity], list[int]]:
    """What a Read batch of ``entities`` finds, and each request's code (all OK: [])."""
    answers = client.stub.Read(pb.ReadRequest(device_id=1, entities=entities))
    found = [e for reply in _until_error(answers) for e in reply.entities]
    return found, ([] if answers.code() == grpc.StatusCode.OK else update_codes(answers))


def test_extern_entries_answer_for_the_externs_the_p4info_has(ctl, program):
    """Spec "ExternEntry": an entry names an Extern and ExternInstance of the P4Info;
    v1model's P4Info has none, so each named type is NOT_FOUND (an id the P4Info lacks),
    a type id outside 0x81..0xfe INVALID_ARGUMENT (p4runtime.proto), and a wildcard read
    of "all extern instances for all supported extern types" (spec "Wildcard Reads") is
    empty; the table entries read in the same batch are still answered."""
    rig, client, n = ctl
    client.write(forward_entry(n.info, DST, 2))
    wildcard = pb.Entity()
    wildcard.extern_entry.SetInParent()
    found, codes = read_codes(client, wildcard, table_probe(n))
    assert (len(found), codes) == (1, []) and found[0].HasField("table_entry")
    found, codes = read_codes(client, extern_entry(0x81, 0), extern_entry(0x81, 7),
                              extern_entry(0x05, 0), table_probe(n))
    assert len(found) == 1
    assert codes == [grpc.StatusCode.NOT_FOUND.value[0]] * 2 + [INVALID, OK]
    for entity, code in ((extern_entry(0x81, 1), grpc.StatusCode.NOT_FOUND),
                         (extern_entry(0xFF, 1), grpc.StatusCode.INVALID_ARGUMENT),
                         (extern_entry(0x81, 0), grpc.StatusCode.INVALID_ARGUMENT)):
        for op in (pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE):
            assert update_code_of(lambda e=entity, o=op: client.write(e, op=o)) == code
    # a client's P4Info may list an extern: known, but not programmable by this server
    ir_path, info = program
    with_extern = p4info_pb2.P4Info()
    with_extern.CopyFrom(info)
    extern = with_extern.externs.add(extern_type_id=0x81, extern_type_name="Hasher")
    extern.instances.add().preamble.id = 0x81000001
    client.set_pipeline((ir_path, with_extern))
    assert update_code_of(lambda: client.write(extern_entry(0x81, 0x81000001))) == \
        grpc.StatusCode.UNIMPLEMENTED
    assert update_code_of(lambda: client.write(extern_entry(0x81, 2))) == \
        grpc.StatusCode.NOT_FOUND
    found, codes = read_codes(client, wildcard, extern_entry(0x81, 0x81000001))
    assert (found, codes) == ([], [OK, grpc.StatusCode.UNIMPLEMENTED.value[0]])
    assert rig.client.call("ping") == "pong"  # the switch was never asked


def _until_error(answers) -> list[pb.ReadResponse]:
    got = []
    try:
        for reply in answers:
            got.append(reply)
    except grpc.RpcError:
        pass
    return got


def test_pipeline_config_actions_and_their_errors(tmp_path, program):
    """Spec 13-14: no pipeline yet is an unset config, not an error; COMMIT without a
    saved config is NOT_FOUND, with a config INVALID_ARGUMENT; RECONCILE_AND_COMMIT keeps
    the entries of the same program and refuses a different one."""
    fresh = served_on_unix_socket(tmp_path)  # a server that never had a pipeline
    _, address = next(fresh)
    client = Client(address, 20)
    try:
        assert client.next("arbitration").status.code == 0
        client.stub.SetForwardingPipelineConfig(pipeline_request(
            client, SET_PIPELINE.VERIFY, loaded_config(program)))  # verifies, loads nothing
        got = client.stub.GetForwardingPipelineConfig(
            pb.GetForwardingPipelineConfigRequest(device_id=1))
        assert not got.HasField("config")
        commit = pipeline_request(client, SET_PIPELINE.COMMIT, None)
        assert code_of(lambda: client.stub.SetForwardingPipelineConfig(commit)) == \
            grpc.StatusCode.NOT_FOUND
        commit.config.CopyFrom(loaded_config(program))
        assert code_of(lambda: client.stub.SetForwardingPipelineConfig(commit)) == \
            grpc.StatusCode.INVALID_ARGUMENT
        client.stub.SetForwardingPipelineConfig(pipeline_request(
            client, SET_PIPELINE.VERIFY_AND_COMMIT, loaded_config(program)))
        n = Names(program[1])
        client.write(forward_entry(n.info, DST, 2))
        same = loaded_config(program)
        same.cookie.cookie = 8
        client.stub.SetForwardingPipelineConfig(pipeline_request(
            client, SET_PIPELINE.RECONCILE_AND_COMMIT, same))
        assert len(client.read(table_probe(n))) == 1  # the entry survived
        kind = pb.GetForwardingPipelineConfigRequest
        cookie = client.stub.GetForwardingPipelineConfig(
            kind(device_id=1, response_type=kind.COOKIE_ONLY)).config
        assert cookie.cookie.cookie == 8 and not cookie.HasField("p4info")
        other = loaded_config(program)
        other.p4info.pkg_info.name = "another program"
        reconcile = pipeline_request(client, SET_PIPELINE.RECONCILE_AND_COMMIT, other)
        assert code_of(lambda: client.stub.SetForwardingPipelineConfig(reconcile)) == \
            grpc.StatusCode.INVALID_ARGUMENT
        kept = client.stub.GetForwardingPipelineConfig(
            kind(device_id=1, response_type=kind.P4INFO_AND_COOKIE)).config
        assert kept.p4info == program[1] and kept.cookie.cookie == 8  # nothing changed
        assert len(client.read(table_probe(n))) == 1
    finally:
        client.close()
        fresh.close()


def test_idle_timeouts_only_where_the_spec_allows_them(ctl):
    """Spec 9.1.8: time_since_last_hit is for reads (set iff asked), a default entry takes
    no idle timeout."""
    _, client, n = ctl
    entry = forward_entry(n.info, DST, 2)
    entry.table_entry.idle_timeout_ns = 60 * 10**9
    client.write(entry)
    asked = table_probe(n)
    asked.table_entry.time_since_last_hit.SetInParent()
    (read,) = client.read(asked)
    assert read.table_entry.HasField("time_since_last_hit")
    assert read.table_entry.idle_timeout_ns == 60 * 10**9
    (plain,) = client.read(table_probe(n))
    assert not plain.table_entry.HasField("time_since_last_hit")
    hit = forward_entry(n.info, "00:00:00:00:00:03", 2)
    hit.table_entry.time_since_last_hit.elapsed_ns = 5
    assert update_code_of(lambda: client.write(hit)) == grpc.StatusCode.INVALID_ARGUMENT
    default = pb.Entity()
    default.table_entry.table_id = n[TABLE]
    default.table_entry.is_default_action = True
    default.table_entry.idle_timeout_ns = 10**9
    assert update_code_of(lambda: client.write(default, op=pb.Update.MODIFY)) == \
        grpc.StatusCode.INVALID_ARGUMENT


def test_malformed_requests_never_kill_the_server(ctl, program):
    """Garbage where a P4Info or device config belongs, values of the wrong width, an
    empty entity, a batch over gRPC's message limit and a large batch of bad updates: each
    gets an error, and then a valid request still succeeds."""
    _, client, n = ctl
    set_pipeline = client.channel.unary_unary(
        "/p4.v1.P4Runtime/SetForwardingPipelineConfig",
        request_serializer=lambda raw: raw,
        response_deserializer=pb.SetForwardingPipelineConfigResponse.FromString)
    garbage_p4info = _garbage_pipeline_request(client.election, bytes(range(256)) * 4)
    assert code_of(lambda: set_pipeline(garbage_p4info)) in (
        grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT)
    for config in (pb.ForwardingPipelineConfig(p4info=program[1],
                                               p4_device_config=b"\xff\x00garbage"),
                   pb.ForwardingPipelineConfig(p4info=program[1],
                                               p4_device_config=b'{"tables": 5}'),
                   pb.ForwardingPipelineConfig(p4info=p4info_pb2.P4Info(),
                                               p4_device_config=b"[]")):
        req = pipeline_request(client, SET_PIPELINE.VERIFY_AND_COMMIT, config)
        assert code_of(lambda r=req: client.stub.SetForwardingPipelineConfig(r)) == \
            grpc.StatusCode.INVALID_ARGUMENT
    too_long, empty_value = forward_entry(n.info, DST, 2), forward_entry(n.info, DST, 2)
    too_long.table_entry.match[0].exact.value = b"\x01" * 7  # 56 bits for a 48-bit key
    empty_value.table_entry.match[0].exact.value = b""
    nothing = pb.Entity()
    assert _batch_codes(client, [too_long, empty_value, nothing]) == [INVALID] * 3
    oversized = pb.WriteRequest(device_id=1, election_id=client.election)
    bulky = forward_entry(n.info, "00:00:00:00:00:07", 2)
    bulky.table_entry.metadata = bytes(64 * 1024)
    for _ in range(80):  # 5 MB: over gRPC's 4 MB message limit
        oversized.updates.add(type=pb.Update.INSERT, entity=bulky)
    assert code_of(lambda: client.stub.Write(oversized)) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _batch_codes(client, [too_long] * 100) == [INVALID] * 100  # codes, no messages
    with pytest.raises(grpc.RpcError) as failed:  # per-update errors beyond any trailer
        _batch_codes(client, [too_long] * 1000)
    assert failed.value.code() == grpc.StatusCode.UNKNOWN
    assert failed.value.details().startswith("1000 of 1000 failed: #0: INVALID_ARGUMENT")
    client.write(forward_entry(n.info, DST, 2))  # the server is still there and still right
    (entry,) = client.read(table_probe(n))
    assert entry.table_entry.action.action.params[0].value == b"\x02"


def _batch_codes(client: Client, entities: list[pb.Entity]) -> list[int]:
    req = pb.WriteRequest(device_id=1, election_id=client.election)
    for entity in entities:
        req.updates.add(type=pb.Update.INSERT, entity=entity)
    with pytest.raises(grpc.RpcError) as failed:
        client.stub.Write(req)
    assert failed.value.code() == grpc.StatusCode.UNKNOWN
    if "grpc-status-details-bin" not in dict(failed.value.trailing_metadata()):
        raise failed.value
    return update_codes(failed.value)


def _garbage_pipeline_request(election: pb.Uint128, garbage: bytes) -> bytes:
    """A SetForwardingPipelineConfigRequest whose config.p4info field holds ``garbage``
    (no client library would serialize that; a broken or hostile one can)."""
    head = SET_PIPELINE(device_id=1, election_id=election,
                        action=SET_PIPELINE.VERIFY_AND_COMMIT).SerializeToString()
    p4info = b"\x0a" + _varint(len(garbage)) + garbage   # ForwardingPipelineConfig.p4info = 1
    return head + b"\x2a" + _varint(len(p4info)) + p4info  # request.config = 5


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def test_stream_errors_name_the_message_that_caused_them(ctl, served):
    """Spec 16.4: a refused PacketOut or DigestListAck comes back as a StreamError whose
    details name it (with the packet-out copied); the stream stays open."""
    rig, client, n = ctl
    frame = udp_frame(DST, "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2")
    unknown_field = pb.StreamMessageRequest()
    unknown_field.packet.payload = frame
    unknown_field.packet.metadata.add(metadata_id=7, value=b"\x01")
    too_wide = pb.StreamMessageRequest()
    too_wide.packet.payload = frame
    too_wide.packet.metadata.add(metadata_id=1, value=b"\x04\x00")  # 1024: 9-bit port
    too_wide.packet.metadata.add(metadata_id=2, value=b"\x00")
    no_pad = pb.StreamMessageRequest()  # spec 16.1: every packet_out field is required
    no_pad.packet.payload = frame
    no_pad.packet.metadata.add(metadata_id=1, value=b"\x02")
    rig.drain()
    for bad in (unknown_field, too_wide, no_pad):
        client.send(bad)
        error = client.next("error")
        assert error is not None and error.canonical_code == INVALID
        assert error.packet_out.packet_out == bad.packet
    assert rig.capture(wait=0.3)[2] == [], "a refused packet-out was sent"
    ack = pb.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = 12345, 1
    client.send(ack)
    error = client.next("error")
    assert error is not None and error.canonical_code == INVALID
    assert error.digest_list_ack.digest_list_ack == ack.digest_ack
    backup = Client(served[1], 3)
    try:
        assert backup.next("arbitration").status.code == \
            grpc.StatusCode.ALREADY_EXISTS.value[0]
        out = pb.StreamMessageRequest()
        out.packet.payload = frame
        out.packet.metadata.add(metadata_id=1, value=b"\x02")
        out.packet.metadata.add(metadata_id=2, value=b"\x00")
        backup.send(out)
        error = backup.next("error")
        assert error is not None
        assert error.canonical_code == grpc.StatusCode.PERMISSION_DENIED.value[0]
        assert error.HasField("packet_out")
    finally:
        backup.close()
    rig.drain()
    packet_outs = rig.packet_outs_run() + 1
    client.send(out)  # the primary's stream still works: the packet leaves on port 2
    assert rig.capture(packet_outs=packet_outs)[2] == [frame]
