"""ExternEntry: architecture-specific externs (P4Runtime spec, P4 Entity Messages,
"ExternEntry").

An ExternEntry names an ``Extern`` of the P4Info (``extern_type_id``) and one of its
``ExternInstance``s (``extern_id``). v1model has no architecture-specific externs (its
counters, meters, registers, action profiles and digests have entities of their own), so
our compiler's P4Info lists none and every named type is unknown: NOT_FOUND, as for any
other id the P4Info does not have. A wildcard read (``extern_type_id`` 0) reads "all
extern instances for all supported extern types" (spec "Wildcard Reads"): none, so its
answer is empty. A client's own P4Info may list externs this server cannot program:
those are UNIMPLEMENTED, and a wildcard read leaves them out (they are not supported).
"""

from __future__ import annotations

from collections.abc import Iterator

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.codec import P4InfoIndex
from dplab.p4runtime.errors import P4RuntimeError, invalid, not_found

# p4runtime.proto, ExternEntry: "the extern_type_id ... must be in the range [0x81, 0xfe]"
TYPE_IDS = range(0x81, 0xFF)


def write(index: P4InfoIndex, entry: pb.ExternEntry) -> None:
    """Every write fails: an unknown type or instance, or one this server cannot program."""
    if not entry.extern_type_id or not entry.extern_id:
        raise invalid("an extern entry write names one extern type and instance "
                      f"(got type {entry.extern_type_id}, instance {entry.extern_id})")
    _instance(index, entry)
    raise _unsupported(entry)


def read(index: P4InfoIndex, want: pb.ExternEntry) -> Iterator[pb.ExternEntry]:
    """Nothing: a wildcard read covers the supported types (none); a named type or
    instance is checked like a write's."""
    if want.extern_type_id:
        if want.extern_id:
            _instance(index, want)
        else:
            _extern(index, want.extern_type_id)
        raise _unsupported(want)
    return iter(())


def _extern(index: P4InfoIndex, type_id: int) -> p4info_pb2.Extern:
    if type_id not in TYPE_IDS:
        raise invalid(f"extern_type_id {type_id:#x} is outside 0x81..0xfe "
                      "(p4runtime.proto, ExternEntry)")
    found = index.externs.get(type_id)
    if found is None:
        raise not_found(f"extern type {type_id:#x} is not in the P4Info (v1model programs "
                        "have no architecture-specific externs)")
    return found


def _instance(index: P4InfoIndex, entry: pb.ExternEntry) -> p4info_pb2.ExternInstance:
    extern = _extern(index, entry.extern_type_id)
    for instance in extern.instances:
        if instance.preamble.id == entry.extern_id:
            return instance
    raise not_found(f"extern {extern.extern_type_name}: no instance with id "
                    f"{entry.extern_id} in the P4Info")


def _unsupported(entry: pb.ExternEntry) -> P4RuntimeError:
    return P4RuntimeError("UNIMPLEMENTED", f"extern type {entry.extern_type_id:#x} is in the "
                          "P4Info, but this server programs no architecture-specific extern")
