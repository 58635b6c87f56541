"""Table entries in a readable file (YAML or JSON) -> P4Runtime TableEntry messages, checked
against the program's P4Info.

    entries:                      # or the list alone
      - table: MyIngress.port_fwd # full name or alias
        match: {standard_metadata.ingress_port: 1}
        action: forward           # full name or alias
        params: {port: 2}
        priority: 10              # tables with ternary/range/optional keys
        switches: [s1]            # optional: only these switches (default: every switch)
      - {table: port_fwd, default: true, action: drop}   # the default entry (MODIFY)
      - table: MyIngress.ecmp     # a table with an action selector: an action set
        match: {hdr.ipv4.dst: 10.1.0.0/16}
        actions:                  # a one shot (P4Runtime spec 9.2.3); weight: 1 if left out
          - {action: forward, params: {port: 2}, weight: 2}
          - {action: forward, params: {port: 3}}
      - multicast_group: 1        # a multicast group (PacketReplicationEngineEntry, INSERT)
        replicas: [1, 2, {port: 3, instance: 1}]   # ports; instance (egress_rid) 0 if left out
        switches: [s1]
      - meter: MyIngress.class_meter  # an indirect meter's cell config (MeterEntry, MODIFY)
        index: 1                      # the cell, 0..size-1
        cir: 125000                   # rates per second and bursts in the meter's unit
        cburst: 12500                 # (bytes for a bytes meter, packets for packets)
        pir: 250000                   # pir >= cir (RFC 2698); every value 0..2^63-1
        pburst: 25000
        switches: [s1]

Match values: numbers, ``0x..`` hex, IPv4 ``10.0.0.1``, MAC ``00:00:00:00:00:01``;
lpm ``10.0.0.0/24``; ternary ``10.0.0.0 &&& 255.0.0.0``; range ``1000..2000``. A field
left out is a wildcard (not allowed for exact keys). Errors name the file, the entry index
and the problem (``EntriesError``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab import safe_yaml
from dplab.p4runtime import codec
from dplab.p4runtime.codec import canonical_bytes

ENTRY_KEYS = {"table", "match", "action", "params", "priority", "default", "switches",
              "actions"}
GROUP_KEYS = {"multicast_group", "replicas", "switches"}
SET_KEYS = {"action", "params", "weight"}
REPLICA_KEYS = {"port", "instance"}
METER_KEYS = {"meter", "index", "cir", "cburst", "pir", "pburst", "switches"}
METER_RATES = ("cir", "cburst", "pir", "pburst")
MAX_METER_VALUE = 2**63 - 1  # MeterConfig's fields are int64
MAX_GROUP_ID = 65535  # the switch's groups are 1..65535 (switch/PROTOCOL.md)
MAX_PORT = 511        # v1model's ports are 9 bits wide
# Room for tens of thousands of entries; an alias bomb is refused while still file-sized.
MAX_FILE_BYTES = 8_000_000
MAX_VALUES = 1_000_000
MatchType = p4info_pb2.MatchField.MatchType


class EntriesError(ValueError):
    """A bad entries file; the message names the file, the entry and what is wrong."""


@dataclass
class Entry:
    index: int                  # position in the file, for error messages
    switches: list[str] | None  # None = every switch
    entity: pb.Entity

    @property
    def is_default(self) -> bool:
        return (self.entity.HasField("table_entry")
                and self.entity.table_entry.is_default_action)

    @property
    def modifies(self) -> bool:
        """Written with MODIFY: a default entry or a meter config (both always exist)."""
        return self.is_default or self.entity.HasField("meter_entry")


def load(path: str | Path, info: p4info_pb2.P4Info) -> list[Entry]:
    """A user's entries file, read within the size limits of a file from outside."""
    path = Path(path)
    try:
        data = safe_yaml.load_entry_list(path, MAX_FILE_BYTES, MAX_VALUES, "entries")
    except ValueError as exc:
        raise EntriesError(str(exc)) from None
    return parse(data, info, str(path))


def parse(items: list, info: p4info_pb2.P4Info, source: str) -> list[Entry]:
    """Entries from a list of entries-file items (``source`` names them in errors); the lab's
    own generated entries come here directly, past the file limits (a fat-tree's routes
    outgrow them)."""
    program = _Program(info)
    out = []
    for i, item in enumerate(items):
        try:
            out.append(program.entry(i, item))
        except (EntriesError, ValueError) as exc:
            raise EntriesError(f"{source}: entry {i}: {exc}") from exc
    return out


class _Program:
    """Name lookups into one P4Info."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.tables = _by_name(info.tables)
        self.actions = _by_name(info.actions)
        self.selectors = {p.preamble.id for p in info.action_profiles if p.with_selector}
        self.meters = _by_name(info.meters)

    def entry(self, index: int, item: Any) -> Entry:
        if not isinstance(item, dict):
            raise EntriesError(f"must be a mapping, not {item!r}")
        if "multicast_group" in item:
            return _multicast_group(index, item)
        if "meter" in item:
            return self._meter(index, item)
        unknown = sorted(set(item) - ENTRY_KEYS)
        if unknown:
            raise EntriesError(f"unknown key {unknown[0]!r} (known: {sorted(ENTRY_KEYS)})")
        table = _named(self.tables, item.get("table"), "table")
        entity = pb.Entity()
        entry = entity.table_entry
        entry.table_id = table.preamble.id
        entry.is_default_action = _boolean(item.get("default", False), "default")
        match = item.get("match") or {}
        if entry.is_default_action and (match or item.get("priority")):
            raise EntriesError("a default entry has no match and no priority")
        if not isinstance(match, dict):
            raise EntriesError("'match' must be a mapping field -> value")
        if not entry.is_default_action:
            entry.match.extend(_match(table, match))
        entry.priority = _priority(table, item.get("priority", 0), entry.is_default_action)
        if "actions" in item:
            entry.action.action_profile_action_set.CopyFrom(self._action_set(table, item))
        else:
            entry.action.action.CopyFrom(
                self._action(table, item, default=entry.is_default_action))
        return Entry(index, _switches(item.get("switches")), entity)

    def _action_set(self, table: p4info_pb2.Table, item: dict) -> pb.ActionProfileActionSet:
        """``actions``: a list of {action, params, weight}, for a table with a selector."""
        if "action" in item or "params" in item or item.get("default"):
            raise EntriesError("give 'action' (and 'params') or 'actions', not both; a "
                               "default entry takes 'action'")
        if table.implementation_id not in self.selectors:
            raise EntriesError(f"table {table.preamble.name} has no action selector: "
                               "it takes 'action', not 'actions'")
        given = item["actions"]
        if not isinstance(given, list) or not given:
            raise EntriesError("'actions' must be a non-empty list of {action, params, "
                               "weight}")
        out = pb.ActionProfileActionSet()
        for i, one in enumerate(given):
            if not isinstance(one, dict) or set(one) - SET_KEYS:
                raise EntriesError(f"actions[{i}]: must be a mapping with keys "
                                   f"{sorted(SET_KEYS)}, not {one!r}")
            weight = one.get("weight", 1)
            if not _whole(weight) or weight < 1:
                raise EntriesError(f"actions[{i}]: 'weight' must be a whole number >= 1, "
                                   f"not {weight!r}")
            try:
                action = self._action(table, one)
            except EntriesError as exc:
                raise EntriesError(f"actions[{i}]: {exc}") from exc
            out.action_profile_actions.add(action=action, weight=weight)
        return out

    def _action(self, table: p4info_pb2.Table, item: dict, default: bool = False
                ) -> pb.Action:
        """``default``: for the default entry, else for a match entry or an action set,
        whose action's scope (@defaultonly / @tableonly) it must fit."""
        action = _named(self.actions, item.get("action"), "action")
        refs = {ref.id: ref for ref in table.action_refs}
        usable = {ref.id for ref in refs.values() if ref.scope != codec.wrong_scope(default)}
        if action.preamble.id not in usable:
            allowed = sorted({a.preamble.name for a in self.actions.values()
                              if a.preamble.id in usable})
            where = "a default" if default else "an"
            scope = (f" ({_SCOPE_NAMES[refs[action.preamble.id].scope]})"
                     if action.preamble.id in refs else "")
            raise EntriesError(f"action {action.preamble.name} is not {where} action of "
                               f"table {table.preamble.name}{scope} (its actions: {allowed})")
        params = item.get("params") or {}
        if not isinstance(params, dict):
            raise EntriesError("'params' must be a mapping name -> value")
        names = [p.name for p in action.params]
        if sorted(params) != sorted(names):
            raise EntriesError(f"action {action.preamble.name} takes parameters {names}, "
                               f"got {sorted(params)}")
        out = pb.Action(action_id=action.preamble.id)
        for p in action.params:
            out.params.add(param_id=p.id, value=_bits(params[p.name], p.bitwidth,
                                                      f"param {p.name}"))
        return out

    def _meter(self, index: int, item: dict) -> Entry:
        unknown = sorted(set(item) - METER_KEYS)
        if unknown:
            raise EntriesError(f"unknown key {unknown[0]!r} for a meter config "
                               f"(known: {sorted(METER_KEYS)})")
        meter = _named(self.meters, item["meter"], "meter")
        cell = item.get("index")
        if not _whole(cell) or not 0 <= cell < meter.size:
            raise EntriesError(f"'index' must be a whole number in 0..{meter.size - 1} "
                               f"(meter {meter.preamble.name}), not {cell!r}")
        missing = [key for key in METER_RATES if key not in item]
        if missing:
            raise EntriesError(f"a meter config needs {', '.join(METER_RATES)}: "
                               f"{missing[0]!r} is missing")
        for key in METER_RATES:
            if not _whole(item[key]) or not 0 <= item[key] <= MAX_METER_VALUE:
                raise EntriesError(f"'{key}' must be a whole number >= 0, not {item[key]!r}")
        if item["pir"] < item["cir"]:
            raise EntriesError(f"'pir' {item['pir']} is below 'cir' {item['cir']} "
                               "(a two-rate meter needs pir >= cir)")
        entity = pb.Entity()
        entity.meter_entry.meter_id = meter.preamble.id
        entity.meter_entry.index.index = cell
        entity.meter_entry.config.CopyFrom(
            pb.MeterConfig(**{key: item[key] for key in METER_RATES}))
        return Entry(index, _switches(item.get("switches")), entity)


def _multicast_group(index: int, item: dict) -> Entry:
    unknown = sorted(set(item) - GROUP_KEYS)
    if unknown:
        raise EntriesError(f"unknown key {unknown[0]!r} for a multicast group "
                           f"(known: {sorted(GROUP_KEYS)})")
    group = item["multicast_group"]
    if not _whole(group) or not 1 <= group <= MAX_GROUP_ID:
        raise EntriesError(f"'multicast_group' must be a whole number in 1..{MAX_GROUP_ID}, "
                           f"not {group!r}")
    replicas = item.get("replicas")
    if not isinstance(replicas, list) or not replicas:
        raise EntriesError("'replicas' must be a non-empty list of ports or "
                           "{port, instance}")
    entity = pb.Entity()
    entry = entity.packet_replication_engine_entry.multicast_group_entry
    entry.multicast_group_id = group
    for i, replica in enumerate(replicas):
        port, instance = _replica(i, replica)
        entry.replicas.add(egress_port=port, instance=instance)
    return Entry(index, _switches(item.get("switches")), entity)


def _replica(i: int, replica: Any) -> tuple[int, int]:
    """A port number, or a mapping {port, instance}; returns (port, instance)."""
    given = replica if isinstance(replica, dict) else {"port": replica}
    if set(given) - REPLICA_KEYS or "port" not in given:
        raise EntriesError(f"replicas[{i}]: must be a port or a mapping with keys "
                           f"{sorted(REPLICA_KEYS)}, not {replica!r}")
    port, instance = given["port"], given.get("instance", 0)
    if not _whole(port) or not 0 <= port <= MAX_PORT:
        raise EntriesError(f"replicas[{i}]: port must be a whole number in 0..{MAX_PORT}, "
                           f"not {port!r}")
    if not _whole(instance) or not 0 <= instance <= 0xFFFF:
        raise EntriesError(f"replicas[{i}]: instance must be a whole number in 0..65535, "
                           f"not {instance!r}")
    return port, instance


def _whole(value: Any) -> bool:
    """An int that is not a bool (YAML's true/false load as bools, which are ints)."""
    return isinstance(value, int) and not isinstance(value, bool)


_SCOPE_NAMES = {p4info_pb2.ActionRef.DEFAULT_ONLY: "@defaultonly",
                p4info_pb2.ActionRef.TABLE_ONLY: "@tableonly"}


def _by_name(objects) -> dict[str, Any]:
    found = {}
    for obj in objects:
        found[obj.preamble.name] = found[obj.preamble.alias] = obj
    return found


def _named(known: dict[str, Any], name: Any, what: str) -> Any:
    if name not in known:
        names = sorted({obj.preamble.name for obj in known.values()})
        raise EntriesError(f"{what} {name!r} is not in the program (known: {names})")
    return known[name]


def _boolean(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise EntriesError(f"'{key}' must be true or false, not {value!r}")
    return value


def _switches(value: Any) -> list[str] | None:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise EntriesError(f"'switches' must be a switch name or a list of them, not {value!r}")
    return names


def _priority(table: p4info_pb2.Table, value: Any, default: bool) -> int:
    if not _whole(value) or value < 0:
        raise EntriesError(f"'priority' must be a whole number >= 0, not {value!r}")
    needs = codec.has_priorities(table.match_fields)
    if needs and not default and value == 0:
        raise EntriesError(f"table {table.preamble.name} has ternary/range/optional keys: "
                           "the entry needs a 'priority' > 0 (higher wins)")
    if not needs and value:
        raise EntriesError(f"table {table.preamble.name} has only exact/lpm keys: "
                           "leave 'priority' out")
    return value


def _match(table: p4info_pb2.Table, given: dict) -> list[pb.FieldMatch]:
    fields = {mf.name: mf for mf in table.match_fields}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise EntriesError(f"table {table.preamble.name} has no key {unknown[0]!r} "
                           f"(its keys: {list(fields)})")
    out = []
    for mf in table.match_fields:
        if mf.name in given:
            out.append(_field(mf, given[mf.name]))
        elif mf.match_type == MatchType.EXACT:
            raise EntriesError(f"exact key {mf.name!r} of table {table.preamble.name} "
                               "must be given")
    return out


def _field(mf: p4info_pb2.MatchField, value: Any) -> pb.FieldMatch:
    what, width = f"key {mf.name}", mf.bitwidth
    fm = pb.FieldMatch(field_id=mf.id)
    text = value if isinstance(value, str) else None
    if mf.match_type == MatchType.EXACT:
        fm.exact.value = _bits(value, width, what)
    elif mf.match_type == MatchType.OPTIONAL:
        fm.optional.value = _bits(value, width, what)
    elif mf.match_type == MatchType.LPM:
        address, _, plen = text.partition("/") if text else (value, "", "")
        fm.lpm.value = _bits(address, width, what)
        fm.lpm.prefix_len = _number(plen, what) if plen else width
        _check_prefix(fm.lpm, width, what)
    elif mf.match_type == MatchType.TERNARY:
        val, sep, mask = text.partition("&&&") if text else (value, "", "")
        fm.ternary.value = _bits(val.strip() if sep else val, width, what)
        fm.ternary.mask = _bits(mask.strip(), width, what) if sep else _ones(width)
    elif mf.match_type == MatchType.RANGE:
        low, sep, high = text.partition("..") if text else (value, "", "")
        fm.range.low = _bits(low.strip() if sep else low, width, what)
        fm.range.high = _bits(high.strip(), width, what) if sep else fm.range.low
    else:
        raise EntriesError(f"{what}: match kind {MatchType.Name(mf.match_type)} is not supported")
    return fm


def _check_prefix(lpm: pb.FieldMatch.LPM, width: int, what: str) -> None:
    if not 0 < lpm.prefix_len <= width:
        raise EntriesError(f"{what}: prefix length {lpm.prefix_len} not in 1..{width} "
                           "(leave the key out to match everything)")
    host_bits = int.from_bytes(lpm.value, "big") & ((1 << (width - lpm.prefix_len)) - 1)
    if host_bits:
        raise EntriesError(f"{what}: the value has bits set beyond /{lpm.prefix_len}")


def _ones(width: int) -> bytes:
    return canonical_bytes((1 << width) - 1)


def _number(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError as exc:
        raise EntriesError(f"{what}: {text!r} is not a number") from exc


def _bits(value: Any, width: int, what: str) -> bytes:
    """A readable value as P4Runtime's canonical byte string, checked against ``width``."""
    number = _parse_value(value, what)
    if number < 0 or number >> width:
        raise EntriesError(f"{what}: {value!r} does not fit in {width} bits")
    return canonical_bytes(number)


def _parse_value(value: Any, what: str) -> int:
    if _whole(value):
        return value
    if not isinstance(value, str) or not value.strip():
        raise EntriesError(f"{what}: expected a number or an address, not {value!r}")
    text = value.strip()
    if text.count(":") == 5:
        return _number("0x" + text.replace(":", ""), what)
    if text.count(".") == 3:
        try:
            return int(ipaddress.IPv4Address(text))
        except ValueError as exc:
            raise EntriesError(f"{what}: {text!r} is not an IPv4 address") from exc
    return _number(text, what)
