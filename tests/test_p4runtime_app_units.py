"""The P4Runtime controller app's reading of failed writes: the server answers a failed
update with UNKNOWN and the update's own code in the details (spec 12.4), and the app must
act on the update's code. The session stands in for the switch (the server's behaviour is
tested in test_p4runtime_conformance.py)."""

from __future__ import annotations

from types import SimpleNamespace

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.control.p4runtime_app import P4RuntimeSouthbound


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


class Session:
    """Refuses every INSERT with `insert_code`; records what was written."""

    ready = True
    name = "s1"

    def __init__(self, insert_code: grpc.StatusCode) -> None:
        self.insert_code = insert_code
        self.written: list[int] = []

    def write(self, op: int, entry: pb.TableEntry) -> None:
        self.written.append(op)
        if op == pb.Update.INSERT:
            raise RefusedUpdate(self.insert_code)


def app_with(session: Session) -> P4RuntimeSouthbound:
    app = object.__new__(P4RuntimeSouthbound)  # no switches to connect to
    app.program = SimpleNamespace(table_id=1, forward_id=2)
    app.sessions = {"s1": session}
    return app


def test_a_rule_that_exists_already_is_modified():
    session = Session(grpc.StatusCode.ALREADY_EXISTS)
    app_with(session).install_path_rule("s1", 1, "00:00:00:00:00:01", "00:00:00:00:00:02", 3, 10)
    assert session.written == [pb.Update.INSERT, pb.Update.MODIFY]


def test_a_rule_refused_for_another_reason_is_not_retried():
    session = Session(grpc.StatusCode.RESOURCE_EXHAUSTED)
    app_with(session).install_path_rule("s1", 1, "00:00:00:00:00:01", "00:00:00:00:00:02", 3, 10)
    assert session.written == [pb.Update.INSERT]
