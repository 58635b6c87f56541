"""What a table entry carries beside its key and action, as P4Runtime 1.5 prescribes it:
the controller's opaque metadata (spec 9.1), MODIFY of its direct meter and counter
(9.1.5), its idle timeout (9.1.4, 9.1.8) and the idle notification (16). A real gRPC
client from the p4runtime package's stubs against a rig switch; packets check that the
switch does what the entries say."""

from __future__ import annotations

from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    Names,
    compile_text,
    compile_with_info,
    ethernet_program,
    fresh_pipeline,
    update_code_of,
    update_codes,
)
from switch_rig import udp_frame
from test_p4runtime_entities import acl, frame, lpm, send_and_capture
from test_p4runtime_server import DST, TABLE, forward_entry

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
MODIFY, DELETE = pb.Update.MODIFY, pb.Update.DELETE
INVALID = grpc.StatusCode.INVALID_ARGUMENT
CONST_TTL_PROGRAM = ethernet_program("Tt", "bit<1> unused;", """
    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    table fixed {
        key = { standard_metadata.ingress_port: exact; }
        actions = { forward; NoAction; }
        const entries = { 1 : forward(2); }
        support_timeout = true;
    }
    apply { fixed.apply(); }
""")


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    out = tmp_path_factory.mktemp("p4")
    return {"rt": compile_with_info(HERE / "p4" / "rt_features.p4", out),
            "basic": compile_with_info(HERE / "p4" / "dst_mac_fwd.p4", out),
            "const_ttl": compile_text(CONST_TTL_PROGRAM, "const_ttl.p4", out)}


served = p4runtime_rig.served


@pytest.fixture()
def rt(served, programs):
    """(rig, primary client with rt_features freshly loaded, names)."""
    with fresh_pipeline(served, programs["rt"]) as ctl:
        yield ctl


def probe(n: Names, table: str, **fields) -> pb.Entity:
    entity = pb.Entity()
    entity.table_entry.table_id = n[table]
    for name, value in fields.items():
        setattr(entity.table_entry, name, value)
    return entity


def notes(entity: pb.Entity) -> tuple[int, bytes]:
    return entity.table_entry.controller_metadata, entity.table_entry.metadata


def got_on(rig, dst_ip: str) -> int | None:
    """The port one frame to ``dst_ip`` sent in on port 1 leaves by (None: dropped)."""
    got = send_and_capture(rig, 1, [frame(dst_ip)])
    ports = [port for port, frames in got.items() if frames]
    assert len(ports) <= 1
    return ports[0] if ports else None


def test_entry_metadata_is_read_back_as_written(rt):
    """Spec 9.1: controller_metadata and metadata come back with the entry; a MODIFY with
    an action replaces them (12.2: full state), one without an action keeps them, a
    DELETE forgets them; reads filter by them (9.1.6); a rolled-back batch restores them."""
    rig, client, n = rt
    route = lpm(n, "10.0.2.0", 24, "forward", b"\x02")
    route.table_entry.controller_metadata, route.table_entry.metadata = 7, b"route-a"
    police = acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255"))
    police.table_entry.metadata = b"\x00acl"
    client.write(route, police)
    assert [notes(e) for e in client.read(probe(n, "fwd_lpm"))] == [(7, b"route-a")]
    assert [notes(e) for e in client.read(probe(n, "acl"))] == [(0, b"\x00acl")]
    assert len(client.read(probe(n, "fwd_lpm", metadata=b"route-a"))) == 1
    assert client.read(probe(n, "fwd_lpm", metadata=b"route-b")) == []
    assert client.read(probe(n, "fwd_lpm", controller_metadata=8)) == []
    assert got_on(rig, "10.0.2.9") == 2  # the entry forwards as its action says

    moved = lpm(n, "10.0.2.0", 24, "forward", b"\x03")
    moved.table_entry.metadata = b"route-b"
    client.write(moved, op=MODIFY)
    assert [notes(e) for e in client.read(probe(n, "fwd_lpm"))] == [(0, b"route-b")]
    assert got_on(rig, "10.0.2.9") == 3
    counter_only = lpm(n, "10.0.2.0", 24, "forward")
    counter_only.table_entry.ClearField("action")
    counter_only.table_entry.counter_data.packet_count = 0
    client.write(counter_only, op=MODIFY)
    assert [notes(e) for e in client.read(probe(n, "fwd_lpm"))] == [(0, b"route-b")]

    renamed = lpm(n, "10.0.2.0", 24, "forward", b"\x03")
    renamed.table_entry.metadata = b"route-c"
    failing = lpm(n, "10.0.9.0", 24, "forward", b"\x02")  # no such entry to modify
    req = pb.WriteRequest(device_id=1, election_id=client.election,
                          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    req.updates.add(type=MODIFY, entity=renamed)
    req.updates.add(type=MODIFY, entity=failing)
    with pytest.raises(grpc.RpcError) as failed:
        client.stub.Write(req)
    assert update_codes(failed.value) == [grpc.StatusCode.ABORTED.value[0],
                                          grpc.StatusCode.NOT_FOUND.value[0]]
    assert [notes(e) for e in client.read(probe(n, "fwd_lpm"))] == [(0, b"route-b")]

    gone = lpm(n, "10.0.2.0", 24, "forward")
    gone.table_entry.idle_timeout_ns = 5  # nonsense outside the key: a DELETE ignores it
    client.write(gone, op=DELETE)
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    assert [notes(e) for e in client.read(probe(n, "fwd_lpm"))] == [(0, b"")]


def test_default_entry_metadata_is_kept_until_it_is_reset(rt):
    """Spec 9.1.3: the default entry takes metadata like any entry; resetting it (MODIFY
    without an action) resets its metadata too."""
    rig, client, n = rt
    default = probe(n, "fwd_lpm", is_default_action=True, controller_metadata=3)
    default.table_entry.action.action.action_id = n["forward"]
    default.table_entry.action.action.params.add(param_id=1, value=b"\x03")
    client.write(default, op=MODIFY)
    (read,) = client.read(probe(n, "fwd_lpm", is_default_action=True))
    assert notes(read) == (3, b"")
    assert got_on(rig, "10.0.7.7") == 3  # every route misses: the default forwards
    client.write(probe(n, "fwd_lpm", is_default_action=True), op=MODIFY)
    (read,) = client.read(probe(n, "fwd_lpm", is_default_action=True))
    assert notes(read) == (0, b"")
    assert got_on(rig, "10.0.7.7") is None  # the program's default again: drop


def test_entry_metadata_outlives_a_server_restart(rt, programs, tmp_path):
    """The metadata lives with the entry on the switch (its `meta`): a new server process
    that takes the running switch over (RECONCILE_AND_COMMIT of the same config, which
    keeps its state) reads entries and the default entry back with their metadata, and
    filters by it."""
    rig, client, n = rt
    route = lpm(n, "10.0.2.0", 24, "forward", b"\x02")
    route.table_entry.controller_metadata, route.table_entry.metadata = 2**64 - 1, b"a"
    bare = lpm(n, "10.0.3.0", 24, "forward", b"\x03")
    cookie_only = lpm(n, "10.0.4.0", 24, "forward", b"\x03")
    cookie_only.table_entry.controller_metadata = 5
    default = probe(n, "fwd_lpm", is_default_action=True, metadata=b"\x00miss")
    default.table_entry.action.action.action_id = n["forward"]
    default.table_entry.action.action.params.add(param_id=1, value=b"\x03")
    client.write(route, bare, cookie_only)
    client.write(default, op=MODIFY)
    entries, defaults = probe(n, "fwd_lpm"), probe(n, "fwd_lpm", is_default_action=True)
    written = client.read(entries), client.read(defaults)
    assert sorted(notes(e) for e in written[0]) == [(0, b""), (5, b""), (2**64 - 1, b"a")]
    assert [notes(e) for e in written[1]] == [(0, b"\x00miss")]
    address = f"unix:{tmp_path}/second.sock"
    reconcile = pb.SetForwardingPipelineConfigRequest.RECONCILE_AND_COMMIT
    with p4runtime_rig.server_process(rig, address), p4runtime_rig.primary_client(
            address, programs["rt"], action=reconcile) as (second, won):
        assert p4runtime_rig.is_primary(won)
        assert (second.read(entries), second.read(defaults)) == written
        assert [notes(e) for e in second.read(probe(n, "fwd_lpm", metadata=b"a"))] == [
            (2**64 - 1, b"a")]


def test_modify_resets_an_unset_meter_and_keeps_an_unset_counter(rt):
    """Spec 9.1.5: a MODIFY (with an action) without meter_config puts the direct meter
    back to its default (all GREEN); without counter_data it leaves the count alone."""
    rig, client, n = rt
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    police = acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255"))
    police.table_entry.meter_config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1,
                                                            pburst=2))
    client.write(police)
    burst = [frame("10.0.2.9")] * 10
    assert len(send_and_capture(rig, 1, burst)[2]) == 2  # 1 packet/s, peak burst 2
    police.table_entry.ClearField("meter_config")
    client.write(police, op=MODIFY)
    with_meter = probe(n, "acl")
    with_meter.table_entry.meter_config.SetInParent()
    (read,) = client.read(with_meter)
    assert not read.table_entry.HasField("meter_config")  # the default configuration
    assert len(send_and_capture(rig, 1, burst)[2]) == 10

    with_counter = probe(n, "fwd_lpm")
    with_counter.table_entry.counter_data.SetInParent()
    (read,) = client.read(with_counter)
    assert read.table_entry.counter_data.packet_count == 20
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x03"), op=MODIFY)
    (read,) = client.read(with_counter)
    assert read.table_entry.counter_data.packet_count == 20
    assert len(send_and_capture(rig, 1, burst)[3]) == 10
    reset = lpm(n, "10.0.2.0", 24, "forward", b"\x03")
    reset.table_entry.counter_data.SetInParent()  # set, to zero
    client.write(reset, op=MODIFY)
    (read,) = client.read(with_counter)
    assert read.table_entry.counter_data.packet_count == 0


def test_idle_timeout_is_set_cleared_and_notified_with_the_entry_metadata(served, programs):
    """Spec 9.1.8: a read returns the TTL last written (a MODIFY to 0 clears it; one
    without an action sets it and keeps the action); the idle notification carries the
    key, the metadata and the TTL (16, "Table Idle Timeout Notification")."""
    with fresh_pipeline(served, programs["basic"]) as (rig, client, n):
        learned = forward_entry(n.info, DST, 2)
        learned.table_entry.idle_timeout_ns = 100 * 10**6
        learned.table_entry.controller_metadata, learned.table_entry.metadata = 9, b"mac"
        client.write(learned)
        note = client.next("idle_timeout_notification", timeout=10)
        assert note is not None
        (expired,) = note.table_entry
        assert expired.match[0].exact.value == b"\x02"  # canonical: no leading zeros
        assert (expired.controller_metadata, expired.metadata, expired.idle_timeout_ns) == \
            (9, b"mac", 100 * 10**6)
        longer = forward_entry(n.info, DST, 3)
        longer.table_entry.ClearField("action")
        longer.table_entry.idle_timeout_ns = 3600 * 10**9
        client.write(longer, op=MODIFY)
        (read,) = client.read(probe(n, TABLE))
        assert read.table_entry.idle_timeout_ns == 3600 * 10**9
        assert read.table_entry.action.action.params[0].value == b"\x02"  # kept
        assert notes(read) == (9, b"mac")
        client.write(forward_entry(n.info, DST, 2), op=MODIFY)
        (read,) = client.read(probe(n, TABLE))
        assert read.table_entry.idle_timeout_ns == 0
        assert notes(read) == (0, b"")


def test_static_entries_take_no_idle_timeout(served, programs):
    """Spec 9.1.4: idle timeouts are not supported for the entries of a const table, even
    when the table supports them; INVALID_ARGUMENT as in 9.1.8. The entry is unchanged."""
    with fresh_pipeline(served, programs["const_ttl"]) as (rig, client, n):
        fixed = probe(n, "fixed", idle_timeout_ns=10**9)
        fixed.table_entry.match.add(field_id=1).exact.value = b"\x01"
        assert update_code_of(lambda: client.write(fixed, op=MODIFY)) == INVALID
        (read,) = client.read(probe(n, "fixed"))
        assert read.table_entry.is_const and read.table_entry.idle_timeout_ns == 0
        rig.drain()
        sent = udp_frame("00:00:00:00:00:09", "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2")
        assert send_and_capture(rig, 1, [sent])[2] == [sent]


def test_direct_resource_fields_need_the_resource(rt):
    """Spec 9.1.5: counter_data, meter_config or meter_counter_data for a table without
    that direct resource is INVALID_ARGUMENT, and nothing is written; per-colour meter
    counters can only be written as zero. Spec 9.1.8: time_since_last_hit asked of a
    table without idle timeouts is INVALID_ARGUMENT (a read of all tables leaves it out)."""
    rig, client, n = rt
    counted = acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255"))
    counted.table_entry.counter_data.packet_count = 5  # acl has a meter, no counter
    metered = lpm(n, "10.0.2.0", 24, "forward", b"\x02")
    metered.table_entry.meter_config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1,
                                                             pburst=1))
    coloured = acl(n, 10, "police", src=("10.0.0.1", "255.255.255.255"))
    coloured.table_entry.meter_counter_data.green.packet_count = 1
    direct = pb.Entity()
    direct.direct_counter_entry.table_entry.CopyFrom(coloured.table_entry)
    direct.direct_counter_entry.table_entry.ClearField("meter_counter_data")
    for bad, op in ((counted, pb.Update.INSERT), (metered, pb.Update.INSERT),
                    (coloured, pb.Update.INSERT), (direct, MODIFY)):
        assert update_code_of(lambda b=bad, o=op: client.write(b, op=o)) == INVALID
    assert client.read(probe(n, "fwd_lpm")) == client.read(probe(n, "acl")) == []
    coloured.table_entry.meter_counter_data.green.packet_count = 0  # zero: accepted
    client.write(coloured, lpm(n, "10.0.2.0", 24, "forward", b"\x02"))
    assert len(send_and_capture(rig, 1, [frame("10.0.2.9")] * 3)[2]) == 3

    asked = probe(n, "fwd_lpm")
    asked.table_entry.time_since_last_hit.SetInParent()
    with pytest.raises(grpc.RpcError) as failed:
        client.read(asked)
    assert update_codes(failed.value) == [INVALID.value[0]]
    asked.table_entry.table_id = 0  # every table: the field only where timeouts exist
    found = client.read(asked)
    assert len(found) == 2
    assert not any(e.table_entry.HasField("time_since_last_hit") for e in found)
