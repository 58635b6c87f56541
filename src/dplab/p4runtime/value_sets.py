"""ValueSetEntry (P4Runtime spec 9.7): the members of a parser value set, written as a
whole with MODIFY and read back; and the undo of such a write for ROLLBACK_ON_ERROR."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime import codec
from dplab.p4runtime.codec import P4InfoIndex
from dplab.p4runtime.errors import P4RuntimeError, invalid
from dplab.p4runtime.switch_link import SwitchLink

MODIFY = pb.Update.MODIFY


def write(switch: SwitchLink, index: P4InfoIndex, op: int, entry: pb.ValueSetEntry) -> None:
    info = index.lookup("value_sets", entry.value_set_id)   # NOT_FOUND for an unknown id
    name = info.preamble.name
    if op != MODIFY:
        raise invalid(f"value set {name}: a ValueSetEntry can only be modified, as a whole "
                      "(P4Runtime spec 9.7)")
    if len(entry.members) > info.size:
        raise P4RuntimeError("RESOURCE_EXHAUSTED", f"value set {name}: "
                             f"{len(entry.members)} members, its size is {info.size}")
    members = [codec.match_to_switch(codec.Key.of(f"value set {name} member {i}", info.match),
                                     m.match) for i, m in enumerate(entry.members)]
    if any(members[i] in members[:i] for i in range(len(members))):
        raise P4RuntimeError("ALREADY_EXISTS", f"value set {name}: a member is given twice "
                             "(P4Runtime spec 9.7)")
    switch.call("value_set_write", value_set=entry.value_set_id, members=members)


def read(switch: SwitchLink, index: P4InfoIndex,
         want: pb.ValueSetEntry) -> Iterator[pb.ValueSetEntry]:
    """One set (``value_set_id``) or every set (0)."""
    infos = ([index.lookup("value_sets", want.value_set_id)] if want.value_set_id
             else list(index.value_sets.values()))
    for info in infos:
        out = pb.ValueSetEntry(value_set_id=info.preamble.id)
        key = codec.Key.of(f"value set {info.preamble.name}", info.match)
        for member in _switch_members(switch, info):
            codec.match_from_switch(key, member, out.members.add().match)
        yield out


def _switch_members(switch: SwitchLink, info: p4info_pb2.ValueSet) -> list[list[dict]]:
    got = switch.call("value_set_read", value_set=info.preamble.id)
    return got["value_sets"][0]["members"]


def undo(switch: SwitchLink, index: P4InfoIndex,
         entry: pb.ValueSetEntry) -> Callable[[], None]:
    """Reads the set's members now; the returned function writes them back."""
    info = index.value_sets.get(entry.value_set_id)
    if info is None:
        return lambda: None  # the write is refused: nothing to undo
    before = _switch_members(switch, info)
    return lambda: switch.call("value_set_write", value_set=entry.value_set_id,
                               members=before)
