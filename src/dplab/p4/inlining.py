"""Calls the IR has no statement for, lowered at each call site (docs/p4-ir.md §6, §7):
copy-in/copy-out of directional parameters, and `return` out of a body that is inlined
(a function, a sub-control's apply) or that must copy out before it ends.

P4_16 (6.8, "calling convention") passes `out`/`inout` arguments by copy-in/copy-out. The
compiler binds such a parameter to the caller's l-value itself when no difference can show:
the body reaches no storage but its own parameters and locals, and no two parameters share
storage. Otherwise the parameter is a temporary, copied in at the start and out at the end
(and before an `exit`, which still copies out).

A `return` inside an inlined body compiles to a marker (`RETURN`) that `lower_returns`
turns into "set a flag, skip the rest": every statement after one that may return runs
under `if (!flag)`.
"""

from collections.abc import Callable

from dplab.p4.syntax import Node
from dplab.p4.types import (
    ActionRef,
    ControlRef,
    FunctionRef,
    HeaderRef,
    StackRef,
    StructRef,
    UserFunction,
    Val,
)

RETURN = "$return"   # the marker statement's kind; never left in the IR
_NESTED = ("then", "else")


def storage(target: object) -> set:
    """The header instances and fields an l-value occupies (for overlap tests)."""
    if isinstance(target, Val):
        return {(target.ir["inst"], target.ir["field"])}
    if isinstance(target, HeaderRef):
        return {(inst, None) for inst in target.parts}
    if isinstance(target, StackRef):
        return {(inst, None) for inst in target.instances}
    if isinstance(target, StructRef):
        return set().union(*(storage(m) for m in target.members.values()))
    return set()


def _overlap(a: set, b: set) -> bool:
    insts_a, insts_b = {i for i, f in a if f is None}, {i for i, f in b if f is None}
    return bool(a & b) or any(i in insts_b for i, _ in a) or any(i in insts_a for i, _ in b)


def needs_copies(body: list[Node], own: set[str], env: dict, outs: list[object]) -> bool:
    """Whether binding `out`/`inout` parameters to the caller's l-values (`outs`) could
    differ from copy-in/copy-out: two of them share storage, or the body (`own`: its
    parameter names) names storage or a callable outside its parameters and locals."""
    seen: set = set()
    for target in outs:
        occupied = storage(target)
        if _overlap(seen, occupied):
            return True
        seen |= occupied
    return any(_reaches_outside(node, set(own), env) for node in body)


def _reaches_outside(node: object, own: set[str], env: dict) -> bool:
    if isinstance(node, list):
        return any(_reaches_outside(item, own, env) for item in node)
    if not isinstance(node, Node):
        return False
    if node.kind in ("var", "const"):
        own.add(node.name)   # a local from here on (its initialiser is walked below)
    if node.kind == "call" and node.func.kind == "name" and not node.args \
            and isinstance(env.get(node.func.name), FunctionRef):
        return True   # mark_to_drop() writes standard_metadata without naming it
    if node.kind == "name" and node.name not in own:
        ref = env.get(node.name)
        if isinstance(ref, Val):
            return ref.is_field
        return isinstance(ref, HeaderRef | StructRef | StackRef | ActionRef | ControlRef
                          | UserFunction)
    return any(_reaches_outside(value, own, env) for key, value in vars(node).items()
               if key not in ("loc", "annos", "depth"))


def lower_returns(stmts: list[dict], new_flag: Callable[[], dict],
                  marker: str = RETURN) -> list[dict]:
    """`stmts` with every `marker` statement (RETURN; a loop's break and continue,
    dplab/p4/loops.py) made real: the rest of `stmts` is skipped. A flag (`new_flag()`: a
    destination, made at most once) is used only when a marker is nested."""
    flag: list[dict] = []

    def get_flag() -> dict:
        if not flag:
            flag.append(new_flag())
        return flag[0]

    out = _lower(stmts, None, get_flag, marker)
    if flag:   # the body may run more than once per packet: clear the flag first
        out.insert(0, _set(flag[0], 0))
    return out


def _lower(stmts: list[dict], flag: Callable[[], dict] | None,
           get_flag: Callable[[], dict], marker: str) -> list[dict]:
    out: list[dict] = []
    for i, stmt in enumerate(stmts):
        if stmt["kind"] == marker:
            if flag is not None:
                out.append(_set(flag(), 1))
            return out
        if not _contains(stmt, marker):
            out.append(stmt)
            continue
        out.append(_lower_nested(stmt, get_flag, marker))
        rest = _lower(stmts[i + 1:], flag, get_flag, marker)
        if rest:
            dst = get_flag()
            out.append({"kind": "if", "cond": {"op": "lnot", "w": 1, "a": _read(dst)},
                        "then": rest, "else": []})
        return out
    return out


def _lower_nested(stmt: dict, get_flag: Callable[[], dict], marker: str) -> dict:
    stmt = dict(stmt)
    for key in _NESTED:
        if key in stmt:
            stmt[key] = _lower(stmt[key], get_flag, get_flag, marker)
    if stmt.get("switch"):
        switch = dict(stmt["switch"])
        switch["cases"] = [{**case, "body": _lower(case["body"], get_flag, get_flag, marker)}
                           for case in switch["cases"]]
        if switch.get("default") is not None:
            switch["default"] = _lower(switch["default"], get_flag, get_flag, marker)
        stmt["switch"] = switch
    return stmt


def _contains(stmt: dict, marker: str) -> bool:
    """Whether `stmt` is or holds a `marker` statement."""
    if stmt["kind"] == marker:
        return True
    lists = [stmt.get(key, []) for key in _NESTED]
    if stmt.get("switch"):
        lists += [c["body"] for c in stmt["switch"]["cases"]]
        lists.append(stmt["switch"].get("default") or [])
    return any(_contains(s, marker) for body in lists for s in body)


def copy_out_before_exits(stmts: list[dict], copy_out: list[dict]) -> list[dict]:
    """`stmts` with `copy_out` run before every `exit` (P4_16: exit still copies out)."""
    out: list[dict] = []
    for stmt in stmts:
        if stmt["kind"] == "exit":
            out.extend(copy_out)
        stmt = dict(stmt)
        for key in _NESTED:
            if key in stmt:
                stmt[key] = copy_out_before_exits(stmt[key], copy_out)
        if stmt.get("switch"):
            switch = dict(stmt["switch"])
            switch["cases"] = [{**c, "body": copy_out_before_exits(c["body"], copy_out)}
                               for c in switch["cases"]]
            if switch.get("default") is not None:
                switch["default"] = copy_out_before_exits(switch["default"], copy_out)
            stmt["switch"] = switch
        out.append(stmt)
    return out


def _set(dst: dict, value: int) -> dict:
    return {"kind": "assign", "dst": dst, "src": {"op": "const", "w": 1, "v": hex(value)}}


def _read(dst: dict) -> dict:
    return {"op": "field", "w": 1, "inst": dst["inst"], "field": dst["field"]}
