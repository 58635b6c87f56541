"""`for` loops (P4_16 1.2.4, 12.x), unrolled at compile time: the IR has no loop
(docs/p4-ir.md §7, "Loops").

`for (init; cond; update) body`: the variables that `init` declares, or assigns a
compile-time value to by name, are the loop's variables. They are compile-time values while
the loop is unrolled: `cond` must fold to a constant from them, and each update that assigns
one must too; the body reads them as constants (so `hdr.stack[i]` takes a constant index)
and may not assign them. An update statement that assigns something else (or calls) runs at
the end of each iteration, as P4 runs it. An outer variable used as a loop variable holds its
last value after the loop, as it would in P4.

`for (T x in lo .. hi)`: x takes lo, lo + 1, ..., hi (both compile-time; none when lo > hi).
`for (T x in {a, b, ...})`: x takes each item in turn; an item that is not a compile-time
value is read once, before the first iteration (as p4c's front end evaluates the list),
into a temporary that x then denotes. `for (H x in hdr.stack)`: x is a header local that
each iteration copies the next element into.

`break` and `continue` compile to markers that `inlining.lower_returns` makes real: a
`continue` skips the rest of its iteration's body, a `break` the rest of the unrolled loop.
An iteration whose body breaks unconditionally ends the unrolling there.
"""

from dataclasses import replace
from typing import TYPE_CHECKING

from dplab.p4 import signed
from dplab.p4.errors import Loc, P4Error
from dplab.p4.exprs import Env, const
from dplab.p4.inlining import lower_returns
from dplab.p4.limits import MAX_UNROLLED, MAX_UNROLLED_COPIES
from dplab.p4.local_vars import compound_local, copy_compound
from dplab.p4.syntax import Node
from dplab.p4.types import (
    Bits,
    BoolType,
    HeaderRef,
    Signed,
    StackRef,
    StructType,
    Val,
    type_name,
    width_of,
)

if TYPE_CHECKING:
    from dplab.p4.statements import Scope, StatementCompiler

BREAK = "$break"        # marker statement kinds; never left in the IR
CONTINUE = "$continue"


def check_loop_assignment(node: Node, env: Env, scope: "Scope") -> None:
    """Refuses an assignment in a loop's body to one of its compile-time variables."""
    target = node.target
    if target.kind == "name" and scope.loop_vars and target.name in scope.loop_vars:
        bound = env.get(target.name)
        if isinstance(bound, Val) and bound.const is not None and not bound.is_field:
            raise P4Error(target.loc, f"loop variable {target.name} cannot be assigned in the "
                          "loop's body: the loop is unrolled at compile time, so only its "
                          "update may change it")


class LoopUnroller:
    """Unrolls one `for` statement into straight IR statements."""

    def __init__(self, stmts: "StatementCompiler", env: Env, scope: "Scope") -> None:
        self.stmts = stmts
        self.env = dict(env)   # the loop's own scope: its variables end with it
        self.scope = scope
        self.flags: dict[str, dict] = {}

    def flag(self, marker: str, loc: Loc) -> dict:
        """The loop's one `$locals` flag for `marker` (made on first use)."""
        if marker not in self.flags:
            val = self.stmts.program.new_local(marker, BoolType(), loc)
            self.flags[marker] = {"inst": val.ir["inst"], "field": val.ir["field"]}
        return self.flags[marker]

    def iteration(self, body: Node, env: Env, loop_vars: frozenset[str]) -> list[dict]:
        """One copy of the body, its `continue`s made real."""
        self.stmts.program.unrolled += 1
        if self.stmts.program.unrolled > MAX_UNROLLED_COPIES:
            raise P4Error(body.loc, f"the program's loops make more than "
                          f"{MAX_UNROLLED_COPIES} copies of loop bodies when unrolled at "
                          "compile time")
        scope = replace(self.scope, loop_vars=loop_vars | (self.scope.loop_vars or set()))
        out = self.stmts.statement(body, env, scope)
        return lower_returns(out, lambda: self.flag(CONTINUE, body.loc), CONTINUE)

    def finish(self, iterations: list[list[dict]], loc: Loc) -> list[dict]:
        flat = [stmt for body in iterations for stmt in body]
        return lower_returns(flat, lambda: self.flag(BREAK, loc), BREAK)

    # --- for (init; cond; update) ---------------------------------------------------
    def c_style(self, node: Node) -> list[dict]:
        out, outer = self.init(node.init)
        names = frozenset(self.loop_types)
        iterations: list[list[dict]] = []
        while self.condition(node):
            self.count(len(iterations), node.loc)
            env = dict(self.env)
            body = self.outer_values(outer) + self.iteration(node.body, env, names)
            for clause in node.update:
                body.extend(self.update(clause, env))
            iterations.append(body)
            if any(stmt["kind"] == BREAK for stmt in body):
                break
        # an outer variable keeps its value where the loop ends (a break: its iteration's)
        iterations.append(self.outer_values(outer))
        return out + self.finish(iterations, node.loc)

    def outer_values(self, outer: dict[str, dict]) -> list[dict]:
        return [{"kind": "assign", "dst": dst, "src": self.env[name].ir}
                for name, dst in outer.items()]

    def init(self, clauses: list[Node]) -> tuple[list[dict], dict[str, dict]]:
        """The loop variables from `init` (self.loop_types), the statements of its other
        clauses, and the outer variables it uses as loop variables (their destinations)."""
        self.loop_types: dict[str, object] = {}
        out: list[dict] = []
        outer: dict[str, dict] = {}
        for clause in clauses:
            if clause.kind == "var":
                self.stmts.program.check_shadowing(clause, self.env, self.scope.params)
                typ = self.stmts.program.resolve_type(clause.type)
                self.bind(clause.name, typ, clause.init or Node("int", clause.loc, value=0,
                                                                width=None), clause.loc)
                continue
            target = self.env.get(clause.target.name) if clause.kind == "assign" and \
                clause.target.kind == "name" else None
            if isinstance(target, Val) and target.is_field:
                value = self.stmts.exprs.typed(clause.value, self.env, target.type)
                if value.const is not None:
                    self.loop_types[clause.target.name] = target.type
                    self.env[clause.target.name] = const(value.const, target.ir["w"],
                                                         target.type)
                    outer[clause.target.name] = {"inst": target.ir["inst"],
                                                 "field": target.ir["field"]}
                    continue
            out.extend(self.stmts.statement(clause, self.env, self.scope))
        return out, outer

    def bind(self, name: str, typ: object, value: Node, loc: Loc) -> None:
        if isinstance(typ, StructType) or width_of(typ) is None:
            raise P4Error(loc, f"loop variable {name} is a {type_name(typ)}: only bit<W>, "
                          "int<W>, bool and enum loop variables are supported (they are "
                          "compile-time values while the loop is unrolled)")
        val = self.stmts.exprs.typed(value, self.env, typ)
        if val.const is None:
            raise P4Error(value.loc, f"loop variable {name} must start from a compile-time "
                          "value (the loop is unrolled at compile time)")
        self.loop_types[name] = typ
        self.env[name] = const(val.const, val.ir["w"], typ)

    def condition(self, node: Node) -> bool:
        if node.cond is None:
            return True
        outer, self.stmts.exprs.pending = self.stmts.exprs.pending, []
        try:
            cond = self.stmts.exprs.condition(node.cond, self.env)
            ran = self.stmts.exprs.pending
        finally:
            self.stmts.exprs.pending = outer
        if cond.const is None or ran:
            raise P4Error(node.cond.loc, "a for loop's condition must be known at compile "
                          "time (loops are unrolled): compare its loop variables with "
                          "constants")
        return bool(cond.const)

    def update(self, clause: Node, env: Env) -> list[dict]:
        """One update clause at the end of an iteration: a loop variable's new value (no
        statement), or the clause's statements."""
        name = clause.target.name if clause.kind == "assign" and \
            clause.target.kind == "name" else None
        if name not in self.loop_types:
            return self.stmts.statement(clause, env, self.scope)
        typ = self.loop_types[name]
        value = self.stmts.exprs.typed(clause.value, self.env, typ)
        if value.const is None:
            raise P4Error(clause.value.loc, f"the update of loop variable {name} must be a "
                          "compile-time value (the loop is unrolled at compile time)")
        self.env[name] = const(value.const, value.ir["w"], typ)
        return []

    @staticmethod
    def count(done: int, loc: Loc) -> None:
        if done >= MAX_UNROLLED:
            raise P4Error(loc, f"this loop runs more than {MAX_UNROLLED} times when unrolled "
                          "at compile time")

    # --- for (T x in collection) ----------------------------------------------------
    def for_in(self, node: Node) -> list[dict]:
        self.stmts.program.check_shadowing(node, self.env, self.scope.params)
        typ = self.stmts.program.resolve_type(node.type)
        if node.hi is not None:
            return self.over(node, [(const(v, typ.width, typ), []) for v in
                                    self.range_values(node, typ)])
        if node.items.kind == "list":
            return self.over_list(node, typ)
        stack = self.stmts.exprs.named(node.items, self.env)
        if isinstance(stack, StackRef):
            return self.over_stack(node, typ, stack)
        raise P4Error(node.items.loc, "a for loop can go over a range (lo .. hi), a list "
                      "{...} or a header stack")

    def range_values(self, node: Node, typ: object) -> range:
        if not isinstance(typ, Bits | Signed):
            raise P4Error(node.type.loc, f"a range needs a bit<W> or int<W> loop variable, "
                          f"not {type_name(typ)}")
        bounds = []
        for bound in (node.items, node.hi):
            val = self.stmts.exprs.typed(bound, self.env, typ)
            if val.const is None:
                raise P4Error(bound.loc, "a range's bounds must be compile-time values (the "
                              "loop is unrolled at compile time)")
            bounds.append(signed.as_signed(val.const, typ.width) if isinstance(typ, Signed)
                          else val.const)
        lo, hi = bounds
        if hi - lo >= MAX_UNROLLED:
            self.count(hi - lo, node.loc)
        return range(lo, hi + 1)

    def over(self, node: Node, values: list[tuple[object, list[dict]]]) -> list[dict]:
        """The body once per value (what x denotes, the statements that set it first)."""
        names = frozenset([node.name])
        iterations = []
        for value, setup in values:
            env = dict(self.env)
            env[node.name] = value
            body = setup + self.iteration(node.body, env, names)
            iterations.append(body)
            if any(stmt["kind"] == BREAK for stmt in body):
                break
        return self.finish(iterations, node.loc)

    def over_list(self, node: Node, typ: object) -> list[dict]:
        """Items read once, before the first iteration; constants stay constants."""
        self.count(len(node.items.items) - 1, node.loc)
        before: list[dict] = []
        values = []
        for item in node.items.items:
            val = self.stmts.exprs.typed(item, self.env, typ)
            if val.type != typ and val.const is None:
                raise P4Error(item.loc, f"a {type_name(val.type)} item for loop variable "
                              f"{node.name} ({type_name(typ)})")
            if val.const is None:
                temp = self.stmts.program.new_local(node.name, typ, item.loc)
                before.append({"kind": "assign", "dst": {"inst": temp.ir["inst"],
                                                         "field": temp.ir["field"]},
                               "src": val.ir})
                val = temp
            else:
                val = const(val.const, val.ir["w"], typ)
            values.append((val, []))
        return before + self.over(node, values)

    def over_stack(self, node: Node, typ: object, stack: StackRef) -> list[dict]:
        if typ != stack.type.base:
            raise P4Error(node.type.loc, f"the elements of this stack are "
                          f"{type_name(stack.type.base)}, not {type_name(typ)}")
        local, init = compound_local(self.stmts.program, node.name, typ, node.name_loc)
        values = [(local, copy_compound(local, HeaderRef(inst, typ), node.loc))
                  for inst in stack.instances]
        return init + self.over(node, values)


def unroll(stmts: "StatementCompiler", node: Node, env: Env, scope: "Scope") -> list[dict]:
    """The IR statements of one `for` statement (node kind "for" or "for_in")."""
    if scope.in_parser:
        raise P4Error(node.loc, "'for' is not allowed in parser states")
    unroller = LoopUnroller(stmts, env, scope)
    return unroller.c_style(node) if node.kind == "for" else unroller.for_in(node)


def jump(node: Node, scope: "Scope") -> list[dict]:
    """`break` / `continue`: its marker, inside a loop."""
    if scope.loop_vars is None:
        raise P4Error(node.loc, f"'{node.kind}' is allowed only inside a for loop")
    return [{"kind": BREAK if node.kind == "break" else CONTINUE}]
