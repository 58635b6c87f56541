"""Every P4Runtime entity against a real dplab-switch running tests/p4/rt_features.p4,
over real gRPC: written, read back, and checked against real packets through the switch."""

from __future__ import annotations

import socket
import time
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
    update_code_of,
    update_codes,
)
from switch_rig import udp_frame

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
SRC_MAC, DST_MAC = "00:00:00:00:00:01", "00:00:00:00:00:02"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "rt_features.p4", tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def ip(text: str) -> bytes:
    return socket.inet_aton(text)


def frame(dst_ip: str, src_ip: str = "10.0.0.1", ttl: int = 64, size: int = 64) -> bytes:
    return udp_frame(DST_MAC, SRC_MAC, src_ip, dst_ip, size=size, ttl=ttl)


def table_entry(n: Names, table: str, action: str, *params: bytes,
                priority: int = 0) -> pb.Entity:
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id, entry.priority = n[table], priority
    entry.action.action.action_id = n[action]
    for i, value in enumerate(params, start=1):
        entry.action.action.params.add(param_id=i, value=value)
    return entity


def lpm(n: Names, prefix: str, plen: int, action: str, *params: bytes) -> pb.Entity:
    entity = table_entry(n, "fwd_lpm", action, *params)
    entity.table_entry.match.add(field_id=1).lpm.CopyFrom(
        pb.FieldMatch.LPM(value=ip(prefix), prefix_len=plen))
    return entity


def acl(n: Names, priority: int, action: str, *params: bytes, src: tuple[str, str] | None = None,
        ttl: tuple[int, int] | None = None) -> pb.Entity:
    entity = table_entry(n, "acl", action, *params, priority=priority)
    if src is not None:
        entity.table_entry.match.add(field_id=1).ternary.CopyFrom(
            pb.FieldMatch.Ternary(value=ip(src[0]), mask=ip(src[1])))
    if ttl is not None:
        entity.table_entry.match.add(field_id=2).range.CopyFrom(
            pb.FieldMatch.Range(low=bytes([ttl[0]]), high=bytes([ttl[1]])))
    return entity


def send_and_capture(rig, port: int, frames: list[bytes]) -> dict[int, list[bytes]]:
    rig.drain()
    for f in frames:
        rig.send(port, f)
    return rig.capture()


def test_counters_and_direct_counters_count_real_packets(ctl):
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    sent = [frame("10.0.2.9", size=size) for size in (64, 100, 300)]
    got = send_and_capture(rig, 1, sent)
    got.update({p: got[p] + v for p, v in send_and_capture(
        rig, 3, [frame("10.9.9.9")] * 2).items()})  # default action: drop
    assert got[2] == sent
    probe = pb.Entity()
    probe.counter_entry.counter_id = n["port_counter"]
    cells = {e.counter_entry.index.index: e.counter_entry.data for e in client.read(probe)}
    assert len(cells) == 8
    assert (cells[1].packet_count, cells[1].byte_count) == (3, sum(map(len, sent)))
    assert (cells[3].packet_count, cells[3].byte_count) == (2, 128)
    assert cells[2].packet_count == 0
    probe.counter_entry.index.index = 3
    (one,) = client.read(probe)
    assert one.counter_entry.data.packet_count == 2
    direct = pb.Entity()
    direct.direct_counter_entry.table_entry.table_id = n["fwd_lpm"]
    (hit,) = client.read(direct)
    assert hit.direct_counter_entry.data.packet_count == 3
    assert hit.direct_counter_entry.data.byte_count == sum(map(len, sent))
    assert hit.direct_counter_entry.table_entry.match[0].lpm.prefix_len == 24
    # Reset both by MODIFY, then count again.
    reset = pb.Entity()
    reset.counter_entry.counter_id = n["port_counter"]
    reset.counter_entry.index.index = 1
    reset.counter_entry.data.SetInParent()
    hit.direct_counter_entry.data.Clear()
    client.write(reset, hit, op=pb.Update.MODIFY)
    send_and_capture(rig, 1, sent[:1])
    (one,) = client.read(reset)
    assert one.counter_entry.data.packet_count == 1
    (again,) = client.read(direct)
    assert again.direct_counter_entry.data.packet_count == 1


def test_meter_entry_polices_traffic_above_its_rate(ctl):
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    meter = pb.Entity()
    meter.meter_entry.meter_id = n["port_meter"]
    meter.meter_entry.index.index = 1
    meter.meter_entry.config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1, pburst=2))
    client.write(meter, op=pb.Update.MODIFY)
    (read,) = client.read(meter)
    assert read.meter_entry.config == meter.meter_entry.config
    burst = [frame("10.0.2.9")] * 10
    # 1 packet/s with a peak burst of 2: the first two pass, the rest are RED and dropped
    # (the sends take milliseconds, far less than the second a new token needs).
    assert len(send_and_capture(rig, 1, burst)[2]) == 2
    assert len(send_and_capture(rig, 3, burst)[2]) == 10  # port 3's meter: unconfigured
    all_cells = pb.Entity()
    all_cells.meter_entry.meter_id = n["port_meter"]
    configured = [e.meter_entry.index.index for e in client.read(all_cells)
                  if e.meter_entry.HasField("config")]
    assert configured == [1]


def test_direct_meter_entry_polices_its_table_entry(ctl):
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    police = acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255"))
    client.write(police)
    direct = pb.Entity()
    direct.direct_meter_entry.table_entry.CopyFrom(police.table_entry)
    direct.direct_meter_entry.table_entry.ClearField("action")
    direct.direct_meter_entry.config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1,
                                                             pburst=3))
    client.write(direct, op=pb.Update.MODIFY)
    (read,) = client.read(direct)
    assert read.direct_meter_entry.config == direct.direct_meter_entry.config
    burst = [frame("10.0.2.9")] * 10
    assert len(send_and_capture(rig, 1, burst)[2]) == 3
    other = [frame("10.0.2.9", src_ip="10.0.0.7")] * 10  # misses the acl entry: no meter
    assert len(send_and_capture(rig, 1, other)[2]) == 10
    # A meter given with the entry itself (TableEntry.meter_config) works the same.
    with_meter = acl(n, 20, "police", src=("10.0.0.7", "255.255.255.255"))
    with_meter.table_entry.meter_config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1,
                                                                pburst=1))
    client.write(with_meter)
    assert len(send_and_capture(rig, 1, other)[2]) == 1
    # A DirectMeterEntry without a config unconfigures the meter: everything GREEN again.
    unconfigure = pb.Entity()
    unconfigure.direct_meter_entry.table_entry.CopyFrom(with_meter.table_entry)
    unconfigure.direct_meter_entry.table_entry.ClearField("action")
    unconfigure.direct_meter_entry.table_entry.ClearField("meter_config")
    client.write(unconfigure, op=pb.Update.MODIFY)
    assert len(send_and_capture(rig, 1, other)[2]) == 10


def test_register_entry_write_read_and_packets_add_to_it(ctl):
    rig, client, n = ctl
    reg = pb.Entity()
    reg.register_entry.register_id = n["scratch"]
    reg.register_entry.index.index = 0
    reg.register_entry.data.bitstring = bytes([100])
    client.write(reg, op=pb.Update.MODIFY)
    send_and_capture(rig, 1, [frame("10.0.2.9")] * 3)  # each IPv4 packet adds one
    (read,) = client.read(reg)
    assert int.from_bytes(read.register_entry.data.bitstring, "big") == 103
    whole = pb.Entity()
    whole.register_entry.register_id = n["scratch"]
    assert [e.register_entry.index.index for e in client.read(whole)] == [0, 1, 2, 3]


def test_clone_session_copies_packets_to_its_port(ctl):
    rig, client, n = ctl
    session = pb.Entity()
    cs = session.packet_replication_engine_entry.clone_session_entry
    cs.session_id = 5
    cs.replicas.add(egress_port=3, instance=0)
    client.write(session)
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"),
                 acl(n, 10, "mirror", (5).to_bytes(4, "big"),
                     src=("10.0.0.1", "255.255.255.255")))
    sent = frame("10.0.2.9")
    got = send_and_capture(rig, 1, [sent])
    assert got[2] == [sent] and got[3] == [sent]
    probe = pb.Entity()
    probe.packet_replication_engine_entry.clone_session_entry.session_id = 5
    (read,) = client.read(probe)
    replicas = read.packet_replication_engine_entry.clone_session_entry.replicas
    assert [(r.egress_port, r.instance) for r in replicas] == [(3, 0)]
    client.write(session, op=pb.Update.DELETE)
    got = send_and_capture(rig, 1, [sent])
    assert got[2] == [sent] and got[3] == []


def test_multicast_group_replicates_and_can_be_changed(ctl):
    rig, client, n = ctl
    group = pb.Entity()
    mc = group.packet_replication_engine_entry.multicast_group_entry
    mc.multicast_group_id = 7
    for port in (1, 2, 3):
        mc.replicas.add(egress_port=port, instance=port)
    client.write(group, lpm(n, "224.0.0.0", 4, "multicast", (7).to_bytes(2, "big")))
    sent = frame("224.1.2.3")
    got = send_and_capture(rig, 1, [sent])
    assert got[1] == [sent] and got[2] == [sent] and got[3] == [sent]
    del mc.replicas[0]
    client.write(group, op=pb.Update.MODIFY)
    got = send_and_capture(rig, 1, [sent])
    assert got[1] == [] and got[2] == [sent] and got[3] == [sent]
    missing = pb.Entity()
    missing.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 8
    assert update_code_of(lambda: client.write(missing, op=pb.Update.MODIFY)) == \
        grpc.StatusCode.NOT_FOUND


def test_digest_lists_follow_config_and_acks(ctl):
    rig, client, n = ctl
    learn = frame("10.0.2.9", ttl=2)  # TTL 2 sends a learn_t digest
    send_and_capture(rig, 1, [learn])
    assert client.next("digest", timeout=0.5) is None  # not configured: nothing sent
    config = pb.Entity()
    config.digest_entry.digest_id = n["learn_t"]
    config.digest_entry.config.CopyFrom(pb.DigestEntry.Config(
        max_timeout_ns=0, max_list_size=1, ack_timeout_ns=10**10))
    client.write(config)
    (read,) = client.read(config)
    assert read.digest_entry.config == config.digest_entry.config
    send_and_capture(rig, 2, [learn, learn])
    digest = client.next("digest")
    assert digest is not None and digest.digest_id == n["learn_t"]
    members = [m.bitstring for m in digest.data[0].struct.members]
    assert members == [bytes.fromhex("01"), bytes([2])]  # src MAC ...:01, ingress port 2
    assert client.next("digest", timeout=0.5) is None  # the same data waits for the ack
    ack = pb.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = digest.digest_id, digest.list_id
    client.send(ack)
    time.sleep(0.3)  # the ack travels on the stream; the next packet must come after it
    send_and_capture(rig, 2, [learn])
    again = client.next("digest")
    assert again is not None and again.list_id > digest.list_id
    assert update_code_of(lambda: client.write(config)) == grpc.StatusCode.ALREADY_EXISTS


def test_ternary_range_priorities_lpm_and_default_entry(ctl):
    rig, client, n = ctl
    client.write(lpm(n, "10.0.0.0", 8, "forward", b"\x01"),
                 lpm(n, "10.0.2.0", 24, "forward", b"\x02"),
                 acl(n, 10, "set_port", b"\x03", src=("10.1.0.0", "255.255.0.0")),
                 acl(n, 20, "set_port", b"\x01", src=("10.1.0.5", "255.255.255.255"),
                     ttl=(60, 70)))
    to = {dst: frame(dst, src_ip=src, ttl=ttl) for dst, src, ttl in [
        ("10.0.2.9", "10.0.0.1", 64),    # longest prefix /24 -> 2
        ("10.0.3.9", "10.0.0.1", 64),    # only /8 -> 1
        ("10.0.2.8", "10.1.0.9", 64),    # acl priority 10 overrides -> 3
        ("10.0.2.7", "10.1.0.5", 64),    # both acl entries, priority 20 wins -> 1
        ("10.0.2.6", "10.1.0.5", 80),    # TTL outside 60..70: priority 10 -> 3
    ]}
    got = send_and_capture(rig, 3, list(to.values()))
    assert got[2] == [to["10.0.2.9"]]
    assert got[1] == [to["10.0.3.9"], to["10.0.2.7"]]
    got = send_and_capture(rig, 2, [to["10.0.2.8"], to["10.0.2.6"]])
    assert got[3] == [to["10.0.2.8"], to["10.0.2.6"]]
    probe = pb.Entity()
    probe.table_entry.table_id = n["acl"]
    read = sorted(client.read(probe), key=lambda e: e.table_entry.priority)
    assert [e.table_entry.priority for e in read] == [10, 20]
    rng = read[1].table_entry.match[1].range
    assert (rng.low, rng.high) == (bytes([60]), bytes([70]))
    assert read[0].table_entry.match[0].ternary.mask == ip("255.255.0.0")
    # The default entry: a miss is dropped until MODIFY makes it forward to port 3.
    miss = frame("192.168.1.1")
    assert send_and_capture(rig, 1, [miss])[3] == []
    default = table_entry(n, "fwd_lpm", "forward", b"\x03")
    default.table_entry.is_default_action = True
    client.write(default, op=pb.Update.MODIFY)
    (read,) = client.read(default)
    assert read.table_entry.action.action.action_id == n["forward"]
    assert send_and_capture(rig, 1, [miss])[3] == [miss]
    default.table_entry.ClearField("action")  # MODIFY without action: back to drop()
    client.write(default, op=pb.Update.MODIFY)
    assert send_and_capture(rig, 1, [miss])[3] == []


def test_wrong_requests_get_the_status_codes_of_the_spec(ctl, served):
    _, client, n = ctl
    fwd = lpm(n, "10.0.2.0", 24, "forward", b"\x02")
    client.write(fwd)
    cases = {
        "double insert": (fwd, pb.Update.INSERT, grpc.StatusCode.ALREADY_EXISTS),
        "modify missing": (lpm(n, "10.0.9.0", 24, "forward", b"\x02"), pb.Update.MODIFY,
                           grpc.StatusCode.NOT_FOUND),
        "delete missing": (lpm(n, "10.0.9.0", 24, "drop"), pb.Update.DELETE,
                           grpc.StatusCode.NOT_FOUND),
        "param 10 bits > 9": (lpm(n, "10.0.4.0", 24, "forward", b"\x02\x00"),
                              pb.Update.INSERT, grpc.StatusCode.INVALID_ARGUMENT),
        "5-byte IPv4": (_with_lpm_value(lpm(n, "10.0.5.0", 24, "drop"), b"\x00\x0a\x00\x05\x00"),
                        pb.Update.INSERT, grpc.StatusCode.INVALID_ARGUMENT),
        "bits past prefix": (lpm(n, "10.0.6.1", 24, "drop"), pb.Update.INSERT,
                             grpc.StatusCode.INVALID_ARGUMENT),
        "value outside mask": (acl(n, 5, "police", src=("10.0.0.1", "255.0.0.0")),
                               pb.Update.INSERT, grpc.StatusCode.INVALID_ARGUMENT),
        "no priority on ternary": (acl(n, 0, "police", src=("10.0.0.1", "255.255.255.255")),
                                   pb.Update.INSERT, grpc.StatusCode.INVALID_ARGUMENT),
        "full range": (acl(n, 5, "police", ttl=(0, 255)), pb.Update.INSERT,
                       grpc.StatusCode.INVALID_ARGUMENT),
        "action of another table": (lpm(n, "10.0.7.0", 24, "police"), pb.Update.INSERT,
                                    grpc.StatusCode.INVALID_ARGUMENT),
        "unknown counter": (_counter(12345), pb.Update.MODIFY, grpc.StatusCode.NOT_FOUND),
        "insert a counter cell": (_counter(n["port_counter"]), pb.Update.INSERT,
                                  grpc.StatusCode.INVALID_ARGUMENT),
        "insert default entry": (_default(n), pb.Update.INSERT,
                                 grpc.StatusCode.INVALID_ARGUMENT),
        "meter on a table without one": (_with_meter(lpm(n, "10.0.8.0", 24, "drop")),
                                         pb.Update.INSERT, grpc.StatusCode.INVALID_ARGUMENT),
    }
    wrong = {name: update_code_of(lambda e=entity, o=op: client.write(e, op=o))
             for name, (entity, op, _) in cases.items()}
    assert wrong == {name: code for name, (_, _, code) in cases.items()}
    probe = pb.Entity()
    probe.table_entry.table_id = n["fwd_lpm"]
    assert len(client.read(probe)) == 1  # nothing wrong was half-written


def test_batch_errors_name_each_update(ctl):
    _, client, n = ctl
    good, bad = lpm(n, "10.0.2.0", 24, "drop"), lpm(n, "10.0.3.1", 24, "drop")
    with pytest.raises(grpc.RpcError) as failed:
        client.write(good, bad)
    assert failed.value.code() == grpc.StatusCode.UNKNOWN
    assert update_codes(failed.value) == [0, grpc.StatusCode.INVALID_ARGUMENT.value[0]]


def test_only_the_primary_may_write(ctl, served):
    _, client, n = ctl
    backup = Client(served[1], 3)
    try:
        assert backup.next("arbitration").status.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
        fwd = lpm(n, "10.0.2.0", 24, "drop")
        assert code_of(lambda: backup.write(fwd)) == grpc.StatusCode.PERMISSION_DENIED
        client.write(fwd)
        probe = pb.Entity()
        probe.table_entry.table_id = n["fwd_lpm"]
        assert len(backup.read(probe)) == 1  # backups may read
    finally:
        backup.close()


def _with_lpm_value(entity: pb.Entity, value: bytes) -> pb.Entity:
    entity.table_entry.match[0].lpm.value = value
    return entity


def _with_meter(entity: pb.Entity) -> pb.Entity:
    entity.table_entry.meter_config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1, pburst=1))
    return entity


def _counter(counter_id: int) -> pb.Entity:
    entity = pb.Entity()
    entity.counter_entry.counter_id = counter_id
    entity.counter_entry.index.index = 0
    return entity


def _default(n: Names) -> pb.Entity:
    entity = table_entry(n, "fwd_lpm", "drop")
    entity.table_entry.is_default_action = True
    return entity
