"""The P4Runtime controller app's reading of failed writes: the server answers a failed
update with UNKNOWN and the update's own code in the details (spec 12.4), and the app must
act on the update's code; and how it writes a path: one Write per switch, all at once,
every other switch's answered before the packet-out, the packet-out's own switch's sent
after the packet-out and answered before the logic's event ends. The session stands in for
the switch (the server's behaviour is tested in test_p4runtime_conformance.py)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.control.p4runtime_app import Outbox, P4RuntimeSouthbound, PathRule, SwitchSession

A, B = "00:00:00:00:00:01", "00:00:00:00:00:02"


class RefusedUpdate(grpc.RpcError):
    """A one-update Write as the server refuses it: UNKNOWN, the update's code in details."""

    def __init__(self, code: grpc.StatusCode) -> None:
        status = status_pb2.Status(code=grpc.StatusCode.UNKNOWN.value[0], message="1 of 1 failed")
        status.details.add().Pack(pb.Error(canonical_code=code.value[0], message="refused"))
        self._trailer = (("grpc-status-details-bin", status.SerializeToString()),)

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNKNOWN

    def details(self) -> str:
        return "1 of 1 failed"

    def trailing_metadata(self):
        return self._trailer


class Answered:
    """A Write's future: its answer, recorded in the shared log when awaited."""

    def __init__(self, log: list, name: str, error: grpc.RpcError | None) -> None:
        self.log, self.name, self.error = log, name, error

    def result(self) -> None:
        self.log.append(("answer", self.name))
        if self.error is not None:
            raise self.error


class Session:
    """A switch that refuses every INSERT with ``insert_code`` (None: takes everything);
    records the operations written, and Writes, answers and packet-outs in ``log``."""

    ready = True

    def __init__(self, name: str = "s1", insert_code: grpc.StatusCode | None = None,
                 log: list | None = None) -> None:
        self.name = name
        self.insert_code = insert_code
        self.log = [] if log is None else log
        self.written: list[int] = []
        self.pending: dict = {}
        self.installed: set = set()
        self.outbox = SimpleNamespace(put=lambda msg: self.log.append(("packet_out", self.name)),
                                      wait_taken=lambda: None)

    def send(self, rules: list[tuple[int, PathRule]]) -> Answered:
        self.log.append(("send", self.name))
        self.written.extend(op for op, _ in rules)
        refused = self.insert_code is not None and rules[0][0] == pb.Update.INSERT
        return Answered(self.log, self.name, RefusedUpdate(self.insert_code) if refused else None)

    def delete(self, entry: pb.TableEntry) -> None:
        self.send([(pb.Update.DELETE, entry)]).result()


def app_with(*sessions: Session) -> P4RuntimeSouthbound:
    app = object.__new__(P4RuntimeSouthbound)  # no switches to connect to
    app.program = SimpleNamespace(table_id=1, match_ids=(1, 2, 3), forward_id=2,
                                  packet_out=lambda data, port=0, group=0: data)
    app.sessions = {session.name: session for session in sessions}
    app._lock = threading.Lock()
    app._waiting = {}
    app._held = []
    app.logic = None  # the tests drive the app as the logic would
    return app


def install_and_send(app: P4RuntimeSouthbound, switches: list[str], dst: str = B) -> None:
    """What Forwarding does for one path in one event: its rules, then the packet-out at
    the first switch."""
    with app._driving():
        for switch in switches:
            app.install_path_rule(switch, 1, A, dst, 3, 10)
        app.packet_out(switches[-1], [3], b"frame")


def test_a_rule_that_exists_already_is_modified():
    session = Session(insert_code=grpc.StatusCode.ALREADY_EXISTS)
    install_and_send(app_with(session), ["s1"])
    assert session.written == [pb.Update.INSERT, pb.Update.MODIFY]
    assert session.log == [("packet_out", "s1"), ("send", "s1"), ("answer", "s1"),
                           ("send", "s1"), ("answer", "s1")]


def test_a_rule_refused_for_another_reason_is_not_retried():
    session = Session(insert_code=grpc.StatusCode.RESOURCE_EXHAUSTED)
    install_and_send(app_with(session), ["s1"])
    assert session.written == [pb.Update.INSERT]


def test_a_path_goes_to_every_switch_at_once_and_before_its_packet_out():
    log: list = []
    sessions = [Session(name, log=log) for name in ("s1", "s2", "s3")]
    install_and_send(app_with(*sessions), ["s3", "s2", "s1"])
    # one Write per switch the packet will meet (in the order the logic asked, last
    # switch first), both in flight before the first answer is awaited; the packet moves
    # on once both have answered
    assert log[:5] == [("send", "s3"), ("send", "s2"), ("answer", "s3"), ("answer", "s2"),
                       ("packet_out", "s1")]
    # its own switch's table does not see it: that switch's Write goes after it, and its
    # answer ends the event
    assert log[5:] == [("send", "s1"), ("answer", "s1")]


def test_a_packet_out_elsewhere_waits_for_the_write_left_pending():
    log: list = []
    app = app_with(*(Session(name, log=log) for name in ("s1", "s2")))
    with app._driving():
        app.install_path_rule("s1", 1, A, B, 3, 10)
        app.packet_out("s1", [3], b"frame")  # s1's Write left for later
        app.packet_out("s2", [3], b"frame")  # may reach s1: its rule must be in
    assert log == [("packet_out", "s1"), ("send", "s1"), ("answer", "s1"),
                   ("packet_out", "s2")]


def test_a_switch_s_rules_wait_for_the_end_of_the_event_past_its_own_packet_outs():
    session = Session()
    app = app_with(session)
    with app._driving():
        app.install_path_rule("s1", 1, A, B, 3, 10)
        app.packet_out("s1", [3], b"frame")
        app.install_path_rule("s1", 1, A, B, 4, 10)  # the same entry again: replaces it
        app.packet_out("s1", [4], b"frame")
    assert session.log == [("packet_out", "s1"), ("packet_out", "s1"), ("send", "s1"),
                           ("answer", "s1")]
    assert session.written == [pb.Update.INSERT]  # one Write, with the later rule only


def test_a_switch_gets_its_next_write_after_the_answer_to_the_one_before():
    log: list = []
    app = app_with(*(Session(name, log=log) for name in ("s1", "s2")))
    with app._driving():
        app.install_path_rule("s1", 1, A, B, 3, 10)
        app.packet_out("s2", [3], b"frame")
        app.install_path_rule("s1", 1, A, B, 4, 10)  # the same entry again
        app.packet_out("s2", [4], b"frame")
    assert log == [("send", "s1"), ("answer", "s1"), ("packet_out", "s2"),
                   ("send", "s1"), ("answer", "s1"), ("packet_out", "s2")]
    assert app.sessions["s1"].written == [pb.Update.INSERT, pb.Update.MODIFY]


def test_a_rule_the_switch_holds_goes_as_a_modify_and_after_an_idle_delete_as_an_insert():
    session = Session()
    app = app_with(session)
    install_and_send(app, ["s1"])
    install_and_send(app, ["s1"])
    assert session.written == [pb.Update.INSERT, pb.Update.MODIFY]
    idle = pb.StreamMessageResponse()
    entry = idle.idle_timeout_notification.table_entry.add()  # as the switch reports it
    for field_id, value in ((1, b"\x01"), (2, b"\x01"), (3, b"\x02")):  # 1, A, B
        entry.match.add(field_id=field_id).exact.value = value
    app.on_stream_message(session, idle)
    install_and_send(app, ["s1"])
    assert session.written == [pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE,
                               pb.Update.INSERT]


def test_the_outbox_says_when_the_stream_has_taken_its_messages():
    outbox = Outbox()
    messages = outbox.messages()  # as gRPC's stream thread reads it
    outbox.put(pb.StreamMessageRequest())
    outbox.put(pb.StreamMessageRequest())
    taken: list = []
    reader = threading.Thread(target=lambda: taken.extend([next(messages), next(messages)]))
    reader.start()
    outbox.wait_taken()  # returns once both are taken (or after TAKEN_WAIT_S)
    reader.join()
    assert len(taken) == 2
    outbox.wait_taken()  # nothing queued: at once


def test_a_stream_that_takes_nothing_does_not_stall_the_app():
    outbox = Outbox()
    outbox.put(pb.StreamMessageRequest())  # no reader
    outbox.wait_taken()  # gives up after TAKEN_WAIT_S
    assert next(outbox.messages()) == pb.StreamMessageRequest()  # still there for the stream


def group_session(name: str, log: list, refuse: bool = False) -> SwitchSession:
    """A SwitchSession whose multicast group Writes are logged and answered (refused with
    RESOURCE_EXHAUSTED if ``refuse``) when awaited; its packet-outs logged too."""
    session = object.__new__(SwitchSession)  # no switch to connect to
    session.name, session.device_id, session.ready = name, 1, True
    session.groups, session._last_group = {}, 0
    session.writes = []
    session.pending = {}

    def write(req, timeout):
        session.writes.append(req)
        log.append(("write", name))
        return Answered(log, name, RefusedUpdate(grpc.StatusCode.RESOURCE_EXHAUSTED)
                        if refuse else None)

    session.stub = SimpleNamespace(Write=SimpleNamespace(future=write))
    session.outbox = SimpleNamespace(put=lambda msg: log.append(("packet_out", name)),
                                     wait_taken=lambda: None)
    return session


def test_a_set_of_flood_ports_gets_its_multicast_group_written_once():
    session = group_session("s1", [])
    assert session.group([3, 2])[0] == 1
    assert session.group([2, 3]) == (1, None)  # the same set: no second Write
    assert session.group([1, 2, 3])[0] == 2
    groups = [w.updates[0] for w in session.writes]
    assert [u.type for u in groups] == [pb.Update.INSERT, pb.Update.INSERT]
    assert [[r.egress_port for r in u.entity.packet_replication_engine_entry
             .multicast_group_entry.replicas] for u in groups] == [[2, 3], [1, 2, 3]]


def test_a_floods_new_groups_are_written_at_once_and_its_packet_outs_wait_for_them():
    log: list = []
    sessions = [group_session("s1", log), group_session("s2", log, refuse=True),
                group_session("s3", log)]
    app = app_with(*sessions)  # type: ignore[arg-type]
    with app._driving():
        for session in sessions:
            app.packet_out(session.name, [1, 2], b"flood")
        app.packet_out("s1", [3], b"after")  # after the held flood, as sent
    assert log == [("write", "s1"), ("write", "s2"), ("write", "s3"),
                   ("answer", "s1"), ("packet_out", "s1"), ("answer", "s2"),
                   ("answer", "s3"), ("packet_out", "s3"), ("packet_out", "s1")]
    assert sessions[1].groups == {}  # refused: the next flood writes it again
    log.clear()
    with app._driving():
        app.packet_out("s1", [2, 1], b"again")  # a known group: no Write, no wait
    assert log == [("packet_out", "s1")]
