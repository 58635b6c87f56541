"""`tuple<T1, ..., Tn>` types and list expressions `{e1, ..., en}` passed as arguments
(P4_16 7.2.8, 8.12).

A tuple type is lowered as an anonymous struct whose fields are named by position ("0",
"1", ...), so tuple locals, parameters and list assignment are the struct's; `t[i]` with a
compile-time `i` is field i. A list expression given for an `in` parameter of a struct,
tuple or header type is its scalars, evaluated in the caller and copied into the
parameter's temporary (each scalar field in declaration order, nested structs flattened;
a header made valid, as a list assigned to a header is).
"""

from dplab.p4.errors import Loc, P4Error
from dplab.p4.types import (
    HeaderRef,
    IntType,
    ListVal,
    StructRef,
    StructType,
    Val,
    type_name,
    width_of,
)


def tuple_type(elements: list[object]) -> StructType:
    name = f"tuple<{', '.join(type_name(t) for t in elements)}>"
    return StructType("tuple", name, tuple((str(i), t, ()) for i, t in enumerate(elements)))


def is_tuple(typ: object) -> bool:
    return isinstance(typ, StructType) and typ.kind == "tuple"


def element(ref: StructRef, index: Val, loc: Loc) -> object:
    """`t[i]`: the tuple's element i (a compile-time index, as P4 requires)."""
    if index.const is None:
        raise P4Error(loc, "a tuple index must be a compile-time constant")
    if not 0 <= index.const < len(ref.members):
        raise P4Error(loc, f"index {index.const} is outside {ref.type.name}")
    return ref.members[str(index.const)]


def scalar_fields(typ: StructType, loc: Loc, prefix: str = "") -> list[tuple[str, object]]:
    """(path, type) of every scalar of a struct or tuple, nested ones flattened."""
    out: list[tuple[str, object]] = []
    for name, ftype, _ in typ.fields:
        path = f"{prefix}{name}" if not is_tuple(typ) else f"{prefix}[{name}]"
        if isinstance(ftype, StructType) and ftype.kind in ("struct", "tuple"):
            out.extend(scalar_fields(ftype, loc, f"{path}." if ftype.kind == "struct"
                                     else path))
        elif width_of(ftype) is not None:
            out.append((path, ftype))
        else:
            raise P4Error(loc, f"a list expression for {typ.name} cannot set {path} "
                          f"({type_name(ftype)}): only scalar fields are supported")
    return out


def flat_items(node) -> list:
    """The items of a list expression, nested lists flattened in order."""
    return [leaf for item in node.items
            for leaf in (flat_items(item) if item.kind == "list" else [item])]


def list_value(exprs, node, typ: StructType, env: dict) -> ListVal:
    """The list expression `node` for a place of struct or tuple type `typ`: one typed
    value per scalar field."""
    fields = scalar_fields(typ, node.loc)
    items = flat_items(node)
    if len(items) != len(fields):
        raise P4Error(node.loc, f"{typ.name} has {len(fields)} scalar field(s), the list "
                      f"{len(items)}")
    values = []
    for (path, ftype), item in zip(fields, items, strict=True):
        val = exprs.typed(item, env, ftype)
        if val.type != ftype and not isinstance(val.type, IntType):
            raise P4Error(item.loc, f"{typ.name} field {path} is {type_name(ftype)}, the "
                          f"item is {type_name(val.type)}")
        values.append(val)
    return ListVal(values)


def copy_in(target: StructRef | HeaderRef, source: ListVal) -> list[dict]:
    """The temporary of an `in` parameter given a list: each scalar from its item (a
    header made valid first, as a list assigned to a header is: P4_16 8.12)."""
    if isinstance(target, HeaderRef):
        return [{"kind": "set_valid", "inst": target.inst},
                *({"kind": "assign", "dst": {"inst": target.inst, "field": i}, "src": item.ir}
                  for i, item in enumerate(source.items))]
    return [{"kind": "assign", "dst": {"inst": v.ir["inst"], "field": v.ir["field"]},
             "src": item.ir} for v, item in zip(_scalars(target), source.items, strict=True)]


def _scalars(ref: object) -> list[Val]:
    if isinstance(ref, Val):
        return [ref]
    return [v for m in ref.members.values() for v in _scalars(m)]
