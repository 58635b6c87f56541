"""`header_union` lowered onto the IR's headers (P4_16 8.20, docs/p4-ir.md §3).

A union is a struct-like reference whose members are ordinary header instances, so
copying, passing and emitting a union work as they do for a struct of headers. What makes
it a union is that at most one member is valid: every operation that makes a member valid
(setValid, extract, assignment of a valid header or of a list, lookahead) also invalidates
the others. Invalidating a member (setInvalid, assigning it an invalid header) touches
only that member, as BMv2 does (its header union only tracks which member was made valid
last): the spec's text has `u.hi.setInvalid()` invalidate whichever member is valid, which
p4c's BMv2 back end does not do (p4lang/p4c#4448). `u.isValid()` is true when any member
is valid. A stack of unions is lowered at the end of this module.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace

from dplab.p4.errors import Loc, P4Error
from dplab.p4.types import (
    STANDARD_ERRORS,
    BoolType,
    HeaderRef,
    StructRef,
    StructType,
    Val,
    type_name,
)


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
    """After a member became valid: the other members are invalid."""
    return [{"kind": "set_invalid", "inst": i} for i in header.siblings]


def after_assignment(header: HeaderRef) -> list[dict]:
    """After a header was copied into a member: the others are invalid if it is valid."""
    if not header.siblings:
        return []
    return [{"kind": "if", "cond": {"op": "valid", "w": 1, "inst": header.inst},
             "then": invalidate_siblings(header), "else": []}]


def is_valid(ref: StructRef) -> Val:
    """`u.isValid()`: any member valid (false for a union without members)."""
    valid = [{"op": "valid", "w": 1, "inst": h.inst} for h in ref.members.values()]
    if not valid:
        return Val({"op": "const", "w": 1, "v": "0x0"}, BoolType(), 0)
    expr = valid[0]
    for more in valid[1:]:
        expr = {"op": "lor", "w": 1, "a": expr, "b": more}
    return Val(expr, BoolType())


# --- stacks of unions (`U[n] us;` in the headers struct) --------------------------------
# A union stack is a struct of its n unions (fields "0".."n-1"), so indexing with a
# constant, emitting and copying work as for structs; its parser `next` index is a $locals
# scalar (zero for each packet), and `extract(us.next.m)` picks the element at run time.
STACK_OUT_OF_BOUNDS = STANDARD_ERRORS.index("StackOutOfBounds")


@dataclass
class UnionStackRef(StructRef):
    next_index: Val | None = None   # made at the first `.next`


def stack_type(base: StructType, size: int) -> StructType:
    return StructType("union_stack", f"{base.name}[{size}]",
                      tuple((str(i), base, ()) for i in range(size)))


def is_union_stack(typ: object) -> bool:
    return isinstance(typ, StructType) and typ.kind == "union_stack"


def stack_element(ref: StructRef, index: Val, loc: Loc) -> StructRef:
    """`us[i]` with a compile-time `i`: the union at i."""
    if index.const is None:
        raise P4Error(loc, "an index into a stack of header unions must be a compile-time "
                      "constant")
    if not 0 <= index.const < len(ref.members):
        raise P4Error(loc, f"index {index.const} is outside the stack (size "
                      f"{len(ref.members)})")
    return ref.members[str(index.const)]


@dataclass
class NextMember:
    """`us.next.m`: member m of the union at the stack's next index (only extracted)."""

    stack: UnionStackRef
    name: str


def next_member(stack: UnionStackRef, name: str, loc: Loc) -> NextMember:
    union = stack.type.fields[0][1]
    if name not in {f for f, _, _ in union.fields}:
        raise P4Error(loc, f"header_union {union.name} has no member '{name}'")
    return NextMember(stack, name)


def extract_next(target: NextMember) -> list[dict]:
    """`extract(us.next.m)`: extract into member m of element `next` (the other members
    of that element invalid), then `next` + 1; `next` at the size rejects with
    StackOutOfBounds (8.18)."""
    index = target.stack.next_index
    assert index is not None
    dst = {"inst": index.ir["inst"], "field": index.ir["field"]}
    step = {"kind": "assign", "dst": dst,
            "src": {"op": "add", "w": 32, "a": index.ir, "b": _const32(1)}}
    chain: list[dict] = [{"kind": "verify", "cond": {"op": "const", "w": 1, "v": "0x0"},
                          "error": STACK_OUT_OF_BOUNDS}]
    for i in reversed(range(len(target.stack.members))):
        header = target.stack.members[str(i)].members[target.name]
        chain = [{"kind": "if", "cond": {"op": "eq", "w": 1, "a": index.ir, "b": _const32(i)},
                  "then": [{"kind": "extract", "inst": header.inst},
                           *invalidate_siblings(header), step],
                  "else": chain}]
    return chain


def _const32(value: int) -> dict:
    return {"op": "const", "w": 32, "v": hex(value)}
