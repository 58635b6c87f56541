"""The server's switch link against a scripted switch (a unix socket speaking
switch/PROTOCOL.md's line-delimited JSON): requests answered to their caller on one
connection, events on a second, subscribed one; a reply that does not come in time is
UNAVAILABLE, and when it comes late it is not taken for the next request's."""

from __future__ import annotations

import json
import queue
import socket
import threading
from pathlib import Path

import pytest

from dplab.p4runtime import switch_link
from dplab.p4runtime.switch_link import SwitchError, SwitchLink

WAIT_S = 5.0


class ScriptedSwitch:
    """Accepts the link's two connections; answers `subscribe` on one (the events
    connection), and hands every other request to the test, which answers it."""

    def __init__(self, path: Path) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(2)
        self.requests: queue.Queue = queue.Queue()
        self.events_conn: socket.socket | None = None
        self.requests_conn: socket.socket | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for _ in range(2):
            conn, _ = self.listener.accept()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        for line in conn.makefile("rb"):
            msg = json.loads(line)
            if msg["cmd"] == "subscribe":
                self.events_conn = conn
                self.send(conn, {"id": msg["id"], "ok": True, "result": None})
            else:
                self.requests_conn = conn
                self.requests.put(msg)

    @staticmethod
    def send(conn: socket.socket, msg: dict) -> None:
        conn.sendall(json.dumps(msg).encode() + b"\n")

    def answer(self, request: dict, result: object) -> None:
        assert self.requests_conn is not None
        self.send(self.requests_conn, {"id": request["id"], "ok": True, "result": result})


@pytest.fixture
def switch(tmp_path):
    scripted = ScriptedSwitch(tmp_path / "s1.sock")
    yield scripted
    scripted.listener.close()


def answering(switch: ScriptedSwitch, result: object) -> threading.Thread:
    """A thread answering the next request with ``result``."""
    def run() -> None:
        switch.answer(switch.requests.get(timeout=WAIT_S), result)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_requests_and_events_go_their_own_ways(switch, tmp_path, monkeypatch):
    monkeypatch.setattr(switch_link, "REPLY_TIMEOUT_S", 0.2)
    events: queue.Queue = queue.Queue()
    link = SwitchLink(str(tmp_path / "s1.sock"), events.put)
    answering(switch, {"n": 1})
    assert link.call("stats") == {"n": 1}
    # a quiet events connection, longer than any reply may take, still delivers
    threading.Event().wait(0.5)
    assert switch.events_conn is not None
    switch.send(switch.events_conn, {"event": "packet_in", "payload": "00"})
    assert events.get(timeout=WAIT_S) == {"event": "packet_in", "payload": "00"}


def test_a_late_reply_is_unavailable_and_not_taken_for_the_next(switch, tmp_path, monkeypatch):
    monkeypatch.setattr(switch_link, "REPLY_TIMEOUT_S", 0.2)
    link = SwitchLink(str(tmp_path / "s1.sock"), lambda event: None)
    with pytest.raises(SwitchError) as refused:
        link.call("stats")
    assert refused.value.code == "UNAVAILABLE"
    late = switch.requests.get(timeout=WAIT_S)
    switch.answer(late, "late")  # arrives before the next request's answer
    answering(switch, "mine")
    assert link.call("stats") == "mine"
