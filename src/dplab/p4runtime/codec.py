"""P4Runtime protobuf <-> switch JSON (switch/PROTOCOL.md), guided by the loaded P4Info.

P4Runtime carries values as big-endian byte strings (canonical: no leading zero bytes);
the switch wants ``0x`` hex strings, one match item per table key in key order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.errors import P4RuntimeError, invalid, not_found

MatchField = p4info_pb2.MatchField


def to_hex(value: bytes, bitwidth: int | None, what: str) -> str:
    if not value:
        raise invalid(f"{what}: empty value")
    number = int.from_bytes(value, "big")
    if bitwidth is not None and (number >> bitwidth or len(value) > (bitwidth + 7) // 8):
        shown = value.hex() if len(value) <= 16 else value[:16].hex() + "…"
        raise invalid(f"{what}: value 0x{shown} ({len(value)} bytes) does not fit "
                      f"in {bitwidth} bits")
    return f"0x{number:x}"


def to_bytes(hex_text: str) -> bytes:
    return canonical_bytes(int(hex_text, 16))


def canonical_bytes(number: int) -> bytes:
    """As few bytes as the value needs, at least one."""
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


ACTIONS_KEPT = 4096  # action_to_switch answers kept per P4InfoIndex


def named(objects: Iterable[Any], name: str) -> Any | None:
    """The P4Info object (table, action, meter, ...) of ``objects`` whose full name or alias
    is ``name``; None when there is none."""
    return next((obj for obj in objects if name in (obj.preamble.name, obj.preamble.alias)),
                None)


class P4InfoIndex:
    """Lookups by id into one P4Info."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.info = info
        self.tables = {t.preamble.id: t for t in info.tables}
        self.actions = {a.preamble.id: a for a in info.actions}
        self.counters = {c.preamble.id: c for c in info.counters}
        self.direct_counters = {c.preamble.id: c for c in info.direct_counters}
        self.meters = {m.preamble.id: m for m in info.meters}
        self.direct_meters = {m.preamble.id: m for m in info.direct_meters}
        self.registers = {r.preamble.id: r for r in info.registers}
        self.digests = {d.preamble.id: d for d in info.digests}
        self.value_sets = {v.preamble.id: v for v in info.value_sets}
        self.action_profiles = {p.preamble.id: p for p in info.action_profiles}
        self.externs = {e.extern_type_id: e for e in info.externs}
        headers = {h.preamble.name: h for h in info.controller_packet_metadata}
        # the fields every packet-out must give, by metadata id (none without the header)
        self.packet_out_fields = ({m.id: m for m in headers["packet_out"].metadata}
                                  if "packet_out" in headers else {})
        # What every update of a table or action needs, read from the P4Info once rather
        # than walked per update.
        self.keys = {t.preamble.id: Key.of(f"table {t.preamble.name}", t.match_fields)
                     for t in info.tables}
        self.signatures = {a.preamble.id: Signature.of(a) for a in info.actions}
        self.scopes = {t.preamble.id: {ref.id: ref.scope for ref in t.action_refs}
                       for t in info.tables}
        # action_to_switch's answers: (table id, default, the action's bytes) -> action
        self.switch_actions: dict[tuple[int, bool, bytes], dict] = {}

    def table(self, table_id: int) -> p4info_pb2.Table:
        if table_id not in self.tables:
            raise not_found(f"table id {table_id} is not in the P4Info")
        return self.tables[table_id]

    def has_direct_meter(self, table: p4info_pb2.Table) -> bool:
        return any(r in self.direct_meters for r in table.direct_resource_ids)

    def has_direct_counter(self, table: p4info_pb2.Table) -> bool:
        return any(r in self.direct_counters for r in table.direct_resource_ids)

    def lookup(self, kind: str, obj_id: int) -> Any:
        found = getattr(self, kind).get(obj_id)
        if found is None:
            raise not_found(f"{kind[:-1]} id {obj_id} is not in the P4Info")
        return found


# -- table entries -----------------------------------------------------------------------

@dataclass(frozen=True)
class KeyField:
    """One match field: its id, kind ("exact", "lpm", ...: the FieldMatch oneof's name),
    width and its name in error messages."""
    id: int
    kind: str
    width: int
    what: str


@dataclass(frozen=True)
class Key:
    """The match fields of a table (or of a value set's members: spec 9.7, the same rules)
    in key order; ``owner`` names what they belong to in error messages."""
    owner: str
    fields: tuple[KeyField, ...]
    ids: frozenset[int]

    @classmethod
    def of(cls, owner: str, match_fields: Iterable[MatchField]) -> Key:
        fields = tuple(KeyField(mf.id, MatchField.MatchType.Name(mf.match_type).lower(),
                                mf.bitwidth, f"{owner} field {mf.name or mf.id}")
                       for mf in match_fields)
        return cls(owner, fields, frozenset(f.id for f in fields))


# Spec 9.1: entries of a table with any of these keys carry priorities.
PRIORITY_KINDS = (MatchField.MatchType.TERNARY, MatchField.MatchType.RANGE,
                  MatchField.MatchType.OPTIONAL)


def has_priorities(match_fields: Iterable[MatchField]) -> bool:
    """Whether a table with these match fields orders its entries by priority."""
    return any(mf.match_type in PRIORITY_KINDS for mf in match_fields)


def match_to_switch(key: Key, fields: Iterable[pb.FieldMatch]) -> list[dict]:
    """FieldMatches -> the switch's match list, one item per field of ``key``."""
    given = {}
    for fm in fields:
        field_id = fm.field_id
        if field_id in given:
            raise invalid(f"{key.owner}: match field {field_id} given twice")
        if field_id not in key.ids:
            raise invalid(f"{key.owner}: no match field id {field_id}")
        given[field_id] = fm
    return [_field_to_switch(kf, given.get(kf.id)) for kf in key.fields]


def _field_to_switch(kf: KeyField, fm: pb.FieldMatch | None) -> dict:
    kind, what, width = kf.kind, kf.what, kf.width
    if fm is None:
        if kind == "exact":
            raise invalid(f"{what}: an exact field cannot be left out")
        return {"kind": "any"}
    given = fm.WhichOneof("field_match_type")
    if given != kind:
        raise invalid(f"{what}: is {kind}, the request gives {given}")
    if kind == "exact":
        return {"kind": "exact", "v": to_hex(fm.exact.value, width, what)}
    if kind == "optional":
        return {"kind": "exact", "v": to_hex(fm.optional.value, width, what)}
    if kind == "lpm":
        return _lpm_to_switch(fm.lpm, width, what)
    if kind == "ternary":
        return _ternary_to_switch(fm.ternary, width, what)
    if kind == "range":
        return _range_to_switch(fm.range, width, what)
    raise invalid(f"{what}: match kind {kind} is not supported")


# The spec (8.3) wants don't-care matches left out and no value bits outside the mask:
# INVALID_ARGUMENT otherwise, so that every entry has one canonical form.

def _lpm_to_switch(lpm: pb.FieldMatch.LPM, width: int, what: str) -> dict:
    if not 0 < lpm.prefix_len <= width:
        raise invalid(f"{what}: prefix length {lpm.prefix_len} not in 1..{width} "
                      "(a /0 match must be left out)")
    value = to_hex(lpm.value, width, what)
    if int(value, 16) & ((1 << (width - lpm.prefix_len)) - 1):
        raise invalid(f"{what}: value {value} has bits set beyond its /{lpm.prefix_len}")
    return {"kind": "lpm", "v": value, "plen": lpm.prefix_len}


def _ternary_to_switch(ternary: pb.FieldMatch.Ternary, width: int, what: str) -> dict:
    mask = to_hex(ternary.mask, width, what)
    if int(mask, 16) == 0:
        raise invalid(f"{what}: a zero mask must be left out (wildcard)")
    value = to_hex(ternary.value, width, what)
    if int(value, 16) & ~int(mask, 16):
        raise invalid(f"{what}: value {value} has bits set outside mask {mask}")
    return {"kind": "ternary", "v": value, "m": mask}


def _range_to_switch(match: pb.FieldMatch.Range, width: int, what: str) -> dict:
    lo, hi = to_hex(match.low, width, what), to_hex(match.high, width, what)
    if int(lo, 16) > int(hi, 16):
        raise invalid(f"{what}: range low {lo} > high {hi}")
    if int(lo, 16) == 0 and int(hi, 16) == (1 << width) - 1:
        raise invalid(f"{what}: the full range must be left out (wildcard)")
    return {"kind": "range", "lo": lo, "hi": hi}


def match_from_switch(key: Key, items: list[dict], into) -> None:
    """Adds the FieldMatches of the switch's match ``items`` to ``into`` (a repeated
    FieldMatch field: built in place, as a copy costs as much as building)."""
    for kf, item in zip(key.fields, items, strict=True):
        if _is_wildcard(item, kf.width):
            continue  # don't-care matches are left out, as in writes
        fm = into.add()
        fm.field_id = kf.id
        kind = kf.kind
        if kind == "exact":
            fm.exact.value = to_bytes(item["v"])
        elif kind == "optional":
            fm.optional.value = to_bytes(item["v"])
        elif kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = to_bytes(item["v"]), item["plen"]
        elif kind == "ternary":
            fm.ternary.value = to_bytes(item["v"])
            fm.ternary.mask = to_bytes(item.get("m", f"0x{(1 << kf.width) - 1:x}"))
        elif kind == "range":
            fm.range.low = to_bytes(item.get("lo", item.get("v")))
            fm.range.high = to_bytes(item.get("hi", item.get("v")))


def _is_wildcard(item: dict, width: int) -> bool:
    full = (1 << width) - 1
    return (item["kind"] == "any"
            or (item["kind"] == "range" and int(item["lo"], 16) == 0
                and int(item["hi"], 16) == full)
            or (item["kind"] == "ternary" and int(item["m"], 16) == 0)
            or (item["kind"] == "lpm" and item["plen"] == 0))


def canonical_match(key: Key, items: list[dict]) -> list[dict]:
    """The switch's match of a read entry in the form match_to_switch gives a request,
    so that the two compare equal when they name the same entry."""
    scratch = pb.TableEntry()
    match_from_switch(key, items, scratch.match)
    return match_to_switch(key, scratch.match)


def wrong_scope(default: bool) -> int:
    """The action scope a default entry (``default``) or a match entry may not use:
    spec 9.1.2, PERMISSION_DENIED."""
    return (p4info_pb2.ActionRef.TABLE_ONLY if default
            else p4info_pb2.ActionRef.DEFAULT_ONLY)


@dataclass(frozen=True)
class Signature:
    """An action's name and parameters (id, width, name in error messages), in order."""
    name: str
    params: tuple[tuple[int, int, str], ...]
    ids: frozenset[int]

    @classmethod
    def of(cls, action: p4info_pb2.Action) -> Signature:
        name = action.preamble.name
        params = tuple((p.id, p.bitwidth, f"action {name} param {p.name}")
                       for p in action.params)
        return cls(name, params, frozenset(p[0] for p in params))


def action_to_switch(index: P4InfoIndex, table: p4info_pb2.Table, action: pb.Action,
                     default: bool) -> dict:
    """``default``: for the default entry (else a match entry), whose scope it must fit.
    The answer depends on nothing but its arguments, and a table's entries share few
    actions (a router's: one per next hop), so it is kept per P4InfoIndex by the
    action's bytes (ACTIONS_KEPT at most); callers only read it."""
    cache = index.switch_actions
    known = (table.preamble.id, default, action.SerializeToString())
    found = cache.get(known)
    if found is None:
        found = _action_to_switch(index, table, action, default)
        if len(cache) >= ACTIONS_KEPT:
            cache.clear()
        cache[known] = found
    return found


def _action_to_switch(index: P4InfoIndex, table: p4info_pb2.Table, action: pb.Action,
                      default: bool) -> dict:
    action_id = action.action_id
    scope = index.scopes[table.preamble.id].get(action_id)
    if scope is None:
        raise invalid(f"table {table.preamble.name}: action id {action_id} "
                      "is not one of its actions")
    signature = index.signatures[action_id]
    if scope == wrong_scope(default):
        only = "@tableonly" if default else "@defaultonly"
        raise P4RuntimeError("PERMISSION_DENIED", f"table {table.preamble.name}: action "
                             f"{signature.name} is {only}")
    given = {p.param_id: p.value for p in action.params}
    if len(given) != len(action.params):
        raise invalid(f"action {signature.name}: a parameter is given twice")
    if given.keys() != signature.ids:
        raise invalid(f"action {signature.name}: needs parameters {sorted(signature.ids)}, "
                      f"got {sorted(given)}")
    return {"action": action_id,
            "args": [to_hex(given[param], width, what)
                     for param, width, what in signature.params]}


def switch_action(read: dict) -> dict:
    """A read entry's action as table_add/table_modify take it: an action with its
    arguments, or a profile member or group."""
    if "action" not in read:
        return dict(read)  # {"member": id} or {"group": id}
    return {"action": read["action"], "args": read["args"]}


def action_from_switch(index: P4InfoIndex, action: dict, into: pb.Action) -> None:
    """Fills ``into`` with the switch's ``action`` (an action id and its arguments)."""
    into.action_id = action["action"]
    signature = index.signatures[action["action"]]
    for (param, _, _), arg in zip(signature.params, action["args"], strict=True):
        into.params.add(param_id=param, value=to_bytes(arg))


def meter_to_switch(config: pb.MeterConfig) -> dict:
    """A two-rate three-colour meter (RFC 2698) needs its peak rate at least its committed
    rate: INVALID_ARGUMENT otherwise, before the switch is asked."""
    if config.pir < config.cir:
        raise invalid(f"meter config: pir {config.pir} is below cir {config.cir} "
                      "(a two-rate meter needs pir >= cir)")
    return {"cir": config.cir, "cburst": config.cburst, "pir": config.pir,
            "pburst": config.pburst}


def meter_from_switch(config: dict | None) -> pb.MeterConfig | None:
    if config is None:
        return None
    return pb.MeterConfig(cir=config["cir"], cburst=config["cburst"], pir=config["pir"],
                          pburst=config["pburst"])


COLOURS = ("green", "yellow", "red")


def counts_from_switch(counts: dict) -> pb.MeterCounterData:
    """The switch's colour counts (``{"green": {"packets", "bytes"}, ...}``)."""
    out = pb.MeterCounterData()
    for colour in COLOURS:
        data = getattr(out, colour)
        data.packet_count = counts[colour]["packets"]
        data.byte_count = counts[colour]["bytes"]
    return out


def zero_counts(data: pb.MeterCounterData, what: str) -> dict:
    """Per-colour meter counters can only be written as zero, which clears them (spec
    9.1.5, 9.4); the switch's counts to set."""
    if any(getattr(data, c).packet_count or getattr(data, c).byte_count for c in COLOURS):
        raise invalid(f"{what}: per-colour meter counters can only be written as zero "
                      "(which clears them)")
    return {colour: {"packets": 0, "bytes": 0} for colour in COLOURS}


class Wanted:
    """Which direct resources a read returns for a table: those the request asks for and
    the table has (spec 9.1.5: a table without the resource leaves its field unset)."""

    def __init__(self, index: P4InfoIndex, table: p4info_pb2.Table,
                 want: pb.TableEntry) -> None:
        self.counter = want.HasField("counter_data") and index.has_direct_counter(table)
        has_meter = index.has_direct_meter(table)
        self.meter = want.HasField("meter_config") and has_meter
        self.meter_counts = want.HasField("meter_counter_data") and has_meter
        self.any = self.counter or self.meter or self.meter_counts


def fill_direct_resources(entry: pb.TableEntry, wanted: Wanted, packets: int, bytes_: int,
                          meter: dict | None, counts: dict) -> None:
    if wanted.counter:
        entry.counter_data.packet_count = packets
        entry.counter_data.byte_count = bytes_
    if wanted.meter and meter is not None:  # the default config reads as unset
        entry.meter_config.CopyFrom(meter_from_switch(meter))
    if wanted.meter_counts:
        entry.meter_counter_data.CopyFrom(counts_from_switch(counts))


def fill_entry(entry: pb.TableEntry, index: P4InfoIndex, table_id: int, item: dict,
               wanted: Wanted) -> None:
    """Fills ``entry`` (in place: a Read builds each entry inside its response) with the
    switch's ``item`` of table ``table_id``."""
    entry.table_id = table_id
    entry.priority = item.get("priority") or 0
    match_from_switch(index.keys[table_id], item["match"], entry.match)
    action = item["action"]
    if "member" in action:   # a table with an action profile or selector
        entry.action.action_profile_member_id = action["member"]
    elif "group" in action:
        entry.action.action_profile_group_id = action["group"]
    else:
        action_from_switch(index, action, entry.action.action)
    entry.idle_timeout_ns = item.get("idle_timeout_ns") or 0
    if wanted.any:
        fill_direct_resources(entry, wanted, item.get("packets", 0), item.get("bytes", 0),
                              item.get("meter"), item["meter_counts"])


def fill_default_entry(entry: pb.TableEntry, index: P4InfoIndex, table_id: int, read: dict,
                       wanted: Wanted) -> None:
    """Fills ``entry`` with the default entry of a switch's table_read (its action and
    direct resources)."""
    entry.table_id, entry.is_default_action = table_id, True
    action_from_switch(index, read["default_action"], entry.action.action)
    fill_direct_resources(entry, wanted, read.get("default_packets", 0),
                          read.get("default_bytes", 0), read.get("default_meter"),
                          read["default_meter_counts"])


def replicas_to_switch(replicas: list[pb.Replica]) -> list[dict]:
    out = []
    for r in replicas:
        port = r.egress_port if r.WhichOneof("port_kind") == "egress_port" else (
            int.from_bytes(r.port, "big") if r.port else 0)
        out.append({"port": port, "rid": r.instance})
    return out


def replicas_from_switch(replicas: list[dict]) -> list[pb.Replica]:
    return [pb.Replica(egress_port=r["port"], instance=r["rid"]) for r in replicas]
