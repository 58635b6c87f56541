"""Direct resources as P4Runtime 1.5 prescribes them, over real gRPC against a rig switch
running tests/p4/rt_features.p4: per-colour meter counters (MeterCounterData, spec 9.4:
counted per meter cell, read when asked, cleared by a write of zeros), the default entry's
direct counter and meter (9.1.3: "treated like a regular entry"), reads that return only
the direct resources a table has (9.1.5), and a Read the switch fails (11.2: INTERNAL).

port_meter (indexed by ingress port) and acl_meter (direct, on acl) mark packets; the
program drops RED ones, so what a meter coloured is checked against what came out."""

from __future__ import annotations

from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    Names,
    compile_with_info,
    fresh_pipeline,
    update_code_of,
    update_codes,
)
from test_p4runtime_entities import acl, frame, lpm, send_and_capture

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
MODIFY = pb.Update.MODIFY
INVALID = grpc.StatusCode.INVALID_ARGUMENT
# One GREEN and one YELLOW token, refilled once a second: a burst is mostly RED.
TIGHT = pb.MeterConfig(cir=1, cburst=1, pir=1, pburst=2)
BURST = 10


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "rt_features.p4", tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def colours(data: pb.MeterCounterData) -> list[tuple[int, int]]:
    """(packets, bytes) for GREEN, YELLOW, RED."""
    return [(c.packet_count, c.byte_count) for c in (data.green, data.yellow, data.red)]


def port_meter(n: Names, index: int | None, config: pb.MeterConfig | None = None,
               counts: bool = False) -> pb.Entity:
    entity = pb.Entity()
    entity.meter_entry.meter_id = n["port_meter"]
    if index is not None:
        entity.meter_entry.index.index = index
    if config is not None:
        entity.meter_entry.config.CopyFrom(config)
    if counts:
        entity.meter_entry.counter_data.SetInParent()
    return entity


def direct_meter(table_entry: pb.TableEntry, config: pb.MeterConfig | None = None,
                 counts: bool = False) -> pb.Entity:
    entity = pb.Entity()
    entity.direct_meter_entry.table_entry.CopyFrom(table_entry)
    entity.direct_meter_entry.table_entry.ClearField("action")
    if config is not None:
        entity.direct_meter_entry.config.CopyFrom(config)
    if counts:
        entity.direct_meter_entry.counter_data.SetInParent()
    return entity


def default_entry(n: Names, table: str) -> pb.TableEntry:
    return pb.TableEntry(table_id=n[table], is_default_action=True)


def burst_through(rig, src_ip: str = "10.0.0.1", size: int = 100) -> tuple[int, int]:
    """Sends BURST frames in on port 1 towards 10.0.2.9; (frames out on port 2, length)."""
    sent = frame("10.0.2.9", src_ip=src_ip, size=size)
    return len(send_and_capture(rig, 1, [sent] * BURST)[2]), len(sent)


def assert_coloured(data: pb.MeterCounterData, delivered: int, length: int) -> None:
    """The RED packets are those the program dropped; each colour counts its bytes."""
    (green, _), (yellow, _), (red, _) = counts = colours(data)
    assert (green + yellow, red) == (delivered, BURST - delivered)
    assert green >= 1 and red >= 1
    assert all(size == packets * length for packets, size in counts)


def test_indexed_meter_counts_each_colour(ctl):
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    client.write(port_meter(n, 1, TIGHT), op=MODIFY)
    delivered, length = burst_through(rig)
    (cell,) = client.read(port_meter(n, 1, counts=True))
    assert cell.meter_entry.config == TIGHT
    assert_coloured(cell.meter_entry.counter_data, delivered, length)
    (plain,) = client.read(port_meter(n, 1))  # not asked for: left out
    assert not plain.meter_entry.HasField("counter_data")
    # An unconfigured cell marks every packet GREEN, and counts it so.
    rig.drain()
    rig.send(3, frame("10.0.2.9", size=80))
    assert len(rig.capture()[2]) == 1
    cells = {e.meter_entry.index.index: e.meter_entry for e in
             client.read(port_meter(n, None, counts=True))}
    assert len(cells) == 8
    assert colours(cells[3].counter_data) == [(1, 80), (0, 0), (0, 0)]
    assert colours(cells[1].counter_data) == colours(cell.meter_entry.counter_data)
    # Counts can only be written as zero, which clears them (the config is written too).
    bad = port_meter(n, 1, TIGHT)
    bad.meter_entry.counter_data.red.packet_count = 1
    assert update_code_of(lambda: client.write(bad, op=MODIFY)) == INVALID
    client.write(port_meter(n, 1, TIGHT, counts=True), op=MODIFY)
    (cleared,) = client.read(port_meter(n, 1, counts=True))
    assert colours(cleared.meter_entry.counter_data) == [(0, 0)] * 3
    assert cleared.meter_entry.config == TIGHT


def test_direct_meter_counts_each_colour(ctl):
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    police = acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255"))
    police.table_entry.meter_config.CopyFrom(TIGHT)
    client.write(police)
    delivered, length = burst_through(rig)
    (direct,) = client.read(direct_meter(police.table_entry, counts=True))
    assert direct.direct_meter_entry.config == TIGHT
    assert_coloured(direct.direct_meter_entry.counter_data, delivered, length)
    asked = pb.Entity()
    asked.table_entry.CopyFrom(police.table_entry)
    asked.table_entry.ClearField("action")
    asked.table_entry.meter_counter_data.SetInParent()
    (entry,) = client.read(asked)
    assert entry.table_entry.meter_counter_data == direct.direct_meter_entry.counter_data
    (without,) = client.read(direct_meter(police.table_entry))
    assert not without.direct_meter_entry.HasField("counter_data")
    # A MODIFY of the entry keeps the counts unless meter_counter_data is set (9.1.5).
    client.write(police, op=MODIFY)
    (entry,) = client.read(asked)
    assert entry.table_entry.meter_counter_data == direct.direct_meter_entry.counter_data
    police.table_entry.meter_counter_data.SetInParent()
    client.write(police, op=MODIFY)
    (entry,) = client.read(asked)
    assert colours(entry.table_entry.meter_counter_data) == [(0, 0)] * 3
    # So does a DirectMeterEntry with counter_data; non-zero counts are refused. (A new
    # config of a configured meter keeps its buckets, emptied by the burst above:
    # unconfigured first, the config starts full.)
    client.write(direct_meter(police.table_entry), op=MODIFY)
    client.write(direct_meter(police.table_entry, TIGHT), op=MODIFY)
    delivered, length = burst_through(rig)
    bad = direct_meter(police.table_entry, pb.MeterConfig(cir=9, cburst=9, pir=9, pburst=9))
    bad.direct_meter_entry.counter_data.green.byte_count = 5
    assert update_code_of(lambda: client.write(bad, op=MODIFY)) == INVALID
    (direct,) = client.read(direct_meter(police.table_entry, counts=True))
    assert direct.direct_meter_entry.config == TIGHT  # refused whole: nothing changed
    assert_coloured(direct.direct_meter_entry.counter_data, delivered, length)
    client.write(direct_meter(police.table_entry, TIGHT, counts=True), op=MODIFY)
    (direct,) = client.read(direct_meter(police.table_entry, counts=True))
    assert colours(direct.direct_meter_entry.counter_data) == [(0, 0)] * 3


def test_default_entry_direct_counter_and_meter(ctl):
    """The default entry's direct counter counts misses and its direct meter colours
    them; both are read and written through DirectCounterEntry / DirectMeterEntry and the
    default TableEntry; resetting the default entry unconfigures its meter (9.1.3)."""
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    send_and_capture(rig, 1, [frame("10.9.9.9", size=90)] * 2)  # fwd_lpm misses: dropped
    counter = pb.Entity()
    counter.direct_counter_entry.table_entry.CopyFrom(default_entry(n, "fwd_lpm"))
    (read,) = client.read(counter)
    assert read.direct_counter_entry.table_entry.is_default_action
    assert (read.direct_counter_entry.data.packet_count,
            read.direct_counter_entry.data.byte_count) == (2, 180)
    counter.direct_counter_entry.data.packet_count = 7
    client.write(counter, op=MODIFY)
    (read,) = client.read(counter)
    assert read.direct_counter_entry.data.packet_count == 7
    # acl has no entries: its default entry, made police() with a meter, colours every
    # packet (police reads the colour; the program drops RED). Set counts start at zero.
    police = pb.Entity(table_entry=default_entry(n, "acl"))
    police.table_entry.action.action.action_id = n["police"]
    police.table_entry.meter_config.CopyFrom(TIGHT)
    police.table_entry.meter_counter_data.SetInParent()
    client.write(police, op=MODIFY)
    delivered, length = burst_through(rig)
    (meter,) = client.read(direct_meter(default_entry(n, "acl"), counts=True))
    assert meter.direct_meter_entry.config == TIGHT
    assert_coloured(meter.direct_meter_entry.counter_data, delivered, length)
    # A DirectMeterEntry naming the default entry: unconfigured, then a config (starting
    # with full buckets: a new config of a configured meter would keep them empty), the
    # counts cleared.
    client.write(direct_meter(default_entry(n, "acl")), op=MODIFY)
    client.write(direct_meter(default_entry(n, "acl"), TIGHT, counts=True), op=MODIFY)
    delivered, length = burst_through(rig)
    (meter,) = client.read(direct_meter(default_entry(n, "acl"), counts=True))
    assert_coloured(meter.direct_meter_entry.counter_data, delivered, length)
    asked = pb.Entity(table_entry=default_entry(n, "acl"))
    asked.table_entry.meter_config.SetInParent()
    (entry,) = client.read(asked)
    assert entry.table_entry.meter_config == TIGHT
    assert entry.table_entry.action.action.action_id == n["police"]
    client.write(pb.Entity(table_entry=default_entry(n, "acl")), op=MODIFY)  # reset
    (entry,) = client.read(asked)
    assert not entry.table_entry.HasField("meter_config")
    assert entry.table_entry.action.action.action_id == n["NoAction"]
    assert burst_through(rig)[0] == BURST
    # acl has no direct counter: naming its default entry's counter is INVALID_ARGUMENT.
    wrong = pb.Entity()
    wrong.direct_counter_entry.table_entry.CopyFrom(default_entry(n, "acl"))
    assert update_code_of(lambda: client.write(wrong, op=MODIFY)) == INVALID


def test_reads_return_only_the_direct_resources_a_table_has(ctl):
    """Spec 9.1.5 (Table read): a table without a direct counter (meter) leaves
    counter_data (meter_config, meter_counter_data) unset, even when asked for."""
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"),
                 acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255")))
    asked = pb.Entity()
    asked.table_entry.counter_data.SetInParent()
    asked.table_entry.meter_config.SetInParent()
    asked.table_entry.meter_counter_data.SetInParent()
    found = {e.table_entry.table_id: e.table_entry for e in client.read(asked)}
    assert found[n["fwd_lpm"]].HasField("counter_data")
    assert not found[n["fwd_lpm"]].HasField("meter_counter_data")
    assert not found[n["acl"]].HasField("counter_data")
    assert found[n["acl"]].HasField("meter_counter_data")
    asked.table_entry.table_id = n["acl"]
    asked.table_entry.is_default_action = True
    (default,) = client.read(asked)
    assert not default.table_entry.HasField("counter_data")
    # A DirectCounterEntry of a table without a direct counter, or naming a missing
    # entry, is an error (INVALID_ARGUMENT, NOT_FOUND); a wildcard skips such tables.
    direct = pb.Entity()
    direct.direct_counter_entry.table_entry.table_id = n["acl"]
    missing = pb.Entity()
    missing.direct_counter_entry.table_entry.CopyFrom(
        lpm(n, "10.0.7.0", 24, "drop").table_entry)
    with pytest.raises(grpc.RpcError) as failed:
        list(client.stub.Read(pb.ReadRequest(device_id=1, entities=[direct, missing])))
    assert update_codes(failed.value) == [INVALID.value[0],
                                          grpc.StatusCode.NOT_FOUND.value[0]]
    everything = client.read(pb.Entity(direct_counter_entry=pb.DirectCounterEntry()))
    assert [e.direct_counter_entry.table_entry.table_id for e in everything] == [n["fwd_lpm"]]


def test_a_read_the_switch_fails_is_internal(served, program, tmp_path):
    """Spec 11.2 (Batch Processing): a valid read that fails is INTERNAL in its
    p4.v1.Error; an invalid one keeps its own code. The switch is given another program
    behind the server's back, so the P4Info's tables are not in it."""
    other = tmp_path / "other.p4"
    other.write_text((HERE / "p4" / "rt_features.p4").read_text()
                     .replace("table fwd_lpm", "table other_lpm")
                     .replace("fwd_lpm.apply", "other_lpm.apply"))
    other_ir, _ = compile_with_info(other, tmp_path)
    with fresh_pipeline(served, program) as (rig, client, n):
        rig.load(other_ir)
        good = pb.Entity(table_entry=pb.TableEntry(table_id=n["fwd_lpm"]))
        bad = pb.Entity(table_entry=pb.TableEntry(table_id=12345))
        with pytest.raises(grpc.RpcError) as failed:
            list(client.stub.Read(pb.ReadRequest(device_id=1, entities=[good, bad])))
        assert failed.value.code() == grpc.StatusCode.UNKNOWN
        assert update_codes(failed.value) == [grpc.StatusCode.INTERNAL.value[0],
                                              grpc.StatusCode.NOT_FOUND.value[0]]


def test_rolled_back_batches_restore_colour_counts_and_the_default_entry(ctl):
    """ROLLBACK_ON_ERROR (spec 12.3): a failed batch leaves the colour counts and the
    default entry's action, meter and counter as they were."""
    rig, client, n = ctl
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    police = acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255"))
    police.table_entry.meter_config.CopyFrom(TIGHT)
    client.write(police)
    burst_through(rig)
    (before,) = client.read(direct_meter(police.table_entry, counts=True))
    default = pb.Entity(table_entry=default_entry(n, "acl"))
    default.table_entry.action.action.action_id = n["police"]
    default.table_entry.meter_config.CopyFrom(TIGHT)
    default.table_entry.counter_data.packet_count = 3  # acl has no direct counter: refused
    req = pb.WriteRequest(device_id=1, election_id=client.election,
                          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    req.updates.add(type=MODIFY, entity=direct_meter(police.table_entry, TIGHT, counts=True))
    valid_default = pb.Entity()
    valid_default.CopyFrom(default)
    valid_default.table_entry.ClearField("counter_data")
    req.updates.add(type=MODIFY, entity=valid_default)
    req.updates.add(type=MODIFY, entity=default)
    with pytest.raises(grpc.RpcError) as failed:
        client.stub.Write(req)
    assert update_codes(failed.value) == [grpc.StatusCode.ABORTED.value[0]] * 2 + [
        INVALID.value[0]]
    (after,) = client.read(direct_meter(police.table_entry, counts=True))
    assert after.direct_meter_entry == before.direct_meter_entry
    asked = pb.Entity(table_entry=default_entry(n, "acl"))
    asked.table_entry.meter_config.SetInParent()
    (entry,) = client.read(asked)
    assert entry.table_entry.action.action.action_id == n["NoAction"]
    assert not entry.table_entry.HasField("meter_config")
