"""The server's connection to dplab-switch's control socket: two connections, one for
requests, answered in order to the thread that sent each (no other thread is woken on a
request's way), and one subscribed to the switch's events, which a reader thread hands to
a callback."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from dplab.p4runtime.errors import P4RuntimeError

REPLY_TIMEOUT_S = 10.0
# A switch started at the same time as its server opens its socket within milliseconds;
# nothing signals that moment, so connecting is retried this often.
CONNECT_RETRY_S = 0.01
RECV_BYTES = 1 << 16


class SwitchLinkError(OSError):
    """The switch's control socket did not accept a connection in time."""


class SwitchError(P4RuntimeError):
    """The switch failed or refused a request (its own status code name), or is gone."""

    @classmethod
    def of(cls, answer: dict) -> SwitchError:
        """The error of a failed answer (``{"ok": false, "code", "error"}``)."""
        return cls(answer.get("code", "UNKNOWN"), answer.get("error", "switch error"))


class SwitchLink:
    def __init__(self, path: str, on_event: Callable[[dict], None], wait_s: float = 0.0) -> None:
        self._requests = _Lines(_connect(path, wait_s))
        self._lock = threading.Lock()  # one request on the wire at a time, and its reply
        self._next_id = 1
        events = _Lines(_connect(path, wait_s))
        subscribed = time.monotonic() + REPLY_TIMEOUT_S
        events.send({"id": 0, "cmd": "subscribe"}, subscribed)
        events.receive(subscribed)  # events flow from here on
        threading.Thread(target=_read_events, args=(events, on_event), daemon=True,
                         name="switch-events").start()

    def call(self, cmd: str, **fields: Any) -> Any:
        """Sends one request; returns its result or raises SwitchError with the switch's
        status code name (UNAVAILABLE when the switch is gone or did not answer)."""
        with self._lock:
            rid = self._next_id
            self._next_id += 1
            deadline = time.monotonic() + REPLY_TIMEOUT_S
            try:
                self._requests.send({"id": rid, "cmd": cmd, **fields}, deadline)
                msg = self._reply(rid, deadline)
            except TimeoutError as exc:
                raise SwitchError("UNAVAILABLE", f"switch did not answer {cmd}") from exc
            except OSError as exc:
                raise SwitchError("UNAVAILABLE", f"switch control socket: {exc}") from exc
        if not msg.get("ok"):
            raise SwitchError.of(msg)
        return msg.get("result")

    def batch(self, requests: list[dict], stop_on_error: bool) -> list[dict]:
        """Sends ``requests`` (each ``{"cmd": ..., fields}``) as one `batch` request: one
        round trip. Returns one answer (``{"ok", "result"}`` or ``{"ok", "code", "error"}``)
        per request the switch ran; with ``stop_on_error`` the last one is the failure."""
        return self.call("batch", requests=requests, stop_on_error=stop_on_error)

    def _reply(self, rid: int, deadline: float) -> dict:
        """The answer to request ``rid``; answers to earlier requests that timed out
        arrive first and are passed over."""
        while True:
            msg = self._requests.receive(deadline)
            if msg.get("id") == rid:
                return msg


class _Lines:
    """One connection carrying a JSON object per line, both ways."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no line end

    def send(self, msg: dict, deadline: float) -> None:
        """TimeoutError when the switch did not take it all by ``deadline`` (a monotonic
        time; it stopped reading). A line cut short would garble every later one, so the
        connection is then closed: later requests fail at once."""
        self._sock.settimeout(max(deadline - time.monotonic(), 1e-3))
        try:
            self._sock.sendall(json.dumps(msg).encode() + b"\n")
        except TimeoutError:
            self._sock.close()
            raise

    def receive(self, deadline: float | None = None) -> dict:
        """The next object; TimeoutError after ``deadline`` (a monotonic time), and
        ConnectionError when the switch closed the connection."""
        while (end := self._buffer.find(b"\n", self._scanned)) < 0:
            self._scanned = len(self._buffer)
            self._sock.settimeout(None if deadline is None
                                  else max(deadline - time.monotonic(), 1e-3))
            chunk = self._sock.recv(RECV_BYTES)
            if not chunk:
                raise ConnectionError("switch closed its control socket")
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        self._scanned = 0
        return json.loads(line)


def request(path: str, cmd: str, timeout_s: float) -> dict:
    """One request ``cmd`` on a connection of its own, its ``result`` ({} when it has
    none); SwitchError UNAVAILABLE when the switch at ``path`` does not answer within
    ``timeout_s`` (e.g. it was stopped) or is gone, the switch's own error otherwise."""
    deadline = time.monotonic() + timeout_s
    try:
        with _connect(path, 0.0) as sock:
            lines = _Lines(sock)
            lines.send({"id": 1, "cmd": cmd}, deadline)
            answer = lines.receive(deadline)
    except TimeoutError as exc:
        raise SwitchError("UNAVAILABLE", f"switch did not answer {cmd} within "
                                         f"{timeout_s:g} s") from exc
    except OSError as exc:
        raise SwitchError("UNAVAILABLE", f"switch control socket: {exc}") from exc
    if not answer.get("ok"):
        raise SwitchError.of(answer)
    return answer.get("result") or {}


def ping(path: str, timeout_s: float) -> None:
    """A ``request`` that only asks whether the switch answers."""
    request(path, "ping", timeout_s)


def _read_events(events: _Lines, on_event: Callable[[dict], None]) -> None:
    """Until the switch closes the connection."""
    try:
        while True:
            msg = events.receive()
            if "event" in msg:
                on_event(msg)
    except OSError:
        return  # the switch is gone: requests fail on their own connection


def _connect(path: str, wait_s: float) -> socket.socket:
    """A connection to ``path``, retried for ``wait_s`` while the socket is not there yet."""
    deadline = time.monotonic() + wait_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            if time.monotonic() >= deadline:
                raise SwitchLinkError(f"switch control socket {path}: {exc.strerror} "
                                      f"(waited {wait_s:g} s)") from exc
        time.sleep(CONNECT_RETRY_S)
