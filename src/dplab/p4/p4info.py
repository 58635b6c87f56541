"""The IR's P4Info (p4.config.v1.P4Info) for P4Runtime clients."""

from p4.config.v1 import p4info_pb2, p4types_pb2

from dplab.p4.ids import symbol_name
from dplab.p4.names import aliases

MATCH_TYPES = {"exact": p4info_pb2.MatchField.EXACT, "lpm": p4info_pb2.MatchField.LPM,
               "ternary": p4info_pb2.MatchField.TERNARY, "range": p4info_pb2.MatchField.RANGE,
               "optional": p4info_pb2.MatchField.OPTIONAL}
COUNTER_UNITS = {"packets": p4info_pb2.CounterSpec.PACKETS,
                 "bytes": p4info_pb2.CounterSpec.BYTES, "both": p4info_pb2.CounterSpec.BOTH}
METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}
# p4c copies an action reference's annotations, so a scoped one carries its annotation too
SCOPE_ANNOTATIONS = {"table_only": "@tableonly", "default_only": "@defaultonly"}
ANNOTATION_KEYS = ("annotations", "doc", "structured_annotations")   # what _annotate writes
SCOPES = {"table_and_default": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
          "table_only": p4info_pb2.ActionRef.TABLE_ONLY,
          "default_only": p4info_pb2.ActionRef.DEFAULT_ONLY}


def _unit_spec(msg, item: dict, units: dict, ir: dict) -> None:
    """Counters and meters, direct or not: preamble, unit, and the table a direct one sits on."""
    _preamble(msg, item)
    msg.spec.unit = units[item["unit"]]
    if item.get("table") is not None:
        msg.direct_table_id = ir["tables"][item["table"]]["id"]


def _preamble(msg: object, obj: dict) -> None:
    msg.preamble.id = obj["id"]
    msg.preamble.name = obj["name"]
    msg.preamble.alias = obj["name"].split(".")[-1]
    _annotate(msg.preamble, obj)


def _annotate(msg: object, obj: dict) -> None:
    """The declaration's annotations, as p4c copies them (dplab/p4/annotations.py)."""
    msg.annotations.extend(obj.get("annotations", []))
    for brief_or_description, text in obj.get("doc", {}).items():
        setattr(msg.doc, brief_or_description, text)
    for anno in obj.get("structured_annotations", []):
        _structured(msg.structured_annotations.add(name=anno["name"]), anno)


def _structured(out: p4types_pb2.StructuredAnnotation, anno: dict) -> None:
    if "kv" in anno:
        out.kv_pair_list.SetInParent()
        for key, value in anno["kv"]:
            _expression(out.kv_pair_list.kv_pairs.add(key=key).value, value)
    else:
        out.expression_list.SetInParent()
        for value in anno["expressions"]:
            _expression(out.expression_list.expressions.add(), value)


def _expression(msg: object, value: dict) -> None:
    kind, literal = next(iter(value.items()))
    setattr(msg, {"string": "string_value", "int": "int64_value", "bool": "bool_value"}[kind],
            literal)


def build_p4info(ir: dict) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    info.type_info.SetInParent()   # p4c writes it even when empty (`type_info {}`)
    _pkg_info(info.pkg_info, ir.get("pkg_info", {}))
    for table in ir["tables"]:
        _table(info.tables.add(), table, ir)
    listed: set[int] = set()
    for action in sorted(ir["actions"], key=lambda a: a.get("decl", 0)):   # p4c's order
        if action["id"] in listed:   # another specialisation of the same P4 action
            continue
        listed.add(action["id"])
        msg = info.actions.add()
        _preamble(msg, action)
        for param in action["params"]:
            _annotate(msg.params.add(id=param["id"], name=param["name"], bitwidth=param["w"]),
                      param)
    for counter in ir["counters"]:
        _unit_spec(info.counters.add(size=counter["size"]), counter, COUNTER_UNITS, ir)
    for counter in ir["direct_counters"]:
        _unit_spec(info.direct_counters.add(), counter, COUNTER_UNITS, ir)
    for meter in ir["meters"]:
        _unit_spec(info.meters.add(size=meter["size"]), meter, METER_UNITS, ir)
    for meter in ir["direct_meters"]:
        _unit_spec(info.direct_meters.add(), meter, METER_UNITS, ir)
    for register in ir["registers"]:
        msg = info.registers.add(size=register["size"])
        _preamble(msg, register)
        msg.type_spec.bitstring.bit.bitwidth = register["w"]
    for digest in ir["digests"]:
        _digest(info, digest)
    for value_set in ir["value_sets"]:
        _value_set(info.value_sets.add(size=value_set["size"]), value_set)
    for profile in ir["action_profiles"]:
        _action_profile(info.action_profiles.add(), profile, ir)
    for header in ir["controller_headers"].values():
        msg = info.controller_packet_metadata.add()
        _preamble(msg, header)
        for f in header["fields"]:
            metadata = msg.metadata.add(id=f["id"], name=f["name"], bitwidth=f["w"])
            metadata.annotations.extend(f.get("annotations", []))
            for anno in f.get("structured_annotations", []):
                _structured(metadata.structured_annotations.add(name=anno["name"]), anno)
    _aliases(info, ir)
    return info


def _aliases(info: p4info_pb2.P4Info, ir: dict) -> None:
    """p4c's aliases: shortest unique suffixes among all the program's symbols (a controller
    header's symbol is its header type; its preamble keeps the role as name and alias)."""
    symbols = [h["name"] for group in ("tables", "actions", "counters", "direct_counters",
                                       "meters", "direct_meters", "registers", "digests",
                                       "value_sets", "action_profiles") for h in ir[group]]
    symbols += [symbol_name("controller_headers", h)
                for h in ir["controller_headers"].values()]
    alias = aliases(symbols)
    for group in (info.tables, info.actions, info.counters, info.direct_counters, info.meters,
                  info.direct_meters, info.registers, info.digests, info.value_sets,
                  info.action_profiles):
        for msg in group:
            msg.preamble.alias = alias[msg.preamble.name]


def _table(msg: object, table: dict, ir: dict) -> None:
    _preamble(msg, table)
    for key in table["keys"]:
        _annotate(msg.match_fields.add(id=key["id"], name=key["name"], bitwidth=key["w"],
                                       match_type=MATCH_TYPES[key["match"]]), key)
    for ref in table["actions"]:
        msg_ref = msg.action_refs.add(id=ir["actions"][ref["action"]]["id"],
                                      scope=SCOPES[ref["scope"]])
        if "annotations" not in ref and ref["scope"] in SCOPE_ANNOTATIONS:   # p4c's NoAction
            msg_ref.annotations.append(SCOPE_ANNOTATIONS[ref["scope"]])
        _annotate(msg_ref, ref)
    _default_action(msg, table["default_action"], ir)
    msg.size = table["size"]
    if table.get("implementation") is not None:
        msg.implementation_id = ir["action_profiles"][table["implementation"]]["id"]
    msg.is_const_table = table["is_const"]
    msg.has_initial_entries = bool(table["const_entries"])
    if table["support_timeout"]:
        msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
    for kind in ("direct_counter", "direct_meter"):
        if table[kind] is not None:
            msg.direct_resource_ids.append(ir[kind + "s"][table[kind]]["id"])


def _default_action(msg: p4info_pb2.Table, default: dict, ir: dict) -> None:
    """As p4c (since P4Runtime 1.4's `initial_default_action`, p4c PR 4773): every table's
    default action with its arguments, each the parameter's full width in bytes (p4c's
    default-action-arg-bmv2.p4.p4info.txtpb: bit<32> 10 is "\\000\\000\\000\\n"); a table
    without `default_action` has NoAction (p4c's front end gives it one). A const one is
    also `const_default_action_id`."""
    action = ir["actions"][default["action"]]
    if default["const"]:
        msg.const_default_action_id = action["id"]
    msg.initial_default_action.action_id = action["id"]
    for param, arg in zip(action["params"], default["args"], strict=True):
        msg.initial_default_action.arguments.add(
            param_id=param["id"], value=int(arg, 16).to_bytes((param["w"] + 7) // 8, "big"))


def _pkg_info(msg: p4info_pb2.PkgInfo, given: dict) -> None:
    """`@pkginfo(...)` and the other annotations of `main`; p4c leaves the rest empty."""
    _annotate(msg, given)
    for key, value in given.items():
        if key not in ANNOTATION_KEYS:
            setattr(msg, key, value)


def _value_set(msg: p4info_pb2.ValueSet, value_set: dict) -> None:
    _preamble(msg, value_set)
    for f in value_set["fields"]:
        msg.match.add(id=f["id"], name=f["name"], bitwidth=f["w"],
                      match_type=MATCH_TYPES[f["match"]])


def _action_profile(msg: p4info_pb2.ActionProfile, profile: dict, ir: dict) -> None:
    """As p4c writes it for v1model: `size` the constructor's, `max_group_size` 0 unless
    `@max_group_size(n)` (P4Runtime spec 9.2.3: then any group `max_size` is allowed); a
    selector's size semantics (P4Runtime 1.3+) only when its annotation gives them, as p4c
    (testdata action_selector_shared-bmv2: none; absent means sum_of_weights)."""
    _preamble(msg, profile)
    msg.table_ids.extend(ir["tables"][t]["id"] for t in profile["tables"])
    msg.with_selector = profile["selector"] is not None
    msg.size = profile["size"]
    msg.max_group_size = profile["max_group_size"]
    semantics = (profile["selector"] or {}).get("size_semantics")
    if semantics == "sum_of_members":
        msg.sum_of_members.max_member_weight = profile["selector"]["max_member_weight"]
    elif semantics == "sum_of_weights":
        msg.sum_of_weights.SetInParent()


def _digest(info: p4info_pb2.P4Info, digest: dict) -> None:
    msg = info.digests.add()
    _preamble(msg, digest)
    if digest.get("tuple"):   # p4c's TypeSpecConverter: a tuple's members, no type_info
        for f in digest["fields"]:
            msg.type_spec.tuple.members.add().bitstring.bit.bitwidth = f["w"]
        return
    msg.type_spec.struct.name = digest["name"]
    struct = info.type_info.structs[digest["name"]]
    for f in digest["fields"]:
        member = struct.members.add(name=f["name"])
        member.type_spec.bitstring.bit.bitwidth = f["w"]
