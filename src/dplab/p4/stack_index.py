"""Header stack indices known only at run time (`hdr.s[meta.i].f`), lowered onto the IR.

The IR names header instances, never a computed one, so a statement that uses `s[e]` with
`e` not a compile-time constant becomes a chain `if (e == 0) {stmt with s[0]} else if (e
== 1) ...`, as p4c's HSIndexSimplifier does for BMv2 (midend/hsIndexSimplify.cpp). When
`e` is outside the stack, BMv2 (through that pass) does this:
- an assignment that reads `s[e]` gives its target an uninitialised value of its type:
  0 for a scalar, an invalid header;
- an assignment, a method call (`s[e].setValid()`) or a switch that writes or uses `s[e]`
  does nothing;
- an `if` whose condition uses `s[e]` runs its `else` branch.
In a parser the index out of range rejects the packet with StackOutOfBounds (P4_16 8.18).
Another run-time index in the same statement nests a second chain in each branch.
"""

from typing import TYPE_CHECKING

from dplab.p4.errors import P4Error
from dplab.p4.syntax import Node
from dplab.p4.types import STANDARD_ERRORS, Bits, HeaderRef, Signed, StructRef, Val, width_of

if TYPE_CHECKING:
    from dplab.p4.statements import Scope, StatementCompiler

STACK_OUT_OF_BOUNDS = STANDARD_ERRORS.index("StackOutOfBounds")
EXPANDED = ("assign", "if", "call_stmt", "switch")


class DynamicIndex(P4Error):
    """Raised where `s[e]` meets a run-time `e`; a statement catches it and expands
    itself (outside a statement, e.g. in a table key or a select, it is the error)."""

    def __init__(self, node: Node, size: int) -> None:
        super().__init__(node.index.loc, "a header stack index that is not a compile-time "
                         "constant is supported only in statements (not in a table key or "
                         "a select expression)")
        self.node = node
        self.size = size
        self.in_target = False   # set when it was met in an assignment's left-hand side


def expand(stmts: "StatementCompiler", node: Node, env: dict, scope: "Scope",
           dyn: DynamicIndex) -> list[dict]:
    """``node`` once per element of the stack, each guarded by `index == i`."""
    if node.kind not in EXPANDED:
        raise P4Error(dyn.node.index.loc, "a header stack index that is not a compile-time "
                      f"constant is not supported in a '{node.kind}' statement")
    exprs = stmts.exprs
    index = exprs.value(dyn.node.index, env)   # what it calls runs once, before the chain
    if not isinstance(index.type, Bits | Signed):
        raise P4Error(dyn.node.index.loc, "a header stack index must be bit<W> or int<W>")
    branches = []
    for i in range(dyn.size):
        exprs.fixed_indices[id(dyn.node)] = i
        try:
            branches.append(stmts.statement(node, env, scope))
        finally:
            del exprs.fixed_indices[id(dyn.node)]
    chain = out_of_range(stmts, node, env, scope, dyn)
    w = index.type.width
    for i in reversed(range(dyn.size)):
        cond = {"op": "eq", "w": 1, "a": index.ir, "b": {"op": "const", "w": w, "v": hex(i)}}
        chain = [{"kind": "if", "cond": cond, "then": branches[i], "else": chain}]
    return chain


def out_of_range(stmts: "StatementCompiler", node: Node, env: dict, scope: "Scope",
                 dyn: DynamicIndex) -> list[dict]:
    """What ``node`` does when the index is past the stack (this module's docstring)."""
    if scope.in_parser:
        return [{"kind": "verify", "cond": {"op": "const", "w": 1, "v": "0x0"},
                 "error": STACK_OUT_OF_BOUNDS}]
    if node.kind == "if":
        return stmts.statement(node.other, env, scope) if node.other else []
    if node.kind == "assign" and not dyn.in_target:
        dst, typ = stmts.exprs.destination(node.target, env)
        if "compound" in dst:
            return uninitialised(dst["compound"], node)
        if "varbit" in dst:
            raise P4Error(node.loc, "reading a varbit field through a run-time header "
                          "stack index is not supported")
        return [{"kind": "assign", "dst": dst,
                 "src": {"op": "const", "w": width_of(typ), "v": "0x0"}}]
    return []


def uninitialised(target: object, node: Node) -> list[dict]:
    """``target`` given a never-written local of its type: scalars 0, headers invalid."""
    if isinstance(target, Val):
        return [{"kind": "assign", "dst": {"inst": target.ir["inst"],
                                           "field": target.ir["field"]},
                 "src": {"op": "const", "w": width_of(target.type), "v": "0x0"}}]
    if isinstance(target, HeaderRef):
        return [{"kind": "set_invalid", "inst": i} for i in target.parts]
    if isinstance(target, StructRef):
        return [step for member in target.members.values()
                for step in uninitialised(member, node)]
    raise P4Error(node.loc, "assigning a header stack through a run-time index is not "
                  "supported")
