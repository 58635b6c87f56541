"""The program pass: declarations, instances, parser, controls, tables -> the IR dict."""

import json
from pathlib import Path

from dplab.p4 import (
    header_structs,
    ids,
    names,
    sub_controls,
    tuples,
    unions,
    value_sets,
    varbit,
)
from dplab.p4.action_order import action_ranks
from dplab.p4.annotations import p4info_annotations, pkg_info
from dplab.p4.errors import Loc, P4Error, P4Warning
from dplab.p4.exprs import Env, ExprChecker, check_width, const, header_width
from dplab.p4.ids import IdAllocator
from dplab.p4.inlining import copy_out_before_exits, lower_returns, needs_copies
from dplab.p4.limits import MAX_STACK, checked_size
from dplab.p4.local_vars import compound_local, copy_compound
from dplab.p4.preprocess import preprocess
from dplab.p4.profiles import PROFILE_KINDS, ProfileCompiler
from dplab.p4.stack_last import StackLastCheck
from dplab.p4.statements import Scope, StatementCompiler
from dplab.p4.sub_parsers import ParserBuilder
from dplab.p4.syntax import Node, name_loc, parse
from dplab.p4.types import (
    STANDARD_ERRORS,
    ActionRef,
    Bits,
    BoolType,
    ControlRef,
    EnumType,
    ErrorType,
    ExternRef,
    FunctionRef,
    HeaderRef,
    IntType,
    ListVal,
    Named,
    Signed,
    StackRef,
    StackType,
    StringType,
    StructRef,
    StructType,
    TableRef,
    TypeRef,
    UserFunction,
    Val,
    Varbit,
    type_name,
    width_of,
)

FUNCTIONS = {"mark_to_drop", "verify", "verify_checksum", "update_checksum", "hash", "random",
             "clone", "clone_preserving_field_list", "resubmit_preserving_field_list",
             "recirculate_preserving_field_list", "resubmit", "recirculate", "clone3",
             "digest", "log_msg"}
EXTERN_OBJECTS = {"counter", "direct_counter", "meter", "direct_meter", "register"}
UNITS = {"packets": "packets", "bytes": "bytes", "packets_and_bytes": "both"}
CONTROL_LOCALS = {"action", "table", "function", "instance"}   # declared, not run
STAGES = ["parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser"]


class Compiler:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.types: dict[str, object] = {}
        self.globals: Env = {}
        self.errors = list(STANDARD_ERRORS)
        self.decls: dict[str, Node] = {}
        self.struct_decls: dict[str, Node] = {}   # for field annotations (@match)
        # action -> (node, env, the parameters (its and its control's) it may not shadow)
        self.action_nodes: dict[str, tuple[Node, Env, frozenset[str]]] = {}
        self.ir: dict = {"format": "dplab-p4-ir", "version": 1, "program": path.stem,
                         "source": str(path), "arch": "v1model", "instances": [],
                         "stacks": [], "errors": self.errors, "field_lists": {},
                         "controls": {}, "actions": [], "tables": [], "counters": [],
                         "direct_counters": [], "meters": [], "direct_meters": [],
                         "registers": [], "digests": [], "controller_headers": {},
                         "value_sets": [], "action_profiles": []}
        self.action_index: dict[tuple[str, str], int] = {}   # (name, binding) -> index
        self.signatures: dict[str, tuple[list, list[dict]]] = {}
        self.table_nodes: list[Node] = []
        self.digest_types: dict[str, int] = {}
        self.locals_inst: int | None = None
        self.ids = IdAllocator()
        self.exprs = ExprChecker(self.resolve_type)
        self.exprs.errors = {}
        self.exprs.new_local = self.new_local
        self.exprs.inline_function = self.inline_function
        self.inlining: list[str] = []   # the functions being inlined (recursion is refused)
        self.unrolled = 0   # loop bodies copied so far (dplab/p4/loops.py bounds them)
        self.stmts = StatementCompiler(self.exprs, self)
        self.profiles = ProfileCompiler(self)
        self.annotations: dict[str, dict] = {}
        self.action_ranks: dict[str, int] = {}   # action -> its place in P4Info
        self.warnings: list[P4Warning] = []
        self.declared: list[tuple[str, Node, object]] = []   # (what, node, ref): unused?

    # --- entry ---------------------------------------------------------------------
    def compile(self) -> dict:
        decls = parse(preprocess(self.path))
        for decl in decls:
            self.declare(decl)
        main = next((d for d in decls if d.kind == "instance" and d.name == "main"), None)
        if main is None:
            raise P4Error(Loc(str(self.path), 1, 1), "the program has no 'main' instance "
                          "(V1Switch(...) main;)")
        stages = self.stages(main)
        self.action_ranks = action_ranks(decls, list(stages.values()))
        self.ir["pkg_info"] = pkg_info(main, self.warn)
        root_env = self.layout(stages["parser"])
        self.compile_parser(stages["parser"], root_env)
        for stage in STAGES[1:-1]:
            self.ir["controls"][stage] = self.compile_control(stages[stage], root_env)
        self.ir["deparser"] = self.compile_deparser(stages["deparser"], root_env)
        self.warn_unused()
        self.ids.assign(self.ir)
        return self.ir

    def warn(self, loc: Loc, reason: str) -> None:
        warning = P4Warning(loc, reason)
        if warning not in self.warnings:   # an action compiled once per binding warns once
            self.warnings.append(warning)

    def warn_unused(self) -> None:
        """As p4c: a table never applied, an instance never referred to (`@noWarn("unused")`
        keeps quiet)."""
        for what, node, ref in self.declared:
            quiet = [t.text for t in node.annos.get("noWarn", [])] == ["unused"]
            if id(ref) not in self.exprs.used and not quiet:
                self.warn(name_loc(node), f"table {node.name} is never applied"
                          if what == "table" else f"{what} {node.name} is never used")

    def warn_shadowing(self, name: str, loc: Loc, env: Env, what: str) -> None:
        if name in env:
            self.warn(loc, f"{what} '{name}' shadows a declaration of the same name")

    def check_shadowing(self, node: Node, env: Env, params: frozenset[str]) -> None:
        """As p4c's ResolveReferences::checkShadowing: a declaration (variable, constant,
        instance, table, action) named like a parameter of its parser, control or action
        is an error; one that hides any other name in scope, a warning."""
        if node.name in params:
            raise P4Error(name_loc(node), f"declaration of '{node.name}' shadows a parameter "
                          f"'{node.name}'")
        self.warn_shadowing(node.name, name_loc(node), env, node.kind)

    def declare(self, decl: Node) -> None:
        kind = decl.kind
        if kind == "typedef":
            self.types[decl.name] = self.resolve_type(decl.type)
        elif kind in ("header", "struct", "header_union"):
            self.types[decl.name] = self.struct_type(decl)
            self.struct_decls[decl.name] = decl
        elif kind == "enum":
            self.types[decl.name] = self.enum_type(decl)
            self.globals[decl.name] = TypeRef(self.types[decl.name])
        elif kind == "error_decl":
            for name in decl.names:
                if name.text not in self.errors:
                    self.errors.append(name.text)
            self.exprs.errors = {n: i for i, n in enumerate(self.errors)}
            self.globals["error"] = TypeRef(ErrorType())
        elif kind == "const":
            self.globals[decl.name] = self.constant(decl, self.globals)
        elif kind == "action":
            qualified = self.qualified(decl, "")
            self.ids.note("actions", qualified, decl)
            self.action_nodes[qualified] = (decl, self.globals,
                                            frozenset(p.name for p in decl.params))
            self.globals[decl.name] = ActionRef(qualified)
            self.action_params(qualified)   # checks the parameters where they are declared
        elif kind in ("parser", "control"):
            self.decls[decl.name] = decl
        elif kind == "function":
            self.globals[decl.name] = UserFunction(decl, self.globals)
        elif kind == "extern_function" and decl.name in FUNCTIONS:
            self.globals[decl.name] = FunctionRef(decl.name)
        elif kind in ("extern_object", "parser_type", "control_type", "package"):
            self.types.setdefault(decl.name, Named(decl.name))
        elif kind in ("instance", "match_kind", "extern_function"):
            return
        else:
            raise P4Error(decl.loc, f"'{kind}' is not supported at the top level")

    def constant(self, decl: Node, env: Env) -> Val:
        typ = self.resolve_type(decl.type)
        val = self.exprs.typed(decl.value, env, typ)
        if val.const is None:
            raise P4Error(decl.value.loc, "a constant needs a compile-time value")
        if not isinstance(typ, IntType) and val.type != typ and not isinstance(val.type, IntType):
            raise P4Error(decl.value.loc, f"cannot initialise {type_name(typ)} with "
                          f"{type_name(val.type)}")
        return Val(val.ir, typ if not isinstance(typ, IntType) else val.type, val.const)

    # --- types ---------------------------------------------------------------------
    def resolve_type(self, node: Node) -> object:
        if node.kind == "bit":
            return Bits(check_width(node.width, node.loc))
        if node.kind == "int":
            if node.width is not None:
                return Signed(check_width(node.width, node.loc))
            return IntType()
        if node.kind == "varbit":
            if not 1 <= node.width <= varbit.MAX_VARBIT:
                raise P4Error(node.loc, f"width {node.width} is outside 1..{varbit.MAX_VARBIT} "
                              "bits")
            return Varbit(node.width)
        if node.kind == "stack":
            base = self.resolve_type(node.base)
            if unions.is_union(base):
                if not 1 <= node.size <= MAX_STACK:
                    raise P4Error(node.loc, f"a header stack's size must be in 1..{MAX_STACK}")
                return unions.stack_type(base, node.size)
            if not isinstance(base, StructType) or base.kind != "header":
                raise P4Error(node.loc, "only headers can form a stack")
            varbit.refuse("a header stack", base, node.loc)
            if not 1 <= node.size <= MAX_STACK:
                raise P4Error(node.loc, f"a header stack's size must be in 1..{MAX_STACK}")
            return StackType(base, node.size)
        if node.name == "tuple":
            return tuples.tuple_type([self.resolve_type(a) for a in node.args])
        builtin = {"bool": BoolType(), "error": ErrorType(), "string": StringType()}
        if node.name in builtin:
            return builtin[node.name]
        if node.name not in self.types:
            raise P4Error(node.loc, f"unknown type '{node.name}'")
        return self.types[node.name]

    def struct_type(self, decl: Node) -> StructType:
        fields, groups, locs = [], [], []   # locs: each (flattened) field's type's place
        seen = set()
        for f in decl.fields:
            if f.name in seen:
                raise P4Error(f.loc, f"field '{f.name}' is declared twice")
            seen.add(f.name)
            typ = self.resolve_type(f.type)
            lists = tuple(t.value for t in f.annos.get("field_list", []) if t.kind == "int")
            if decl.kind == "header" and isinstance(typ, StructType):
                groups.append((f.name, typ))
                flat = header_structs.flat_fields(f.name, typ, f.type.loc)
                fields.extend((name, ftype, lists) for name, ftype in flat)
                locs.extend(f.type.loc for _ in flat)
                continue
            if decl.kind == "header" and width_of(typ) is None and not isinstance(typ, Varbit):
                raise P4Error(f.type.loc, f"header fields must be bit<W>, not {type_name(typ)}")
            fields.append((f.name, typ, lists))
            locs.append(f.type.loc)
        annos = tuple((k, "".join(t.text for t in v)) for k, v in decl.annos.items())
        typ = StructType(decl.kind, decl.name, tuple(fields), annos, tuple(groups))
        if decl.kind == "header_union":
            unions.check_members(typ, [f.type.loc for f in decl.fields])
        if decl.kind == "header":
            varbit.check_header(typ, locs)
        if decl.kind == "header" and header_width(typ) % 8:
            raise P4Error(decl.loc, f"header {decl.name} is not a whole number of bytes")
        return typ

    def enum_type(self, decl: Node) -> EnumType:
        if decl.underlying is None:
            return EnumType(decl.name, tuple((m.name, i) for i, m in enumerate(decl.members)))
        width = self.resolve_type(decl.underlying).width
        members = []
        for m in decl.members:
            if m.value is None:
                raise P4Error(m.loc, "members of a serializable enum need a value")
            members.append((m.name, self.exprs.value(m.value, self.globals, width).const))
        return EnumType(decl.name, tuple(members), width, True)

    # --- main and layout -----------------------------------------------------------
    def stages(self, main: Node) -> dict[str, Node]:
        if main.type.kind != "named" or main.type.name != "V1Switch":
            raise P4Error(main.loc, "main must be a V1Switch (only v1model is supported)")
        if len(main.args) != len(STAGES):
            raise P4Error(main.loc, f"V1Switch takes {len(STAGES)} blocks")
        stages = {}
        for stage, arg in zip(STAGES, main.args, strict=True):
            if arg.kind != "call" or arg.func.kind != "name" or arg.func.name not in self.decls:
                raise P4Error(arg.loc, f"expected a parser or control for {stage}, e.g. MyBlock()")
            decl = self.decls[arg.func.name]
            want = "parser" if stage == "parser" else "control"
            if decl.kind != want:
                raise P4Error(arg.loc, f"{arg.func.name} is a {decl.kind}, expected a {want}")
            stages[stage] = decl
        return stages

    def layout(self, parser: Node) -> dict[str, object]:
        """Instances from the parser's parameter types; returns the roots by type name."""
        if len(parser.params) != 4:
            raise P4Error(parser.loc, "a v1model parser has 4 parameters")
        headers_t = self.resolve_type(parser.params[1].type)
        meta_t = self.resolve_type(parser.params[2].type)
        std = self.types["standard_metadata_t"]
        roots = {"standard_metadata_t": self.metadata_instance("standard_metadata", std)}
        if not isinstance(headers_t, StructType) or not isinstance(meta_t, StructType):
            raise P4Error(parser.params[1].loc, "headers and metadata must be structs")
        roots[headers_t.name] = self.header_struct(parser.params[1].name, headers_t,
                                                   parser.params[1].loc)
        roots[meta_t.name] = self.metadata_instance(parser.params[2].name, meta_t)
        return roots

    def add_instance(self, name: str, kind: str, typ: StructType, fields: list) -> int:
        offset, out = 0, []
        for fname, ftype, _ in fields:
            out.append({"name": fname, "w": width_of(ftype), "offset": offset})
            offset += width_of(ftype)
        self.ir["instances"].append({"name": name, "kind": kind, "type": typ.name,
                                     "bits": offset, "fields": out})
        return len(self.ir["instances"]) - 1

    def header_struct(self, prefix: str, typ: StructType, loc: Loc) -> StructRef:
        if unions.is_union(typ):
            return unions.union_ref(typ, lambda name, htype: self.header_instance(
                f"{prefix}.{name}", htype))
        stack = unions.is_union_stack(typ)
        ref = unions.UnionStackRef(typ) if stack else StructRef(typ)
        for name, ftype, _ in typ.fields:
            path = f"{prefix}[{name}]" if stack else f"{prefix}.{name}"
            if isinstance(ftype, StructType) and ftype.kind == "header":
                ref.members[name] = self.header_instance(path, ftype)
            elif isinstance(ftype, StackType):
                insts = [self.add_instance(f"{path}[{i}]", "header", ftype.base,
                                           list(ftype.base.fields)) for i in range(ftype.size)]
                self.ir["stacks"].append({"name": path, "size": ftype.size, "instances": insts})
                ref.members[name] = StackRef(len(self.ir["stacks"]) - 1, insts, ftype)
            elif isinstance(ftype, StructType):
                ref.members[name] = self.header_struct(path, ftype, loc)
            else:
                raise P4Error(loc, f"the headers struct may hold only headers, not "
                              f"{type_name(ftype)} ({name})")
        return ref

    def header_instance(self, path: str, typ: StructType) -> HeaderRef:
        if varbit.varbit_index(typ) is not None:
            header = varbit.layout(self, path, typ)
        else:
            header = HeaderRef(self.add_instance(path, "header", typ, list(typ.fields)), typ)
        self.controller_header(typ, header.inst)
        return header

    def controller_header(self, typ: StructType, inst: int) -> None:
        annos = dict(typ.annos)
        if "controller_header" not in annos:
            return
        role = annos["controller_header"].strip('"')
        if role not in ("packet_in", "packet_out"):
            raise P4Error(Loc(str(self.path), 1, 1), f"@controller_header must be packet_in or "
                          f"packet_out, not {role}")
        decl = self.struct_decls[typ.name]
        if varbit.varbit_index(typ) is not None:
            raise P4Error(decl.fields[varbit.varbit_index(typ)].loc, f"controller header "
                          f"{typ.name}: a varbit field has no P4Runtime metadata form")
        # p4c hashes the header type's control-plane name (its @name, else its own) for the
        # id; the P4Info preamble's name and alias are the role; the preamble carries the
        # type's annotations (`@controller_header(...)` among them, in source order) and
        # each metadata field its own (P4RuntimeSerializer's addControllerHeader)
        symbol = names.qualified(decl, "")
        self.ids.note("controller_headers", symbol, decl)
        numbers = ids.field_ids([ids.given_id(f) for f in decl.fields])
        fields = [{"id": number, "name": names.local_name(f), "w": width_of(t),
                   **p4info_annotations(f)}
                  for number, f, (_, t, _) in zip(numbers, decl.fields, typ.fields, strict=True)]
        self.ir["controller_headers"][role] = {"name": role, "type_name": symbol, "inst": inst,
                                               "fields": fields, **p4info_annotations(decl)}

    def metadata_instance(self, name: str, typ: StructType) -> StructRef:
        flat: list = []
        headers: list[tuple[StructRef, str, str, StructType]] = []
        inst = len(self.ir["instances"])
        ref = self._flatten_struct(typ, "", flat, inst, headers)
        self.add_instance(name, "metadata", typ, flat)
        # headers in the struct: header instances after it, invalid at packet start like
        # a header-typed local, and (unless the program emits one) never on the wire
        for owner, member, path, htype in headers:
            owner.members[member] = HeaderRef(
                self.add_instance(f"{name}.{path}", "header", htype, list(htype.fields)), htype)
        for fname, _, lists in flat:
            for number in lists:
                self.ir["field_lists"].setdefault(str(number), []).append(
                    {"inst": inst, "field": [f[0] for f in flat].index(fname)})
        return ref

    def _flatten_struct(self, typ: StructType, prefix: str, flat: list, inst: int,
                        headers: list) -> StructRef:
        """The struct's scalars appended to ``flat``; its headers to ``headers``, as
        (owning struct, member, dotted path, type), for metadata_instance to place."""
        ref = StructRef(typ)
        for name, ftype, lists in typ.fields:
            if isinstance(ftype, StructType) and ftype.kind == "struct":
                ref.members[name] = self._flatten_struct(ftype, f"{prefix}{name}.", flat, inst,
                                                         headers)
                continue
            if isinstance(ftype, StructType) and ftype.kind == "header":
                if lists:
                    raise P4Error(self._field_loc(typ, name), f"metadata field {name} of "
                                  f"{typ.name}: a header in a @field_list is not supported")
                varbit.refuse(f"metadata field {prefix}{name}", ftype,
                              self._field_loc(typ, name))
                headers.append((ref, name, prefix + name, ftype))
                continue
            w = width_of(ftype)
            if w is None:
                raise P4Error(self._field_loc(typ, name), f"metadata field {name} of "
                              f"{typ.name} must be bit<W>, bool, a header or a struct of "
                              f"them: {type_name(ftype)} in metadata is not supported")
            ref.members[name] = Val({"op": "field", "w": w, "inst": inst, "field": len(flat)},
                                    ftype)
            flat.append((prefix + name, ftype, lists))
        return ref

    def _field_loc(self, typ: StructType, name: str) -> Loc:
        decl = self.struct_decls.get(typ.name)
        where = next((f.loc for f in decl.fields if f.name == name), None) if decl else None
        return where or Loc(str(self.path), 1, 1)

    def new_local(self, name: str, typ: object, loc: Loc) -> Val:
        if self.locals_inst is None:
            self.ir["instances"].append({"name": "$locals", "kind": "metadata",
                                         "type": "$locals", "bits": 0, "fields": []})
            self.locals_inst = len(self.ir["instances"]) - 1
        inst = self.ir["instances"][self.locals_inst]
        w = width_of(typ)
        inst["fields"].append({"name": f"{name}${len(inst['fields'])}", "w": w,
                               "offset": inst["bits"]})
        inst["bits"] += w
        return Val({"op": "field", "w": w, "inst": self.locals_inst,
                    "field": len(inst["fields"]) - 1}, typ)

    def bind_params(self, block: Node, roots: dict, env: Env) -> Env:
        env = dict(env)
        for param in block.params:
            typ = self.resolve_type(param.type)
            name = type_name(typ)
            if name in ("packet_in", "packet_out"):
                env[param.name] = ExternRef(name, 0)
            elif name in roots:
                env[param.name] = roots[name]
            else:
                raise P4Error(param.loc, f"parameter {param.name} of type {name} is not a "
                              "v1model block parameter")
        return env

    # --- parser --------------------------------------------------------------------
    def compile_parser(self, parser: Node, roots: dict) -> None:
        env = self.bind_params(parser, roots, self.globals)
        self.exprs.in_parser = True
        self.exprs.stack_last = StackLastCheck(self.ir["stacks"])
        self.ir["parser"] = ParserBuilder(self).top(parser, env)
        self.exprs.stack_last.check()
        self.exprs.in_parser = False

    def transition(self, state: Node, targets: dict, env: Env) -> dict:
        node = state.transition
        if node is None:
            raise P4Error(state.loc, f"state {state.name} has no transition")

        def target(token: object) -> int:
            if token.text not in targets:
                raise P4Error(token.loc, f"no parser state named '{token.text}'")
            return targets[token.text]

        if node.kind == "goto":
            return {"kind": "goto", "next": target(node.target)}
        keys = [self.exprs.bits(k, env) for k in node.keys]
        cases = []
        for case in node.cases:
            named_set = value_sets.case_keyset(self, case, keys, env)
            if named_set is not None:
                cases.append({"sets": [named_set], "next": target(case.target)})
                continue
            sets = case.sets
            if len(sets) == 1 and sets[0].kind == "any":
                sets = sets * len(keys)
            if len(sets) != len(keys):
                raise P4Error(case.loc, f"select has {len(keys)} key(s) but this case has "
                              f"{len(sets)}")
            cases.append({"sets": [self.keyset(s, k.ir["w"], env)
                                   for s, k in zip(sets, keys, strict=True)],
                          "next": target(case.target)})
        return {"kind": "select", "keys": [k.ir for k in keys], "cases": cases}

    def keyset(self, node: Node, width: int, env: Env) -> dict:
        def value(expr: Node) -> str:
            val = self.exprs.value(expr, env, width)
            if val.const is None:
                raise P4Error(expr.loc, "a select case must be a compile-time constant")
            if width_of(val.type) != width:
                raise P4Error(expr.loc, f"case value is {type_name(val.type)}, key is bit<{width}>")
            return hex(val.const)
        if node.kind == "any":
            return {"kind": "any"}
        if node.kind == "mask":
            return {"kind": "mask", "v": value(node.value), "m": value(node.mask)}
        if node.kind == "range":
            return {"kind": "range", "lo": value(node.lo), "hi": value(node.hi)}
        return {"kind": "exact", "v": value(node.value)}

    # --- controls ------------------------------------------------------------------
    def compile_control(self, control: Node, roots: dict) -> dict:
        env = self.bind_params(control, roots, self.globals)
        init: list[dict] = []
        owner = names.block_name(control)
        scope = Scope(params=frozenset(p.name for p in control.params))
        for local in control.locals:
            init.extend(self.control_local(local, owner, env, scope, control.body.body))
        body = self.stmts.block(control.body.body, env, scope)
        return {"name": control.name, "body": init + body}

    def control_local(self, local: Node, owner: str, env: Env, scope: Scope,
                      body: list[Node]) -> list[dict]:
        """One declaration of a control (`body`: the control's statements, where its
        sub-control instances are applied)."""
        if local.kind in ("var", "const"):   # checked where statements declare them
            return self.stmts.statement(local, env, scope)
        self.check_shadowing(local, env, scope.params)
        if local.kind == "action":
            qualified = self.qualified(local, owner)
            self.ids.note("actions", qualified, local)
            self.action_nodes[qualified] = (local, dict(env),
                                            scope.params | {p.name for p in local.params})
            env[local.name] = ActionRef(qualified)
            self.action_params(qualified)
            return []
        if local.kind == "function":
            env[local.name] = UserFunction(local, dict(env))
            return []
        if local.kind == "table":
            env[local.name] = TableRef(self.compile_table(local, owner, env))
            self.declared.append(("table", local, env[local.name]))
            return []
        if local.kind == "instance":
            env[local.name] = self.extern_instance(local, owner, env)
            if isinstance(env[local.name], ControlRef):
                env[local.name].many = sub_controls.apply_counts(body)[local.name] > 1
            if isinstance(env[local.name], ExternRef):   # a sub-control has no P4Info object
                self.declared.append((env[local.name].kind, local, env[local.name]))
            return []
        raise P4Error(local.loc, f"'{local.kind}' is not supported inside a control")

    def qualified(self, node: Node, owner: str) -> str:
        return names.qualified(node, owner)

    def extern_instance(self, node: Node, owner: str, env: Env) -> ExternRef | ControlRef:
        kind = node.type.name if node.type.kind == "named" else ""
        name = self.qualified(node, owner)
        if kind in PROFILE_KINDS:
            self.ids.note("action_profiles", name, node)
            return ExternRef(kind, self.profiles.declare(node, name, kind, env))
        if kind not in EXTERN_OBJECTS:
            what = kind or node.type.kind
            if what in self.decls and self.decls[what].kind == "control":
                return self.sub_control(node, self.decls[what], owner)
            if what in self.decls:
                raise P4Error(node.loc, f"instantiating {self.decls[what].kind} '{what}' "
                              "inside a control is not supported: only counters, meters, "
                              "registers and action profiles/selectors may be declared here")
            raise P4Error(node.loc, f"cannot instantiate '{what}' here")
        self.ids.note(kind + "s", name, node)
        args = [self.exprs.value(a, env, 32) for a in node.args]
        if any(a.const is None for a in args):
            raise P4Error(node.loc, f"{kind} arguments must be constants")
        entry: dict = {"name": name, **p4info_annotations(node)}
        elem = None
        if kind in ("counter", "meter", "register"):
            if not args:
                raise P4Error(node.loc, f"{kind} needs its size")
            entry["size"] = checked_size(node.args[0].loc, args[0].const, f"{kind} size")
        if kind in ("counter", "direct_counter", "meter", "direct_meter"):
            unit = node.args[-1] if node.args else None
            if unit is None or unit.kind != "member" or unit.name not in UNITS:
                raise P4Error(node.loc, f"{kind} needs a CounterType/MeterType")
            entry["unit"] = UNITS[unit.name]
        if kind in ("direct_counter", "direct_meter"):
            entry["table"] = None
        if kind == "register":
            if not node.type.args:
                raise P4Error(node.loc, "register needs its element type: register<bit<32>>(N)")
            elem = self.resolve_type(node.type.args[0])
            if width_of(elem) is None:
                raise P4Error(node.loc, "register elements must be bit<W>")
            entry["w"] = width_of(elem)
        group = self.ir[kind + "s"]
        group.append(entry)
        return ExternRef(kind, len(group) - 1, elem)

    def sub_control(self, node: Node, decl: Node, owner: str) -> ControlRef:
        """A control instantiated in a control, inlined where it is applied; its tables,
        actions and externs are named under the instance's path."""
        if node.args:
            raise P4Error(node.loc, f"control '{decl.name}' takes no constructor arguments")
        return ControlRef(decl, self.qualified(node, owner))

    def inline_control(self, control: ControlRef, call: Node, env: Env) -> list[dict]:
        """`instance.apply(args)`: the control's body with its parameters bound as an
        action's directional ones (dplab/p4/inlining.py); its `return` ends only it. Its
        tables, actions and externs are compiled at its first apply, with the parameters
        bound; one applied more than once shares them (dplab/p4/sub_controls.py)."""
        decl = control.decl
        params = [(p, self.resolve_type(p.type)) for p in decl.params]
        args = self.with_defaults(params, call, f"control {decl.name}")
        targets = self.bind_args(params, args, env)
        scope = Scope(params=frozenset(p.name for p in decl.params), lower_return=True)
        shared = control.many and any(local.kind not in ("var", "const")
                                      for local in decl.locals)
        if shared and control.shared is not None:
            return sub_controls.reapply(self, control, targets, scope, call.loc)
        inner = dict(self.globals)
        out = self.inline_body(params, targets, decl.locals + decl.body.body, inner, scope,
                               call.loc, owner=control.path, copies=shared)
        if shared:
            control.shared = inner
        return out

    def inline_function(self, func: UserFunction, call: Node,
                        env: Env) -> tuple[list[dict], Val | None]:
        """A call of a function the program declares: its body inlined here, and the value
        it returns (None for void), read from a temporary."""
        decl = func.decl
        if decl.name in self.inlining:
            raise P4Error(call.loc, f"function {decl.name} calls itself (P4 has no recursion)")
        params = [(p, self.resolve_type(p.type)) for p in decl.params]
        args = self.with_defaults(params, call, f"function {decl.name}")
        targets = self.bind_args(params, args, env)
        typ = None if decl.result.kind == "named" and decl.result.name == "void" \
            else self.resolve_type(decl.result)
        if typ is not None and (width_of(typ) is None or isinstance(typ, StructType)):
            raise P4Error(decl.result.loc, f"function {decl.name} returns {type_name(typ)}: "
                          "only bit<W>, int<W>, bool and enum results are supported")
        result = None if typ is None else self.new_local(f"{decl.name}$return", typ, call.loc)
        dst = None if result is None else ({"inst": result.ir["inst"],
                                            "field": result.ir["field"]}, typ)
        scope = Scope(in_parser=self.exprs.in_parser, params=frozenset(
            p.name for p in decl.params), lower_return=True, function=decl.name, result=dst)
        self.inlining.append(decl.name)
        try:
            body = self.inline_body(params, targets, decl.body.body, dict(func.env), scope,
                                    call.loc)
        finally:
            self.inlining.pop()
        return body, result

    def inline_body(self, params: list[tuple[Node, object]], targets: list[object],
                    body: list[Node], inner: Env, scope: Scope, loc: Loc,
                    owner: str | None = None, copies: bool = False) -> list[dict]:
        """Statements running `body` with `params` bound to `targets` (copy-in, the body
        with its returns made real, copy-out; every parameter a temporary with `copies`).
        A control's body (`owner`: its instance path) may declare actions, tables,
        functions and instances."""
        outs = [t for (p, _), t in zip(params, targets, strict=True) if p.direction != "in"]
        copies = copies or needs_copies(body, {p.name for p, _ in params}, inner, outs)
        prologue, epilogue = [], []
        for (param, typ), target in zip(params, targets, strict=True):
            inner[param.name], copy_in, copy_out = self.bound_param(param, typ, target, copies)
            prologue.extend(copy_in)
            epilogue.extend(copy_out)
        compiled = []
        for node in body:
            compiled.extend(self.control_local(node, owner, inner, scope, body)
                            if owner is not None and node.kind in CONTROL_LOCALS
                            else self.stmts.statement(node, inner, scope))
        compiled = lower_returns(compiled, lambda: self.flag(loc))
        if epilogue:
            compiled = copy_out_before_exits(compiled, epilogue)
        return prologue + compiled + epilogue

    def flag(self, loc: Loc) -> dict:
        val = self.new_local("$returned", BoolType(), loc)
        return {"inst": val.ir["inst"], "field": val.ir["field"]}

    def with_defaults(self, params: list[tuple[Node, object]], call: Node,
                      what: str) -> list[Node]:
        """The call's arguments, missing trailing ones given by the parameters' defaults."""
        args = list(call.args)
        for param, _ in params[len(args):]:
            if param.default is None:
                break
            args.append(param.default)
        if len(args) != len(params):
            raise P4Error(call.loc, f"{what} takes {len(params)} argument(s), "
                          f"found {len(call.args)}")
        return args

    def bound_param(self, param: Node, typ: object, target: object,
                    copies: bool = False) -> tuple[object, list, list]:
        """What a directional parameter names in the body, its copy-in and its copy-out.
        `in`: a copy (the body may write it). `out`/`inout`: the caller's l-value itself,
        or with `copies` a temporary copied in (inout) and out (docs/p4-ir.md §6)."""
        if param.direction != "in" and not copies:
            return target, [], []
        if isinstance(typ, StructType):   # a header/struct: a local of its type
            local, init = compound_local(self, param.name, typ, param.loc)
        else:
            local, init = self.new_local(param.name, typ, param.loc), []
        if isinstance(target, ListVal):
            return local, tuples.copy_in(local, target), []
        if param.direction == "in":
            return local, copy_compound(local, target, param.loc), []
        copy_in = copy_compound(local, target, param.loc) if param.direction == "inout" \
            else init
        return local, copy_in, copy_compound(target, local, param.loc)

    # --- actions -------------------------------------------------------------------
    def action_params(self, name: str) -> tuple[list[tuple[Node, object]], list[dict]]:
        """(directional parameters with their types, action-data parameters) of an action."""
        if name in self.signatures:
            return self.signatures[name]
        directional: list[tuple[Node, object]] = []
        data: list[dict] = []
        for param in self.action_nodes[name][0].params:
            self.warn_shadowing(param.name, param.loc, self.action_nodes[name][1], "parameter")
            typ = self.resolve_type(param.type)
            if param.direction:
                if data:
                    raise P4Error(param.loc, f"directional parameter {param.name} follows an "
                                  "action-data parameter; P4 puts directional parameters first")
                directional.append((param, typ))
                continue
            if width_of(typ) is None:
                raise P4Error(param.loc, "action parameters must be bit<W> or bool")
            data.append({"name": names.local_name(param), "local": param.name,
                         "w": width_of(typ), "type": typ, "given_id": ids.given_id(param),
                         "annotations": p4info_annotations(param)})
        self.signatures[name] = (directional, data)
        return directional, data

    def bind(self, name: str, args: list[Node], env: Env) -> list[object]:
        return self.bind_args(self.action_params(name)[0], args, env)

    def bind_args(self, params: list[tuple[Node, object]], args: list[Node],
                  env: Env) -> list[object]:
        """Evaluate the arguments of directional parameters in the caller's env:
        `in` -> a value, `out`/`inout` -> the l-value itself (field, variable, header, struct)."""
        bound = []
        for (param, typ), arg in zip(params, args, strict=True):
            if param.direction == "in" and not isinstance(typ, StructType):
                if width_of(typ) is None:
                    raise P4Error(param.loc, "in parameters must be bit<W>, int<W>, bool, "
                                  "a header or a struct")
                val = self.exprs.typed(arg, env, typ)
                if val.type != typ and not isinstance(val.type, IntType):
                    raise P4Error(arg.loc, f"parameter {param.name} is {type_name(typ)}, the "
                                  f"argument is {type_name(val.type)}")
                bound.append(val)
                continue
            if param.direction == "in" and arg.kind == "list":
                bound.append(tuples.list_value(self.exprs, arg, typ, env))
                continue
            if arg.kind == "name" and arg.name == "_" and "_" not in env \
                    and param.direction == "out":
                bound.append(self.dont_care(param, typ))
                continue
            target = self.exprs.named(arg, env)
            if not (isinstance(target, Val) and target.is_field
                    or isinstance(target, HeaderRef | StructRef)):
                what = "a header or struct" if param.direction == "in" else \
                    "an l-value (a field, variable, header or struct)"
                raise P4Error(arg.loc, f"the argument of {param.direction} parameter "
                              f"{param.name} must be {what}")
            if target.type != typ:
                raise P4Error(arg.loc, f"parameter {param.name} is {type_name(typ)}, the "
                              f"argument is {type_name(target.type)}")
            bound.append(target)
        return bound

    def dont_care(self, param: Node, typ: object) -> object:
        """`_` for an out argument (P4_16 8.3): a temporary nothing reads."""
        if isinstance(typ, StructType):
            return compound_local(self, f"{param.name}$_", typ, param.loc)[0]
        if width_of(typ) is None:
            raise P4Error(param.loc, f"'_' cannot stand for a {type_name(typ)}")
        return self.new_local(f"{param.name}$_", typ, param.loc)

    def action_ir_index(self, name: str, bound: list[object] | None = None) -> int:
        """Compile the action (once per binding of its directional parameters) and return
        its index in `actions`. Every specialisation keeps the P4 name (one P4Info action)."""
        bound = bound or []
        key = (name, json.dumps([binding_key(b) for b in bound]))
        if key in self.action_index:
            return self.action_index[key]
        node, env, params = self.action_nodes[name]
        directional, data = self.action_params(name)
        env = dict(env)
        for i, param in enumerate(data):
            env[param["local"]] = Val({"op": "param", "w": param["w"], "index": i},
                                      param["type"])
        index = len(self.ir["actions"])
        self.action_index[key] = index
        numbers = ids.field_ids([p["given_id"] for p in data])
        entry = {"name": name, "body": [], "decl": self.action_ranks[name],
                 "params": [{"name": p["name"], "w": p["w"], "id": number, **p["annotations"]}
                            for p, number in zip(data, numbers, strict=True)],
                 **p4info_annotations(node)}
        self.ir["actions"].append(entry)
        outs = [t for (p, _), t in zip(directional, bound, strict=True) if p.direction != "in"]
        copies = needs_copies(node.body.body, {p.name for p in node.params}, env, outs)
        scope = Scope(in_action=True, params=params, lower_return=copies)
        entry["body"] = self.inline_body(directional, bound, node.body.body, env, scope,
                                         node.loc)
        return index

    def direct_action_call(self, name: str, call: Node, env: Env) -> list[dict]:
        directional, data = self.action_params(name)
        if len(call.args) != len(directional) + len(data):
            raise P4Error(call.loc, f"action {name} takes {len(directional) + len(data)} "
                          "argument(s)")
        count = len(directional)
        bound = self.bind(name, call.args[:count], env)
        args = [self.exprs.bits(a, env, p["w"]).ir
                for a, p in zip(call.args[count:], data, strict=True)]
        return [{"kind": "call", "action": self.action_ir_index(name, bound), "args": args}]

    def action_args(self, index: int, args: list[Node], loc: Loc, env: Env) -> list[str]:
        params = self.ir["actions"][index]["params"]
        if len(args) != len(params):
            raise P4Error(loc, f"action {self.ir['actions'][index]['name']} takes "
                          f"{len(params)} action-data argument(s)")
        out = []
        for arg, param in zip(args, params, strict=True):
            val = self.exprs.value(arg, env, param["w"])
            if val.const is None:
                raise P4Error(arg.loc, "action data here must be a constant")
            out.append(hex(val.const))
        return out

    # --- tables --------------------------------------------------------------------
    def compile_table(self, node: Node, owner: str, env: Env) -> int:
        from dplab.p4.tables import TableCompiler
        index = len(self.ir["tables"])
        self.ir["tables"].append({})
        self.ir["tables"][index] = TableCompiler(self, env).compile(node, owner, index)
        return index

    def table_action_index(self, table: int, label: str, loc: Loc, env: Env) -> int:
        """The table's action a `switch` case label names (its P4 name, in scope here)."""
        ref = env.get(label)
        for listed in self.ir["tables"][table]["actions"]:
            if isinstance(ref, ActionRef) and self.ir["actions"][listed["action"]]["name"] \
                    == ref.name:
                return listed["action"]
        raise P4Error(loc, f"'{label}' is not an action of table "
                      f"{self.ir['tables'][table]['name']}")

    def digest_index(self, typ: object, data: list[Val], loc: Loc) -> int:
        if tuples.is_tuple(typ):
            return self.tuple_digest(typ, data, loc)
        if not isinstance(typ, StructType) or typ.kind != "struct":
            raise P4Error(loc, f"a digest's type must be a struct or a tuple, not "
                          f"{type_name(typ)}")
        if typ.name not in self.digest_types:
            # p4c names a digest after its struct type's control-plane name (its @name,
            # else its own), its fields by theirs (p4RuntimeArchStandard's getDigestCall,
            # typeSpecConverter's Type_Struct)
            decl = self.struct_decls[typ.name]
            fields = [{"name": names.local_name(f), "w": width_of(t)}
                      for f, (_, t, _) in zip(decl.fields, typ.fields, strict=True)]
            if any(f["w"] is None for f in fields):
                raise P4Error(loc, "digest structs may hold only bit<W> fields")
            name = names.qualified(decl, "")
            self.ir["digests"].append({"name": name, "fields": fields})
            self.ids.note("digests", name, decl)
            self.digest_types[typ.name] = len(self.ir["digests"]) - 1
        index = self.digest_types[typ.name]
        fields = self.ir["digests"][index]["fields"]
        if [f["w"] for f in fields] != [v.ir["w"] for v in data]:
            raise P4Error(loc, f"the digest data does not match the fields of {typ.name}")
        return index

    def tuple_digest(self, typ: StructType, data: list[Val], loc: Loc) -> int:
        """A digest of a tuple type has no name to take: as p4c (getDigestCall), each such
        call is a digest of its own, `digest_<n>` in call order, with a warning."""
        widths = [width_of(t) if not isinstance(t, StructType) else None
                  for _, t, _ in typ.fields]
        if None in widths:
            raise P4Error(loc, "digest tuples may hold only bit<W> elements")
        if widths != [v.ir["w"] for v in data]:
            raise P4Error(loc, f"the digest data does not match {type_name(typ)}")
        name = f"digest_{sum(1 for d in self.ir['digests'] if d.get('tuple'))}"
        self.warn(loc, f"Cannot find a good name for this digest call, using auto-generated "
                  f"name '{name}'")
        self.ir["digests"].append({"name": name, "tuple": True, "fields": [
            {"name": str(i), "w": w} for i, w in enumerate(widths)]})
        return len(self.ir["digests"]) - 1

    # --- deparser ------------------------------------------------------------------
    def compile_deparser(self, control: Node, roots: dict) -> dict:
        env = self.bind_params(control, roots, self.globals)
        if control.locals:
            raise P4Error(control.locals[0].loc, "the deparser may only emit headers")
        emit: list[int] = []
        for stmt in control.body.body:
            call = stmt.call if stmt.kind == "call_stmt" else None
            if call is None or call.func.kind != "member" or call.func.name != "emit" \
                    or len(call.args) != 1:
                raise P4Error(stmt.loc, "the deparser may only contain packet.emit(header)")
            emit.extend(self.emitted(self.exprs.denote(call.args[0], env), call.args[0].loc))
        return {"emit": emit}

    def emitted(self, target: object, loc: Loc) -> list[int]:
        if isinstance(target, HeaderRef):
            return target.parts
        if isinstance(target, StackRef):
            return list(target.instances)
        if isinstance(target, StructRef):
            return [i for m in target.members.values() for i in self.emitted(m, loc)]
        raise P4Error(loc, "emit needs a header, a header stack or a struct of headers")


def binding_key(target: object) -> object:
    """What a directional argument denotes, comparable across calls (IR of fields/instances)."""
    if isinstance(target, Val):
        return target.ir
    if isinstance(target, HeaderRef):
        return {"header": target.inst}
    if isinstance(target, StackRef):
        return {"stack": target.stack}
    if isinstance(target, ListVal):
        return {"list": [v.ir for v in target.items]}
    return {name: binding_key(m) for name, m in target.members.items()}


def compile_program(path: Path) -> dict:
    """Compile a P4 file to the IR dict (docs/p4-ir.md); raises P4Error."""
    return Compiler(path).compile()


def compile_with_warnings(path: Path) -> tuple[dict, list[P4Warning]]:
    """The IR and the warnings about the program, in source order; raises P4Error."""
    compiler = Compiler(path)
    ir = compiler.compile()
    return ir, sorted(compiler.warnings, key=lambda w: (w.loc.file, w.loc.line, w.loc.col))


__all__ = ["compile_program", "compile_with_warnings", "const"]
