"""A control instance applied more than once whose declaration holds tables, actions or
externs (docs/p4-ir.md §7, "Inlined calls").

P4 has one set of those objects per instance, whichever apply runs them, so they are
compiled once: at the first apply, with every parameter a temporary (copy-in/copy-out,
P4_16 6.8) that every later apply shares. A later apply copies its arguments into those
temporaries, gives the control's variables their initial values again, runs the apply
block over the same tables, and copies out. An instance applied once keeps its parameters
bound to the caller's l-values where no difference can show (dplab/p4/inlining.py), so its
IR is the one it had before instances could be applied again.
"""

from collections import Counter
from typing import TYPE_CHECKING

from dplab.p4 import tuples
from dplab.p4.errors import Loc
from dplab.p4.exprs import Env
from dplab.p4.inlining import copy_out_before_exits, lower_returns
from dplab.p4.local_vars import copy_compound, uninitialised
from dplab.p4.statements import Scope
from dplab.p4.syntax import Node
from dplab.p4.types import ControlRef, ListVal

if TYPE_CHECKING:
    from dplab.p4.compiler import Compiler


def apply_counts(nodes: list[Node]) -> Counter[str]:
    """How often each name's `.apply(...)` may run in `nodes`: its calls, each counted
    twice inside a `for` loop (unrolled, it may run more than once)."""
    counts: Counter[str] = Counter()

    def walk(node: object, weight: int) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, weight)
            return
        if not isinstance(node, Node):
            return
        if node.kind in ("for", "for_in"):
            weight = 2
        if node.kind == "call" and node.func.kind == "member" and node.func.name == "apply" \
                and node.func.base.kind == "name":
            counts[node.func.base.name] += weight
        for key, value in vars(node).items():
            if key not in ("loc", "annos", "depth"):
                walk(value, weight)

    walk(nodes, 1)
    return counts


def reapply(compiler: "Compiler", control: ControlRef, targets: list[object],
            scope: Scope, loc: Loc) -> list[dict]:
    """A later apply of `control` (its first one left `control.shared`)."""
    decl = control.decl
    own = {n.name for n in decl.body.body if n.kind in ("var", "const")}
    inner: Env = {k: v for k, v in control.shared.items() if k not in own}
    prologue: list[dict] = []
    epilogue: list[dict] = []
    for param, target in zip(decl.params, targets, strict=True):
        local = inner[param.name]
        if isinstance(target, ListVal):
            prologue.extend(tuples.copy_in(local, target))
        elif param.direction == "out":
            prologue.extend(uninitialised(local))
        else:
            prologue.extend(copy_compound(local, target, param.loc))
        if param.direction in ("out", "inout"):
            epilogue.extend(copy_compound(target, local, param.loc))
    body: list[dict] = []
    for local in decl.locals:
        if local.kind == "var" and local.init is not None:
            body.extend(compiler.stmts.statement(
                Node("assign", local.loc, target=Node("name", local.loc, name=local.name),
                     value=local.init), inner, scope))
        elif local.kind == "var":
            body.extend(uninitialised(inner[local.name]))
    for node in decl.body.body:
        body.extend(compiler.stmts.statement(node, inner, scope))
    body = lower_returns(body, lambda: compiler.flag(loc))
    if epilogue:
        body = copy_out_before_exits(body, epilogue)
    return prologue + body + epilogue
