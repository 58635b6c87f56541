"""The StreamChannels of one device that have not sent their arbitration yet. Each holds a
worker thread while it waits, so there is room for only so many: a new stream beyond them
ends the one that has waited longest (a controller sends its arbitration first thing, so
the longest silent stream is the least likely to be one), and a stream that stays silent
past the arbitration timeout is ended by its own handler (``time_left``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

from dplab.p4runtime.errors import P4RuntimeError

End = Callable[[P4RuntimeError], None]


class Waiting:
    def __init__(self, room: int, timeout_s: float) -> None:
        self.room, self.timeout_s = room, timeout_s
        self._lock = threading.Lock()
        # stream -> (its arbitration deadline, how to end it); oldest first
        self._streams: dict[Hashable, tuple[float, End]] = {}

    def enter(self, stream: Hashable, end: End) -> None:
        with self._lock:
            evicted = None
            if len(self._streams) >= self.room:
                evicted = self._streams.pop(next(iter(self._streams)))[1]
            self._streams[stream] = (time.monotonic() + self.timeout_s, end)
        if evicted is not None:
            evicted(P4RuntimeError(
                "RESOURCE_EXHAUSTED", f"this stream sent no arbitration while {self.room} "
                "streams waited for theirs (the server's max_waiting_streams); it waited "
                "longest and was ended to make room for a new one"))

    def leave(self, stream: Hashable) -> None:
        with self._lock:
            self._streams.pop(stream, None)

    def time_left(self, stream: Hashable) -> float | None:
        """Seconds ``stream`` has left to send its arbitration; None once it has (or it
        was ended)."""
        with self._lock:
            entry = self._streams.get(stream)
        return None if entry is None else entry[0] - time.monotonic()
