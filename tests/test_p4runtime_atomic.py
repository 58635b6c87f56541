"""DATAPLANE_ATOMIC batches (P4Runtime spec 12.3) against a real dplab-switch: all or
nothing like ROLLBACK_ON_ERROR, and no packet sees part of a batch; a `hold` the switch
refuses fails the Write alike on both paths; and the switch's `hold`/`release` and its id
checks on the raw control socket (switch/PROTOCOL.md)."""

from __future__ import annotations

import socket
import threading

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    Client,
    Names,
    compile_text,
    compile_with_info,
    ethernet_program,
    update_codes,
)
from switch_rig import SO_RCVBUFFORCE, mac

from dplab.p4runtime.server import P4RuntimeServicer

pytestmark = pytest.mark.net
ATOMIC = pb.WriteRequest.DATAPLANE_ATOMIC
DST, OLD_SRC, NEW_SRC = "02:00:00:00:00:09", "02:00:00:00:0a:0a", "02:00:00:00:0b:0b"
# A route and the stamp that must change with it: a packet leaving by port 2 must carry
# the old source MAC, one leaving by port 3 the new one. A half-applied batch shows as a
# packet with the other pairing.
PAIRED_PROGRAM = ethernet_program("Pa", "", """
    action to_port(bit<9> port) { standard_metadata.egress_spec = port; }
    action stamp_src(bit<48> src) { hdr.ethernet.src = src; }
    table route {
        key = { hdr.ethernet.dst: exact; }
        actions = { to_port; NoAction; }
    }
    table stamp {
        key = { hdr.ethernet.dst: exact; }
        actions = { stamp_src; NoAction; }
    }
    apply {
        mark_to_drop(standard_metadata);
        route.apply();
        stamp.apply();
    }
""")
PAIRS = {2: mac(OLD_SRC), 3: mac(NEW_SRC)}
FLIPS = 20
FRAME = mac(DST) + mac("02:00:00:00:00:01") + b"\x88\xb5" + bytes(46)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_text(PAIRED_PROGRAM, "paired.p4", tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


def entry(n: Names, table: str, action: str, value: bytes) -> pb.Entity:
    entity = pb.Entity()
    e = entity.table_entry
    e.table_id = n[table]
    e.match.add(field_id=1).exact.value = mac(DST)
    e.action.action.action_id = n[action]
    e.action.action.params.add(param_id=1, value=value)
    return entity


def pair(n: Names, port: int) -> list[pb.Entity]:
    """The route to ``port`` and the stamp that goes with it."""
    return [entry(n, "route", "to_port", bytes([port])),
            entry(n, "stamp", "stamp_src", PAIRS[port])]


def write(client: Client, updates: list[tuple[int, pb.Entity]]) -> None:
    req = pb.WriteRequest(device_id=1, election_id=client.election, atomicity=ATOMIC)
    for op, entity in updates:
        req.updates.add(type=op, entity=entity)
    client.stub.Write(req)


def switch_tables(rig) -> list[dict]:
    """Both tables as the switch's own control socket reads them (idle times left out:
    they grow by themselves)."""
    tables = [rig.client.call("table_read", table=t) for t in ("PaIngress.route",
                                                               "PaIngress.stamp")]
    for table in tables:
        for item in table["entries"]:
            item.pop("idle_ns")
    return tables


def test_a_refused_batch_leaves_the_switch_as_before_and_a_good_one_is_all_applied(ctl):
    rig, client, n = ctl
    client.write(*pair(n, 2))
    before = switch_tables(rig)
    bad = [(pb.Update.MODIFY, e) for e in pair(n, 3)]
    bad.append((pb.Update.INSERT, entry(n, "route", "to_port", b"\x02")))  # exists already
    with pytest.raises(grpc.RpcError) as failed:
        write(client, bad)
    aborted, exists = grpc.StatusCode.ABORTED.value[0], grpc.StatusCode.ALREADY_EXISTS.value[0]
    assert update_codes(failed.value) == [aborted, aborted, exists]
    assert switch_tables(rig) == before
    read = [client.read(pb.Entity(table_entry=pb.TableEntry(table_id=n[t])))
            for t in ("route", "stamp")]
    assert [r[0].table_entry.action.action.params[0].value for r in read] == [
        b"\x02", PAIRS[2]]
    write(client, [(pb.Update.MODIFY, e) for e in pair(n, 3)])
    rig.drain()
    rig.send(1, FRAME)
    got = rig.capture()
    assert [f[6:12] for f in got[3]] == [PAIRS[3]] and got[2] == []


def test_inserts_of_a_refused_batch_are_undone_even_one_that_follows_a_delete(ctl):
    """INSERTs take no snapshot read (their entry did not exist if they succeed): the
    undo deletes them, and a DELETE before an INSERT of the same key comes back as it
    was, with its packet counts."""
    rig, client, n = ctl
    client.write(entry(n, "route", "to_port", b"\x02"))
    rig.send(1, FRAME)
    rig.capture()
    before = switch_tables(rig)
    assert before[0]["entries"][0]["packets"] == 1
    bad = [(pb.Update.INSERT, entry(n, "stamp", "stamp_src", PAIRS[3])),  # new
           (pb.Update.DELETE, entry(n, "route", "to_port", b"\x02")),
           (pb.Update.INSERT, entry(n, "route", "to_port", b"\x03")),   # re-inserted
           (pb.Update.INSERT, entry(n, "stamp", "stamp_src", PAIRS[2]))]  # exists now
    with pytest.raises(grpc.RpcError) as failed:
        write(client, bad)
    aborted, exists = grpc.StatusCode.ABORTED.value[0], grpc.StatusCode.ALREADY_EXISTS.value[0]
    assert update_codes(failed.value) == [aborted, aborted, aborted, exists]
    assert switch_tables(rig) == before
    rig.send(1, FRAME)
    got = rig.capture()
    assert got[2] == [FRAME] and got[3] == []


def test_no_packet_sees_half_a_batch_while_routes_flip(ctl):
    """Packets stream into port 1 while batches flip route and stamp together; every
    packet out must carry the stamp of the port it left by."""
    rig, client, n = ctl
    client.write(*pair(n, 2))
    for s in rig.sockets.values():  # room for every captured frame
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    rig.drain()
    done = threading.Event()

    def stream() -> None:
        while not done.is_set():
            rig.send(1, FRAME)
            done.wait(0.0005)

    sender = threading.Thread(target=stream)
    sender.start()
    try:
        for flip in range(FLIPS):
            write(client, [(pb.Update.MODIFY, e) for e in pair(n, 3 if flip % 2 == 0 else 2)])
            rig.send(1, FRAME)  # at least one packet after every flip
    finally:
        done.set()
        sender.join()
    got = rig.capture()
    mixed = [(port, f[6:12].hex()) for port in (2, 3) for f in got[port]
             if f[6:12] != PAIRS[port]]
    assert mixed == []
    assert got[2] and got[3]  # both states were seen


def test_hold_and_release_on_the_control_socket(ctl):
    rig, client, n = ctl
    raw = rig.client
    assert raw.request("release")["code"] == "FAILED_PRECONDITION"  # nothing held
    raw.call("hold")
    assert raw.request("hold")["code"] == "FAILED_PRECONDITION"  # already held
    raw.call("table_add", table="PaIngress.route", match=[{"kind": "exact", "v": "0x" +
                                                           mac(DST).hex()}],
             action={"action": "PaIngress.to_port", "args": ["0x3"]})
    raw.call("release")
    rig.drain()
    rig.send(1, FRAME)
    assert len(rig.capture()[3]) == 1


ROUTE_KEY = {"table": "PaIngress.route",
             "match": [{"kind": "exact", "v": "0x" + mac(DST).hex()}]}


def to_port(port: int) -> dict:
    return {"action": "PaIngress.to_port", "args": [hex(port)]}


def test_a_batch_on_the_control_socket_answers_each_request_and_may_stop_at_the_first_error(
        ctl):
    rig, client, n = ctl
    raw = rig.client
    answers = raw.call("batch", requests=[
        {"cmd": "table_add", **ROUTE_KEY, "action": to_port(2)},
        {"cmd": "table_add", **ROUTE_KEY, "action": to_port(3)},  # exists already
        {"cmd": "table_modify", **ROUTE_KEY, "action": to_port(3)},
        {"cmd": "batch", "requests": []}])
    assert [a["ok"] for a in answers] == [True, False, True, False]
    assert answers[1]["code"] == "ALREADY_EXISTS"
    assert answers[3]["code"] == "INVALID_ARGUMENT"  # no batch in a batch
    answers = raw.call("batch", stop_on_error=True, requests=[
        {"cmd": "table_modify", **ROUTE_KEY, "action": to_port(2)},
        {"cmd": "table_delete", "table": "PaIngress.stamp", "match": ROUTE_KEY["match"]},
        {"cmd": "table_modify", **ROUTE_KEY, "action": to_port(3)}])  # not run
    assert [a["ok"] for a in answers] == [True, False]
    assert answers[1]["code"] == "NOT_FOUND"
    rig.drain()
    rig.send(1, FRAME)
    assert len(rig.capture()[2]) == 1  # the first modify, not the third


def test_a_held_batch_that_stops_keeps_its_hold_until_released(ctl):
    rig, client, n = ctl
    raw = rig.client
    raw.call("table_add", **ROUTE_KEY, action=to_port(2))
    answers = raw.call("batch", stop_on_error=True, requests=[
        {"cmd": "hold"}, {"cmd": "table_modify", **ROUTE_KEY, "action": to_port(3)},
        {"cmd": "table_add", **ROUTE_KEY, "action": to_port(3)}, {"cmd": "release"}])
    assert [a["ok"] for a in answers] == [True, True, False]
    assert raw.request("hold")["code"] == "FAILED_PRECONDITION"  # still held
    raw.call("table_modify", **ROUTE_KEY, action=to_port(2))  # undone before the release
    raw.call("release")
    rig.drain()
    rig.send(1, FRAME)
    assert len(rig.capture()[2]) == 1


def test_table_read_by_key_reads_that_entry_alone(ctl):
    rig, client, n = ctl
    raw = rig.client
    other = {"kind": "exact", "v": "0x020000000007"}
    raw.call("table_add", **ROUTE_KEY, action=to_port(2))
    raw.call("table_add", table="PaIngress.route", match=[other], action=to_port(3))
    (found,) = raw.call("table_read", **ROUTE_KEY)["entries"]
    assert int(found["match"][0]["v"], 16) == int.from_bytes(mac(DST))
    assert found["action"]["args"] == ["0x2"]
    assert raw.call("table_read", table="PaIngress.route",
                    match=[{"kind": "exact", "v": "0x020000000008"}])["entries"] == []
    assert len(raw.call("table_read", table="PaIngress.route")["entries"]) == 2
    reply = raw.request("table_read", table="PaIngress.route",
                        match=[{"kind": "lpm", "v": "0x1", "plen": 8}])
    assert reply["code"] == "INVALID_ARGUMENT"


def test_a_refused_batch_of_entries_and_other_entities_is_undone_too(ctl):
    """Updates that are not plain table entries take the one-request-at-a-time way; a
    batch mixing them is still all or none."""
    rig, client, n = ctl
    client.write(*pair(n, 2))
    before = switch_tables(rig), rig.client.call("mcast_group_read")
    group = pb.Entity()
    group.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 7
    group.packet_replication_engine_entry.multicast_group_entry.replicas.add(
        egress_port=2, instance=1)
    bad = [(pb.Update.MODIFY, e) for e in pair(n, 3)]
    bad += [(pb.Update.INSERT, group), (pb.Update.INSERT, group)]  # the second exists
    with pytest.raises(grpc.RpcError) as failed:
        write(client, bad)
    aborted, exists = grpc.StatusCode.ABORTED.value[0], grpc.StatusCode.ALREADY_EXISTS.value[0]
    assert update_codes(failed.value) == [aborted, aborted, aborted, exists]
    assert (switch_tables(rig), rig.client.call("mcast_group_read")) == before


def test_entry_member_and_group_ids_beyond_32_bits_are_refused(tmp_path):
    """A member or group id of 2^32 must not wrap to 0 (or 2^32+1 to member 1)."""
    from pathlib import Path

    from switch_rig import Rig

    ir, _ = compile_with_info(Path(__file__).parent / "p4" / "ecmp_selector.p4", tmp_path)
    with Rig(n_ports=2) as rig:
        rig.load(ir)
        raw = rig.client
        raw.call("profile_member_add", profile="EcmpIngress.ecmp", member=1,
                 action={"action": "EcmpIngress.forward", "args": ["0x2"]})
        route = {"table": "EcmpIngress.ecmp",
                 "match": [{"kind": "lpm", "v": "0x0a010000", "plen": 16}]}
        for action in ({"member": (1 << 32) + 1}, {"group": 1 << 32}, {"member": 0}):
            reply = raw.request("table_add", **route, action=action)
            assert reply["code"] == "INVALID_ARGUMENT", action
            assert "1..2^32-1" in reply["error"]
        assert raw.call("table_read", table="EcmpIngress.ecmp")["entries"] == []
        raw.call("table_add", **route, action={"member": 1})


def test_a_refused_hold_fails_the_write_alike_on_the_batched_and_the_stepwise_path(
        ctl, program, tmp_path):
    """The switch refuses a second `hold` of one connection. A server whose connection
    holds already (made so here, in process) sends a DATAPLANE_ATOMIC Write of plain table
    entries (one switch `batch`) and one with a default entry (one request at a time):
    both fail alike, with the switch's code for the whole Write (no per-update details,
    no update is to blame) and no update applied."""
    rig, client, n = ctl
    address = f"unix:{tmp_path}/held.sock"
    default = pb.Entity()
    default.table_entry.table_id = n["route"]
    default.table_entry.is_default_action = True
    default.table_entry.action.action.action_id = n["to_port"]
    default.table_entry.action.action.params.add(param_id=1, value=b"\x02")
    with (p4runtime_rig.in_process_server(P4RuntimeServicer(rig.control_path, 1),
                                          address) as servicer,
          p4runtime_rig.primary_client(address, program, election=1, action=(
              pb.SetForwardingPipelineConfigRequest.RECONCILE_AND_COMMIT)) as (own, _)):
        servicer.switch.call("hold")
        try:
            failures = [refusal(own, updates) for updates in (
                [(pb.Update.INSERT, e) for e in pair(n, 2)],
                [(pb.Update.INSERT, pair(n, 2)[0]), (pb.Update.MODIFY, default)])]
        finally:
            servicer.switch.call("release")
    assert failures[0] == failures[1]
    code, message, details = failures[0]
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert message.startswith("DATAPLANE_ATOMIC: the switch refused to hold the data plane")
    assert not details
    assert [t["entries"] for t in switch_tables(rig)] == [[], []]
    route = rig.client.call("table_read", table="PaIngress.route")
    assert route["default_action"]["name"] == "NoAction"


def refusal(client: Client, updates: list[tuple[int, pb.Entity]]) -> tuple:
    """(code, message, whether it has per-update details) of a DATAPLANE_ATOMIC Write
    that fails."""
    with pytest.raises(grpc.RpcError) as failed:
        write(client, updates)
    trailers = dict(failed.value.trailing_metadata() or ())
    return (failed.value.code(), failed.value.details(),
            "grpc-status-details-bin" in trailers)
