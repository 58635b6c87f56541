"""ROLLBACK_ON_ERROR batches (P4Runtime spec 12.3, "Batch Atomicity"): the updates are
applied one by one; before each, what it will change is read back from the switch. When
one fails, every update already applied (and the failed one, which may be half done) is
undone in reverse order, so that the switch is left as it was before the batch.

DATAPLANE_ATOMIC batches are the same, done while the server's switch connection holds
the switch's runtime (switch/PROTOCOL.md, `hold`/`release`): the data plane waits
meanwhile, so no packet sees part of the batch, and a rolled-back one not at all.

Per-update errors of a rolled-back batch: the failed update's own error; ABORTED for the
updates undone and for those never attempted; INTERNAL for an update whose undo failed
(the switch then differs from before the batch, and the message says where).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime import codec, value_sets
from dplab.p4runtime.entities import DELETE, INSERT, MODIFY, Entities
from dplab.p4runtime.errors import P4RuntimeError
from dplab.p4runtime.switch_link import SwitchError

Undo = Callable[[], None]


def write_all_or_none(entities: Entities, updates) -> list[P4RuntimeError | None]:
    """Applies ``updates`` in order; on the first failure undoes them all. Returns one
    error (or None) per update."""
    undos: list[Undo] = []
    for position, update in enumerate(updates):
        try:
            undos.append(undo_for(entities, update))
            entities.write(update)
        except P4RuntimeError as err:
            return roll_back(undos, position, err, len(updates))
    return [None] * len(updates)


def write_dataplane_atomic(entities: Entities, updates) -> list[P4RuntimeError | None]:
    """Like write_all_or_none, with the data plane held off until the batch is whole (or
    undone)."""
    try:
        entities.switch.call("hold")
    except SwitchError as err:
        raise hold_refused(err) from err
    try:
        errors = write_all_or_none(entities, updates)
    finally:
        released = release(entities)
    if released is not None:  # the switch gave the hold up: the batch was not atomic
        return [released] * len(updates)
    return errors


def hold_refused(err: SwitchError) -> P4RuntimeError:
    """The Write's error when the switch refused the `hold`: nothing was applied, and no
    update is to blame, so the whole Write fails with the switch's code (not a batch
    error with per-update details), whichever path the batch took."""
    return P4RuntimeError(err.code, "DATAPLANE_ATOMIC: the switch refused to hold the data "
                          f"plane ({err.message}); no update was applied")


def release(entities: Entities) -> P4RuntimeError | None:
    try:
        entities.switch.call("release")
    except P4RuntimeError as err:
        return P4RuntimeError("INTERNAL", f"the data plane may have seen part of the batch: "
                              f"{err.message}")
    return None


def roll_back(undos: list[Undo], failed: int, err: P4RuntimeError,
               total: int) -> list[P4RuntimeError | None]:
    errors: list[P4RuntimeError | None] = [
        P4RuntimeError("ABORTED", f"not attempted: update {failed} failed")] * total
    for position in reversed(range(len(undos))):
        try:
            undos[position]()
            errors[position] = P4RuntimeError("ABORTED", f"rolled back: update {failed} failed")
        except P4RuntimeError as undo_err:
            errors[position] = P4RuntimeError(
                "INTERNAL", f"applied, and could not be rolled back: {undo_err.message}")
    if errors[failed].code != "INTERNAL":
        errors[failed] = err
    return errors


def undo_for(entities: Entities, update: pb.Update) -> Undo:
    """Reads the state ``update`` touches; the returned function puts it back."""
    kind = update.entity.WhichOneof("entity")
    snapshot = _SNAPSHOTS.get(kind or "")
    if snapshot is None:
        return lambda: None  # Entities.write refuses such an update: nothing to undo
    return snapshot(entities, getattr(update.entity, kind))


# -- tables ------------------------------------------------------------------------------

def _table_entry(entities: Entities, entry: pb.TableEntry) -> Undo:
    table = entities.index.table(entry.table_id)
    if entry.is_default_action:
        return _default_entry(entities, table)
    key = {"table": entry.table_id,
           "match": codec.match_to_switch(entities.index.keys[entry.table_id], entry.match),
           "priority": entry.priority}
    return table_entry_undo(entities, key, entities.find_entry(table, key["match"],
                                                               entry.priority))


def table_entry_undo(entities: Entities, key: dict, before: dict | None) -> Undo:
    """Puts back the entry with ``key`` (table, match, priority) as it was read
    (``before``; None: it did not exist), its metadata too."""
    table = entities.index.table(key["table"])
    switch = entities.switch
    before_set = entities.oneshots.action_set_of(table, before)  # None: not a one shot

    def undo() -> None:
        now = entities.find_entry(table, key["match"], key["priority"])
        if before is None:
            if now is not None:
                switch.call("table_delete", **key)
                entities.oneshots.release(table, now["action"])
            return
        has_meter = entities.index.has_direct_meter(table)
        restore = {**key, **_entry_state(before, has_meter)}
        if before_set is not None:  # a one shot: its set, whichever group holds it
            if entities.oneshots.action_set_of(table, now) == before_set:
                restore["action"] = codec.switch_action(now["action"])
            else:  # its hidden group went with a MODIFY: realised anew
                restore["action"] = entities.oneshots.realise(table, before_set)
        if now is None:
            switch.call("table_add", **restore)
        elif _entry_state(now, False) != _entry_state(restore, False):
            switch.call("table_modify", **restore)  # never needed on const entries
        elif now.get("meter") != before.get("meter"):  # const entries too
            switch.call("table_entry_meter_set", **key, meter=before.get("meter"))
        if has_meter and (now or {}).get("meter_counts") != before["meter_counts"]:
            switch.call("table_entry_meter_set", **key, counts=before["meter_counts"])
        switch.call("table_entry_counter_write", **key, packets=before.get("packets", 0),
                    bytes=before.get("bytes", 0))
        if now is not None and now["action"] != restore["action"]:
            entities.oneshots.release(table, now["action"])

    return undo


def _default_entry(entities: Entities, table) -> Undo:
    """The default entry's action, metadata and direct counter and meter."""
    switch, table_id = entities.switch, table.preamble.id
    before = switch.call("table_read", table=table_id)
    action = codec.switch_action(before["default_action"])

    def undo_default() -> None:
        now = switch.call("table_read", table=table_id)
        if ((now["default_action"], now["default_meta"])  # never on a const default
                != (before["default_action"], before["default_meta"])):
            switch.call("table_set_default", table=table_id, action=action,
                        meta=before["default_meta"])
        if entities.index.has_direct_meter(table):
            switch.call("table_entry_meter_set", table=table_id, default=True,
                        meter=before["default_meter"], counts=before["default_meter_counts"])
        switch.call("table_entry_counter_write", table=table_id, default=True,
                    packets=before["default_packets"], bytes=before["default_bytes"])
    return undo_default


def _entry_state(item: dict, with_meter: bool) -> dict:
    """What table_add/table_modify set, from a read entry."""
    state = {"action": codec.switch_action(item["action"]),
             "idle_timeout_ns": item.get("idle_timeout_ns") or 0, "meta": item["meta"]}
    if with_meter:
        state["meter"] = item.get("meter")
    return state


def _direct_entry(entities: Entities, entry) -> Undo:
    return _table_entry(entities, entry.table_entry)


# -- indexed externs ---------------------------------------------------------------------

def _counter_entry(entities: Entities, entry: pb.CounterEntry) -> Undo:
    cells = entities.cells("counter", entry.counter_id, entry)

    def undo() -> None:
        for cell in cells:
            entities.switch.call("counter_write", counter=entry.counter_id,
                                 index=cell["index"], packets=cell.get("packets", 0),
                                 bytes=cell.get("bytes", 0))
    return undo


def _meter_entry(entities: Entities, entry: pb.MeterEntry) -> Undo:
    cells = entities.cells("meter", entry.meter_id, entry)

    def undo() -> None:
        for cell in cells:
            entities.switch.call("meter_set", meter=entry.meter_id, index=cell["index"],
                                 config=cell.get("config"), counts=cell["counts"])
    return undo


def _register_entry(entities: Entities, entry: pb.RegisterEntry) -> Undo:
    cells = entities.cells("register", entry.register_id, entry)

    def undo() -> None:
        for cell in cells:
            entities.switch.call("register_write", register=entry.register_id,
                                 index=cell["index"], value=cell["value"])
    return undo


# -- keyed objects: digests, multicast groups, clone sessions -------------------------------

def _restore_keyed(before: object | None, now: object | None, write: Callable) -> None:
    """Brings an object keyed by an id back to ``before`` (None: it did not exist)."""
    if before is None:
        if now is not None:
            write(DELETE, now)
    elif now is None:
        write(INSERT, before)
    elif now != before:
        write(MODIFY, before)


def _digest_entry(entities: Entities, entry: pb.DigestEntry) -> Undo:
    def current() -> pb.DigestEntry | None:
        found = list(entities.digests.read(pb.DigestEntry(digest_id=entry.digest_id)))
        return found[0] if entry.digest_id and found else None

    before = current()
    return lambda: _restore_keyed(before, current(), lambda op, config: entities.digests.write(
        op, config, entities.index.digests))


def _replication_entry(entities: Entities, entry: pb.PacketReplicationEngineEntry) -> Undo:
    kind = entry.WhichOneof("type")
    if kind == "multicast_group_entry":
        cmd, key, field = "mcast_group", "groups", "group"
        ident = entry.multicast_group_entry.multicast_group_id
    elif kind == "clone_session_entry":
        cmd, key, field = "clone_session", "sessions", "session"
        ident = entry.clone_session_entry.session_id
    else:
        return lambda: None  # refused by Entities.write

    def current() -> dict | None:
        found = [item for item in entities.switch.call(f"{cmd}_read")[key]
                 if item[field] == ident]
        return found[0] if found else None

    def write(op: int, item: dict) -> None:
        if op == DELETE:
            entities.switch.call(f"{cmd}_delete", **{field: ident})
        else:
            entities.switch.call(f"{cmd}_set", **item)

    before = current()
    return lambda: _restore_keyed(before, current(), write)


def _value_set_entry(entities: Entities, entry: pb.ValueSetEntry) -> Undo:
    return value_sets.undo(entities.switch, entities.index, entry)


def _profile_member(entities: Entities, member: pb.ActionProfileMember) -> Undo:
    if not member.member_id:
        return lambda: None  # refused by Entities.write
    key = pb.ActionProfileMember(action_profile_id=member.action_profile_id,
                                 member_id=member.member_id)
    return _keyed_snapshot(entities.profiles.read_members, key, entities.profiles.write_member)


def _profile_group(entities: Entities, group: pb.ActionProfileGroup) -> Undo:
    if not group.group_id or not entities.index.lookup(
            "action_profiles", group.action_profile_id).with_selector:
        return lambda: None  # refused by Entities.write
    key = pb.ActionProfileGroup(action_profile_id=group.action_profile_id,
                                group_id=group.group_id)
    return _keyed_snapshot(entities.profiles.read_groups, key, entities.profiles.write_group)


def _keyed_snapshot(read: Callable[[object], Iterable[object]], key: object,
                    write: Callable) -> Undo:
    """Undo for one member or group: what ``read(key)`` finds now is put back."""

    def current() -> object | None:
        return next(iter(read(key)), None)

    before = current()
    return lambda: _restore_keyed(before, current(), write)


_SNAPSHOTS: dict[str, Callable[[Entities, object], Undo]] = {
    "table_entry": _table_entry,
    "direct_counter_entry": _direct_entry,
    "direct_meter_entry": _direct_entry,
    "counter_entry": _counter_entry,
    "meter_entry": _meter_entry,
    "register_entry": _register_entry,
    "digest_entry": _digest_entry,
    "packet_replication_engine_entry": _replication_entry,
    "value_set_entry": _value_set_entry,
    "action_profile_member": _profile_member,
    "action_profile_group": _profile_group,
}
