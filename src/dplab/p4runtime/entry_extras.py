"""A table entry's controller-owned extras: the opaque ``controller_metadata`` cookie and
``metadata`` bytes (P4Runtime spec 9.1: the target never uses them, a Read returns them).
They live with the entry on the switch, as its opaque ``meta`` bytes (switch/PROTOCOL.md),
so that they outlive a server restart and go wherever the entry goes: a rolled-back
entry, a deleted one, a new pipeline."""

from __future__ import annotations

from dataclasses import dataclass

from p4.v1 import p4runtime_pb2 as pb

COOKIE_BYTES = 8  # controller_metadata is a uint64


@dataclass(frozen=True)
class Extras:
    controller_metadata: int = 0
    metadata: bytes = b""

    @classmethod
    def of(cls, entry: pb.TableEntry) -> Extras:
        return cls(entry.controller_metadata, entry.metadata)

    @classmethod
    def from_switch(cls, meta: str) -> Extras:
        """The extras of a read entry's ``meta`` (hex; empty: none)."""
        raw = bytes.fromhex(meta)
        if not raw:
            return NONE
        return cls(int.from_bytes(raw[:COOKIE_BYTES], "big"), raw[COOKIE_BYTES:])

    def to_switch(self) -> str:
        """The entry's ``meta`` for table_add/table_modify: the cookie (8 bytes, big
        endian) then the metadata; empty when there is neither."""
        if self == NONE:
            return ""
        return (self.controller_metadata.to_bytes(COOKIE_BYTES, "big") + self.metadata).hex()

    def fill(self, entry: pb.TableEntry) -> None:
        """Sets them on a read ``entry`` (a fresh one: unset fields read as none)."""
        if self.controller_metadata:
            entry.controller_metadata = self.controller_metadata
        if self.metadata:
            entry.metadata = self.metadata


NONE = Extras()
