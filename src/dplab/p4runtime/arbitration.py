"""Master arbitration (P4Runtime spec 5): the primary of the default role is the client
whose election id is the highest the server has ever seen; when it leaves, or steps down,
there is no primary until a client sends an election id at least that high. A client
without an election id is a backup that never becomes primary. The backups are capped
(each stream holds a server thread): a new client that would be one is refused with
RESOURCE_EXHAUSTED, one that becomes primary always gets in."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.errors import P4RuntimeError

# What a stream is sent: a message, or the error that ends it.
Send = Callable[[pb.StreamMessageResponse | P4RuntimeError], None]


def election_key(eid: pb.Uint128) -> int:
    return (eid.high << 64) | eid.low


class Arbiter:
    def __init__(self, device_id: int, max_backups: int) -> None:
        self.device_id, self.max_backups = device_id, max_backups
        self._lock = threading.Lock()
        # stream -> (its election id, None for a client that gave none; its sender)
        self._streams: dict[Hashable, tuple[int | None, Send]] = {}
        self._primary: Hashable | None = None
        self._highest: int | None = None  # the spec's election_id_past

    def join(self, update: pb.MasterArbitrationUpdate, stream: Hashable, send: Send) -> None:
        """Registers (or updates) ``stream``'s arbitration (spec 5.4)."""
        live = stream in self._streams
        _check_update(update, self.device_id, live)
        eid = election_key(update.election_id) if update.HasField("election_id") else None
        with self._lock:
            if eid is not None and any(other != stream and other_eid == eid
                                       for other, (other_eid, _) in self._streams.items()):
                raise P4RuntimeError("INVALID_ARGUMENT",
                                     f"election id {eid} is already used by another client")
            primary = eid is not None and (self._highest is None or eid >= self._highest)
            if not live and not primary and self._backups() >= self.max_backups:
                raise P4RuntimeError(
                    "RESOURCE_EXHAUSTED", f"device {self.device_id} already has "
                    f"{self._backups()} backup streams (the server's max_backup_streams); "
                    "only a client whose election id makes it primary is let in now")
            self._streams[stream] = (eid, send)
            if primary:
                self._highest, self._primary = eid, stream
                self._announce(self._streams)  # a new (or the same) primary: everyone
                self._end_lowest_backups()
            elif self._primary == stream:  # the primary stepped down: everyone
                self._primary = None
                self._announce(self._streams)
            else:  # a backup: only it is told
                self._announce({stream: self._streams[stream]})

    def leave(self, stream: Hashable) -> None:
        with self._lock:
            if self._streams.pop(stream, None) is None:
                return
            if self._primary == stream:  # spec 5: no primary until a new election
                self._primary = None
                self._announce(self._streams)

    def is_primary(self, stream: Hashable) -> bool:
        with self._lock:
            return self._primary is not None and self._primary == stream

    def primary_sender(self) -> Send | None:
        with self._lock:
            return None if self._primary is None else self._streams[self._primary][1]

    def check_primary(self, election_id: pb.Uint128, what: str) -> None:
        with self._lock:
            primary = None if self._primary is None else self._streams[self._primary][0]
        if primary is None or election_key(election_id) != primary:
            raise P4RuntimeError("PERMISSION_DENIED",
                                 f"{what}: election id {election_key(election_id)} "
                                 "is not the primary's")

    def _backups(self) -> int:
        return len(self._streams) - (self._primary is not None)

    def _end_lowest_backups(self) -> None:
        """A demoted primary may overfill the backups: those with the lowest election ids
        (none is lowest) are ended until they fit."""
        while self._backups() > self.max_backups:
            stream = min((s for s in self._streams if s != self._primary),
                         key=lambda s: -1 if self._streams[s][0] is None else self._streams[s][0])
            _, send = self._streams.pop(stream)
            send(P4RuntimeError("RESOURCE_EXHAUSTED", "a new primary made one backup too "
                                f"many (the server's max_backup_streams is {self.max_backups}) "
                                "and this stream's election id was the lowest"))

    def _announce(self, streams: dict[Hashable, tuple[int | None, Send]]) -> None:
        """Spec 5.5: the highest election id seen (unset before any), and each client's
        status: OK for the primary, ALREADY_EXISTS for a backup while there is a primary,
        NOT_FOUND while there is none."""
        backup_code = code_pb2.NOT_FOUND if self._primary is None else code_pb2.ALREADY_EXISTS
        for stream, (_, send) in streams.items():
            msg = pb.StreamMessageResponse()
            arb = msg.arbitration
            arb.device_id = self.device_id
            if self._highest is not None:
                arb.election_id.high = self._highest >> 64
                arb.election_id.low = self._highest & ((1 << 64) - 1)
            primary = stream == self._primary
            arb.status.code = code_pb2.OK if primary else backup_code
            arb.status.message = "primary" if primary else "backup"
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
