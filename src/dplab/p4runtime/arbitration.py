"""Master arbitration (P4Runtime spec §5): among the open streams of the default role, the
one with the highest election id is primary; the others are backups."""

from __future__ import annotations

import threading
from collections.abc import Callable

from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.errors import P4RuntimeError

Send = Callable[[pb.StreamMessageResponse], None]


def election_key(eid: pb.Uint128) -> int:
    return (eid.high << 64) | eid.low


class Arbiter:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._streams: dict[int, Send] = {}  # election id -> the stream's sender

    def join(self, update: pb.MasterArbitrationUpdate, send: Send, current: int | None) -> int:
        """Registers (or re-registers) a stream; returns its election id. Everyone is told
        who is primary now."""
        _check_update(update, self.device_id, current is not None)
        eid = election_key(update.election_id)
        with self._lock:
            if eid in self._streams and self._streams[eid] is not send:
                raise P4RuntimeError("INVALID_ARGUMENT",
                                     f"election id {eid} is already used by another client")
            if current is not None and current != eid:
                self._streams.pop(current, None)
            self._streams[eid] = send
            self._announce()
        return eid

    def leave(self, eid: int) -> None:
        with self._lock:
            if self._streams.pop(eid, None) is not None:
                self._announce()

    def primary(self) -> int | None:
        with self._lock:
            return max(self._streams) if self._streams else None

    def primary_sender(self) -> Send | None:
        with self._lock:
            return self._streams[max(self._streams)] if self._streams else None

    def check_primary(self, election_id: pb.Uint128, what: str) -> None:
        primary = self.primary()
        if primary is None or election_key(election_id) != primary:
            raise P4RuntimeError("PERMISSION_DENIED",
                                 f"{what}: election id {election_key(election_id)} "
                                 "is not the primary's")

    def _announce(self) -> None:
        if not self._streams:
            return
        top = max(self._streams)
        for eid, send in self._streams.items():
            msg = pb.StreamMessageResponse()
            arb = msg.arbitration
            arb.device_id = self.device_id
            arb.election_id.high, arb.election_id.low = top >> 64, top & ((1 << 64) - 1)
            arb.status.code = 0 if eid == top else 6  # OK / ALREADY_EXISTS (a backup)
            arb.status.message = "primary" if eid == top else "backup"
            send(msg)


def _check_update(update: pb.MasterArbitrationUpdate, device_id: int, live: bool) -> None:
    """Spec 5.4 for a server with the default role only: a first update for an unknown
    device or role is NOT_FOUND; a live stream changing either is FAILED_PRECONDITION; a
    role config (no role scheme was agreed on) is INVALID_ARGUMENT."""
    changed = "FAILED_PRECONDITION" if live else "NOT_FOUND"
    if update.device_id != device_id:
        raise P4RuntimeError(changed, f"no device {update.device_id} "
                             f"(this server is device {device_id})")
    if update.role.name or update.role.id:
        raise P4RuntimeError(changed, f"no role {update.role.name or update.role.id} "
                             "(this server has only the default role)")
    if update.role.HasField("config"):
        raise P4RuntimeError("INVALID_ARGUMENT", "role.config given, but this server has "
                             "no role scheme (only the default role, full access)")
