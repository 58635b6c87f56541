"""Digests (P4Runtime spec 9.9 and 16.2): the switch reports every digest() call; the
server sends them to the primary only for digests the client configured with a
DigestEntry, batched into DigestLists (up to ``max_list_size`` members, or what arrived
within ``max_timeout_ns``), and holds back data already sent until the client acks its
list or ``ack_timeout_ns`` passes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.errors import P4RuntimeError, invalid, not_found

Data = tuple[bytes, ...]  # one digest's struct members, as canonical byte strings
# Sends a message to the primary; False when there is none (the data is then dropped).
Send = Callable[[pb.StreamMessageResponse], bool]


class _Pending:
    """Digest data of one digest id waiting to be sent as one list."""

    def __init__(self) -> None:
        self.items: list[Data] = []
        self.timer: threading.Timer | None = None


class Digests:
    def __init__(self, send: Send) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._configs: dict[int, pb.DigestEntry.Config] = {}
        self._tuples: set[int] = set()   # digests of a tuple type: their data is a P4 tuple
        self._pending: dict[int, _Pending] = {}
        # list id -> (digest id, its data, monotonic ns after which it may be sent again)
        self._unacked: dict[int, tuple[int, set[Data], float]] = {}
        self._last_list_id = 0

    # -- DigestEntry write/read ----------------------------------------------------------

    def write(self, op: int, entry: pb.DigestEntry, known: dict[int, object]) -> None:
        if entry.digest_id not in known:
            raise not_found(f"digest id {entry.digest_id} is not in the P4Info")
        with self._lock:
            exists = entry.digest_id in self._configs
            if op == pb.Update.INSERT and exists:
                raise P4RuntimeError("ALREADY_EXISTS",
                                     f"digest {entry.digest_id} is already configured")
            if op != pb.Update.INSERT and not exists:
                raise not_found(f"digest {entry.digest_id} is not configured")
            if op == pb.Update.DELETE:
                del self._configs[entry.digest_id]
                self._pending.pop(entry.digest_id, None)
                return
            if not entry.HasField("config"):
                raise invalid(f"digest {entry.digest_id}: a DigestEntry needs its config")
            self._configs[entry.digest_id] = entry.config
            if known[entry.digest_id].type_spec.HasField("tuple"):
                self._tuples.add(entry.digest_id)

    def read(self, want: pb.DigestEntry) -> Iterator[pb.DigestEntry]:
        with self._lock:
            configs = dict(self._configs)
        for digest_id, config in sorted(configs.items()):
            if want.digest_id in (0, digest_id):
                yield pb.DigestEntry(digest_id=digest_id, config=config)

    def reset(self) -> None:
        """A new pipeline: no digest is configured any more."""
        with self._lock:
            for pending in self._pending.values():
                if pending.timer is not None:
                    pending.timer.cancel()
            self._configs.clear()
            self._tuples.clear()
            self._pending.clear()
            self._unacked.clear()

    # -- from the switch and from the client ---------------------------------------------

    def on_digest(self, digest_id: int, data: Data) -> None:
        with self._lock:
            config = self._configs.get(digest_id)
            if config is None or self._held_back(digest_id, data):
                return
            pending = self._pending.setdefault(digest_id, _Pending())
            pending.items.append(data)
            full = config.max_list_size > 0 and len(pending.items) >= config.max_list_size
            if full or config.max_timeout_ns == 0:
                self._flush(digest_id)
            elif pending.timer is None:
                pending.timer = threading.Timer(config.max_timeout_ns / 1e9,
                                                self._flush_locked, (digest_id,))
                pending.timer.daemon = True
                pending.timer.start()

    def ack(self, ack: pb.DigestListAck) -> None:
        with self._lock:
            held = self._unacked.get(ack.list_id)
            if held is not None and held[0] == ack.digest_id:
                del self._unacked[ack.list_id]

    def _held_back(self, digest_id: int, data: Data) -> bool:
        """Data already waiting in a list, or sent in a list not yet acked (nor timed out)."""
        pending = self._pending.get(digest_id)
        if pending is not None and data in pending.items:
            return True
        now = time.monotonic_ns()
        for list_id, (held_id, items, until) in list(self._unacked.items()):
            if now >= until:
                del self._unacked[list_id]
            elif held_id == digest_id and data in items:
                return True
        return False

    def _flush_locked(self, digest_id: int) -> None:
        with self._lock:
            self._flush(digest_id)

    def _flush(self, digest_id: int) -> None:
        pending = self._pending.pop(digest_id, None)
        config = self._configs.get(digest_id)
        if pending is None or not pending.items or config is None:
            return
        if pending.timer is not None:
            pending.timer.cancel()
        self._last_list_id += 1
        msg = pb.StreamMessageResponse()
        msg.digest.digest_id = digest_id
        msg.digest.list_id = self._last_list_id
        msg.digest.timestamp = time.time_ns()
        for data in pending.items:
            item = msg.digest.data.add()
            members = item.tuple.members if digest_id in self._tuples else item.struct.members
            for value in data:
                members.add(bitstring=value)
        if self._send(msg):
            until = time.monotonic_ns() + config.ack_timeout_ns
            self._unacked[self._last_list_id] = (digest_id, set(pending.items), until)
