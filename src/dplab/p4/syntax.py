"""Recursive-descent parser: tokens -> a tree of `Node`s (no names resolved, no types checked)."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dplab.p4.errors import Loc, P4Error
from dplab.p4.lexer import Token
from dplab.p4.limits import MAX_NESTING

TYPE_KEYWORDS = {"bit", "bool", "int", "varbit", "error", "void", "packet_in", "packet_out",
                 "tuple"}
# Binary operators from lowest to highest precedence, as in the P4_16 grammar.
BINARY_LEVELS = [
    ["||"], ["&&"], ["==", "!="], ["<", ">", "<=", ">="], ["|"], ["^"], ["&"],
    ["<<", ">>"], ["++", "+", "-", "|+|", "|-|"], ["*", "/", "%"],
]
_LEVEL_OF = {op: level for level, ops in enumerate(BINARY_LEVELS) for op in ops}
# `a op= b` (P4_16 1.2.4): the operator's token, then a glued '='; `>>=` lexes as '>' '>='.
COMPOUND_OPS = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", "|+|", "|-|"}


class Node:
    """One syntax tree node: a kind, a location, and kind-specific attributes."""

    def __init__(self, kind: str, loc: Loc, **attrs: object) -> None:
        self.kind = kind
        self.loc = loc
        self.__dict__.update(attrs)
        # Chains (a + b + ..., x.y.z..., else-if) deepen the tree without deepening the
        # parser's own recursion: the tree's depth is bounded here, where it grows.
        self.depth = 1 + max((child.depth for child in _children(attrs.values())), default=0)
        if self.depth > MAX_NESTING:
            raise P4Error(loc, f"nested more than {MAX_NESTING} levels deep")

    def __repr__(self) -> str:
        attrs = {k: v for k, v in self.__dict__.items() if k not in ("kind", "loc", "depth")}
        return f"Node({self.kind}, {attrs})"


@dataclass(frozen=True)
class Annotation:
    """One `@name`, `@name(tokens)` or structured `@name[tokens]`, as written."""

    name: str
    body: list[Token]
    loc: Loc
    structured: bool = False


class Annotations(dict):
    """A declaration's unstructured annotations by name (the compiler's lookups), plus
    every annotation in source order (`written`, for P4Info)."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[Annotation] = []


def _children(values: Iterator[object] | list[object]) -> Iterator["Node"]:
    for value in values:
        if isinstance(value, Node):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, Node))


def name_loc(node: Node) -> Loc:
    """Where a declaration's name is: p4c's diagnostics about a declaration point there."""
    return getattr(node, "name_loc", node.loc)


class Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.type_names: set[str] = set()
        self.nesting = 0

    @contextmanager
    def nested(self) -> Iterator[None]:
        """One level deeper in the parser's recursion; refuses what would exhaust the stack."""
        if self.nesting >= MAX_NESTING:
            raise P4Error(self.tok.loc, f"nested more than {MAX_NESTING} levels deep")
        self.nesting += 1
        try:
            yield
        finally:
            self.nesting -= 1

    # --- token helpers -------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        return self.tok.kind in ("op", "id") and self.tok.text in texts

    def advance(self) -> Token:
        token = self.tok
        if token.kind != "eof":
            self.pos += 1
        return token

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.advance()
            return True
        return False

    def expect(self, text: str) -> Token:
        if not self.at(text):
            self.fail(f"expected '{text}'")
        return self.advance()

    def ident(self) -> Token:
        if self.tok.kind != "id":
            self.fail("expected a name")
        return self.advance()

    def fail(self, reason: str) -> None:
        found = "end of file" if self.tok.kind == "eof" else f"'{self.tok.text}'"
        raise P4Error(self.tok.loc, f"{reason}, found {found}")

    def at_shift_right(self) -> bool:
        return self.at(">") and self.peek().text == ">" and self.peek().glued

    # --- program -------------------------------------------------------------------
    def program(self) -> list[Node]:
        decls = []
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            decls.append(self.declaration())
        return decls

    def annotations(self) -> "Annotations":
        found = Annotations()
        while self.at("@"):
            at = self.advance()
            name = self.ident().text
            body: list[Token] = []
            structured = self.at("[") and self.tok.glued
            if structured:
                body = self.balanced("[", "]")
            elif self.at("(") and self.tok.glued:
                body = self.balanced("(", ")")
                found[name] = body
            else:
                found[name] = body
            found.written.append(Annotation(name, body, at.loc, structured))
        return found

    def balanced(self, opening: str, closing: str) -> list[Token]:
        """Tokens between a bracket pair (the brackets consumed, not returned)."""
        start = self.expect(opening)
        depth, inner = 1, []
        while True:
            if self.tok.kind == "eof":
                raise P4Error(start.loc, f"'{opening}' is never closed")
            if self.at(opening):
                depth += 1
            elif self.at(closing):
                depth -= 1
                if depth == 0:
                    self.advance()
                    return inner
            inner.append(self.advance())

    def declaration(self) -> Node:
        annos = self.annotations()
        loc = self.tok.loc
        word = self.tok.text if self.tok.kind == "id" else ""
        handler = {
            "typedef": self.typedef, "type": self.typedef, "const": self.constant,
            "header": self.header_or_struct, "struct": self.header_or_struct,
            "header_union": self.header_or_struct, "enum": self.enum, "error": self.error_decl,
            "match_kind": self.match_kind, "extern": self.extern, "action": self.action,
            "parser": self.parser_decl, "control": self.control_decl, "package": self.package,
        }.get(word)
        if handler is not None:
            node = handler()
        elif self.tok.kind == "id":
            node = self.instantiation_or_var()
        else:
            self.fail("expected a declaration")
        node.annos = annos
        node.name_loc = node.loc   # where p4c points for the declaration's diagnostics
        node.loc = loc
        return node

    def annotated(self, keyword: str, parse: Callable[[], Node]) -> Node | None:
        """`@a(...) keyword ...` parsed by `parse`, with its annotations; None (nothing
        consumed) if `keyword` does not follow the annotations."""
        start = self.pos
        annos = self.annotations()
        if not self.at(keyword):
            self.pos = start
            return None
        node = parse()
        node.annos = annos
        return node

    def typedef(self) -> Node:
        self.advance()
        typ = self.type_ref()
        name = self.ident()
        self.expect(";")
        self.type_names.add(name.text)
        return Node("typedef", name.loc, name=name.text, type=typ)

    def constant(self) -> Node:
        self.advance()
        typ = self.type_ref()
        name = self.ident()
        self.expect("=")
        value = self.expression()
        self.expect(";")
        return Node("const", name.loc, name=name.text, type=typ, value=value)

    def header_or_struct(self) -> Node:
        kind = self.advance().text
        name = self.ident()
        self.type_names.add(name.text)
        self.expect("{")
        fields = []
        while not self.accept("}"):
            annos = self.annotations()
            typ = self.type_ref()
            fname = self.ident()
            self.expect(";")
            fields.append(Node("field", fname.loc, name=fname.text, type=typ, annos=annos))
        return Node(kind, name.loc, name=name.text, fields=fields)

    def enum(self) -> Node:
        self.advance()
        underlying = self.type_ref() if self.at("bit") else None
        name = self.ident()
        self.type_names.add(name.text)
        self.expect("{")
        members = []
        while not self.accept("}"):
            member = self.ident()
            value = self.expression() if self.accept("=") else None
            members.append(Node("member", member.loc, name=member.text, value=value))
            if not self.at("}"):
                self.expect(",")
        return Node("enum", name.loc, name=name.text, underlying=underlying, members=members)

    def error_decl(self) -> Node:
        self.advance()
        names = self.name_list()
        return Node("error_decl", names[0].loc if names else self.tok.loc, names=names)

    def match_kind(self) -> Node:
        self.advance()
        return Node("match_kind", self.tok.loc, names=self.name_list())

    def name_list(self) -> list[Token]:
        self.expect("{")
        names = []
        while not self.accept("}"):
            names.append(self.ident())
            if not self.at("}"):
                self.expect(",")
        return names

    def extern(self) -> Node:
        """Extern declarations (only in our own core.p4/v1model.p4): kept as names only;
        the compiler knows the v1model externs' semantics itself."""
        self.advance()
        if self.at("void") or self.peek().kind == "id":
            self.type_ref()
            name = self.ident()
            while not self.at(";"):
                self.balanced("(", ")") if self.at("(") else self.advance()
            self.expect(";")
            return Node("extern_function", name.loc, name=name.text)
        name = self.ident()
        self.type_names.add(name.text)
        if self.at("<"):
            self.balanced("<", ">")
        self.balanced("{", "}")
        return Node("extern_object", name.loc, name=name.text)

    def package(self) -> Node:
        self.advance()
        name = self.ident()
        self.type_names.add(name.text)
        while not self.at(";"):
            self.advance() if not self.at("(") else self.balanced("(", ")")
        self.expect(";")
        return Node("package", name.loc, name=name.text)

    def type_params(self) -> list[str]:
        if not self.at("<"):
            return []
        names = [t.text for t in self.balanced("<", ">") if t.kind == "id"]
        self.type_names.update(names)
        return names

    def params(self) -> list[Node]:
        self.expect("(")
        params = []
        while not self.accept(")"):
            annos = self.annotations()
            direction = self.advance().text if self.at("in", "out", "inout") else ""
            typ = self.type_ref()
            name = self.ident()
            default = self.expression() if self.accept("=") else None
            params.append(Node("param", name.loc, name=name.text, type=typ,
                               direction=direction, annos=annos, default=default))
            if not self.at(")"):
                self.expect(",")
        return params

    def action(self) -> Node:
        self.advance()
        name = self.ident()
        params = self.params()
        return Node("action", name.loc, name=name.text, params=params, body=self.block())

    def block_decl_head(self) -> tuple:
        """`parser`/`control` keyword, name (a type name from here on), type params, params."""
        self.advance()
        name = self.ident()
        self.type_names.add(name.text)
        self.type_params()
        return name, self.params()

    def parser_decl(self) -> Node:
        name, params = self.block_decl_head()
        if self.accept(";"):
            return Node("parser_type", name.loc, name=name.text)
        self.expect("{")
        locals_, states = [], []
        while not self.accept("}"):
            state = self.annotated("state", self.state)
            if state is not None:
                states.append(state)
            else:
                locals_.append(self.declaration())
        return Node("parser", name.loc, name=name.text, params=params, locals=locals_,
                    states=states)

    def state(self) -> Node:
        self.advance()
        name = self.ident()
        self.expect("{")
        body = []
        while not self.at("transition", "}"):
            body.append(self.statement())
        transition = None
        if self.accept("transition"):
            transition = self.transition()
        self.expect("}")
        return Node("state", name.loc, name=name.text, body=body, transition=transition)

    def transition(self) -> Node:
        loc = self.tok.loc
        if not self.accept("select"):
            target = self.ident()
            self.expect(";")
            return Node("goto", loc, target=target)
        self.expect("(")
        keys = self.expression_list(")")
        self.expect("{")
        cases = []
        while not self.accept("}"):
            case_loc = self.tok.loc
            sets = self.keysets()
            self.expect(":")
            target = self.ident()
            self.expect(";")
            cases.append(Node("case", case_loc, sets=sets, target=target))
        return Node("select", loc, keys=keys, cases=cases)

    def keysets(self) -> list[Node]:
        if self.accept("("):
            sets = []
            while not self.accept(")"):
                sets.append(self.keyset())
                if not self.at(")"):
                    self.expect(",")
            return sets
        return [self.keyset()]

    def keyset(self) -> Node:
        loc = self.tok.loc
        if self.accept("default") or self.accept("_"):
            return Node("any", loc)
        value = self.expression()
        if self.accept("&&&"):
            return Node("mask", loc, value=value, mask=self.expression())
        if self.accept(".."):
            return Node("range", loc, lo=value, hi=self.expression())
        return Node("exact", loc, value=value)

    def control_decl(self) -> Node:
        name, params = self.block_decl_head()
        if self.accept(";"):
            return Node("control_type", name.loc, name=name.text)
        self.expect("{")
        locals_ = []
        while not self.at("apply"):
            if self.tok.kind == "eof" or self.at("}"):
                self.fail("expected 'apply' in the control")
            locals_.append(self.annotated("table", self.table) or self.declaration())
        self.advance()
        body = self.block()
        self.expect("}")
        return Node("control", name.loc, name=name.text, params=params, locals=locals_,
                    body=body)

    def table(self) -> Node:
        self.advance()
        name = self.ident()
        if self.accept("("):   # the old `table t() {...}` form, still taken by p4c
            self.expect(")")
        self.expect("{")
        props: list[Node] = []
        while not self.accept("}"):
            props.append(self.table_property())
        return Node("table", name.loc, name=name.text, props=props)

    def table_property(self) -> Node:
        annos = self.annotations()
        loc = self.tok.loc
        is_const = self.accept("const")
        name = self.ident().text
        self.expect("=")
        if name == "key":
            value = self.table_keys()
        elif name == "actions":
            value = self.table_actions()
        elif name == "entries":
            value = self.table_entries()
        else:
            value = self.expression()
            self.expect(";")
        return Node("property", loc, name=name, value=value, const=is_const, annos=annos)

    def table_keys(self) -> list[Node]:
        self.expect("{")
        keys = []
        while not self.accept("}"):
            start = self.pos
            expr = self.expression()
            text = "".join(t.text for t in self.tokens[start:self.pos])
            self.expect(":")
            kind = self.ident()
            annos = self.annotations()
            self.expect(";")
            keys.append(Node("key", expr.loc, expr=expr, text=text, match=kind, annos=annos))
        return keys

    def table_actions(self) -> list[Node]:
        self.expect("{")
        actions = []
        while not self.accept("}"):
            annos = self.annotations()
            call = self.expression()
            self.expect(";")
            actions.append(Node("action_ref", call.loc, call=call, annos=annos))
        return actions

    def table_entries(self) -> list[Node]:
        self.expect("{")
        entries = []
        while not self.accept("}"):
            annos = self.annotations()
            loc = self.tok.loc
            is_const = self.accept("const")  # an entry the control plane may not change
            priority = self.entry_priority()
            annotated = self.priority_annotation(annos, loc)
            sets = self.keysets()
            self.expect(":")
            action = self.expression()
            self.expect(";")
            entries.append(Node("entry", loc, sets=sets, action=action, annos=annos,
                                const=is_const, priority=priority,
                                priority_annotation=annotated))
        return entries

    def entry_priority(self) -> Node | None:
        """`priority = N :` in front of an entry's keyset (P4_16 1.2.4, Entry priorities)."""
        if not (self.at("priority") and self.peek().text == "="):
            return None
        self.advance()
        self.advance()
        loc = self.tok.loc
        value = self.expression()
        self.expect(":")
        return Node("priority", loc, value=value)

    def priority_annotation(self, annos: "Annotations", loc: Loc) -> Node | None:
        """`@priority(N)` on an entry (dplab/p4/priorities.py: BMv2's reading of it)."""
        if "priority" not in annos:
            return None
        body = annos["priority"]
        if not body:
            raise P4Error(loc, "@priority needs a value: @priority(N)")
        sub = Parser([*body, Token("eof", "", body[-1].loc)])
        value = sub.expression()
        if sub.tok.kind != "eof":
            sub.fail("expected the end of the @priority value")
        return Node("priority", body[0].loc, value=value)

    def instantiation_or_var(self) -> Node:
        """`Type(args) name;` (instantiation) or `Type name [= expr];` (variable)."""
        typ = self.type_ref()
        if self.at("("):
            args = self.call_args()
            name = self.ident()
            self.expect(";")
            return Node("instance", name.loc, type=typ, args=args, name=name.text)
        name = self.ident()
        if self.at("(") or self.at("<"):
            return self.function(typ, name)
        init = self.expression() if self.accept("=") else None
        self.expect(";")
        return Node("var", name.loc, type=typ, name=name.text, init=init)

    def function(self, result: Node, name: Token) -> Node:
        """`T name(params) { body }` (P4_16 10.3); a generic one is refused where it stands."""
        if self.at("<"):
            self.fail(f"generic functions ({name.text}<...>) are not supported")
        params = self.params()
        return Node("function", name.loc, name=name.text, result=result, params=params,
                    body=self.block())

    # --- types ---------------------------------------------------------------------
    def type_ref(self) -> Node:
        with self.nested():
            return self._type_ref()

    def _type_ref(self) -> Node:
        loc = self.tok.loc
        name = self.ident()
        if name.text in ("bit", "int", "varbit") and self.at("<"):
            self.advance()
            width = self.advance()
            if width.kind != "int":
                raise P4Error(width.loc, "a width must be a number")
            self.expect(">")
            typ = Node(name.text, loc, width=width.value)
        elif name.text in ("bit", "int") and not self.at("<"):
            typ = Node(name.text, loc, width=1 if name.text == "bit" else None)
        else:
            args = []
            if self.at("<"):
                self.advance()
                while not self.accept(">"):
                    args.append(self.type_ref())
                    if not self.at(">"):
                        self.expect(",")
            typ = Node("named", loc, name=name.text, args=args)
        while self.at("[") and self.peek().kind == "int" and self.peek(2).text == "]":
            self.advance()
            size = self.advance().value
            self.advance()
            typ = Node("stack", loc, base=typ, size=size)
        return typ

    # --- statements ----------------------------------------------------------------
    def block(self) -> Node:
        loc = self.expect("{").loc
        body = []
        while not self.accept("}"):
            if self.tok.kind == "eof":
                raise P4Error(loc, "'{' is never closed")
            body.append(self.statement())
        return Node("block", loc, body=body)

    def statement(self) -> Node:
        with self.nested():
            return self._statement()

    def _statement(self) -> Node:
        if self.at("@"):
            self.annotations()   # block annotations (@atomic) are hints for targets
        loc = self.tok.loc
        if self.at("{"):
            return self.block()
        if self.accept(";"):
            return Node("block", loc, body=[])
        if self.accept("if"):
            self.expect("(")
            cond = self.expression()
            self.expect(")")
            then = self.statement()
            other = self.statement() if self.accept("else") else None
            return Node("if", loc, cond=cond, then=then, other=other)
        if self.accept("switch"):
            return self.switch(loc)
        if self.accept("for"):
            return self.for_loop(loc)
        if self.at("break", "continue") and self.peek().text == ";":
            word = self.advance().text
            self.advance()
            return Node(word, loc)
        if self.at("exit", "return"):
            word = self.advance().text
            value = self.expression() if word == "return" and not self.at(";") else None
            self.expect(";")
            return Node(word, loc, value=value)
        if self.at("const"):
            return self.declaration()
        if self.is_declaration_start():
            return self.instantiation_or_var()
        stmt = self.assignment_or_call(loc)
        self.expect(";")
        return stmt

    def assignment_or_call(self, loc: Loc) -> Node:
        """`lvalue = e`, `lvalue op= e` or a call, without its ';'."""
        target = self.expression()
        if self.accept("="):
            return Node("assign", loc, target=target, value=self.expression())
        compound = self.compound_op()
        if compound is not None:
            op, op_loc = compound
            value = self.expression()
            # `a op= b` is `a = a op b` (the l-value has no side effects to run twice)
            return Node("assign", loc, target=target,
                        value=Node("binary", op_loc, op=op, a=target, b=value))
        if target.kind != "call":
            self.expect(";")   # `x y`: the missing ';' is the likelier mistake
            raise P4Error(loc, "an expression is not a statement "
                          "(expected an assignment or a call)")
        return Node("call_stmt", loc, call=target)

    def for_loop(self, loc: Loc) -> Node:
        """`for (init; cond; update) body` or `for (T x in collection) body`, the
        collection an expression or a range `lo .. hi` (P4_16 1.2.4, 12.x)."""
        self.expect("(")
        if self.is_declaration_start():
            start = self.pos
            typ = self.type_ref()
            name = self.ident()
            if self.accept("in"):
                items = self.expression()
                hi = self.expression() if self.accept("..") else None
                self.expect(")")
                return Node("for_in", loc, type=typ, name=name.text, name_loc=name.loc,
                            items=items, hi=hi, body=self.statement())
            self.pos = start
        init = self.for_clauses(";", declarations=True)
        cond = None if self.at(";") else self.expression()
        self.expect(";")
        update = self.for_clauses(")", declarations=False)
        return Node("for", loc, init=init, cond=cond, update=update, body=self.statement())

    def for_clauses(self, closing: str, declarations: bool) -> list[Node]:
        """A for loop's initialisation (declarations too) or update: statements separated
        by ',' up to `closing` (consumed)."""
        clauses: list[Node] = []
        while not self.accept(closing):
            loc = self.tok.loc
            if declarations and self.is_declaration_start():
                typ = self.type_ref()
                name = self.ident()
                init = self.expression() if self.accept("=") else None
                clauses.append(Node("var", name.loc, type=typ, name=name.text, init=init))
            else:
                clauses.append(self.assignment_or_call(loc))
            if not self.at(closing):
                self.expect(",")
        return clauses

    def compound_op(self) -> tuple[str, Loc] | None:
        """The operator of a compound assignment at the cursor (consumed), else None."""
        loc = self.tok.loc
        if self.at(">") and self.peek().text == ">=" and self.peek().glued:
            self.advance()
            self.advance()
            return ">>", loc
        if self.tok.kind == "op" and self.tok.text in COMPOUND_OPS \
                and self.peek().text == "=" and self.peek().glued:
            op = self.advance().text
            self.advance()
            return op, loc
        return None

    def is_declaration_start(self) -> bool:
        if self.tok.kind != "id":
            return False
        name, after = self.tok.text, self.peek()
        if name in TYPE_KEYWORDS:
            return True
        if name in self.type_names:
            return after.kind == "id" or after.text in ("<", "[")
        # `x_t v;` with x_t declared nowhere: no expression starts with two names, so this
        # is a declaration, and the compiler names the unknown type.
        return after.kind == "id" and self.peek(2).text in (";", "=")

    def switch(self, loc: Loc) -> Node:
        self.expect("(")
        subject = self.expression()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.accept("}"):
            case_loc = self.tok.loc
            if self.accept("default"):
                label, expr = "default", None
            else:   # an action name (action_run) or, switching on a value, an expression
                expr = self.expression()
                label = expr.name if expr.kind == "name" else ""
            self.expect(":")
            body = self.block() if self.at("{") else None
            cases.append(Node("switch_case", case_loc, label=label, expr=expr, body=body))
        return Node("switch", loc, subject=subject, cases=cases)

    # --- expressions ---------------------------------------------------------------
    def expression_list(self, closing: str) -> list[Node]:
        items = []
        while not self.accept(closing):
            items.append(self.expression())
            if not self.at(closing):
                self.expect(",")
        return items

    def call_args(self) -> list[Node]:
        self.expect("(")
        return self.expression_list(")")

    def expression(self) -> Node:
        with self.nested():
            return self._expression()

    def _expression(self) -> Node:
        cond = self.binary(0)
        if self.at("?"):
            loc = self.advance().loc
            then = self.expression()
            self.expect(":")
            return Node("cond", loc, c=cond, a=then, b=self.expression())
        return cond

    def binary(self, lowest: int) -> Node:
        """Operators of precedence level `lowest` and above, left-associative (precedence
        climbing: one call per operand, not one per level, so nesting stays cheap)."""
        left = self.unary()
        while True:
            level = self.binary_level()
            if level is None or level < lowest:
                return left
            shift_right = self.at_shift_right()
            token = self.advance()
            if shift_right:
                self.advance()   # '>>' comes as two '>' tokens, so that `bit<bit<8>>` lexes
            loc, op = token.loc, ">>" if shift_right else token.text
            left = Node("binary", loc, op=op, a=left, b=self.binary(level + 1))

    def binary_level(self) -> int | None:
        """The precedence level of the binary operator at the current token, if it is one
        (not when it starts a compound assignment, `a += b`)."""
        if self.at(">") and self.peek().text == ">=" and self.peek().glued:
            return None
        if self.peek().text == "=" and self.peek().glued and self.tok.text in COMPOUND_OPS:
            return None
        if self.at_shift_right():
            return _LEVEL_OF[">>"]
        return _LEVEL_OF.get(self.tok.text) if self.tok.kind == "op" else None

    def unary(self) -> Node:
        loc = self.tok.loc
        if self.at("!", "~", "-", "+"):
            op = self.advance().text
            with self.nested():
                return Node("unary", loc, op=op, a=self.unary())
        if self.at("(") and self.is_cast():
            self.advance()
            typ = self.type_ref()
            self.expect(")")
            with self.nested():
                return Node("cast", loc, type=typ, a=self.unary())
        return self.postfix(self.primary())

    def is_cast(self) -> bool:
        first = self.peek()
        if first.kind != "id":
            return False
        if first.text in ("bit", "int", "bool", "varbit"):
            return True
        return first.text in self.type_names and self.peek(2).text == ")"

    def primary(self) -> Node:
        token = self.tok
        if token.kind == "int":
            self.advance()
            return Node("int", token.loc, value=token.value, width=token.width,
                        signed=token.signed)
        if token.kind == "str":
            self.advance()
            return Node("str", token.loc, value=token.text)
        if self.accept("("):
            inner = self.expression()
            self.expect(")")
            return inner
        if self.at("{"):
            self.advance()
            return Node("list", token.loc, items=self.expression_list("}"))
        if token.kind == "id":
            self.advance()
            if token.text in ("true", "false"):
                return Node("bool", token.loc, value=token.text == "true")
            return Node("name", token.loc, name=token.text)
        if self.at("."):
            self.advance()
            return Node("name", token.loc, name=self.ident().text)
        self.fail("expected an expression")
        raise AssertionError  # fail() always raises

    def postfix(self, node: Node) -> Node:
        while True:
            loc = self.tok.loc
            if self.accept("."):
                node = Node("member", loc, base=node, name=self.ident().text)
            elif self.at("[") and self.tok.glued:
                self.advance()
                hi = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    node = Node("slice", loc, base=node, hi=hi, lo=lo)
                else:
                    self.expect("]")
                    node = Node("index", loc, base=node, index=hi)
            elif self.at("<") and self.tok.glued and node.kind in ("member", "name") \
                    and self.peek().kind == "id" and self._generic_call_ahead():
                self.advance()
                targs = []
                while not self.accept(">"):
                    targs.append(self.type_ref())
                    if not self.at(">"):
                        self.expect(",")
                node = Node("call", loc, func=node, targs=targs, args=self.call_args())
            elif self.at("(") and node.kind in ("member", "name"):
                node = Node("call", node.loc, func=node, targs=[], args=self.call_args())
            else:
                return node

    def _generic_call_ahead(self) -> bool:
        """`f<T>(` is a call with type arguments, `a < b` a comparison: find the '>' then '('."""
        depth = 0
        for ahead in range(1, 40):
            token = self.peek(ahead)
            if token.text == "<":
                depth += 1
            elif token.text == ">":
                if depth == 0:
                    return self.peek(ahead + 1).text == "("
                depth -= 1
            elif token.kind == "eof" or token.text in (";", "{", ")"):
                return False
        return False


def parse(tokens: list[Token]) -> list[Node]:
    return Parser(tokens).program()
