"""Write atomicity, const tables, roles and the multi-switch server process, against real
dplab-switches over real gRPC (P4Runtime spec 12.3, 9.1.3-9.1.4, 5.4, 12.1)."""

from __future__ import annotations

import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    Client,
    Names,
    code_of,
    compile_text,
    compile_with_info,
    ethernet_program,
    fresh_pipeline,
    stream_refusal,
    update_code_of,
    update_codes,
)
from switch_rig import Rig, udp_frame
from test_p4runtime_entities import acl, frame, lpm, send_and_capture

from dplab.p4runtime import installer
from dplab.p4runtime.entries import Entry
from dplab.p4runtime.installer import InstallError, install

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
ROLLBACK = pb.WriteRequest.ROLLBACK_ON_ERROR
CONST_PROGRAM = ethernet_program("Ct", "bit<2> color;", """
    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action drop() { mark_to_drop(standard_metadata); }
    table fixed {
        key = { standard_metadata.ingress_port: exact; }
        actions = { forward; drop; }
        const entries = { 1 : forward(2); }
        const default_action = drop();
    }
    table learned {
        key = { hdr.ethernet.dst: exact; }
        actions = { forward; @defaultonly drop; }
        default_action = drop();
    }
    direct_counter(CounterType.packets_and_bytes) policed_hits;
    direct_meter<bit<2>>(MeterType.packets) policed_meter;
    action police() {
        policed_meter.read(meta.color);
        policed_hits.count();
    }
    table policed {
        key = { hdr.ethernet.src: exact; }
        actions = { police; NoAction; }
        const entries = { 0x000000000001 : police(); }
        counters = policed_hits;
        meters = policed_meter;
    }
    apply {
        if (!learned.apply().hit) {
            fixed.apply();
        }
        policed.apply();
        if (meta.color == 2) {
            mark_to_drop(standard_metadata);
        }
    }
""")


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    out = tmp_path_factory.mktemp("p4")
    return {"rt": compile_with_info(HERE / "p4" / "rt_features.p4", out),
            "const": compile_text(CONST_PROGRAM, "const_tables.p4", out)}


served = p4runtime_rig.served


@pytest.fixture()
def rt(served, programs):
    with fresh_pipeline(served, programs["rt"]) as ctl:
        yield ctl


def write(client: Client, updates: list[tuple[int, pb.Entity]], atomicity=ROLLBACK) -> None:
    req = pb.WriteRequest(device_id=1, election_id=client.election, atomicity=atomicity)
    for op, entity in updates:
        req.updates.add(type=op, entity=entity)
    client.stub.Write(req)


def table_state(client: Client, n: Names) -> list[pb.Entity]:
    probes = []
    for table in ("fwd_lpm", "acl"):
        probe = pb.Entity()
        probe.table_entry.table_id = n[table]
        probe.table_entry.counter_data.SetInParent()
        probes.append(probe)
    return sorted((e for p in probes for e in client.read(p)), key=lambda e: str(e))


def test_rollback_leaves_tables_counters_and_packets_as_before(rt):
    rig, client, n = rt
    client.write(lpm(n, "10.0.2.0", 24, "forward", b"\x02"),
                 lpm(n, "10.0.3.0", 24, "forward", b"\x02"),
                 acl(n, 10, "set_port", b"\x03", src=("10.1.0.0", "255.255.0.0")))
    assert send_and_capture(rig, 1, [frame("10.0.2.9")])[2] == [frame("10.0.2.9")]
    before = table_state(client, n)
    assert before[0].table_entry.counter_data.packet_count + \
        before[1].table_entry.counter_data.packet_count == 1
    register = pb.Entity()
    register.register_entry.register_id = n["scratch"]
    register.register_entry.index.index = 0
    register_before = client.read(register)
    new_register = pb.Entity()
    new_register.CopyFrom(register)
    new_register.register_entry.data.bitstring = b"\x07"
    batch = [(pb.Update.INSERT, lpm(n, "10.0.4.0", 24, "forward", b"\x03")),   # new entry
             (pb.Update.MODIFY, lpm(n, "10.0.2.0", 24, "forward", b"\x03")),   # re-pointed
             (pb.Update.DELETE, lpm(n, "10.0.3.0", 24, "drop")),               # deleted
             (pb.Update.DELETE, acl(n, 10, "police", src=("10.1.0.0", "255.255.0.0"))),
             (pb.Update.MODIFY, new_register),
             (pb.Update.INSERT, lpm(n, "10.0.3.0", 24, "forward", b"\x01")),   # re-inserted
             (pb.Update.INSERT, lpm(n, "10.0.2.0", 24, "drop"))]               # fails
    with pytest.raises(grpc.RpcError) as failed:
        write(client, batch)
    aborted, exists = grpc.StatusCode.ABORTED.value[0], grpc.StatusCode.ALREADY_EXISTS.value[0]
    assert update_codes(failed.value) == [aborted] * 6 + [exists]
    assert table_state(client, n) == before
    assert client.read(register) == register_before
    sent = [frame("10.0.2.9"), frame("10.0.3.9"), frame("10.0.4.9"), frame("10.0.5.1")]
    got = send_and_capture(rig, 1, sent)
    assert (got[2], got[3]) == (sent[:2], [])  # as before the batch: 10.0.4/24 never came


def test_rollback_batch_without_error_applies_everything(rt):
    rig, client, n = rt
    write(client, [(pb.Update.INSERT, lpm(n, "10.0.2.0", 24, "forward", b"\x02")),
                   (pb.Update.INSERT, lpm(n, "10.0.4.0", 24, "forward", b"\x03"))])
    got = send_and_capture(rig, 1, [frame("10.0.2.9"), frame("10.0.4.9")])
    assert (got[2], got[3]) == ([frame("10.0.2.9")], [frame("10.0.4.9")])


def test_continue_on_error_keeps_what_succeeded(rt):
    _, client, n = rt
    batch = [(pb.Update.INSERT, lpm(n, "10.0.2.0", 24, "forward", b"\x02")),
             (pb.Update.INSERT, lpm(n, "10.0.2.0", 24, "drop"))]
    probe = pb.Entity()
    probe.table_entry.table_id = n["fwd_lpm"]
    with pytest.raises(grpc.RpcError) as failed:
        write(client, batch, pb.WriteRequest.CONTINUE_ON_ERROR)
    assert update_codes(failed.value) == [0, grpc.StatusCode.ALREADY_EXISTS.value[0]]
    assert len(client.read(probe)) == 1


def test_const_tables_and_const_default_actions_are_permission_denied(served, programs):
    with fresh_pipeline(served, programs["const"]) as (rig, client, n):
        fixed = pb.Entity()
        fixed.table_entry.table_id = n["fixed"]
        fixed.table_entry.match.add(field_id=1).exact.value = b"\x01"
        (const_entry,) = client.read(fixed)
        assert const_entry.table_entry.is_const  # spec 9.1.4: static entries read as const
        action = fixed.table_entry.action.action
        action.action_id = n["forward"]
        action.params.add(param_id=1, value=b"\x03")
        default = pb.Entity()
        default.CopyFrom(fixed)
        default.table_entry.ClearField("match")
        default.table_entry.is_default_action = True
        learned_default = pb.Entity()
        learned_default.table_entry.table_id = n["learned"]
        learned_default.table_entry.is_default_action = True
        learned_default.table_entry.action.action.CopyFrom(action)
        denied = grpc.StatusCode.PERMISSION_DENIED
        assert update_code_of(lambda: client.write(fixed, op=pb.Update.MODIFY)) == denied
        assert update_code_of(lambda: client.write(fixed, op=pb.Update.DELETE)) == denied
        fixed.table_entry.match[0].exact.value = b"\x02"
        assert update_code_of(lambda: client.write(fixed)) == denied
        assert update_code_of(lambda: client.write(default, op=pb.Update.MODIFY)) == denied
        # @defaultonly action as an entry, and an entry flagged is_const
        learned = pb.Entity()
        learned.table_entry.table_id = n["learned"]
        learned.table_entry.match.add(field_id=1).exact.value = b"\x02"
        learned.table_entry.action.action.action_id = n["drop"]
        assert update_code_of(lambda: client.write(learned)) == denied
        learned.table_entry.action.action.CopyFrom(action)
        learned.table_entry.is_const = True
        assert update_code_of(lambda: client.write(learned)) == grpc.StatusCode.INVALID_ARGUMENT
        client.write(learned_default, op=pb.Update.MODIFY)  # allowed: not const
        (now,) = client.read(learned_default)
        assert now.table_entry.action.action == action
        # the const entry still forwards port 1 -> 2, the const default still drops
        rig.drain()
        sent = udp_frame("00:00:00:00:00:09", "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2")
        assert send_and_capture(rig, 1, [sent])[2] == [sent]
        assert send_and_capture(rig, 2, [sent]) == {1: [], 2: [], 3: []}


def test_direct_resources_of_const_entries_stay_writable(served, programs):
    """Spec 9.1.4: a const table's entries are immutable, their direct counter and meter
    are not (DirectCounterEntry, DirectMeterEntry, TableEntry MODIFY without an action),
    also inside a rolled-back batch."""
    with fresh_pipeline(served, programs["const"]) as (rig, client, n):
        key = pb.TableEntry(table_id=n["policed"])
        key.match.add(field_id=1).exact.value = b"\x01"
        sent = udp_frame("00:00:00:00:00:09", "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2")
        burst = [sent] * 10
        rig.drain()
        assert len(send_and_capture(rig, 1, burst)[2]) == 10  # meter unconfigured: GREEN
        counter = pb.Entity()
        counter.direct_counter_entry.table_entry.CopyFrom(key)
        (read,) = client.read(counter)
        assert read.direct_counter_entry.data.packet_count == 10
        counter.direct_counter_entry.data.packet_count = 100
        client.write(counter, op=pb.Update.MODIFY)
        meter = pb.Entity()
        meter.direct_meter_entry.table_entry.CopyFrom(key)
        meter.direct_meter_entry.config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1,
                                                                pburst=2))
        client.write(meter, op=pb.Update.MODIFY)
        (read,) = client.read(meter)
        assert read.direct_meter_entry.config == meter.direct_meter_entry.config
        # 1 packet/s, peak burst 2: two pass, the rest are RED (sent within milliseconds)
        assert len(send_and_capture(rig, 1, burst)[2]) == 2
        # A new config of a configured meter keeps its buckets (emptied by that burst):
        # unconfigured first, the next config starts full.
        unconfigured = pb.Entity()
        unconfigured.direct_meter_entry.table_entry.CopyFrom(key)
        client.write(unconfigured, op=pb.Update.MODIFY)
        entry = pb.Entity()
        entry.table_entry.CopyFrom(key)
        entry.table_entry.meter_config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1,
                                                               pburst=4))
        client.write(entry, op=pb.Update.MODIFY)  # no action: only direct resources
        assert len(send_and_capture(rig, 1, burst)[2]) == 4
        fixed = pb.Entity()
        fixed.table_entry.table_id = n["fixed"]
        fixed.table_entry.match.add(field_id=1).exact.value = b"\x01"
        fixed.table_entry.action.action.action_id = n["drop"]
        with pytest.raises(grpc.RpcError) as failed:  # the meter change is rolled back
            write(client, [(pb.Update.MODIFY, unconfigured), (pb.Update.MODIFY, fixed)])
        assert update_codes(failed.value) == [grpc.StatusCode.ABORTED.value[0],
                                              grpc.StatusCode.PERMISSION_DENIED.value[0]]
        (read,) = client.read(meter)
        assert read.direct_meter_entry.config.pburst == 4
        client.write(unconfigured, op=pb.Update.MODIFY)
        assert len(send_and_capture(rig, 1, burst)[2]) == 10
        (read,) = client.read(counter)  # every hit counted, RED or not
        assert read.direct_counter_entry.data.packet_count == 100 + 3 * 10  # 3 bursts since


def test_roles_other_than_the_default_are_refused_as_the_spec_says(rt, served):
    """Spec 5.4, 12, 14: an unknown role is NOT_FOUND for arbitration, Write and
    SetForwardingPipelineConfig; for a Read it only filters (spec 11)."""
    _, client, n = rt
    config = pb.Role()
    config.config.Pack(pb.Uint128(low=1))  # any message: no role scheme was agreed on
    for role, code in ((pb.Role(name="acl-app"), grpc.StatusCode.NOT_FOUND),
                       (pb.Role(id=5), grpc.StatusCode.NOT_FOUND),
                       (config, grpc.StatusCode.INVALID_ARGUMENT)):
        hello = pb.StreamMessageRequest()
        hello.arbitration.device_id = 1
        hello.arbitration.election_id.low = 30
        hello.arbitration.role.CopyFrom(role)
        assert stream_refusal(served[1], hello) == code
    fwd = lpm(n, "10.0.2.0", 24, "drop")
    req = pb.WriteRequest(device_id=1, election_id=client.election, role="acl-app")
    req.updates.add(type=pb.Update.INSERT, entity=fwd)
    assert code_of(lambda: client.stub.Write(req)) == grpc.StatusCode.NOT_FOUND
    assert client.read(fwd) == []  # nothing was written under the unknown role
    client.write(fwd)
    # Spec 11: a Read's role is a filter; no entity belongs to a role the server lacks
    read = pb.ReadRequest(device_id=1, role="acl-app", entities=[fwd])
    assert [list(r.entities) for r in client.stub.Read(read)] == [[]]
    assert len(client.read(fwd)) == 1


def test_one_server_process_serves_each_switch_as_its_own_device(tmp_path, programs):
    """The p4 plane's launch: one process, ``--serve`` per switch; each switch is reached
    and programmed over its own socket as its own device; one switch dying leaves the
    other served."""
    n = Names(programs["rt"][1])
    ir, info = programs["rt"]
    config = pb.ForwardingPipelineConfig(p4_device_config=ir.read_bytes(), p4info=info)
    with ExitStack() as stack:
        rigs = [stack.enter_context(Rig(n_ports=3)) for _ in range(2)]
        argv = [sys.executable, "-m", "dplab.p4runtime"]
        for device, rig in enumerate(rigs, start=1):
            argv += ["--serve", str(device), rig.control_path, f"unix:{tmp_path}/s{device}.grpc"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
        stack.callback(proc.wait, 5)
        stack.callback(proc.terminate)
        assert [proc.stdout.readline() for _ in rigs] == [b"serving 1\n", b"serving 2\n"]
        assert proc.stdout.readline() == b"ready\n"
        for device, rig in enumerate(rigs, start=1):  # device d forwards to port d + 1
            route = lpm(n, "10.0.2.0", 24, "forward", bytes([device + 1]))
            install(f"unix:{tmp_path}/s{device}.grpc", device, config,
                    [Entry(0, None, route)], "test")
            got = send_and_capture(rig, 1, [frame("10.0.2.9")])
            assert got[device + 1] == [frame("10.0.2.9")]
        with pytest.raises(InstallError, match="no device 1"):  # s2's socket is device 2
            install(f"unix:{tmp_path}/s2.grpc", 1, config, [], "test")
        rigs[0].proc.kill()
        rigs[0].proc.wait()
        route = lpm(n, "10.0.3.0", 24, "forward", b"\x02")
        install(f"unix:{tmp_path}/s2.grpc", 2, config, [Entry(0, None, route)], "test")
        assert send_and_capture(rigs[1], 1, [frame("10.0.3.9")])[2] == [frame("10.0.3.9")]
        assert proc.poll() is None


def test_the_installer_writes_in_batches_and_names_a_refused_entry(tmp_path, programs,
                                                                   monkeypatch):
    """The plane's installer sends its entries WRITE_BATCH to a Write: every batch lands
    (the last one's route forwards), and an entry refused inside a batch is named by its
    own index, not the batch's."""
    monkeypatch.setattr(installer, "WRITE_BATCH", 4)
    n = Names(programs["rt"][1])
    ir, info = programs["rt"]
    config = pb.ForwardingPipelineConfig(p4_device_config=ir.read_bytes(), p4info=info)
    routes = [Entry(i, None, lpm(n, f"10.0.{i}.0", 24, "forward", b"\x02")) for i in range(10)]
    address = f"unix:{tmp_path}/p4rt.sock"
    with p4runtime_rig.rig_with_server(address) as rig:
        twice = [*routes[:6], Entry(6, None, routes[2].entity), *routes[7:]]
        with pytest.raises(InstallError, match="test: entry 6: the switch refused it: "
                                               "ALREADY_EXISTS"):
            install(address, 1, config, twice, "test")
        install(address, 1, config, routes, "test")  # a new pipeline: a clean table
        assert send_and_capture(rig, 1, [frame("10.0.9.9")])[2] == [frame("10.0.9.9")]
