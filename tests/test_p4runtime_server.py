"""The P4Runtime server against a real dplab-switch (throwaway namespaces from the rig),
driven by a gRPC client built from the p4runtime package's stubs."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    Client,
    Names,
    compile_with_info,
    primary_client,
    served_on_unix_socket,
    update_code_of,
)
from switch_rig import udp_frame

pytestmark = pytest.mark.net
ROOT = Path(__file__).resolve().parents[1]
TABLE = "BasicIngress.mac_exact"
DST = "00:00:00:00:00:02"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(ROOT / "tests" / "p4" / "dst_mac_fwd.p4",
                             tmp_path_factory.mktemp("p4"))


@pytest.fixture()
def server(tmp_path):
    """A rig switch with a P4Runtime server on a unix socket; yields (rig, address)."""
    yield from served_on_unix_socket(tmp_path)


@pytest.fixture()
def primary(server, program):
    """(rig, a primary client with the program loaded)."""
    rig, address = server
    with primary_client(address, program) as (client, _):
        yield rig, client


def forward_entry(info, mac: str, port: int) -> pb.Entity:
    n = Names(info)
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id = n[TABLE]
    entry.match.add(field_id=1).exact.value = bytes.fromhex(mac.replace(":", ""))
    entry.action.action.action_id = n["BasicIngress.forward"]
    entry.action.action.params.add(param_id=1, value=bytes([port]))
    return entity


def test_arbitration_primary_and_backup(server, program):
    _, address = server
    low = Client(address, 5)
    assert low.next("arbitration").status.code == 0  # alone: primary
    high = Client(address, 9)
    try:
        assert high.next("arbitration").status.code == 0  # higher id takes over
        demoted = low.next("arbitration")
        assert demoted.status.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
        assert demoted.election_id.low == 9
        with pytest.raises(grpc.RpcError) as denied:
            low.set_pipeline(program)
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        high.set_pipeline(program)
        with pytest.raises(grpc.RpcError) as denied:
            low.write(forward_entry(program[1], DST, 2))
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        high.close()  # spec 5: no primary until a client sends an id >= 9, the highest seen
        assert low.next("arbitration").status.code == grpc.StatusCode.NOT_FOUND.value[0]
        low.election = pb.Uint128(low=9)
        again = pb.StreamMessageRequest()
        again.arbitration.device_id = 1
        again.arbitration.election_id.CopyFrom(low.election)
        low.send(again)
        assert low.next("arbitration").status.code == 0
        low.write(forward_entry(program[1], DST, 2))
    finally:
        low.close()
        high.close()


def test_table_write_read_and_forwarding(primary, program):
    rig, client = primary
    client.write(forward_entry(program[1], DST, 2))
    rig.drain()
    rig.send(1, udp_frame(DST, "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2"))
    assert len(rig.capture()[2]) == 1
    probe = pb.Entity()
    probe.table_entry.table_id = Names(program[1])[TABLE]
    probe.table_entry.counter_data.SetInParent()
    (read,) = client.read(probe)
    assert read.table_entry.match[0].exact.value == bytes.fromhex("02")
    assert read.table_entry.action.action.params[0].value == bytes([2])
    assert not read.table_entry.HasField("counter_data")  # no direct counter (9.1.5)
    config = client.stub.GetForwardingPipelineConfig(
        pb.GetForwardingPipelineConfigRequest(device_id=1))
    assert config.config.p4info == program[1]


def test_wrong_requests_get_spec_status_codes(server, program):
    _, address = server
    client = Client(address, 1)
    try:
        client.next("arbitration")
        with pytest.raises(grpc.RpcError) as early:  # no pipeline yet
            client.write(forward_entry(program[1], DST, 2))
        assert early.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        client.set_pipeline(program)
        client.write(forward_entry(program[1], DST, 2))
        # Failed updates: UNKNOWN at the top, the update's code in its p4.v1.Error (12.4)
        assert update_code_of(lambda: client.write(forward_entry(program[1], DST, 3))) == \
            grpc.StatusCode.ALREADY_EXISTS
        bad = forward_entry(program[1], DST, 2)
        bad.table_entry.table_id = 12345
        assert update_code_of(lambda: client.write(bad)) == grpc.StatusCode.NOT_FOUND
        too_wide = forward_entry(program[1], DST, 2)
        too_wide.table_entry.action.action.params[0].value = b"\x04\x00"  # 1024 > 9 bits
        assert update_code_of(lambda: client.write(too_wide, op=pb.Update.MODIFY)) == \
            grpc.StatusCode.INVALID_ARGUMENT
        gone = forward_entry(program[1], "00:00:00:00:00:09", 2)
        assert update_code_of(lambda: client.write(gone, op=pb.Update.DELETE)) == \
            grpc.StatusCode.NOT_FOUND
    finally:
        client.close()


def test_packet_out_and_packet_in(primary, program):
    rig, client = primary
    rig.drain()
    frame = udp_frame(DST, "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2")
    out = pb.StreamMessageRequest()
    out.packet.payload = frame
    out.packet.metadata.add(metadata_id=1, value=bytes([3]))
    out.packet.metadata.add(metadata_id=2, value=b"\x00")  # _pad: every field is required
    packet_outs = rig.packet_outs_run() + 1
    client.outbox.put(out)
    assert rig.capture(packet_outs=packet_outs)[3] == [frame]
    rig.send(2, frame)  # table miss -> controller
    packet_in = client.next("packet")
    assert packet_in is not None and packet_in.payload == frame
    assert {m.metadata_id: m.value for m in packet_in.metadata}[1] == bytes([2])


def test_multicast_group_and_default_entry(primary, program):
    rig, client = primary
    n = Names(program[1])
    group = pb.Entity()
    mc = group.packet_replication_engine_entry.multicast_group_entry
    mc.multicast_group_id = 1
    mc.replicas.add(egress_port=2, instance=0)
    mc.replicas.add(egress_port=3, instance=0)
    client.write(group)
    assert update_code_of(lambda: client.write(group)) == grpc.StatusCode.ALREADY_EXISTS
    probe = pb.Entity()
    probe.packet_replication_engine_entry.multicast_group_entry.SetInParent()
    (read,) = client.read(probe)
    assert [r.egress_port for r in
            read.packet_replication_engine_entry.multicast_group_entry.replicas] == [2, 3]
    default = pb.Entity()
    default.table_entry.table_id = n[TABLE]
    default.table_entry.is_default_action = True
    default.table_entry.action.action.action_id = n["BasicIngress.flood"]
    client.write(default, op=pb.Update.MODIFY)
    (read,) = client.read(default)
    assert read.table_entry.action.action.action_id == n["BasicIngress.flood"]
    rig.drain()
    frame = udp_frame(DST, "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2")
    rig.send(1, frame)  # miss -> flood through group 1
    got = rig.capture()
    assert got[2] == [frame] and got[3] == [frame] and got[1] == []
