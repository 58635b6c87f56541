"""The P4Runtime specification's error cases (1.5), each against our server and a real
switch, over a real gRPC client. "here": this module; other tests cover the rest.

case                                             spec                  where tested
wrong device_id: Write / Read / Set / Get / arb  NOT_FOUND             here (Write: conformance)
Write / Read / packet-out before a pipeline      FAILED_PRECONDITION   here (Write: server)
Get before a pipeline                            OK, config unset      conformance
Write or Set by a backup, lower election id      PERMISSION_DENIED     server, conformance
a new primary while the primary's Write runs     the Write lands whole mastership
                                                 first, then the change
election id of another live client               INVALID_ARGUMENT      here
a live stream changes its device_id              FAILED_PRECONDITION   here
no election id: backup, never primary            arbitration status    here
primary gone: none until an id >= highest seen   backups get NOT_FOUND here
unknown role (arb, Write, Set) / role.config     NOT_FOUND / INVALID   batches
Write with no updates                            OK, nothing changes   here
UNSPECIFIED update type, unknown atomicity       INVALID_ARGUMENT      here
DATAPLANE_ATOMIC, the switch refuses its hold    its code, whole Write atomic (both paths)
INSERT existing / MODIFY, DELETE missing         ALREADY_EXISTS / NF   entities
priority 0 on ternary / range                    INVALID_ARGUMENT      entities
priority != 0 on an lpm/exact table              INVALID_ARGUMENT      here
field twice, unknown field id                    INVALID_ARGUMENT      here
mask 0, /0 given, prefix > width, full range     INVALID_ARGUMENT      here (range: entities)
value bits beyond the mask / prefix              INVALID_ARGUMENT      entities
action params missing / extra / twice / wide     INVALID_ARGUMENT      here (wide: entities)
default entry: match, DELETE, INSERT             INVALID_ARGUMENT      here (INSERT: entities)
counter/meter/register index <0 / past the end   INVALID / OUT_OF_RANGE here
meter config with pir < cir                      INVALID_ARGUMENT      here
multicast group / clone session id 0             INVALID_ARGUMENT      here
packet-out: backup / unknown, missing metadata   PERMISSION_DENIED/INV conformance
Set VERIFY: garbage, IR the switch cannot load,  INVALID_ARGUMENT      here
  P4Info of another program                      (nothing loaded)
Set COMMIT without / with config                 NOT_FOUND / INVALID   conformance
Capabilities                                     api version           here
"""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    Client,
    Names,
    code_of,
    compile_with_info,
    served_on_unix_socket,
    stream_refusal,
    update_code_of,
)

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
SET_PIPELINE = pb.SetForwardingPipelineConfigRequest
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND, ALREADY_EXISTS = grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ALREADY_EXISTS


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "rt_features.p4", tmp_path_factory.mktemp("p4"))


@pytest.fixture(scope="module")
def other_program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "port_fwd.p4", tmp_path_factory.mktemp("p4o"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def lpm(n: Names, prefix: str, plen: int, priority: int = 0) -> pb.Entity:
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id, entry.priority = n["fwd_lpm"], priority
    entry.match.add(field_id=1).lpm.CopyFrom(
        pb.FieldMatch.LPM(value=socket.inet_aton(prefix), prefix_len=plen))
    entry.action.action.action_id = n["forward"]
    entry.action.action.params.add(param_id=1, value=b"\x02")
    return entity


def acl(n: Names, mask: bytes) -> pb.Entity:
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id, entry.priority = n["acl"], 5
    entry.match.add(field_id=1).ternary.CopyFrom(
        pb.FieldMatch.Ternary(value=bytes(4), mask=mask))
    entry.action.action.action_id = n["police"]
    return entity


def default_entry(n: Names) -> pb.Entity:
    entity = pb.Entity()
    entity.table_entry.table_id = n["fwd_lpm"]
    entity.table_entry.is_default_action = True
    entity.table_entry.action.action.action_id = n["drop"]
    return entity


def cell(n: Names, kind: str, name: str, index: int) -> pb.Entity:
    entity = pb.Entity()
    entry = getattr(entity, f"{kind}_entry")
    setattr(entry, f"{kind}_id", n[name])
    entry.index.index = index
    if kind == "register":
        entry.data.bitstring = b"\x01"
    return entity


def meter(n: Names, cir: int, pir: int) -> pb.Entity:
    entity = cell(n, "meter", "port_meter", 1)
    entity.meter_entry.config.CopyFrom(pb.MeterConfig(cir=cir, cburst=10, pir=pir, pburst=10))
    return entity


def pre(kind: str) -> pb.Entity:
    entity = pb.Entity()
    getattr(entity.packet_replication_engine_entry, kind).SetInParent()
    return entity


def edited(entity: pb.Entity, edit) -> pb.Entity:
    edit(entity.table_entry)
    return entity


def update_cases(n: Names) -> dict[str, tuple[pb.Entity, int, grpc.StatusCode]]:
    """name -> (entity, update type, the spec's code for it)."""
    insert, modify, delete = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
    param = pb.Action.Param
    return {
        "priority on an lpm table": (lpm(n, "10.1.0.0", 16, priority=3), insert, INVALID),
        "match field twice": (edited(lpm(n, "10.2.0.0", 16), lambda e: e.match.add().CopyFrom(
            e.match[0])), insert, INVALID),
        "unknown match field": (edited(lpm(n, "10.3.0.0", 16), lambda e: e.match.add(
            field_id=9).exact.SetInParent()), insert, INVALID),
        "ternary mask 0 given": (acl(n, bytes(4)), insert, INVALID),
        "lpm /0 given": (lpm(n, "0.0.0.0", 0), insert, INVALID),
        "lpm /33": (lpm(n, "10.4.0.0", 33), insert, INVALID),
        "param missing": (edited(lpm(n, "10.5.0.0", 16), lambda e: e.action.action.ClearField(
            "params")), insert, INVALID),
        "param extra": (edited(lpm(n, "10.6.0.0", 16), lambda e: e.action.action.params.append(
            param(param_id=2, value=b"\x01"))), insert, INVALID),
        "param twice": (edited(lpm(n, "10.7.0.0", 16), lambda e: e.action.action.params.append(
            param(param_id=1, value=b"\x03"))), insert, INVALID),
        "default entry with a match": (edited(default_entry(n), lambda e: e.match.add(
            field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=bytes(4), prefix_len=8))),
            modify, INVALID),
        "default entry deleted": (default_entry(n), delete, INVALID),
        "counter index -1": (cell(n, "counter", "port_counter", -1), modify, INVALID),
        "counter index 8 of 8": (cell(n, "counter", "port_counter", 8), modify,
                                 grpc.StatusCode.OUT_OF_RANGE),
        "meter index 8 of 8": (cell(n, "meter", "port_meter", 8), modify,
                               grpc.StatusCode.OUT_OF_RANGE),
        "register index 4 of 4": (cell(n, "register", "scratch", 4), modify,
                                  grpc.StatusCode.OUT_OF_RANGE),
        "meter pir < cir": (meter(n, cir=100, pir=50), modify, INVALID),
        "multicast group 0": (pre("multicast_group_entry"), insert, INVALID),
        "clone session 0": (pre("clone_session_entry"), insert, INVALID),
    }


def test_each_wrong_update_gets_the_spec_code_and_changes_nothing(ctl):
    rig, client, n = ctl
    cases = update_cases(n)
    got = {name: update_code_of(lambda e=entity, o=op: client.write(e, op=o))
           for name, (entity, op, _) in cases.items()}
    assert got == {name: code for name, (_, _, code) in cases.items()}
    probe = pb.Entity()
    probe.table_entry.table_id = n["fwd_lpm"]
    assert client.read(probe) == []  # nothing refused was written
    client.write(meter(n, cir=50, pir=100), op=pb.Update.MODIFY)  # the right way round
    read = cell(n, "meter", "port_meter", 1)
    read.meter_entry.ClearField("config")
    (found,) = client.read(read)
    assert (found.meter_entry.config.cir, found.meter_entry.config.pir) == (50, 100)


def test_write_request_level_cases(ctl):
    """No updates: nothing to do, OK. An UNSPECIFIED update type fails its update; an
    unknown atomicity the whole request (spec 12)."""
    _, client, n = ctl
    client.stub.Write(pb.WriteRequest(device_id=1, election_id=client.election))
    req = pb.WriteRequest(device_id=1, election_id=client.election)
    req.updates.add(type=pb.Update.UNSPECIFIED, entity=lpm(n, "10.8.0.0", 16))
    assert update_code_of(lambda: client.stub.Write(req)) == INVALID
    req.updates[0].type, req.atomicity = pb.Update.INSERT, 7
    assert code_of(lambda: client.stub.Write(req)) == INVALID
    probe = pb.Entity()
    probe.table_entry.table_id = n["fwd_lpm"]
    assert client.read(probe) == []


def test_requests_for_another_device_are_not_found(ctl, served):
    _, client, n = ctl
    probe = pb.Entity()
    probe.table_entry.table_id = n["fwd_lpm"]
    read = pb.ReadRequest(device_id=2, entities=[probe])
    assert code_of(lambda: list(client.stub.Read(read))) == NOT_FOUND
    get = pb.GetForwardingPipelineConfigRequest(device_id=2)
    assert code_of(lambda: client.stub.GetForwardingPipelineConfig(get)) == NOT_FOUND
    config = SET_PIPELINE(device_id=2, election_id=client.election, action=SET_PIPELINE.VERIFY)
    assert code_of(lambda: client.stub.SetForwardingPipelineConfig(config)) == NOT_FOUND
    hello = pb.StreamMessageRequest()
    hello.arbitration.device_id = 2
    hello.arbitration.election_id.low = 40
    assert stream_refusal(served[1], hello) == NOT_FOUND


def test_verify_refuses_configs_the_switch_could_not_run(ctl, program, other_program):
    """Spec 14: VERIFY answers whether the target can realize the config; garbage, an IR
    with wrong object lists and a P4Info of another program are INVALID_ARGUMENT, and
    the running pipeline stays as it was."""
    rig, client, n = ctl
    client.write(lpm(n, "10.9.0.0", 16))
    ir_path, info = program
    configs = {
        "garbage": pb.ForwardingPipelineConfig(p4info=info, p4_device_config=b"\xff\x00"),
        "tables not a list": pb.ForwardingPipelineConfig(p4info=info,
                                                         p4_device_config=b'{"tables": 5}'),
        "another program's P4Info": pb.ForwardingPipelineConfig(
            p4info=other_program[1], p4_device_config=ir_path.read_bytes()),
    }
    for action in (SET_PIPELINE.VERIFY, SET_PIPELINE.VERIFY_AND_SAVE,
                   SET_PIPELINE.VERIFY_AND_COMMIT):
        got = {}
        for name, config in configs.items():
            req = SET_PIPELINE(device_id=1, election_id=client.election, action=action,
                               config=config)
            got[name] = code_of(lambda r=req: client.stub.SetForwardingPipelineConfig(r))
        assert got == dict.fromkeys(configs, INVALID)
    probe = pb.Entity()
    probe.table_entry.table_id = n["fwd_lpm"]
    assert len(client.read(probe)) == 1  # still the same pipeline and its entry
    assert rig.switch_alive()


def test_a_server_without_pipeline_and_its_arbitration(tmp_path, program):
    """Before a pipeline: Capabilities answers, Write, Read and packet-out are
    FAILED_PRECONDITION. Arbitration (spec 5): election ids are unique among live
    clients; a client without one is a backup; a live stream cannot change device; when
    the primary leaves, no one is primary until a client sends an id at least as high as
    the highest seen, and the backups are told (NOT_FOUND status)."""
    fresh = served_on_unix_socket(tmp_path)
    _, address = next(fresh)
    clients: list[Client] = []
    try:
        first = Client(address, 20)
        clients.append(first)
        assert first.next("arbitration").status.code == 0
        caps = first.stub.Capabilities(pb.CapabilitiesRequest())
        assert caps.p4runtime_api_version.startswith("1.")
        _before_a_pipeline(first)
        same = Client(address, 20)
        clients.append(same)
        assert _code(same.next("arbitration")) == INVALID
        silent = Client(address, None)
        clients.append(silent)
        assert silent.next("arbitration").status.code == ALREADY_EXISTS.value[0]
        low = Client(address, 5)
        clients.append(low)
        assert low.next("arbitration").status.code == ALREADY_EXISTS.value[0]
        first.close()
        for backup in (low, silent):
            note = backup.next("arbitration")
            assert (note.status.code, note.election_id.low) == (NOT_FOUND.value[0], 20)
        assert code_of(lambda: low.set_pipeline(program)) == grpc.StatusCode.PERMISSION_DENIED
        moved = pb.StreamMessageRequest()
        moved.arbitration.device_id = 3
        moved.arbitration.election_id.low = 5
        silent.send(moved)
        assert _code(silent.next("arbitration")) == grpc.StatusCode.FAILED_PRECONDITION
        back = Client(address, 20)  # the highest id seen: primary again
        clients.append(back)
        assert back.next("arbitration").status.code == 0
        assert low.next("arbitration").status.code == ALREADY_EXISTS.value[0]
        back.set_pipeline(program)
    finally:
        for client in clients:
            client.close()
        fresh.close()


def _before_a_pipeline(client: Client) -> None:
    probe = pb.Entity()
    probe.table_entry.SetInParent()
    assert code_of(lambda: client.read(probe)) == grpc.StatusCode.FAILED_PRECONDITION
    assert code_of(lambda: client.write(probe)) == grpc.StatusCode.FAILED_PRECONDITION
    out = pb.StreamMessageRequest()
    out.packet.payload = bytes(64)
    client.send(out)
    error = client.next("error")
    assert error is not None
    assert error.canonical_code == grpc.StatusCode.FAILED_PRECONDITION.value[0]


def _code(reply) -> grpc.StatusCode | None:
    """The code a stream ended with (the reply is then its RpcError)."""
    return reply.code() if isinstance(reply, grpc.RpcError) else None
