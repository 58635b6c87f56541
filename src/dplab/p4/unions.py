"""`header_union` lowered onto the IR's headers (P4_16 8.20, docs/p4-ir.md §3).

A union is a struct-like reference whose members are ordinary header instances, so
copying, passing and emitting a union work as they do for a struct of headers. What makes
it a union is that at most one member is valid: every operation that can make a member
valid (setValid, extract, assignment of a header or a list, lookahead) also invalidates the
others, and `setInvalid` of any member invalidates them all (8.20: "if the valid bit for
any member header of u is true then it will become false"). `u.isValid()` is true when any
member is valid.
"""

from collections.abc import Callable
from dataclasses import replace

from dplab.p4.errors import Loc, P4Error
from dplab.p4.types import BoolType, HeaderRef, StructRef, StructType, Val, type_name


def check_members(typ: StructType, locs: list[Loc]) -> None:
    """8.20: a union's members are headers."""
    for (name, ftype, _), loc in zip(typ.fields, locs, strict=True):
        if not (isinstance(ftype, StructType) and ftype.kind == "header"):
            raise P4Error(loc, f"header_union {typ.name}: member {name} must be a header, "
                          f"not {type_name(ftype)}")


def is_union(typ: object) -> bool:
    return isinstance(typ, StructType) and typ.kind == "header_union"


def union_ref(typ: StructType, member: Callable[[str, StructType], HeaderRef]) -> StructRef:
    """The union's members made by ``member(name, header type)``, each told the instances
    of the others (its siblings)."""
    made = {name: member(name, ftype) for name, ftype, _ in typ.fields}
    ref = StructRef(typ)
    for name, header in made.items():
        others = tuple(i for n, h in made.items() if n != name for i in h.parts)
        ref.members[name] = replace(header, siblings=others)
    return ref


def invalidate_siblings(header: HeaderRef) -> list[dict]:
    """After a member became valid (or was assigned): the other members are invalid."""
    return [{"kind": "set_invalid", "inst": i} for i in header.siblings]


def is_valid(ref: StructRef) -> Val:
    """`u.isValid()`: any member valid (false for a union without members)."""
    valid = [{"op": "valid", "w": 1, "inst": h.inst} for h in ref.members.values()]
    if not valid:
        return Val({"op": "const", "w": 1, "v": "0x0"}, BoolType(), 0)
    expr = valid[0]
    for more in valid[1:]:
        expr = {"op": "lor", "w": 1, "a": expr, "b": more}
    return Val(expr, BoolType())
