"""Statements of parsers, controls and actions -> IR statement lists (docs/p4-ir.md §5, §7)."""

from dataclasses import dataclass, field

from dplab.p4 import loops, stack_index, unions, varbit
from dplab.p4.errors import P4Error
from dplab.p4.exprs import Env, ExprChecker, const, lookahead_field
from dplab.p4.inlining import RETURN
from dplab.p4.local_vars import compound_local, copy_compound
from dplab.p4.stack_index import DynamicIndex
from dplab.p4.syntax import Node
from dplab.p4.types import (
    ActionRef,
    Bits,
    BoolType,
    ControlRef,
    EnumType,
    ExternRef,
    FunctionRef,
    HeaderRef,
    IntType,
    ParserRef,
    Signed,
    StructRef,
    StructType,
    TableRef,
    UserFunction,
    Val,
    Varbit,
    type_name,
    width_of,
)

HASH_ALGOS = {"crc16", "crc32", "identity", "csum16", "xor16"}
STANDARD_DROP = [("egress_spec", 1, 9, 511), ("mcast_grp", 11, 16, 0)]


@dataclass
class Scope:
    """What statements may do where they are: parser or control, inside an action or not."""

    in_parser: bool = False
    in_action: bool = False
    locals_: list[dict] = field(default_factory=list)
    params: frozenset[str] = frozenset()   # the enclosing parser's, control's, action's
    # An inlined body (function, sub-control) or one that copies out: `return` becomes
    # the inlining.RETURN marker, made real by inlining.lower_returns.
    lower_return: bool = False
    function: str | None = None    # the enclosing function's name
    result: tuple[dict, object] | None = None   # where its return value goes, and its type
    # Inside a for loop's body: the names of the loops' compile-time variables (None
    # outside any loop, where break and continue are refused).
    loop_vars: frozenset[str] | None = None


class StatementCompiler:
    def __init__(self, exprs: ExprChecker, program: "object") -> None:
        self.exprs = exprs
        self.program = program   # dplab.p4.compiler.Compiler: actions, tables, locals

    def block(self, nodes: list[Node], env: Env, scope: Scope) -> list[dict]:
        env = dict(env)
        out: list[dict] = []
        for node in nodes:
            out.extend(self.statement(node, env, scope))
        return out

    def statement(self, node: Node, env: Env, scope: Scope) -> list[dict]:
        """One statement, after what its expressions run first (exprs.pending)."""
        outer, self.exprs.pending = self.exprs.pending, []
        try:
            try:
                out = self._statement(node, env, scope)
            except DynamicIndex as dyn:
                self.exprs.pending = []
                out = stack_index.expand(self, node, env, scope, dyn)
            return self.exprs.pending + out
        finally:
            self.exprs.pending = outer

    def _statement(self, node: Node, env: Env, scope: Scope) -> list[dict]:
        kind = node.kind
        if kind == "block":
            return self.block(node.body, env, scope)
        if kind == "assign":
            loops.check_loop_assignment(node, env, scope)
            return self.assign(node, env)
        if kind == "if":
            if scope.in_parser:
                called = f" (function {scope.function} is called in one)" \
                    if scope.function else ""
                raise P4Error(node.loc, f"'if' is not supported in parser states{called}")
            cond = self.exprs.condition(node.cond, env)
            then = self.statement(node.then, env, scope)
            other = self.statement(node.other, env, scope) if node.other else []
            return [{"kind": "if", "cond": cond.ir, "then": then, "else": other}]
        if kind == "return":
            return self.return_(node, env, scope)
        if kind == "exit":
            if scope.in_parser or scope.function:
                where = f"function {scope.function}" if scope.function else "parser"
                raise P4Error(node.loc, f"'exit' is not allowed in a {where}")
            return [{"kind": kind}]
        if kind == "var":
            self.program.check_shadowing(node, env, scope.params)
            return self.variable(node, env, scope)
        if kind == "const":
            self.program.check_shadowing(node, env, scope.params)
            env[node.name] = self.program.constant(node, env)
            return []
        if kind == "switch":
            return self.switch(node, env, scope)
        if kind in ("for", "for_in"):
            return loops.unroll(self, node, env, scope)
        if kind in ("break", "continue"):
            return loops.jump(node, scope)
        if kind == "call_stmt":
            return self.call(node.call, env, scope)
        raise P4Error(node.loc, f"'{kind}' is not allowed here")

    def return_(self, node: Node, env: Env, scope: Scope) -> list[dict]:
        if scope.in_parser and not scope.function:
            raise P4Error(node.loc, "'return' is not allowed in a parser")
        out: list[dict] = []
        if node.value is not None:
            if scope.result is None:
                raise P4Error(node.value.loc, "a return value is allowed only in a function "
                              "that returns one")
            dst, typ = scope.result
            src = self.exprs.typed(node.value, env, typ)
            if src.type != typ and not isinstance(src.type, IntType):
                raise P4Error(node.value.loc, f"function {scope.function} returns "
                              f"{type_name(typ)}, not {type_name(src.type)}")
            out.append({"kind": "assign", "dst": dst, "src": src.ir})
        elif scope.result is not None:
            raise P4Error(node.loc, f"function {scope.function} must return a "
                          f"{type_name(scope.result[1])}")
        return out + [{"kind": RETURN if scope.lower_return else "return"}]

    def assign(self, node: Node, env: Env) -> list[dict]:
        try:
            dst, typ = self.exprs.destination(node.target, env)
        except DynamicIndex as dyn:
            dyn.in_target = True
            raise
        if "compound" in dst:
            return self.assign_compound(dst["compound"], node, env)
        if "varbit" in dst:
            source = self.exprs.named(node.value, env)
            return varbit.assign(dst["varbit"], source, node.value.loc)
        src = self.exprs.typed(node.value, env, typ)
        if src.type != typ and not (isinstance(src.type, IntType)):
            raise P4Error(node.value.loc, f"cannot assign {type_name(src.type)} to "
                          f"{type_name(typ)}")
        return [{"kind": "assign", "dst": dst, "src": src.ir}]

    def assign_compound(self, target: object, node: Node, env: Env) -> list[dict]:
        source = self.exprs.named(node.value, env)
        if isinstance(target, HeaderRef | StructRef) and \
                isinstance(source, HeaderRef | StructRef) and source.type == target.type:
            return copy_compound(target, source, node.loc)
        if isinstance(target, HeaderRef) and node.value.kind == "call":
            return self.assign_lookahead(target, node, env)
        if isinstance(target, HeaderRef | StructRef) and node.value.kind == "list":
            return self.assign_list(target, node, env)
        if isinstance(source, HeaderRef | StructRef):
            raise P4Error(node.value.loc, f"cannot assign {type_name(source.type)} to "
                          f"{type_name(target.type)}")
        what = "a list expression" if node.value.kind == "list" else "this"
        raise P4Error(node.loc, f"cannot assign {what} to {type_name(target.type)} (a whole "
                      f"{'header' if isinstance(target, HeaderRef) else 'struct'}): only a "
                      "value of its own type, a lookahead (headers) or a {...} of its fields "
                      "is supported")

    def assign_list(self, target: StructRef | HeaderRef, node: Node, env: Env) -> list[dict]:
        """`s = {e1, ..., en}`: the spec's list expression cast to the struct or header,
        field i taking e_i (so `{}` for a struct without fields assigns nothing); a header
        assigned a list becomes valid (P4_16 8.12)."""
        out = []
        if isinstance(target, HeaderRef):
            out.append({"kind": "set_valid", "inst": target.inst})
            out.extend(unions.invalidate_siblings(target))
            target = StructRef(target.type, {
                name: self.exprs.member(target, Node("member", node.loc, name=name))
                for name, _, _ in target.type.fields})
        members = list(target.members.items())
        if len(node.value.items) != len(members):
            raise P4Error(node.value.loc, f"{type_name(target.type)} has {len(members)} "
                          f"field(s), the list {len(node.value.items)}")
        for (name, member), item in zip(members, node.value.items, strict=True):
            if not isinstance(member, Val):
                raise P4Error(item.loc, f"field {name} is not a scalar: a list expression "
                              "may set only bit<W>/bool fields here")
            src = self.exprs.typed(item, env, member.type)
            if src.type != member.type and not isinstance(src.type, IntType):
                raise P4Error(item.loc, f"cannot assign {type_name(src.type)} to field {name} "
                              f"({type_name(member.type)})")
            out.append({"kind": "assign", "dst": {"inst": member.ir["inst"],
                                                  "field": member.ir["field"]}, "src": src.ir})
        return out

    def assign_lookahead(self, target: HeaderRef, node: Node, env: Env) -> list[dict]:
        """`hdr.h = packet.lookahead<H>()`: a valid copy of the next bits, field by field."""
        varbit.refuse("lookahead", target.type, node.value.loc)
        peek = self.exprs.value(node.value, env)
        if peek.type != target.type or peek.ir.get("op") != "lookahead":
            raise P4Error(node.loc, f"cannot assign this to a {type_name(target.type)}")
        out: list[dict] = [{"kind": "set_valid", "inst": target.inst},
                           *unions.invalidate_siblings(target)]
        for index, (fname, _, _) in enumerate(target.type.fields):
            field = lookahead_field(peek, fname, node.value.loc)
            out.append({"kind": "assign", "dst": {"inst": target.inst, "field": index},
                        "src": field.ir})
        return out

    def variable(self, node: Node, env: Env, scope: Scope) -> list[dict]:
        typ = self.program.resolve_type(node.type)
        width = width_of(typ)
        if isinstance(typ, StructType):
            return self.compound_variable(node, typ, env, scope)
        if isinstance(typ, Varbit):
            return self.varbit_variable(node, typ, env)
        if width is None:
            raise P4Error(node.loc, f"local variables of type {type_name(typ)} are not supported")
        val = self.program.new_local(node.name, typ, node.loc)
        env[node.name] = val
        dst = {"inst": val.ir["inst"], "field": val.ir["field"]}
        try:
            init = self.exprs.typed(node.init, env, typ) if node.init else const(0, width)
        except DynamicIndex:
            return self.initialise_per_element(node, env, scope)
        if node.init and init.type != typ and not isinstance(typ, BoolType):
            raise P4Error(node.init.loc, f"cannot initialise {type_name(typ)} with "
                          f"{type_name(init.type)}")
        return [{"kind": "assign", "dst": dst, "src": init.ir}]

    def varbit_variable(self, node: Node, typ: Varbit, env: Env) -> list[dict]:
        """`varbit<W> v [= h.f];` (dplab/p4/varbit.py): empty, or a copy of a varbit field
        of its width, compiled before the name is in scope."""
        label = f"$local.{node.name}${len(self.program.ir['instances'])}"
        val, init = varbit.local(self.program, label, node.name, typ, node.type.loc)
        if node.init is not None:
            init = varbit.assign(val, self.exprs.named(node.init, env), node.init.loc)
        env[node.name] = val
        return init

    def compound_variable(self, node: Node, typ: StructType, env: Env,
                          scope: Scope) -> list[dict]:
        """A header or struct local (dplab/p4/local_vars.py); its initialiser is compiled
        as an assignment, before the name is in scope."""
        ref, init = compound_local(self.program, node.name, typ, node.type.loc)
        if node.init is not None:
            try:
                init = self.assign_compound(ref, Node("assign", node.init.loc, target=None,
                                                      value=node.init), env)
            except DynamicIndex:
                env[node.name] = ref
                return self.initialise_per_element(node, env, scope)
        env[node.name] = ref
        return init

    def initialise_per_element(self, node: Node, env: Env, scope: Scope) -> list[dict]:
        """`T x = ...s[e]...;` with a run-time e, x already declared: the initialiser as an
        assignment, expanded by stack_index (what its first try ran first is dropped)."""
        self.exprs.pending = []
        name = Node("name", node.loc, name=node.name)
        return self.statement(Node("assign", node.init.loc, target=name, value=node.init),
                              env, scope)

    def switch(self, node: Node, env: Env, scope: Scope) -> list[dict]:
        subject = node.subject
        if not (subject.kind == "member" and subject.name == "action_run"
                and subject.base.kind == "call"):
            return self.value_switch(node, env, scope)
        table = self.table_of_apply(subject.base, env)
        cases, default, pending = [], None, []
        for case in node.cases:
            if case.label == "default":
                default = self.block(case.body.body, env, scope) if case.body else []
                continue
            pending.append(self.program.table_action_index(table, case.label, case.loc, env))
            if case.body is not None:
                cases.append({"actions": pending, "body": self.block(case.body.body, env, scope)})
                pending = []
        if pending:
            cases.append({"actions": pending, "body": []})
        return [{"kind": "apply", "table": table, "switch": {"cases": cases, "default": default}}]

    def value_switch(self, node: Node, env: Env, scope: Scope) -> list[dict]:
        """`switch (e) { v1: {...} v2: v3: {...} default: {...} }` on a bit<W>, int<W> or
        enum value (P4_16 12.7.2): `e` once into a temporary, then an if/else chain; a
        label without a body shares the next one's."""
        subject = self.exprs.value(node.subject, env)
        if not isinstance(subject.type, Bits | Signed | EnumType):
            raise P4Error(node.loc, "switch needs table.apply().action_run or a "
                          f"bit<W>, int<W> or enum value, not {type_name(subject.type)}")
        temp = self.program.new_local("$switch", subject.type, node.loc)
        out = [{"kind": "assign", "dst": {"inst": temp.ir["inst"], "field": temp.ir["field"]},
                "src": subject.ir}]
        arms: list[tuple[list[dict], list[dict]]] = []   # (conditions, body)
        labels: list[dict] = []
        default: list[dict] = []
        seen: set[int] = set()
        for case in node.cases:
            if case.label == "default":
                if case is not node.cases[-1]:
                    raise P4Error(case.loc, "'default' must be the last switch label")
                default = self.block(case.body.body, env, scope) if case.body else []
                continue
            label = self.exprs.typed(case.expr, env, subject.type)
            if label.const is None or label.type != subject.type:
                raise P4Error(case.loc, f"a switch label must be a compile-time "
                              f"{type_name(subject.type)}")
            if label.const in seen:
                raise P4Error(case.loc, "this label is already listed")
            seen.add(label.const)
            labels.append({"op": "eq", "w": 1, "a": temp.ir, "b": label.ir})
            if case.body is not None:
                arms.append((labels, self.block(case.body.body, env, scope)))
                labels = []
        if labels:   # trailing labels without a body do nothing
            arms.append((labels, []))
        chain = default
        for conds, body in reversed(arms):
            cond = conds[0]
            for more in conds[1:]:
                cond = {"op": "lor", "w": 1, "a": cond, "b": more}
            chain = [{"kind": "if", "cond": cond, "then": body, "else": chain}]
        return out + chain

    def table_of_apply(self, call: Node, env: Env) -> int:
        func = self.exprs.denote(call.func, env)
        if not (isinstance(func, tuple) and func[0] == "method" and isinstance(func[1], TableRef)
                and func[2] == "apply"):
            raise P4Error(call.loc, "expected table.apply()")
        return func[1].index

    # --- calls ---------------------------------------------------------------------
    def call(self, call: Node, env: Env, scope: Scope) -> list[dict]:
        func = self.exprs.denote(call.func, env)
        if isinstance(func, ActionRef):
            return self.program.direct_action_call(func.name, call, env)
        if isinstance(func, FunctionRef):
            return self.function(func.name, call, env, scope)
        if isinstance(func, UserFunction):
            return self.program.inline_function(func, call, env)[0]
        if isinstance(func, tuple) and func[0] == "header_method":
            self.exprs._no_args(call)
            if func[2] == "isValid":
                raise P4Error(call.loc, "isValid() result is unused")
            if func[2] not in ("setValid", "setInvalid"):
                raise P4Error(call.loc, f"{func[2]}() result is unused")
            valid = func[2] == "setValid"
            return varbit.set_validity(func[1], valid) + \
                (unions.invalidate_siblings(func[1]) if valid else [])
        if isinstance(func, tuple) and func[0] == "union_method":
            raise P4Error(call.loc, "isValid() result is unused")
        if isinstance(func, tuple) and func[0] == "stack_method" and func[2] in \
                ("push_front", "pop_front"):
            count = self._const_arg(call, 0, env)
            return [{"kind": "stack_push" if func[2] == "push_front" else "stack_pop",
                     "stack": func[1].stack, "count": count}]
        if isinstance(func, tuple) and func[0] == "method":
            return self.method(func[1], func[2], call, env, scope)
        raise P4Error(call.loc, "this cannot be called")

    def _args(self, call: Node, count: int) -> list[Node]:
        if len(call.args) != count:
            raise P4Error(call.loc, f"expected {count} argument(s), found {len(call.args)}")
        return call.args

    def _const_arg(self, call: Node, index: int, env: Env) -> int:
        if index >= len(call.args):
            raise P4Error(call.loc, f"expected at least {index + 1} argument(s), "
                          f"found {len(call.args)}")
        val = self.exprs.value(call.args[index], env)
        if val.const is None:
            raise P4Error(call.args[index].loc, "this argument must be a compile-time constant")
        return val.const

    def _dst(self, node: Node, env: Env) -> tuple[dict, int]:
        dst, typ = self.exprs.destination(node, env)
        if "compound" in dst:
            raise P4Error(node.loc, "expected a scalar field or variable")
        return dst, width_of(typ)

    def method(self, target: object, name: str, call: Node, env: Env, scope: Scope) -> list[dict]:
        if isinstance(target, ControlRef):
            if name != "apply":
                raise P4Error(call.loc, f"controls have no method '{name}'")
            return self.program.inline_control(target, call, env)
        if isinstance(target, ParserRef):   # dplab/p4/sub_parsers.py takes the others
            raise P4Error(call.loc, f"parser instance {target.path}: '.{name}' is supported "
                          "only as 'apply(...)', a statement of its own in a parser state "
                          "(not inside an if or a block)")
        if isinstance(target, TableRef):
            if name != "apply":
                raise P4Error(call.loc, f"tables have no method '{name}'")
            self._args(call, 0)
            return [{"kind": "apply", "table": target.index}]
        kind = target.kind
        ex = self.exprs
        if kind == "packet_in" and name == "extract":
            if not scope.in_parser:
                raise P4Error(call.loc, "extract is only allowed in a parser")
            if len(call.args) == 2:
                return self.extract_varbit(call, env)
            arg = self._args(call, 1)[0]
            header = ex.named(arg, env)
            if isinstance(header, tuple) and header[0] == "stack_method" and header[2] == "next":
                return [{"kind": "extract", "stack": header[1].stack}]
            if isinstance(header, unions.NextMember):
                return unions.extract_next(header)
            if not isinstance(header, HeaderRef):
                raise P4Error(arg.loc, "extract needs a header")
            if header.varbit is not None:
                raise P4Error(call.loc, f"header {header.type.name} has a varbit field: "
                              "extract it with its size, extract(hdr, bit<32> sizeInBits)")
            return [{"kind": "extract", "inst": header.inst}, *unions.invalidate_siblings(header)]
        if kind == "packet_in" and name == "advance":
            bits = ex.bits(self._args(call, 1)[0], env, 32)
            return [{"kind": "advance", "bits": bits.ir}]
        if kind == "packet_out" and name == "emit":
            raise P4Error(call.loc, "emit is only allowed in the deparser")
        if kind == "counter" and name == "count":
            index = ex.bits(self._args(call, 1)[0], env, 32)
            return [{"kind": "counter_count", "counter": target.index, "index": index.ir}]
        if kind == "direct_counter" and name == "count":
            self._args(call, 0)
            return []
        if kind == "meter" and name == "execute_meter":
            index_node, dst_node = self._args(call, 2)
            dst, _ = self._dst(dst_node, env)
            index = ex.bits(index_node, env, 32)
            return [{"kind": "meter_execute", "meter": target.index, "index": index.ir,
                     "dst": dst}]
        if kind == "direct_meter" and name == "read":
            dst, _ = self._dst(self._args(call, 1)[0], env)
            return [{"kind": "direct_meter_read", "meter": target.index, "dst": dst}]
        if kind == "register" and name == "read":
            dst_node, index_node = self._args(call, 2)
            dst, width = self._dst(dst_node, env)
            self._check_register_width(target, width, dst_node)
            index = ex.bits(index_node, env, 32)
            return [{"kind": "register_read", "register": target.index, "index": index.ir,
                     "dst": dst}]
        if kind == "register" and name == "write":
            index_node, value_node = self._args(call, 2)
            value = ex.bits(value_node, env, width_of(target.elem))
            self._check_register_width(target, value.ir["w"], value_node)
            index = ex.bits(index_node, env, 32)
            return [{"kind": "register_write", "register": target.index, "index": index.ir,
                     "value": value.ir}]
        raise P4Error(call.loc, f"'{name}' is not a method of {kind}")

    def _check_register_width(self, target: ExternRef, width: int, node: Node) -> None:
        if width != width_of(target.elem):
            raise P4Error(node.loc, f"register holds bit<{width_of(target.elem)}>, "
                          f"not bit<{width}>")

    def function(self, name: str, call: Node, env: Env, scope: Scope) -> list[dict]:
        ex = self.exprs
        if name == "mark_to_drop":
            if call.args:
                self._args(call, 1)
            else:
                # v1model still declares the argument-less form, @deprecated; p4c accepts it
                # with this warning, and it drops the packet being processed all the same.
                self.program.warn(call.loc, "mark_to_drop: Using deprecated feature "
                                  "mark_to_drop. Please use mark_to_drop(standard_metadata) "
                                  "instead.")
            return [{"kind": "assign", "dst": {"inst": 0, "field": f}, "src": const(v, w).ir}
                    for _, f, w, v in STANDARD_DROP]
        if name == "verify":
            if not scope.in_parser:
                raise P4Error(call.loc, "verify is only allowed in a parser")
            cond_node, error_node = self._args(call, 2)
            error = ex.value(error_node, env)
            if error.const is None or type_name(error.type) != "error":
                raise P4Error(error_node.loc, "verify needs an error constant (error.X)")
            return [{"kind": "verify", "cond": ex.condition(cond_node, env).ir,
                     "error": error.const}]
        if name in ("verify_checksum", "update_checksum"):
            return self.checksum(name, call, env)
        if name == "hash":
            return self.hash(call, env)
        if name == "random":
            dst_node, lo_node, hi_node = self._args(call, 3)
            dst, width = self._dst(dst_node, env)
            return [{"kind": "random", "dst": dst, "lo": ex.bits(lo_node, env, width).ir,
                     "hi": ex.bits(hi_node, env, width).ir}]
        if name in ("resubmit", "recirculate", "clone3"):
            return self.deprecated_field_list_call(name, call, env, scope)
        if name in ("clone", "clone_preserving_field_list"):
            args = self._args(call, 2 if name == "clone" else 3)
            clone_type = ex.value(args[0], env)
            kind = {0: "I2E", 1: "E2E"}.get(clone_type.const)
            if type_name(clone_type.type) != "CloneType" or kind is None:
                raise P4Error(args[0].loc, "expected CloneType.I2E or CloneType.E2E")
            field_list = self._const_arg(call, 2, env) if name != "clone" else None
            return [{"kind": "clone", "type": kind, "session": ex.bits(args[1], env, 32).ir,
                     "field_list": field_list}]
        if name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            self._args(call, 1)
            return [{"kind": name.split("_")[0], "field_list": self._const_arg(call, 0, env)}]
        if name == "digest":
            return self.digest(call, env)
        if name == "log_msg":
            if not call.args or call.args[0].kind != "str" or len(call.args) > 2:
                raise P4Error(call.loc, 'log_msg needs a string and optionally {values}')
            args = ex.list_items(call.args[1], env) if len(call.args) == 2 else []
            return [{"kind": "log", "fmt": call.args[0].value, "args": [a.ir for a in args]}]
        raise P4Error(call.loc, f"'{name}' is not supported")

    def deprecated_field_list_call(self, name: str, call: Node, env: Env,
                                   scope: Scope) -> list[dict]:
        """v1model's deprecated `resubmit(data)`, `recirculate(data)`, `clone3(type, session,
        data)`: taken, with p4c's warning, when `data` is `{}` (no field kept), which is
        `clone(type, session)` or a `_preserving_field_list` call without a field list."""
        data = self._args(call, 3 if name == "clone3" else 1)[-1]
        newer = "clone_preserving_field_list" if name == "clone3" else \
            f"{name}_preserving_field_list"
        if data.kind != "list" or data.items:
            raise P4Error(data.loc, f"{name} with fields to keep is not supported: mark them "
                          f"@field_list(N) and call {newer}(..., N)")
        self.program.warn(call.loc, f"{name}: Using deprecated feature {name}. "
                          f"Please use '{newer}' instead")
        if name == "clone3":
            return self.function("clone", Node("call", call.loc, func=call.func,
                                               args=call.args[:2]), env, scope)
        return [{"kind": name, "field_list": None}]

    def algorithm(self, node: Node, env: Env, need: str = "expected") -> str:
        """The name of a `HashAlgorithm.x` argument; ``need`` leads the error message."""
        algo = self.exprs.denote(node, env) if node.kind == "member" else None
        algo_name = node.name if node.kind == "member" else ""
        if not isinstance(algo, Val) or type_name(algo.type) != "HashAlgorithm" \
                or algo_name not in HASH_ALGOS:
            raise P4Error(node.loc, f"{need} HashAlgorithm." + "/".join(sorted(HASH_ALGOS)))
        return algo_name

    def extract_varbit(self, call: Node, env: Env) -> list[dict]:
        """`packet.extract(hdr, sizeInBits)` (dplab/p4/varbit.py)."""
        arg, size_node = call.args
        header = self.exprs.named(arg, env)
        if not isinstance(header, HeaderRef):
            raise P4Error(arg.loc, "extract with a size needs a header with a varbit field")
        size = self.exprs.typed(size_node, env, Bits(32))
        if size.type != Bits(32) and not isinstance(size.type, IntType):
            raise P4Error(size_node.loc, f"the varbit size must be bit<32>, not "
                          f"{type_name(size.type)}")
        tmp = self.program.new_local("$varbit_size", Bits(32), call.loc)
        return varbit.extract(header, size, tmp, call.loc)

    def checksum(self, name: str, call: Node, env: Env) -> list[dict]:
        cond_node, data_node, sum_node, algo_node = self._args(call, 4)
        cond = self.exprs.condition(cond_node, env)
        algo = self.algorithm(algo_node, env)
        data = varbit.checksum_data(self.exprs.list_items(data_node, env, varbits=True),
                                    algo, data_node.loc)
        dst, _ = self._dst(sum_node, env)
        if name == "verify_checksum":
            checksum = self.exprs.bits(sum_node, env)
            return [{"kind": name, "cond": cond.ir, "data": data, "checksum": checksum.ir,
                     "algo": algo}]
        return [{"kind": name, "cond": cond.ir, "data": data, "dst": dst, "algo": algo}]

    def hash(self, call: Node, env: Env) -> list[dict]:
        dst_node, algo_node, base_node, data_node, max_node = self._args(call, 5)
        dst, width = self._dst(dst_node, env)
        base = self.exprs.bits(base_node, env, width)
        max_val = self.exprs.bits(max_node, env, 32)
        data = [v.ir for v in self.exprs.list_items(data_node, env)]
        return [{"kind": "hash", "dst": dst, "algo": self.algorithm(algo_node, env),
                 "base": base.ir, "data": data, "max": max_val.ir}]

    def digest(self, call: Node, env: Env) -> list[dict]:
        receiver, data_node = self._args(call, 2)
        typ = self._digest_type(call, data_node, env)
        data = self.exprs.list_items(data_node, env)
        index = self.program.digest_index(typ, data, call.loc)
        self.exprs.value(receiver, env, 32)
        return [{"kind": "digest", "digest": index, "data": [v.ir for v in data]}]

    def _digest_type(self, call: Node, data_node: Node, env: Env) -> object:
        """digest<T>'s T: written, or (as p4c infers it) the type of a struct argument."""
        if len(call.targs) == 1:
            return self.program.resolve_type(call.targs[0])
        target = self.exprs.named(data_node, env)
        if isinstance(target, StructRef):
            return target.type
        raise P4Error(call.loc, "digest needs its struct type: digest<my_digest_t>(1, {...}), "
                      "or a struct as its data: digest(1, meta.my_digest)")
