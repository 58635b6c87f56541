"""Does a P4Info describe the IR's objects as they are, not only under the same ids?

P4Runtime's VERIFY (spec 14) must refuse a P4Info the device config does not realize: a
table with the right id but other match fields, actions or size would make a controller
write entries the switch reads differently. The P4Info the compiler makes from the IR
(dplab.p4.p4info) is the reference; each object of the given P4Info is compared with the
one of the same id there, on what a controller relies on (names, fields, ids, widths,
sizes, units, action refs and their scopes), not on aliases, annotations or order.
"""

from google.protobuf.message import Message
from p4.config.v1 import p4info_pb2

from dplab.p4.p4info import build_p4info


def _fields(items) -> list[tuple]:
    return [(f.id, f.name, f.bitwidth, p4info_pb2.MatchField.MatchType.Name(f.match_type))
            if hasattr(f, "match_type") else (f.id, f.name, f.bitwidth) for f in items]


def _table(t: p4info_pb2.Table) -> dict:
    return {"match fields (id, name, bitwidth, match)": _fields(t.match_fields),
            "action refs (id, scope)": sorted(
                (r.id, p4info_pb2.ActionRef.Scope.Name(r.scope)) for r in t.action_refs),
            "size": t.size, "const_default_action_id": t.const_default_action_id,
            "implementation_id": t.implementation_id,
            "direct_resource_ids": sorted(t.direct_resource_ids),
            "is_const_table": t.is_const_table,
            "idle_timeout_behavior": t.idle_timeout_behavior}


def _unit(spec: Message) -> str:
    return type(spec).Unit.Name(spec.unit)


SHAPES = {
    "tables": _table,
    "actions": lambda a: {"params (id, name, bitwidth)": _fields(a.params)},
    "counters": lambda c: {"unit": _unit(c.spec), "size": c.size},
    "direct_counters": lambda c: {"unit": _unit(c.spec), "direct_table_id": c.direct_table_id},
    "meters": lambda m: {"unit": _unit(m.spec), "size": m.size},
    "direct_meters": lambda m: {"unit": _unit(m.spec), "direct_table_id": m.direct_table_id},
    "registers": lambda r: {"size": r.size,
                            "bitwidth": r.type_spec.bitstring.bit.bitwidth},
    "digests": lambda d: {"type": d.type_spec.struct.name},
    "value_sets": lambda v: {"size": v.size, "match (id, name, bitwidth, match)":
                             _fields(v.match)},
    "action_profiles": lambda p: {"table_ids": sorted(p.table_ids),
                                  "with_selector": p.with_selector, "size": p.size,
                                  "max_group_size": p.max_group_size},
    "controller_packet_metadata": lambda h: {"metadata (id, name, bitwidth)":
                                             _fields(h.metadata)},
}


def p4info_mismatch(given: p4info_pb2.P4Info, ir: dict) -> str | None:
    """What of `given` differs from the objects of the same id in the IR, None if nothing.
    Objects whose id the IR lacks are left to the caller's id check."""
    try:
        expected = build_p4info(ir)
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        return f"p4_device_config is not a complete dplab IR ({type(exc).__name__}: {exc})"
    for kind, shape in SHAPES.items():
        ours = {obj.preamble.id: obj for obj in getattr(expected, kind)}
        for obj in getattr(given, kind):
            mine = ours.get(obj.preamble.id)
            if mine is None:
                continue
            found = {"name": obj.preamble.name, **shape(obj)}
            wanted = {"name": mine.preamble.name, **shape(mine)}
            for aspect, value in found.items():
                if value != wanted[aspect]:
                    return (f"the P4Info's {kind.rstrip('s')} {obj.preamble.name} (id "
                            f"{obj.preamble.id}) does not match p4_device_config: its "
                            f"{aspect}: {value}; the program's: {wanted[aspect]}")
    return None
