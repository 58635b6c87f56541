"""The server's connection to dplab-switch's control socket: requests from many gRPC
threads at once, replies matched by id, events handed to a callback by a reader thread."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from dplab.p4runtime.errors import P4RuntimeError

REPLY_TIMEOUT_S = 10.0
# A switch started at the same time as its server opens its socket within milliseconds;
# nothing signals that moment, so connecting is retried this often.
CONNECT_RETRY_S = 0.01


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
        self._sock = _connect(path, wait_s)
        self._on_event = on_event
        self._lock = threading.Lock()
        self._waiting: dict[int, Future] = {}
        self._next_id = 1
        threading.Thread(target=self._read_forever, daemon=True, name="switch-reader").start()
        self.call("subscribe")

    def call(self, cmd: str, **fields: Any) -> Any:
        """Sends one request; returns its result or raises SwitchError with the switch's
        status code name (UNAVAILABLE when the switch is gone)."""
        reply = Future()
        with self._lock:
            rid = self._next_id
            self._next_id += 1
            self._waiting[rid] = reply
            line = json.dumps({"id": rid, "cmd": cmd, **fields}) + "\n"
            try:
                self._sock.sendall(line.encode())
            except OSError as exc:
                del self._waiting[rid]
                raise SwitchError("UNAVAILABLE", f"switch control socket: {exc}") from exc
        try:
            msg = reply.result(REPLY_TIMEOUT_S)
        except TimeoutError as exc:
            raise SwitchError("UNAVAILABLE", f"switch did not answer {cmd}") from exc
        if not msg.get("ok"):
            raise SwitchError.of(msg)
        return msg.get("result")

    def batch(self, requests: list[dict], stop_on_error: bool) -> list[dict]:
        """Sends ``requests`` (each ``{"cmd": ..., fields}``) as one `batch` request: one
        round trip. Returns one answer (``{"ok", "result"}`` or ``{"ok", "code", "error"}``)
        per request the switch ran; with ``stop_on_error`` the last one is the failure."""
        return self.call("batch", requests=requests, stop_on_error=stop_on_error)

    def _read_forever(self) -> None:
        stream = self._sock.makefile("rb")
        for line in stream:
            msg = json.loads(line)
            if "event" in msg:
                self._on_event(msg)
                continue
            with self._lock:
                waiter = self._waiting.pop(msg.get("id"), None)
            if waiter is not None:
                waiter.set_result(msg)
        with self._lock:  # switch gone: fail everyone still waiting
            for waiter in self._waiting.values():
                waiter.set_result({"ok": False, "code": "UNAVAILABLE",
                                   "error": "switch closed its control socket"})
            self._waiting.clear()


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
