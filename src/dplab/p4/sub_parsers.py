"""The parser's states, with parsers instantiated in it inlined (P4_16 "Sub-parsers",
docs/p4-ir.md §5).

`SubP() sp;` in a parser and `sp.apply(packet, hdr.inner, ...);` in one of its states: the
state is split at the call. The part before it ends by going to a copy of the sub-parser's
start state; the sub-parser's `accept` goes on with the rest of the calling state (named
`state$1`, `state$2` ... after each call), its `reject` rejects the whole parse, as p4c's
inliner makes it. Each call gets its own copy of the sub-parser's states, named
`<instance path>.<state>` (`$N` after the path from a second call on), so one instance
may be applied from several states.

A sub-parser's `out` and `inout` parameters are bound to the caller's l-values themselves,
its `in` ones copied at the call. P4's copy-in/copy-out differs from this only for an `out`
parameter the sub-parser reads before writing it (P4: unspecified, an invalid header) or
leaves unwritten (P4: the caller's value is overwritten by that unspecified one), and for
arguments that alias each other.

Transitions are built with state names and resolved to indices at the end: a parser
without sub-parsers keeps its states, in order, at the indices it always had.
"""

from dataclasses import dataclass, field

from dplab.p4 import names, value_sets
from dplab.p4.errors import P4Error
from dplab.p4.statements import Scope
from dplab.p4.syntax import Node
from dplab.p4.types import ExternRef, ParserRef, type_name

ACCEPT, REJECT = -1, -2


@dataclass
class ParserBuilder:
    """Collects the IR states of the top-level parser and every inlined sub-parser."""

    c: object                                     # dplab.p4.compiler.Compiler
    states: list[dict] = field(default_factory=list)
    copies: dict[str, int] = field(default_factory=dict)   # instance path -> calls so far
    # a sub-parser instance's value sets, by qualified name: one per instance, whichever
    # of its applies' state copies selects on it
    value_sets: dict[str, object] = field(default_factory=dict)

    def top(self, parser: Node, env: dict) -> dict:
        """The IR `parser` of the program's parser block."""
        scope = Scope(in_parser=True, params=frozenset(p.name for p in parser.params))
        init = self.locals(parser, env, scope, names.block_name(parser))
        start = self.add(parser, env, scope, "", names.block_name(parser), init, ACCEPT)
        index = {s["name"]: i for i, s in enumerate(self.states)}
        for state in self.states:
            _resolve(state["transition"], index)
        return {"start": index[start], "states": self.states}

    def locals(self, parser: Node, env: dict, scope: Scope, owner: str) -> list[dict]:
        """The parser's local declarations: value sets (named under the instance path in a
        sub-parser, as p4c names them), sub-parser instances, and the variables'
        initialisation (run on entering its start state)."""
        init: list[dict] = []
        for local in parser.locals:
            if value_sets.is_value_set(local):
                path = names.qualified(local, owner)
                if path in self.value_sets:   # a second apply of the same instance
                    env[local.name] = self.value_sets[path]
                    continue
                value_sets.declare(self.c, local, owner, env)
                self.value_sets[path] = env[local.name]
                self.c.declared.append(("value_set", local, env[local.name]))
            elif local.kind == "instance" and self.sub_parser_decl(local) is not None:
                self.c.check_shadowing(local, env, scope.params)
                if local.args:
                    raise P4Error(local.loc, f"parser '{local.type.name}' takes no "
                                  "constructor arguments")
                env[local.name] = ParserRef(self.sub_parser_decl(local),
                                            names.qualified(local, owner))
            else:
                init.extend(self.c.stmts.statement(local, env, scope))
        return init

    def sub_parser_decl(self, local: Node) -> Node | None:
        decl = self.c.decls.get(local.type.name) if local.type.kind == "named" else None
        return decl if decl is not None and decl.kind == "parser" else None

    def add(self, parser: Node, env: dict, scope: Scope, prefix: str, owner: str,
            init: list[dict], accept_to: object) -> str:
        """Adds the parser's states (names prefixed by `prefix`) with `accept` going to
        `accept_to`; returns its start state's name."""
        declared = {s.name for s in parser.states}
        if "start" not in declared:
            raise P4Error(parser.loc, "the parser has no 'start' state" if not prefix
                          else f"parser {parser.name} has no 'start' state")
        targets = {n: prefix + n for n in declared}
        for state in parser.states:
            if state.name in ("accept", "reject"):
                raise P4Error(state.loc, f"'{state.name}' is a reserved state name")
        targets |= {"accept": accept_to, "reject": REJECT}
        for state in parser.states:
            body = list(init) if state.name == "start" else []
            self.add_state(state, dict(env), scope, targets, body, prefix + state.name)
        return prefix + "start"

    def add_state(self, state: Node, env: dict, scope: Scope, targets: dict,
                  body: list[dict], name: str) -> None:
        """The state, split after each sub-parser call into `name`, `name$1`, ..."""
        current, part = name, 0
        for node in state.body:
            call = _sub_parser_call(node, env)
            if call is None:
                compiled = self.c.stmts.statement(node, env, scope)
                self.c.exprs.stack_last.note(compiled, node.loc)
                body += compiled
                continue
            part += 1
            after = f"{name}${part}"
            start = self.call(env[call.func.base.name], call, env, body, after)
            self.states.append({"name": current, "body": body,
                                "transition": {"kind": "goto", "next": start}})
            current, body = after, []
        self.states.append({"name": current, "body": body,
                            "transition": self.c.transition(state, targets, env)})

    def call(self, ref: ParserRef, call: Node, env: dict, body: list[dict],
             back_to: str) -> str:
        """`inst.apply(args)`: a copy of the sub-parser's states whose accept goes to
        `back_to`; the copy-in of its `in` parameters ends `body`. Returns the copy's
        start state."""
        decl = ref.decl
        if decl.name in self.c.inlining:
            raise P4Error(call.loc, f"parser {decl.name} applies itself (P4 has no recursion)")
        calls = self.copies.get(ref.path, 0)
        self.copies[ref.path] = calls + 1
        prefix = ref.path + (f"${calls + 1}" if calls else "") + "."
        inner = dict(self.c.globals)
        body.extend(self.bind(decl, call, env, inner))
        scope = Scope(in_parser=True, params=frozenset(p.name for p in decl.params))
        self.c.inlining.append(decl.name)
        try:
            init = self.locals(decl, inner, scope, ref.path)
            return self.add(decl, inner, scope, prefix, ref.path, init, back_to)
        finally:
            self.c.inlining.pop()

    def bind(self, decl: Node, call: Node, env: dict, inner: dict) -> list[dict]:
        """The sub-parser's parameters in `inner`; returns the copy-in of its `in` ones."""
        params = [(p, self.c.resolve_type(p.type)) for p in decl.params]
        args = self.c.with_defaults(params, call, f"parser {decl.name}")
        prologue: list[dict] = []
        plain = []
        for (param, typ), arg in zip(params, args, strict=True):
            if type_name(typ) in ("packet_in", "packet_out"):
                packet = self.c.exprs.named(arg, env)
                if not isinstance(packet, ExternRef) or packet.kind != type_name(typ):
                    raise P4Error(arg.loc, f"parameter {param.name} needs the "
                                  f"{type_name(typ)}")
                inner[param.name] = packet
            else:
                plain.append(((param, typ), arg))
        targets = self.c.bind_args([p for p, _ in plain], [a for _, a in plain], env)
        for ((param, typ), _), target in zip(plain, targets, strict=True):
            inner[param.name], copy_in, _ = self.c.bound_param(param, typ, target)
            prologue.extend(copy_in)
        return prologue


def _sub_parser_call(node: Node, env: dict) -> Node | None:
    """The call of `node` if it is `inst.apply(...)` of a sub-parser instance."""
    if node.kind != "call_stmt":
        return None
    func = node.call.func
    if func.kind == "member" and func.name == "apply" and func.base.kind == "name" \
            and isinstance(env.get(func.base.name), ParserRef):
        return node.call
    return None


def _resolve(transition: dict, index: dict[str, int]) -> None:
    """State names in a transition made indices (accept and reject already are)."""
    if transition["kind"] == "goto":
        transition["next"] = _index(transition["next"], index)
        return
    for case in transition["cases"]:
        case["next"] = _index(case["next"], index)


def _index(target: object, index: dict[str, int]) -> int:
    return target if isinstance(target, int) else index[target]
