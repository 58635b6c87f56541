"""Write and read of each P4Runtime entity, as calls on the switch's control socket."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime import codec, externs, value_sets
from dplab.p4runtime.codec import P4InfoIndex
from dplab.p4runtime.digests import Digests
from dplab.p4runtime.entry_extras import Extras
from dplab.p4runtime.errors import P4RuntimeError, invalid, not_found
from dplab.p4runtime.oneshot import OneShots
from dplab.p4runtime.profiles import Profiles
from dplab.p4runtime.switch_link import SwitchLink

INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE


class Entities:
    def __init__(self, switch: SwitchLink, index: P4InfoIndex, digests: Digests) -> None:
        self.switch = switch
        self.index = index
        self.digests = digests
        self.oneshots = OneShots(switch, index)
        self.profiles = Profiles(switch, index, self.oneshots)

    # -- write ---------------------------------------------------------------------------

    def write(self, update: pb.Update) -> None:
        kind = update.entity.WhichOneof("entity")
        if kind is None:
            raise invalid("the update's entity is empty")
        handler = getattr(self, f"_write_{kind}", None)
        if handler is None:
            raise P4RuntimeError("UNIMPLEMENTED", f"writing {kind} is not supported")
        if update.type not in (INSERT, MODIFY, DELETE):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        handler(update.type, getattr(update.entity, kind))

    def plan(self, update: pb.Update) -> TablePlan | None:
        """The switch requests of a plain table-entry update, decided (and checked: a bad
        update raises here) without asking the switch, none sent yet; None for an update
        whose requests depend on the switch's state (write() does those)."""
        if (update.entity.WhichOneof("entity") != "table_entry"
                or update.type not in (INSERT, MODIFY, DELETE)):
            return None
        return self._plan_table_entry(update.type, update.entity.table_entry)

    def run_plan(self, plan: TablePlan) -> None:
        for request in plan.requests:
            self.switch.call(**request)

    def _plan_table_entry(self, op: int, entry: pb.TableEntry) -> TablePlan | None:
        table = self.index.table(entry.table_id)
        if entry.is_const:
            raise invalid("is_const must be false in a write (P4Runtime spec 9.1)")
        if op != DELETE:  # a DELETE ignores all but the key (spec 9.1)
            _check_idle_timeout(table, entry)
        if entry.is_default_action:
            return None
        if op != DELETE:
            self._check_direct_resources(table, entry)
        if op == INSERT and not table.match_fields:
            raise invalid(f"table {table.preamble.name} has no key: only its default entry "
                          "can be written")
        key = {"table": entry.table_id,
               "match": codec.match_to_switch(self.index.keys[entry.table_id], entry.match),
               "priority": entry.priority}
        kind = entry.action.WhichOneof("type")
        _check_const_table(table, op, kind)
        if op == DELETE:  # one shots: their hidden group goes too (write() does those)
            return None if self.oneshots.may_hold(table) else TablePlan(
                op, key, [{"cmd": "table_delete", **key}])
        if kind is None and op == MODIFY:  # only direct resources change: write() does it
            return None
        if kind is None:
            raise invalid("a table entry needs an action")
        if kind == "action_profile_action_set" or table.implementation_id:
            return None  # members, groups and one shots depend on the profile's state
        action = self.profiles.entry_action(table, entry.action)
        return TablePlan(op, key, self._entry_requests(table, op, entry, key, action))

    def _entry_requests(self, table, op: int, entry: pb.TableEntry, key: dict,
                        action: dict) -> list[dict]:
        """An INSERT's or MODIFY's switch requests: the entry with ``action`` (the
        switch's form), then its direct counter and meter counts when given."""
        # MODIFY assigns the entry's whole state (spec 12.2): a 0 idle timeout clears it,
        # and so does no metadata the entry's opaque metadata
        req = {**key, "action": action, "idle_timeout_ns": entry.idle_timeout_ns,
               "meta": Extras.of(entry).to_switch()}
        if entry.HasField("meter_config"):
            req["meter"] = codec.meter_to_switch(entry.meter_config)
        elif op == MODIFY and self.index.has_direct_meter(table):
            req["meter"] = None  # spec 9.1.5: a MODIFY without meter_config resets it
        requests = [{"cmd": "table_add" if op == INSERT else "table_modify", **req}]
        if entry.HasField("counter_data"):  # without it a MODIFY keeps the count (9.1.5)
            requests.append({"cmd": "table_entry_counter_write", **key,
                             "packets": entry.counter_data.packet_count,
                             "bytes": entry.counter_data.byte_count})
        if op == MODIFY and entry.HasField("meter_counter_data"):  # set: cleared (9.1.5)
            requests.append({"cmd": "table_entry_meter_set", **key, "counts": codec.zero_counts(
                entry.meter_counter_data, f"table {table.preamble.name}")})
        return requests

    def _write_table_entry(self, op: int, entry: pb.TableEntry) -> None:
        plan = self._plan_table_entry(op, entry)  # checks the entry
        if plan is not None:
            self.run_plan(plan)
            return
        table = self.index.table(entry.table_id)
        if entry.is_default_action:
            self._write_default(op, table, entry)
            return
        req = {"table": entry.table_id,
               "match": codec.match_to_switch(self.index.keys[entry.table_id], entry.match),
               "priority": entry.priority}
        kind = entry.action.WhichOneof("type")
        if op == DELETE:
            old = self.find_entry(table, req["match"], entry.priority)
            self.switch.call("table_delete", **req)
            if old is not None:
                self.oneshots.release(table, old["action"])  # a one shot's hidden group
            return
        if kind is None:  # a MODIFY: the action stays; only direct resources change
            self._modify_direct_resources(table, entry, req)
            return
        one_shot = kind == "action_profile_action_set"
        replaced = self.find_entry(table, req["match"], entry.priority) if (
            one_shot and op == MODIFY) else None
        action = self.profiles.entry_action(table, entry.action)
        entry_request, *resources = self._entry_requests(table, op, entry, req, action)
        try:
            self.switch.call(**entry_request)
        except P4RuntimeError:
            if one_shot:  # its hidden group: the entry is written whole or not at all
                self.oneshots.release(table, action)
            raise
        if replaced is not None:
            self.oneshots.release(table, replaced["action"])
        for request in resources:
            self.switch.call(**request)

    def _modify_direct_resources(self, table, entry: pb.TableEntry, req: dict) -> None:
        """A MODIFY without an action (spec 9.1.2): the entry keeps its action and its
        metadata; its direct counter and meter take what the request gives (const entries
        too, spec 9.1.4), and so does its idle timeout when one is given; else the MODIFY
        is a no-op."""
        if entry.idle_timeout_ns:
            self._set_entry_idle_timeout(table, req, entry.idle_timeout_ns)
        if entry.HasField("meter_config"):
            self._set_entry_meter(table, req, entry.meter_config)
        if entry.HasField("counter_data"):
            self._write_entry_counter(entry, req, entry.counter_data)
        if entry.HasField("meter_counter_data"):
            self._clear_meter_counts(table, req, entry.meter_counter_data)
        if not (entry.idle_timeout_ns or entry.HasField("meter_config")
                or entry.HasField("counter_data") or entry.HasField("meter_counter_data")):
            self._find_entry(table, req["match"], req["priority"])  # a no-op, if it exists

    def _set_entry_idle_timeout(self, table, req: dict, idle_timeout_ns: int) -> None:
        """Spec 9.1.4: static entries take no idle timeout; INVALID_ARGUMENT as for any
        table without idle timeout support (9.1.8)."""
        found = None if table.is_const_table else self._find_entry(table, req["match"],
                                                                   req["priority"])
        if found is None or found.get("const"):
            raise invalid(f"table {table.preamble.name}: a const entry takes no idle timeout "
                          "(P4Runtime spec 9.1.4)")
        self.switch.call("table_modify", **req, idle_timeout_ns=idle_timeout_ns,
                         action=codec.switch_action(found["action"]))  # meta: unchanged

    def _write_default(self, op: int, table, entry: pb.TableEntry) -> None:
        if op != MODIFY:
            raise invalid(f"table {table.preamble.name}: the default entry can only be modified")
        if entry.match or entry.priority:
            raise invalid(f"table {table.preamble.name}: a default entry has no match")
        if table.const_default_action_id:
            raise P4RuntimeError("PERMISSION_DENIED", f"table {table.preamble.name}: its "
                                 "default action is const (P4Runtime spec 9.1.3)")
        self._check_direct_resources(table, entry)
        req = {"default": True}
        if not entry.HasField("action"):
            # back to the program's: metadata and direct meter reset (9.1.3)
            self.switch.call("table_reset_default", table=entry.table_id)
        else:
            action = codec.action_to_switch(self.index, table, entry.action.action,
                                            default=True)
            self.switch.call("table_set_default", table=entry.table_id, action=action,
                             meta=Extras.of(entry).to_switch())
        if self.index.has_direct_meter(table) and (entry.HasField("action")
                                                   or entry.HasField("meter_config")):
            # as for any MODIFY: the config given, else the default (9.1.3, 9.1.5)
            self._set_entry_meter(table, req, entry.meter_config
                                  if entry.HasField("meter_config") else None)
        if entry.HasField("counter_data"):
            self._write_entry_counter(entry, req, entry.counter_data)
        if entry.HasField("meter_counter_data"):
            self._clear_meter_counts(table, req, entry.meter_counter_data)

    def _write_entry_counter(self, entry: pb.TableEntry, req: dict, data: pb.CounterData) -> None:
        """``req`` names the entry: its match and priority, or ``default``."""
        self.switch.call("table_entry_counter_write", table=entry.table_id, **_key(req),
                         packets=data.packet_count, bytes=data.byte_count)

    def _write_direct_counter_entry(self, op: int, entry: pb.DirectCounterEntry) -> None:
        table, key = self._direct_entry_key(op, entry.table_entry, "counter")
        self._check_direct_counter(table)
        if entry.HasField("data"):
            self._write_entry_counter(entry.table_entry, key, entry.data)
        else:  # spec 9.2.1: without data the count stays; the entry must exist
            self._check_entry_exists(table, key)

    def _write_direct_meter_entry(self, op: int, entry: pb.DirectMeterEntry) -> None:
        table, key = self._direct_entry_key(op, entry.table_entry, "meter")
        # no config: unconfigured, every packet GREEN; counter_data set: the colour counts
        # are cleared (P4Runtime spec 9.4.1)
        self._set_entry_meter(table, key, entry.config if entry.HasField("config") else None,
                              entry.counter_data if entry.HasField("counter_data") else None)

    def _direct_entry_key(self, op: int, te: pb.TableEntry,
                          what: str) -> tuple[p4info_pb2.Table, dict]:
        """The table and key of the entry a direct counter/meter entry names: its match
        and priority, or ``{"default": True}`` for the default entry (spec 9.1.3: treated
        like any entry as to its direct resources)."""
        if op != MODIFY:
            raise invalid(f"direct {what} entries can only be modified")
        table = self.index.table(te.table_id)
        if te.is_default_action:
            if te.match or te.priority:
                raise invalid(f"table {table.preamble.name}: a default entry has no match")
            return table, {"default": True}
        return table, {"match": codec.match_to_switch(self.index.keys[te.table_id], te.match),
                       "priority": te.priority}

    def _check_entry_exists(self, table, key: dict) -> None:
        if not key.get("default"):
            self._find_entry(table, key["match"], key["priority"])

    def _set_entry_meter(self, table, req: dict, config: pb.MeterConfig | None,
                         clear: pb.MeterCounterData | None = None) -> None:
        """Only the entry's direct meter changes (and its colour counts, cleared when
        ``clear`` is given): allowed on const entries too. One switch call: a refused
        request changes nothing."""
        self._check_direct_meter(table)
        fields = {"meter": None if config is None else codec.meter_to_switch(config)}
        if clear is not None:
            fields["counts"] = codec.zero_counts(clear, f"table {table.preamble.name}")
        self.switch.call("table_entry_meter_set", table=table.preamble.id, **_key(req),
                         **fields)

    def _clear_meter_counts(self, table, req: dict, data: pb.MeterCounterData) -> None:
        self._check_direct_meter(table)
        counts = codec.zero_counts(data, f"table {table.preamble.name}")
        self.switch.call("table_entry_meter_set", table=table.preamble.id, **_key(req),
                         counts=counts)

    def _check_direct_resources(self, table, entry: pb.TableEntry) -> None:
        """Spec 9.1.5: a direct resource field is an error for a table without that
        resource; per-colour meter counters can only be written as zero (clearing them); a
        meter config must be one the switch can take."""
        if entry.HasField("meter_config") or entry.HasField("meter_counter_data"):
            self._check_direct_meter(table)
        if entry.HasField("meter_config"):  # before a one shot's hidden group is made
            codec.meter_to_switch(entry.meter_config)
        if entry.HasField("counter_data"):
            self._check_direct_counter(table)
        if entry.HasField("meter_counter_data"):
            codec.zero_counts(entry.meter_counter_data, f"table {table.preamble.name}")

    def _check_direct_counter(self, table) -> None:
        if not self.index.has_direct_counter(table):
            raise invalid(f"table {table.preamble.name} has no direct counter")

    def _check_direct_meter(self, table) -> None:
        # A plain INVALID_ARGUMENT naming the table, before any entry is looked up.
        if not self.index.has_direct_meter(table):
            raise invalid(f"table {table.preamble.name} has no direct meter")

    def _find_entry(self, table, match: list[dict], priority: int) -> dict:
        found = self.find_entry(table, match, priority)
        if found is None:
            raise not_found(f"table {table.preamble.name}: no such entry")
        return found

    def find_entry(self, table, match: list[dict], priority: int) -> dict | None:
        """The switch's entry with this key (``match`` as codec.match_to_switch gives)."""
        return entry_of(self.switch.call(**read_by_key(table.preamble.id, match, priority)),
                        priority)

    def _write_extern_entry(self, op: int, entry: pb.ExternEntry) -> None:
        externs.write(self.index, entry)

    def _write_action_profile_member(self, op: int, member: pb.ActionProfileMember) -> None:
        self.profiles.write_member(op, member)

    def _write_action_profile_group(self, op: int, group: pb.ActionProfileGroup) -> None:
        self.profiles.write_group(op, group)

    def _write_counter_entry(self, op: int, entry: pb.CounterEntry) -> None:
        if op != MODIFY:
            raise invalid("counter entries can only be modified")
        info = self.index.lookup("counters", entry.counter_id)
        if not entry.HasField("data"):  # spec 9.2.2: without data the counts stay
            _cell_index(info, entry)
            return
        self.switch.call("counter_write", counter=entry.counter_id, **_cell_index(info, entry),
                         packets=entry.data.packet_count, bytes=entry.data.byte_count)

    def _write_meter_entry(self, op: int, entry: pb.MeterEntry) -> None:
        if op != MODIFY:
            raise invalid("meter entries can only be modified")
        info = self.index.lookup("meters", entry.meter_id)
        config = codec.meter_to_switch(entry.config) if entry.HasField("config") else None
        req = {"meter": entry.meter_id, "config": config, **_cell_index(info, entry)}
        if entry.HasField("counter_data"):  # set: the colour counts are cleared (9.4)
            req["counts"] = codec.zero_counts(entry.counter_data, info.preamble.name)
        self.switch.call("meter_set", **req)

    def _write_register_entry(self, op: int, entry: pb.RegisterEntry) -> None:
        if op != MODIFY:
            raise invalid("register entries can only be modified")
        info = self.index.lookup("registers", entry.register_id)
        if entry.data.WhichOneof("data") != "bitstring":
            raise invalid(f"register {info.preamble.name}: data must be a bitstring")
        width = info.type_spec.bitstring.bit.bitwidth or None
        self.switch.call("register_write", register=entry.register_id,
                         **_cell_index(info, entry),
                         value=codec.to_hex(entry.data.bitstring, width, info.preamble.name))

    def _write_digest_entry(self, op: int, entry: pb.DigestEntry) -> None:
        self.digests.write(op, entry, self.index.digests)

    def _write_value_set_entry(self, op: int, entry: pb.ValueSetEntry) -> None:
        value_sets.write(self.switch, self.index, op, entry)

    def _write_packet_replication_engine_entry(self, op: int, entry) -> None:
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            group = entry.multicast_group_entry
            self._check_exists(op, "mcast_group_read", "groups", "group",
                               group.multicast_group_id)
            if op == DELETE:
                self.switch.call("mcast_group_delete", group=group.multicast_group_id)
            else:
                self.switch.call("mcast_group_set", group=group.multicast_group_id,
                                 replicas=codec.replicas_to_switch(group.replicas))
        elif kind == "clone_session_entry":
            session = entry.clone_session_entry
            self._check_exists(op, "clone_session_read", "sessions", "session",
                               session.session_id)
            if op == DELETE:
                self.switch.call("clone_session_delete", session=session.session_id)
            else:
                self.switch.call("clone_session_set", session=session.session_id,
                                 replicas=codec.replicas_to_switch(session.replicas),
                                 class_of_service=session.class_of_service,
                                 packet_length_bytes=session.packet_length_bytes)
        else:
            raise invalid("empty packet replication engine entry")

    def _check_exists(self, op: int, read_cmd: str, key: str, field: str, ident: int) -> None:
        """Multicast groups and clone sessions: INSERT must be new, MODIFY/DELETE must exist."""
        if ident == 0:
            raise invalid(f"{field} id 0 is not valid")
        items = self.switch.call(read_cmd)[key]
        exists = any(item[field] == ident for item in items)
        if op == INSERT and exists:
            raise P4RuntimeError("ALREADY_EXISTS", f"{field} {ident} already exists")
        if op != INSERT and not exists:
            raise not_found(f"{field} {ident} does not exist")

    # -- read ----------------------------------------------------------------------------

    def read(self, entity: pb.Entity, into) -> None:
        """Adds the entities ``entity`` asks for to ``into`` (a ReadResponse's entities).
        Table entries, the bulk of reads, are built inside their Entity rather than
        built apart and copied in."""
        kind = entity.WhichOneof("entity")
        if kind is None:  # spec 11.1: no wildcard over all entity kinds
            raise invalid("an empty entity cannot be read (name its kind)")
        if kind == "table_entry":
            for _ in self._read_table_entry(entity.table_entry,
                                            new_entry=lambda: into.add().table_entry):
                pass
            return
        handler = getattr(self, f"_read_{kind}", None)
        if handler is None:
            raise P4RuntimeError("UNIMPLEMENTED", f"reading {kind} is not supported")
        for item in handler(getattr(entity, kind)):
            getattr(into.add(), kind).CopyFrom(item)

    def _read_table_entry(self, want: pb.TableEntry,
                          covers: Callable[[p4info_pb2.Table], bool] = lambda table: True,
                          new_entry: Callable[[], pb.TableEntry] = pb.TableEntry,
                          ) -> Iterator[pb.TableEntry]:
        """``covers``: the tables a wildcard read (table id 0) goes through; ``new_entry``
        makes each entry read (then filled)."""
        tables = [self.index.table(want.table_id)] if want.table_id else [
            table for table in self.index.tables.values() if covers(table)]
        if want.table_id and want.HasField("time_since_last_hit") and not _supports_timeout(
                tables[0]):  # spec 9.1.8; a read of all tables leaves it out there
            raise invalid(f"table {tables[0].preamble.name} does not support idle timeouts: "
                          "time_since_last_hit cannot be asked for")
        for table in tables:
            yield from self._read_one_table(table, want, new_entry)

    def _read_one_table(self, table, want: pb.TableEntry,
                        new_entry: Callable[[], pb.TableEntry]) -> Iterator[pb.TableEntry]:
        table_id = table.preamble.id
        key = self.index.keys[table_id]
        match = (codec.match_to_switch(key, want.match)
                 if want.match and not want.is_default_action else None)
        got = self.switch.call("table_read", **_read_scope(table, want, match))
        wanted = codec.Wanted(self.index, table, want)
        if want.is_default_action:
            entry = new_entry()
            codec.fill_default_entry(entry, self.index, table_id, got, wanted)
            Extras.from_switch(got["default_meta"]).fill(entry)
            yield entry
            return
        action_id = want.action.action.action_id if want.action.HasField("action") else 0
        action_sets = self.oneshots.action_sets(table)  # one shots read as written (9.2.3)
        time_since_last_hit = want.HasField("time_since_last_hit") and _supports_timeout(table)
        for item in got["entries"]:
            # Filters (spec 9.1.6): each field left at its default matches everything.
            if ((match is not None and codec.canonical_match(key, item["match"]) != match)
                    or (want.priority and (item.get("priority") or 0) != want.priority)
                    or (action_id and item["action"].get("action") != action_id)):
                continue
            extras = Extras.from_switch(item["meta"])
            if ((want.controller_metadata
                 and extras.controller_metadata != want.controller_metadata)
                    or (want.metadata and extras.metadata != want.metadata)):
                continue
            entry = new_entry()
            codec.fill_entry(entry, self.index, table_id, item, wanted)
            if item["action"].get("group") in action_sets:
                entry.action.action_profile_action_set.CopyFrom(
                    action_sets[item["action"]["group"]])
            extras.fill(entry)
            if item.get("const"):  # const entries, or marked const
                entry.is_const = True
            if time_since_last_hit:  # only if asked
                entry.time_since_last_hit.elapsed_ns = item.get("idle_ns") or 0
            yield entry

    def _read_extern_entry(self, want: pb.ExternEntry) -> Iterator[pb.ExternEntry]:
        return externs.read(self.index, want)

    def _read_action_profile_member(self, want: pb.ActionProfileMember):
        return self.profiles.read_members(want)

    def _read_action_profile_group(self, want: pb.ActionProfileGroup):
        return self.profiles.read_groups(want)

    def _read_direct_counter_entry(self, want: pb.DirectCounterEntry):
        probe = pb.TableEntry()
        probe.CopyFrom(want.table_entry)
        probe.counter_data.SetInParent()
        for entry in self._read_direct(probe, self.index.has_direct_counter, "counter"):
            out = pb.DirectCounterEntry(data=entry.counter_data)
            entry.ClearField("counter_data")
            out.table_entry.CopyFrom(entry)
            yield out

    def _read_direct_meter_entry(self, want: pb.DirectMeterEntry):
        probe = pb.TableEntry()
        probe.CopyFrom(want.table_entry)
        probe.meter_config.SetInParent()
        if want.HasField("counter_data"):  # the colour counts, when asked for (9.4.1)
            probe.meter_counter_data.SetInParent()
        for entry in self._read_direct(probe, self.index.has_direct_meter, "meter"):
            out = pb.DirectMeterEntry()
            if entry.HasField("meter_config"):
                out.config.CopyFrom(entry.meter_config)
            if entry.HasField("meter_counter_data"):
                out.counter_data.CopyFrom(entry.meter_counter_data)
            for field in ("meter_config", "meter_counter_data"):
                entry.ClearField(field)
            out.table_entry.CopyFrom(entry)
            yield out

    def _read_direct(self, probe: pb.TableEntry, has: Callable[[p4info_pb2.Table], bool],
                     what: str) -> list[pb.TableEntry]:
        """The entries (of the tables that have the direct resource) a direct counter or
        meter entry reads. A named table without it is INVALID_ARGUMENT; a named match key
        that finds no entry NOT_FOUND (spec 9.2.1, 9.4.1)."""
        if probe.table_id and not has(self.index.table(probe.table_id)):
            raise invalid(f"table {self.index.table(probe.table_id).preamble.name} has no "
                          f"direct {what}")
        found = list(self._read_table_entry(probe, has))
        if probe.match and not found:
            raise not_found(f"table {self.index.table(probe.table_id).preamble.name}: "
                            "no such entry")
        return found

    def _read_counter_entry(self, want: pb.CounterEntry) -> Iterator[pb.CounterEntry]:
        for counter_id, cell in self._indexed_cells("counters", want.counter_id, want):
            out = pb.CounterEntry(counter_id=counter_id)
            out.index.index = cell["index"]
            out.data.packet_count = cell.get("packets", 0)
            out.data.byte_count = cell.get("bytes", 0)
            yield out

    def _read_meter_entry(self, want: pb.MeterEntry) -> Iterator[pb.MeterEntry]:
        for meter_id, cell in self._indexed_cells("meters", want.meter_id, want):
            out = pb.MeterEntry(meter_id=meter_id)
            out.index.index = cell["index"]
            config = codec.meter_from_switch(cell.get("config"))
            if config is not None:
                out.config.CopyFrom(config)
            if want.HasField("counter_data"):  # the colour counts, when asked for (9.4)
                out.counter_data.CopyFrom(codec.counts_from_switch(cell["counts"]))
            yield out

    def _read_register_entry(self, want: pb.RegisterEntry) -> Iterator[pb.RegisterEntry]:
        for register_id, cell in self._indexed_cells("registers", want.register_id, want):
            out = pb.RegisterEntry(register_id=register_id)
            out.index.index = cell["index"]
            out.data.bitstring = codec.to_bytes(cell["value"])
            yield out

    def _indexed_cells(self, kind: str, wanted_id: int, want) -> Iterator[tuple[int, dict]]:
        """(id, cell) of each counter/meter/register cell a read asks for: every instance
        when the id is 0 (wildcard), one cell when the request names an index."""
        ids = [wanted_id] if wanted_id else list(getattr(self.index, kind))
        for ident in ids:
            for cell in self.cells(kind.removesuffix("s"), ident, want):
                yield ident, cell

    def cells(self, extern: str, ident: int, want) -> list[dict]:
        """The cells of counter/meter/register ``ident`` (``extern``: the switch's command
        and field, e.g. counter_read): all, or the one whose index ``want`` names."""
        info = self.index.lookup(f"{extern}s", ident)
        return self.switch.call(f"{extern}_read", **{extern: ident},
                                **_cell_index(info, want))["cells"]

    def _read_digest_entry(self, want: pb.DigestEntry) -> Iterator[pb.DigestEntry]:
        if want.digest_id:
            self.index.lookup("digests", want.digest_id)
        return self.digests.read(want)

    def _read_value_set_entry(self, want: pb.ValueSetEntry) -> Iterator[pb.ValueSetEntry]:
        return value_sets.read(self.switch, self.index, want)

    def _read_packet_replication_engine_entry(self, want) -> Iterator:
        kind = want.WhichOneof("type")
        if kind == "multicast_group_entry":
            gid = want.multicast_group_entry.multicast_group_id
            for group in self.switch.call("mcast_group_read")["groups"]:
                if gid in (0, group["group"]):
                    out = pb.PacketReplicationEngineEntry()
                    out.multicast_group_entry.multicast_group_id = group["group"]
                    out.multicast_group_entry.replicas.extend(
                        codec.replicas_from_switch(group["replicas"]))
                    yield out
        elif kind == "clone_session_entry":
            sid = want.clone_session_entry.session_id
            for session in self.switch.call("clone_session_read")["sessions"]:
                if sid in (0, session["session"]):
                    out = pb.PacketReplicationEngineEntry()
                    cs = out.clone_session_entry
                    cs.session_id = session["session"]
                    cs.replicas.extend(codec.replicas_from_switch(session["replicas"]))
                    cs.class_of_service = session.get("class_of_service", 0)
                    cs.packet_length_bytes = session.get("packet_length_bytes", 0)
                    yield out
        else:
            raise invalid("empty packet replication engine entry")


@dataclass(frozen=True)
class TablePlan:
    """A table-entry update (``op``) decided without the switch: ``requests`` (each
    ``{"cmd": ..., fields}``) to send in order. ``key``: the entry's table, match and
    priority."""
    op: int
    key: dict
    requests: list[dict]

    def snapshot_request(self) -> dict | None:
        """Reads the entry the update changes (entry_of() picks it from the answer); None
        for an INSERT, whose entry did not exist if its first request succeeds."""
        if self.op == INSERT:
            return None
        return read_by_key(self.key["table"], self.key["match"], self.key["priority"])


def read_by_key(table_id: int, match: list[dict], priority: int) -> dict:
    """The switch request reading one entry by its key (switch/PROTOCOL.md `table_read`)."""
    return {"cmd": "table_read", "table": table_id, "match": match, "priority": priority}


def entry_of(read: dict, priority: int) -> dict | None:
    """The entry a read by key found, if any (tables without priorities find an entry by
    its match alone: its priority must agree too)."""
    return next((item for item in read["entries"]
                 if (item.get("priority") or 0) == priority), None)


def _read_scope(table: p4info_pb2.Table, want: pb.TableEntry, match: list[dict] | None,
                ) -> dict:
    """The table_read a Read needs: the whole table, or, when it names an entry's whole key
    (its ``match`` in the switch's form, and its priority where the table has priorities),
    that entry alone. A given match is always a whole key: fields left out are the entry's
    wildcards."""
    if match is not None and (want.priority or not codec.has_priorities(table.match_fields)):
        return {"table": table.preamble.id, "match": match, "priority": want.priority}
    return {"table": table.preamble.id}


def _key(req: dict) -> dict:
    """The switch's name for an entry: match and priority, or the default entry."""
    if req.get("default"):
        return {"default": True}
    return {"match": req["match"], "priority": req["priority"]}


def _cell_index(info, entry) -> dict:
    """The switch's ``index`` field for the cell ``entry`` names ({} for all cells): a
    negative index is INVALID_ARGUMENT, one past the array OUT_OF_RANGE (spec 9.2.2,
    9.4). Checked here, so that the switch fails a valid request only by its own fault."""
    if not entry.HasField("index"):
        return {}
    index = entry.index.index
    if index < 0:
        raise invalid(f"{info.preamble.name}: negative index {index}")
    if index >= info.size:
        raise P4RuntimeError("OUT_OF_RANGE", f"{info.preamble.name}: index {index} is "
                             f"outside its {info.size} cells")
    return {"index": index}


def _check_idle_timeout(table, entry: pb.TableEntry) -> None:
    """Spec 9.1.8: an idle timeout only for tables that support it, never for the default
    entry; time_since_last_hit is for reads only."""
    if entry.HasField("time_since_last_hit"):
        raise invalid("time_since_last_hit must be unset in a write")
    if not entry.idle_timeout_ns:
        return
    if entry.is_default_action:
        raise invalid(f"table {table.preamble.name}: a default entry has no idle timeout")
    if not _supports_timeout(table):
        raise invalid(f"table {table.preamble.name} does not support idle timeouts "
                      "(no support_timeout = true)")


def _supports_timeout(table: p4info_pb2.Table) -> bool:
    return table.idle_timeout_behavior != p4info_pb2.Table.NO_TIMEOUT


def _check_const_table(table, op: int, action_kind: str | None) -> None:
    """Spec 9.1.4: in a table with const entries only MODIFY without an action (its
    entries' direct resources) is allowed; its default entry is checked apart."""
    if table.is_const_table and (op != MODIFY or action_kind is not None):
        raise P4RuntimeError("PERMISSION_DENIED", f"table {table.preamble.name} has const "
                             "entries: only their direct counters and meters can be modified")
