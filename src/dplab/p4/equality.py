"""`==` and `!=` on headers, header unions, structs, tuples and header stacks (P4_16 8.17,
8.20, 8.12, 8.11), lowered onto scalar comparisons (docs/p4-ir.md §4).

Two headers are equal when both are invalid, or both are valid with equal fields; two
unions when each pair of members is (so the same member is valid in both, or none is);
two structs or tuples when each pair of fields is; two stacks when each pair of elements
is. The result is one boolean IR expression; the switch needs nothing new.
"""

from dplab.p4 import varbit
from dplab.p4.errors import Loc, P4Error
from dplab.p4.syntax import Node
from dplab.p4.types import HeaderRef, StackRef, StructRef, Val, type_name, width_of

COMPOUND = (HeaderRef, StructRef, StackRef)


def is_plain_path(node: Node) -> bool:
    """Whether `node` names storage without running anything (no call in it), so that
    denoting it first and evaluating it again later is safe."""
    if node.kind == "name":
        return True
    return node.kind in ("member", "index") and is_plain_path(node.base)


def compare(op: str, a: object, b: object, loc: Loc) -> dict:
    """The IR of `a == b` (or `!=`) for two compound values of one type."""
    if type(a) is not type(b) or getattr(a, "type", None) != getattr(b, "type", None):
        raise P4Error(loc, f"'{op}' needs operands of one type, found "
                      f"{_describe(a)} and {_describe(b)}")
    equal = _equal(a, b, loc)
    return equal if op == "==" else {"op": "lnot", "w": 1, "a": equal}


def _equal(a: object, b: object, loc: Loc) -> dict:
    if isinstance(a, Val):
        return {"op": "eq", "w": 1, "a": a.ir, "b": b.ir}
    if isinstance(a, HeaderRef):
        return _header_equal(a, b, loc)
    if isinstance(a, StackRef):
        pairs = [(HeaderRef(x, a.type.base), HeaderRef(y, b.type.base))
                 for x, y in zip(a.instances, b.instances, strict=True)]
    else:
        pairs = [(member, b.members[name]) for name, member in a.members.items()]
    return _all([_equal(x, y, loc) for x, y in pairs])


def _header_equal(a: HeaderRef, b: HeaderRef, loc: Loc) -> dict:
    varbit.refuse("a comparison", a.type, loc)
    fields = [{"op": "eq", "w": 1, "a": _field(a, i, width_of(t)), "b": _field(b, i, width_of(t))}
              for i, (_, t, _) in enumerate(a.type.fields)]
    va, vb = {"op": "valid", "w": 1, "inst": a.inst}, {"op": "valid", "w": 1, "inst": b.inst}
    neither = {"op": "land", "w": 1, "a": {"op": "lnot", "w": 1, "a": va},
               "b": {"op": "lnot", "w": 1, "a": vb}}
    both = _all([va, vb, *fields])
    return {"op": "lor", "w": 1, "a": neither, "b": both}


def _field(h: HeaderRef, index: int, w: int) -> dict:
    return {"op": "field", "w": w, "inst": h.inst, "field": index}


def _all(terms: list[dict]) -> dict:
    if not terms:
        return {"op": "const", "w": 1, "v": "0x1"}
    out = terms[0]
    for term in terms[1:]:
        out = {"op": "land", "w": 1, "a": out, "b": term}
    return out


def _describe(value: object) -> str:
    typ = getattr(value, "type", None)
    return type_name(typ) if typ is not None else type(value).__name__
