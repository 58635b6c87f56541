"""What the server keeps per table entry beside the switch: the controller's opaque
``controller_metadata`` cookie and ``metadata`` bytes (P4Runtime spec 9.1: the target
never uses them, a Read returns them), and the entry's idle timeout, which an
IdleTimeoutNotification must repeat with them (spec 16.4) while the switch's idle event
names only the key (spec "Table Idle Timeout Notification")."""

from __future__ import annotations

import json
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2 as pb


@dataclass(frozen=True)
class Extras:
    controller_metadata: int = 0
    metadata: bytes = b""
    idle_timeout_ns: int = 0

    @classmethod
    def of(cls, entry: pb.TableEntry) -> Extras:
        return cls(entry.controller_metadata, entry.metadata, entry.idle_timeout_ns)

    def fill(self, entry: pb.TableEntry) -> None:
        entry.controller_metadata = self.controller_metadata
        entry.metadata = self.metadata


NONE = Extras()


class EntryExtras:
    """Extras by table and entry key; ``match`` is the switch form codec.match_to_switch
    gives (one item per key field), None for the default entry. Only entries with some
    extra are kept, so tables nobody annotates cost nothing to read."""

    def __init__(self) -> None:
        self._tables: dict[int, dict[tuple[str, int], Extras]] = {}

    def get(self, table_id: int, match: list[dict] | None, priority: int) -> Extras:
        return self._tables.get(table_id, {}).get(_key(match, priority), NONE)

    def put(self, table_id: int, match: list[dict] | None, priority: int,
            extras: Extras) -> None:
        """Replaces the entry's extras (NONE forgets the entry)."""
        entries = self._tables.setdefault(table_id, {})
        if extras == NONE:
            entries.pop(_key(match, priority), None)
        else:
            entries[_key(match, priority)] = extras

    def annotated(self, table_id: int) -> bool:
        return bool(self._tables.get(table_id))

    def clear(self) -> None:
        """A new pipeline: its tables start empty."""
        self._tables.clear()


def _key(match: list[dict] | None, priority: int) -> tuple[str, int]:
    return json.dumps(match, sort_keys=True), priority
