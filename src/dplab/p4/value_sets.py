"""Parser value sets (P4_16 spec "Parser Value Sets"; P4Runtime spec "ValueSetEntry").

`value_set<T>(size) name;` in a parser declares a set of keyset members the control plane
fills at run time; a `select` case naming it matches when any member matches the select
keys. T is `bit<W>` (one exact field, for a one-key select) or a struct of `bit<W>`
fields, one per select key (a tuple is refused, as by p4c's P4Info); a struct field's
`@match(kind)` (exact, ternary, lpm, range, optional; default exact) is how the control
plane writes that field, as in P4Info.
"""

from dplab.p4.annotations import p4info_annotations
from dplab.p4.errors import P4Error
from dplab.p4.exprs import Env
from dplab.p4.limits import checked_size
from dplab.p4.syntax import Node
from dplab.p4.tables import MATCH_KINDS
from dplab.p4.types import ExternRef, StructType, type_name, width_of


def is_value_set(node: Node) -> bool:
    return node.kind == "instance" and node.type.kind == "named" \
        and node.type.name == "value_set"


def declare(compiler: object, node: Node, owner: str, env: Env) -> None:
    """Adds the set to the IR's `value_sets` and binds its name in the parser."""
    if len(node.type.args) != 1:
        raise P4Error(node.loc, "value_set needs its member type: value_set<bit<16>>(4)")
    if len(node.args) != 1:
        raise P4Error(node.loc, "value_set takes one argument: its size")
    size = compiler.exprs.value(node.args[0], env).const
    if size is None or size < 1:
        raise P4Error(node.args[0].loc, "a value_set's size must be a positive constant")
    checked_size(node.args[0].loc, size, "value_set size")
    fields = _fields(compiler, node.type.args[0])
    group = compiler.ir["value_sets"]
    name = compiler.qualified(node, owner)
    compiler.ids.note("value_sets", name, node)
    group.append({"name": name, "size": size, "fields": fields, **p4info_annotations(node)})
    env[node.name] = ExternRef("value_set", len(group) - 1)


def _fields(compiler: object, type_node: Node) -> list[dict]:
    if type_node.kind == "named" and type_node.name == "tuple":
        # P4_16's grammar allows value_set<tuple<...>>, but p4c's P4Info generation rejects
        # it (P4RuntimeSerializer::addValueSet, Type_BaseList: "Unsupported type argument
        # for Value Set"): P4Runtime has no names for a tuple's fields
        raise P4Error(type_node.loc, "a value_set of a tuple has no P4Runtime field names "
                      "(p4c rejects it too); use a struct of bit<W> fields")
    typ = compiler.resolve_type(type_node)
    width = width_of(typ)
    if width is not None:
        return [{"id": 1, "name": "", "w": width, "match": "exact"}]
    if not isinstance(typ, StructType) or typ.kind != "struct":
        raise P4Error(type_node.loc, f"a value_set's members must be bit<W> or a struct of "
                      f"bit<W> fields, not {type_name(typ)}")
    decl = compiler.struct_decls[typ.name]
    fields = []
    for position, (field, (name, ftype, _)) in enumerate(zip(decl.fields, typ.fields,
                                                             strict=True)):
        if width_of(ftype) is None:
            raise P4Error(field.loc, f"value_set member field {name} must be bit<W>, not "
                          f"{type_name(ftype)}")
        fields.append({"id": position + 1, "name": name, "w": width_of(ftype),
                       "match": _match_kind(field)})
    return fields


def _match_kind(field: Node) -> str:
    tokens = field.annos.get("match")
    if tokens is None:
        return "exact"
    kind = "".join(t.text for t in tokens)
    if kind not in MATCH_KINDS:
        loc = tokens[0].loc if tokens else field.loc
        raise P4Error(loc, f"@match({kind}) is not one of {', '.join(sorted(MATCH_KINDS))}")
    return kind


def case_keyset(compiler: object, case: Node, keys: list, env: Env) -> dict | None:
    """The IR keyset of a select case that names a value set, or None for other cases."""
    named = [s for s in case.sets if _value_set_of(s, env) is not None]
    if not named:
        return None
    if len(case.sets) != 1:
        raise P4Error(named[0].loc, "a value set must be the whole keyset of its case")
    ref = _value_set_of(named[0], env)
    compiler.exprs.used.add(id(ref))
    vs = compiler.ir["value_sets"][ref.index]
    widths = [f["w"] for f in vs["fields"]]
    if widths != [k.ir["w"] for k in keys]:
        have = ", ".join(f"bit<{w}>" for w in widths)
        want = ", ".join(f"bit<{k.ir['w']}>" for k in keys)
        raise P4Error(named[0].loc, f"value set {vs['name']} has members ({have}); the "
                      f"select keys are ({want})")
    return {"kind": "value_set", "set": ref.index}


def _value_set_of(keyset: Node, env: Env) -> ExternRef | None:
    if keyset.kind != "exact" or keyset.value.kind != "name":
        return None
    found = env.get(keyset.value.name)
    return found if isinstance(found, ExternRef) and found.kind == "value_set" else None
