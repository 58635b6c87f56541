"""Type checking of expressions: syntax nodes -> typed IR expression trees (docs/p4-ir.md §4)."""

from collections.abc import Callable
from dataclasses import dataclass

from dplab.p4 import equality, header_structs, signed, tuples, unions, varbit
from dplab.p4.equality import COMPOUND, is_plain_path
from dplab.p4.errors import Loc, P4Error
from dplab.p4.limits import MAX_INT_BITS
from dplab.p4.stack_index import DynamicIndex
from dplab.p4.stack_last import StackLastCheck
from dplab.p4.syntax import Node
from dplab.p4.types import (
    MAX_WIDTH,
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
    ParserRef,
    Signed,
    StackRef,
    StringType,
    StructRef,
    StructType,
    TableRef,
    TypeRef,
    UserFunction,
    Val,
    VarbitVal,
    type_name,
    width_of,
)

_ARITH = {"+": "add", "-": "sub", "*": "mul", "|+|": "addsat", "|-|": "subsat",
          "&": "and", "|": "or", "^": "xor"}
# unsigned; a zero divisor at run time gives 0 in the switch (docs/p4-ir.md, 4)
_DIVIDE = {"/": "div", "%": "mod"}
_COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_FOLD: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "/": lambda a, b: a // b, "%": lambda a, b: a % b,
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b),
    "|+|": lambda a, b: a + b, "|-|": lambda a, b: max(a - b, 0),
    ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
}

Env = dict[str, object]


def const(value: int, width: int, typ: object = None) -> Val:
    """A `width`-bit constant (the low bits of `value`) of type `typ` (default bit<W>)."""
    value &= (1 << width) - 1
    typ = Bits(width) if typ is None else typ
    return Val({"op": "const", "w": width, "v": hex(value)}, typ, value)


def bool_const(value: bool) -> Val:
    return Val({"op": "const", "w": 1, "v": hex(int(value))}, BoolType(), int(value))


def check_width(width: int, loc: Loc) -> int:
    if not 1 <= width <= MAX_WIDTH:
        raise P4Error(loc, f"width {width} is outside 1..{MAX_WIDTH} bits")
    return width


class ExprChecker:
    """Resolves names in an environment and types expressions."""

    def __init__(self, resolve_type: Callable[[Node], object]) -> None:
        self.resolve_type = resolve_type
        self.in_parser = False   # lookahead, .last and .lastIndex exist only in parsers
        self.stack_last: StackLastCheck | None = None   # set while a parser is compiled
        self.used: set[int] = set()   # ids of the declarations a name has referred to
        # What an expression runs before the statement it is in (a table apply for
        # `t.apply().hit`, an inlined function's body); None where no statement encloses it.
        self.pending: list[dict] | None = None
        # index expressions (ids of their `index` nodes) that stack_index.expand has fixed
        # to one element while it compiles a statement once per element
        self.fixed_indices: dict[int, int] = {}
        self.new_local: Callable[[str, object, Loc], Val] | None = None
        self.inline_function: Callable[[UserFunction, Node, Env], tuple] | None = None

    # --- names ---------------------------------------------------------------------
    def named(self, node: Node, env: Env) -> object | None:
        """What `node` refers to when it is a name/member/index expression, else None."""
        return self.denote(node, env) if node.kind in ("name", "member", "index") else None

    def denote(self, node: Node, env: Env) -> object:
        """What a name/member/index expression refers to (not only scalars)."""
        if node.kind == "name":
            if node.name not in env:
                raise P4Error(node.loc, f"'{node.name}' is not declared")
            self.used.add(id(env[node.name]))
            return env[node.name]
        if node.kind == "member":
            return self.member(self.denote(node.base, env) if node.base.kind in
                               ("name", "member", "index") else self.value(node.base, env),
                               node)
        if node.kind == "index":
            return self.stack_index(self.denote(node.base, env), node, env)
        return self.value(node, env)

    def member(self, base: object, node: Node) -> object:
        name = node.name
        if isinstance(base, unions.UnionStackRef) and name == "next":
            return self.union_stack_next(base, node.loc)
        if isinstance(base, tuple) and base[0] == "union_next":
            return unions.next_member(base[1], name, node.loc)
        if isinstance(base, StructRef):
            if unions.is_union(base.type) and name == "isValid":
                return ("union_method", base, name)
            if name not in base.members:
                raise P4Error(node.loc, f"{base.type.name} has no field '{name}'")
            return base.members[name]
        if isinstance(base, HeaderRef):
            for index, (fname, ftype, _) in enumerate(base.type.fields):
                if fname == name and base.varbit is not None:
                    return varbit.field(base, index)
                if fname == name:
                    w = width_of(ftype)
                    return Val({"op": "field", "w": w, "inst": base.inst, "field": index}, ftype)
            fields = header_structs.group(
                base.type, name, lambda flat: self.member(base, Node("member", node.loc,
                                                                    name=flat)))
            if fields is not None:
                return fields
            if name in ("isValid", "setValid", "setInvalid", "minSizeInBits",
                        "minSizeInBytes"):
                return ("header_method", base, name)
            raise P4Error(node.loc, f"header {base.type.name} has no field '{name}'")
        if isinstance(base, StackRef) and name in ("last", "lastIndex"):
            if not self.in_parser:
                # P4_16 spec 8.18: last and lastIndex "can only be used in a parser".
                raise P4Error(node.loc, f"header stack '.{name}' is only allowed in a parser")
            self.stack_last.read(base.stack, node.loc)
            return StackLast(base) if name == "last" else last_index(base)
        if isinstance(base, StackLast):
            return base.field(name, node)
        if isinstance(base, Val) and isinstance(base.type, StructType) \
                and base.ir.get("op") == "lookahead":
            return lookahead_field(base, name, node.loc)
        if isinstance(base, StackRef) and name in ("next", "push_front", "pop_front", "size"):
            if name == "size":
                return const(base.type.size, 32)
            return ("stack_method", base, name)
        if isinstance(base, TypeRef):
            return self.type_member(base.type, node)
        if isinstance(base, TableRef | ExternRef | FunctionRef | ControlRef | ParserRef):
            return ("method", base, name)
        if isinstance(base, tuple) and base[0] == "apply_result":
            return ("apply_member", base[1], name)
        raise P4Error(node.loc, f"'{name}' cannot be selected here")

    def type_member(self, typ: object, node: Node) -> Val:
        if isinstance(typ, ErrorType | EnumType):
            members = dict(typ.members) if isinstance(typ, EnumType) else self.errors
            if node.name not in members:
                raise P4Error(node.loc, f"{type_name(typ)} has no member '{node.name}'")
            return Val({"op": "const", "w": width_of(typ), "v": hex(members[node.name])}, typ,
                       members[node.name])
        raise P4Error(node.loc, f"type {type_name(typ)} has no member '{node.name}'")

    errors: dict[str, int] = {}

    def union_stack_next(self, stack: unions.UnionStackRef, loc: Loc) -> tuple:
        """`us.next` of a stack of unions: only in the parser, only to extract into one of
        its members; its index is a $locals scalar made here the first time."""
        if not self.in_parser:
            raise P4Error(loc, "'.next' of a stack of header unions is only allowed in a "
                          "parser")
        if stack.next_index is None:
            stack.next_index = self.new_local(f"{stack.type.name}$next", Bits(32), loc)
        return ("union_next", stack)

    def stack_index(self, base: object, node: Node, env: Env) -> object:
        if isinstance(base, StructRef) and tuples.is_tuple(base.type):
            return tuples.element(base, self.value(node.index, env), node.index.loc)
        if isinstance(base, StructRef) and unions.is_union_stack(base.type):
            return unions.stack_element(base, self.value(node.index, env), node.index.loc)
        if not isinstance(base, StackRef):
            raise P4Error(node.loc, "only header stacks can be indexed")
        fixed = self.fixed_indices.get(id(node))
        if fixed is not None:   # one branch of stack_index.expand
            return HeaderRef(base.instances[fixed], base.type.base)
        index = self.value(node.index, env)
        if index.const is None:
            raise DynamicIndex(node, base.type.size)
        if not 0 <= index.const < base.type.size:
            raise P4Error(node.index.loc, f"index {index.const} is outside the stack "
                          f"(size {base.type.size})")
        return HeaderRef(base.instances[index.const], base.type.base)

    # --- values --------------------------------------------------------------------
    def value(self, node: Node, env: Env, width: int | None = None) -> Val:
        """A scalar value; `width` is the width an integer literal should take."""
        val = self._value(node, env)
        if isinstance(val.type, IntType) and width is not None:
            return self.to_width(val, width, node.loc)
        return val

    def typed(self, node: Node, env: Env, typ: object) -> Val:
        """A value for a place of type ``typ``: an integer without width takes that type."""
        if not isinstance(typ, Signed):
            return self.value(node, env, width_of(typ))
        val = self._value(node, env)
        return self.int_to(val, typ, node.loc) if isinstance(val.type, IntType) else val

    def int_to(self, val: Val, typ: Signed, loc: Loc) -> Val:
        """An integer without width (a constant) as int<W>: it must fit."""
        if not signed.fits(val.const, typ.width):
            raise P4Error(loc, f"value {val.const} does not fit in {type_name(typ)}")
        return const(val.const, typ.width, typ)

    def bits(self, node: Node, env: Env, width: int | None = None) -> Val:
        val = self.value(node, env, width)
        if isinstance(val.type, IntType):
            raise P4Error(node.loc, "cannot tell the width of this integer; give it one "
                          "(e.g. 8w5) or cast it")
        return val

    def condition(self, node: Node, env: Env) -> Val:
        val = self.value(node, env)
        if not isinstance(val.type, BoolType):
            raise P4Error(node.loc, f"a condition must be bool, not {type_name(val.type)}")
        return val

    def to_width(self, val: Val, width: int, loc: Loc) -> Val:
        if val.const is None:
            raise P4Error(loc, "an integer without width must be a compile-time constant")
        if val.const < 0 or val.const >= 1 << width:
            if val.const < 0 and -val.const <= 1 << width:
                return const(val.const, width)
            raise P4Error(loc, f"value {val.const} does not fit in bit<{width}>")
        return const(val.const, width)

    def _value(self, node: Node, env: Env) -> Val:
        kind = node.kind
        if kind == "int":
            if node.width is not None:
                check_width(node.width, node.loc)
                if getattr(node, "signed", False):
                    return self.int_to(Val({}, IntType(), node.value), Signed(node.width),
                                       node.loc)
                if node.value >= 1 << node.width:
                    raise P4Error(node.loc, f"value {node.value} does not fit in "
                                  f"bit<{node.width}>")
                return const(node.value, node.width)
            return Val({"op": "const", "w": None, "v": hex(node.value)}, IntType(), node.value)
        if kind == "bool":
            return bool_const(node.value)
        if kind == "str":
            return Val({}, StringType(), None)
        if kind == "member" and node.name in ("hit", "miss") and node.base.kind == "call":
            return self.apply_hit(node, env)
        if kind in ("name", "member", "index"):
            return self.scalar(self.denote(node, env), node)
        if kind == "binary":
            return self.binary(node, env)
        if kind == "unary":
            return self.unary(node, env)
        if kind == "cond":
            return self.conditional(node, env)
        if kind == "cast":
            return self.cast(self.value(node.a, env), self.resolve_type(node.type), node.loc)
        if kind == "slice":
            return self.slice(node, env)
        if kind == "call":
            return self.call_value(node, env)
        raise P4Error(node.loc, "this expression is not supported here")

    def scalar(self, target: object, node: Node) -> Val:
        if isinstance(target, Val):
            return target
        if isinstance(target, VarbitVal):
            raise varbit.misuse(target, node.loc)
        raise P4Error(node.loc, "expected a value, found a " + _describe(target))

    def call_value(self, node: Node, env: Env) -> Val:
        func = self.denote(node.func, env)
        if isinstance(func, UserFunction):
            stmts, result = self.inline_function(func, node, env)
            if result is None:
                raise P4Error(node.loc, f"function {func.decl.name} returns no value")
            self.before(node, stmts)
            return result
        if isinstance(func, tuple) and func[0] == "union_method":
            self._no_args(node)
            return unions.is_valid(func[1])
        if isinstance(func, tuple) and func[0] == "header_method" and func[2] == "isValid":
            self._no_args(node)
            return Val({"op": "valid", "w": 1, "inst": func[1].inst}, BoolType())
        if isinstance(func, tuple) and func[0] == "header_method" and func[2].startswith("min"):
            # P4_16 8.17: the header's size with every varbit empty, a compile-time int
            self._no_args(node)
            bits = varbit.min_size_bits(func[1].type)
            size = bits if func[2] == "minSizeInBits" else bits // 8
            return Val({"op": "const", "w": None, "v": hex(size)}, IntType(), size)
        if isinstance(func, tuple) and func[0] == "method" and isinstance(func[1], ExternRef) \
                and func[1].kind == "packet_in" and func[2] == "lookahead":
            if not self.in_parser:
                raise P4Error(node.loc, "lookahead is only allowed in a parser")
            if len(node.targs) != 1:
                raise P4Error(node.loc, "lookahead needs one type argument: lookahead<bit<8>>()")
            typ = self.resolve_type(node.targs[0])
            if isinstance(typ, StructType) and typ.kind == "header":
                varbit.refuse("lookahead", typ, node.loc)
                return Val({"op": "lookahead", "w": header_width(typ)}, typ)
            width = width_of(typ)
            if width is None:
                raise P4Error(node.loc, "lookahead supports only bit<W> and header types")
            return Val({"op": "lookahead", "w": width}, Bits(width))
        if isinstance(func, tuple) and func[0] == "method" and isinstance(func[1], TableRef) \
                and func[2] == "apply":
            raise P4Error(node.loc, "use table.apply() as a statement, with .hit/.miss, or in "
                          "switch (...action_run)")
        raise P4Error(node.loc, "this call does not return a value")

    def apply_hit(self, node: Node, env: Env) -> Val:
        func = self.denote(node.base.func, env)
        if not (isinstance(func, tuple) and func[0] == "method"
                and isinstance(func[1], TableRef) and func[2] == "apply"):
            raise P4Error(node.loc, f"'.{node.name}' needs table.apply()")
        self._no_args(node.base)
        hit = self.new_local("$hit", BoolType(), node.loc)
        self.before(node, [{"kind": "apply", "table": func[1].index,
                            "hit_dest": {"inst": hit.ir["inst"], "field": hit.ir["field"]}}])
        if node.name == "hit":
            return hit
        return Val({"op": "lnot", "w": 1, "a": hit.ir}, BoolType())

    def before(self, node: Node, stmts: list[dict]) -> None:
        """Statements to run before the enclosing statement (refused outside one: a table
        key, a select key or a constant has no statement to run them before)."""
        if self.pending is None:
            raise P4Error(node.loc, "this call is only supported inside a statement "
                          "(assign its result to a variable first)")
        self.pending.extend(stmts)

    def _no_args(self, node: Node) -> None:
        if node.args:
            raise P4Error(node.loc, "this method takes no arguments")

    def unify(self, a: Val, b: Val, loc: Loc, op: str) -> tuple[Val, Val]:
        """Give two operands one type (an integer literal adapts to the other side)."""
        if isinstance(a.type, IntType) and not isinstance(b.type, IntType):
            w = width_of(b.type)
            if w is None or isinstance(b.type, BoolType):
                raise P4Error(loc, f"'{op}' cannot combine int and {type_name(b.type)}")
            if isinstance(b.type, Signed):
                return self.int_to(a, b.type, loc), b
            # the literal converted to the other side's width first (P4_16 8.9.2): -1
            # against a bit<8> is 255, so `8w255 == -1` folds to true
            converted = self.to_width(a, w, loc)
            return Val(converted.ir, b.type, converted.const), b
        if isinstance(b.type, IntType) and not isinstance(a.type, IntType):
            return tuple(reversed(self.unify(b, a, loc, op)))  # type: ignore[return-value]
        if a.type != b.type:
            raise P4Error(loc, f"'{op}' needs operands of one type, found {type_name(a.type)} "
                          f"and {type_name(b.type)} (cast one of them)")
        return a, b

    def binary(self, node: Node, env: Env) -> Val:
        op = node.op
        if op in ("&&", "||"):
            a, b = self.condition(node.a, env), self.condition(node.b, env)
            return self._fold_or_build({"&&": "land", "||": "lor"}[op], a, b, BoolType(), op)
        if op in ("==", "!=") and is_plain_path(node.a) and is_plain_path(node.b):
            left, right = self.denote(node.a, env), self.denote(node.b, env)
            if isinstance(left, COMPOUND) or isinstance(right, COMPOUND):
                return Val(equality.compare(op, left, right, node.loc), BoolType())
        a, b = self.value(node.a, env), self.value(node.b, env)
        if op in ("<<", ">>"):
            return self.shift(a, b, node)
        if op == "++":
            return self.concat(a, b, node)
        a, b = self.unify(a, b, node.loc, op)
        if isinstance(a.type, IntType):
            if op not in _FOLD:
                raise P4Error(node.loc, f"operator '{op}' is not supported")
            if op in ("/", "%") and b.const == 0:
                raise P4Error(node.loc, "division by zero")
            result = _FOLD[op](a.const, b.const)
            if op in _COMPARE:
                return bool_const(bool(result))
            return Val({"op": "const", "w": None, "v": hex(result)}, IntType(), result)
        if op in _COMPARE:
            if op not in ("==", "!=") and isinstance(a.type, Signed):
                return self.signed_compare(op, a, b)
            if op not in ("==", "!=") and not isinstance(a.type, Bits):
                raise P4Error(node.loc, f"'{op}' needs bit<W> or int<W> operands")
            return self._fold_or_build(_COMPARE[op], a, b, BoolType(), op)
        if op in ("|+|", "|-|") and isinstance(a.type, Signed):
            return self.signed_saturating(op, a, b)
        if op in ("/", "%") and isinstance(a.type, Bits) and b.const is not None \
                and a.const is None and b.const > 0 and b.const & (b.const - 1) == 0:
            return self.power_of_two(op, a, b)
        if op in ("/", "%") and isinstance(a.type, Bits):
            if b.const == 0:
                raise P4Error(node.b.loc, "division by zero")
            return self._fold_or_build(_DIVIDE[op], a, b, a.type, op)
        if op not in _ARITH or not isinstance(a.type, Bits | Signed):
            if op in ("/", "%"):
                raise P4Error(node.loc, f"'{op}' is defined only on bit<W> and on integers "
                              f"without width, not on {type_name(a.type)}")
            raise P4Error(node.loc, f"'{op}' is not defined on {type_name(a.type)}")
        return self._fold_or_build(_ARITH[op], a, b, a.type, op)

    def power_of_two(self, op: str, a: Val, b: Val) -> Val:
        """`a / 2^k` is `a >> k`, `a % 2^k` is `a & (2^k - 1)` for unsigned a."""
        w = a.type.width
        if op == "%":
            return Val({"op": "and", "w": w, "a": a.ir, "b": const(b.const - 1, w).ir}, a.type)
        shift = b.const.bit_length() - 1
        return Val({"op": "shr", "w": w, "a": a.ir, "b": const(shift, w).ir}, a.type)

    def signed_saturating(self, op: str, a: Val, b: Val) -> Val:
        w = a.type.width
        if a.const is not None and b.const is not None:
            return const(signed.fold_saturating(op, a.const, b.const, w), w, a.type)
        return Val(signed.saturating(op, a.ir, b.ir, w), a.type)

    def signed_compare(self, op: str, a: Val, b: Val) -> Val:
        if a.const is not None and b.const is not None:
            return bool_const(signed.fold_compare(op, a.const, b.const, a.type))
        return Val(signed.compare(_COMPARE[op], a.ir, b.ir, a.type.width), BoolType())

    def _fold_or_build(self, irop: str, a: Val, b: Val, typ: object, op: str) -> Val:
        w = width_of(typ)
        if a.const is not None and b.const is not None and op in _FOLD | {"&&": 0, "||": 0}:
            if op == "&&":
                return bool_const(bool(a.const and b.const))
            if op == "||":
                return bool_const(bool(a.const or b.const))
            folded = _FOLD[op](a.const, b.const)
            if op == "|+|":
                folded = min(folded, (1 << w) - 1)
            return bool_const(bool(folded)) if isinstance(typ, BoolType) else \
                const(folded, w, typ)
        return Val({"op": irop, "w": w, "a": a.ir, "b": b.ir}, typ)

    def shift(self, a: Val, b: Val, node: Node) -> Val:
        if isinstance(b.type, Signed) or b.const is None and not isinstance(b.type, Bits):
            raise P4Error(node.b.loc, "a shift amount must be bit<W> or a non-negative "
                          f"constant, not {type_name(b.type)}")
        if b.const is not None and b.const < 0:
            raise P4Error(node.b.loc, f"a shift amount must not be negative ({b.const})")
        if isinstance(a.type, IntType):
            if b.const is None:
                raise P4Error(node.a.loc, "cannot tell the width of this integer")
            if node.op == "<<" and a.const.bit_length() + b.const > MAX_INT_BITS:
                raise P4Error(node.loc, f"the integer would be wider than {MAX_INT_BITS} bits")
            value = _FOLD[node.op](a.const, b.const)
            return Val({"op": "const", "w": None, "v": hex(value)}, IntType(), value)
        if not isinstance(a.type, Bits | Signed):
            raise P4Error(node.loc, f"cannot shift a {type_name(a.type)}")
        if isinstance(b.type, IntType):
            amount = min(b.const, a.type.width)   # the same result, and a width the IR takes
            b = const(amount, max(1, amount.bit_length()))
        if isinstance(a.type, Signed) and node.op == ">>":
            return self.signed_shift_right(a, b)
        irop = "shl" if node.op == "<<" else "shr"
        if a.const is not None and b.const is not None:
            return const(_FOLD[node.op](a.const, b.const), a.type.width, a.type)
        return Val({"op": irop, "w": a.type.width, "a": a.ir, "b": b.ir}, a.type)

    def signed_shift_right(self, a: Val, b: Val) -> Val:
        """`>>` of an int<W> is arithmetic: the sign bit fills in from the left."""
        w = a.type.width
        if a.const is not None and b.const is not None:
            value = signed.as_signed(a.const, w) >> b.const
            return const(value, w, a.type)
        return Val(signed.shift_right(a.ir, b.ir, w), a.type)

    def concat(self, a: Val, b: Val, node: Node) -> Val:
        for side, val in (("left", a), ("right", b)):
            if not isinstance(val.type, Bits | Signed):
                raise P4Error(node.loc, f"'++' needs bit<W> or int<W> operands; the {side} "
                              f"one is {type_name(val.type)}")
        w = check_width(a.type.width + b.type.width, node.loc)
        typ = Signed(w) if isinstance(a.type, Signed) else Bits(w)   # the left one's sign
        if a.const is not None and b.const is not None:
            value = (a.const << b.type.width) | b.const
            return const(value, w, typ)
        return Val({"op": "concat", "w": w, "a": a.ir, "b": b.ir}, typ)

    def unary(self, node: Node, env: Env) -> Val:
        if node.op == "!":
            a = self.condition(node.a, env)
            if a.const is not None:
                return bool_const(not a.const)
            return Val({"op": "lnot", "w": 1, "a": a.ir}, BoolType())
        a = self.value(node.a, env)
        if node.op == "+":
            return a
        if isinstance(a.type, IntType):
            value = -a.const if node.op == "-" else ~a.const
            return Val({"op": "const", "w": None, "v": hex(value)}, IntType(), value)
        if not isinstance(a.type, Bits | Signed):
            raise P4Error(node.loc, f"'{node.op}' is not defined on {type_name(a.type)}")
        if a.const is not None:
            value = (-a.const if node.op == "-" else ~a.const) & ((1 << a.type.width) - 1)
            return const(value, a.type.width, a.type)
        irop = "neg" if node.op == "-" else "not"
        return Val({"op": irop, "w": a.type.width, "a": a.ir}, a.type)

    def conditional(self, node: Node, env: Env) -> Val:
        c = self.condition(node.c, env)
        a, b = self.unify(self.value(node.a, env), self.value(node.b, env), node.loc, "?:")
        if isinstance(a.type, IntType):
            raise P4Error(node.loc, "cannot tell the width of this conditional; cast a branch")
        if c.const is not None:
            return a if c.const else b
        return Val({"op": "cond", "w": width_of(a.type), "c": c.ir, "a": a.ir, "b": b.ir},
                   a.type)

    def cast(self, val: Val, typ: object, loc: Loc) -> Val:
        w = width_of(typ)
        if w is None or isinstance(typ, ErrorType):
            raise P4Error(loc, f"cannot cast to {type_name(typ)}")
        if isinstance(val.type, IntType):
            return const(val.const, w, typ)
        src = width_of(val.type)
        if src is None or isinstance(val.type, ErrorType):
            raise P4Error(loc, f"cannot cast a {type_name(val.type)}")
        if isinstance(typ, Signed) or isinstance(val.type, Signed):
            return self.signed_cast(val, typ, loc)
        if isinstance(typ, BoolType) != isinstance(val.type, BoolType) and src != w:
            raise P4Error(loc, "only bit<1> converts to and from bool")
        if val.const is not None:
            return const(val.const, w, typ)
        if src == w:
            return Val(val.ir, typ)
        return Val({"op": "cast", "w": w, "a": val.ir}, typ)

    def signed_cast(self, val: Val, typ: object, loc: Loc) -> Val:
        """P4_16 8.11.1: int<W> <-> bit<W> keep the bits, int<W> -> int<X> truncates or
        sign-extends; other casts to or from int<W> need two steps."""
        w, src = width_of(typ), width_of(val.type)
        one_kind = isinstance(typ, Signed) == isinstance(val.type, Signed)
        if not (one_kind or src == w and isinstance(typ, Bits | Signed)
                and isinstance(val.type, Bits | Signed)):
            raise P4Error(loc, f"cannot cast {type_name(val.type)} to {type_name(typ)}: "
                          "change the width and the sign in two casts (P4_16 8.11.1)")
        if w <= src:   # the same bits, or the low ones
            if val.const is not None:
                return const(val.const, w, typ)
            return Val(val.ir if w == src else {"op": "cast", "w": w, "a": val.ir}, typ)
        if val.const is not None:
            value = signed.as_signed(val.const, src) & ((1 << w) - 1)
            return const(value, w, typ)
        return Val(signed.extend(val.ir, src, w), typ)

    def slice(self, node: Node, env: Env) -> Val:
        base = self.bits(node.base, env)
        hi, lo = self.value(node.hi, env), self.value(node.lo, env)
        if hi.const is None or lo.const is None:
            raise P4Error(node.loc, "slice bounds must be compile-time constants")
        if not isinstance(base.type, Bits | Signed):   # a slice of an int<W> is a bit<>
            raise P4Error(node.loc, f"cannot slice a {type_name(base.type)}")
        if not base.type.width > hi.const >= lo.const >= 0:
            raise P4Error(node.loc, f"slice [{hi.const}:{lo.const}] is outside "
                          f"bit<{base.type.width}>")
        w = hi.const - lo.const + 1
        if base.const is not None:
            return const(base.const >> lo.const, w)
        return Val({"op": "slice", "w": w, "a": base.ir, "hi": hi.const, "lo": lo.const}, Bits(w))

    def destination(self, node: Node, env: Env) -> tuple[dict, object]:
        """A left-hand side: (IR destination, type)."""
        if node.kind == "slice":
            dst, typ = self.destination(node.base, env)
            val = self.slice(node, env)
            if "hi" in dst:   # x[h1:l1][h2:l2] is x[l1 + h2 : l1 + l2]
                return {**dst, "hi": dst["lo"] + val.ir["hi"],
                        "lo": dst["lo"] + val.ir["lo"]}, val.type
            return {**dst, "hi": val.ir["hi"], "lo": val.ir["lo"]}, val.type
        target = self.named(node, env)
        if isinstance(target, HeaderRef | StructRef):
            return {"compound": target}, target.type
        if isinstance(target, VarbitVal):
            return {"varbit": target}, None
        if not isinstance(target, Val) or not target.is_field:
            raise P4Error(node.loc, "cannot assign to this expression")
        return {"inst": target.ir["inst"], "field": target.ir["field"]}, target.type

    def list_items(self, node: Node, env: Env, varbits: bool = False) -> list[Val]:
        """The scalars of `{a, b, ...}` or of one struct/header, in order; with `varbits`
        (checksum data) varbit fields too, as VarbitVal (dplab/p4/varbit.py)."""
        if node.kind == "list":
            items: list[Val] = []
            for item in node.items:
                items.extend(self.list_items(item, env, varbits))
            return items
        target = self.named(node, env)
        if isinstance(target, HeaderRef):
            members = [self.member(target, Node("member", node.loc, name=name))
                       for name, _, _ in target.type.fields]
            for m in members:
                if isinstance(m, VarbitVal) and not varbits:
                    raise varbit.misuse(m, node.loc)
            return members
        if isinstance(target, VarbitVal) and varbits:
            return [target]
        if isinstance(target, StructRef):
            items = []
            for name in target.members:
                member = target.members[name]
                items.extend(flatten(member, node.loc))
            return items
        return [self.bits(node, env)]


def flatten(target: object, loc: Loc) -> list[Val]:
    if isinstance(target, Val):
        return [target]
    if isinstance(target, StructRef):
        return [v for m in target.members.values() for v in flatten(m, loc)]
    raise P4Error(loc, "only scalars, headers and structs of scalars are allowed here")


def _describe(target: object) -> str:
    names = {HeaderRef: "header", StructRef: "struct", StackRef: "header stack",
             TableRef: "table", ActionRef: "action", ExternRef: "extern object",
             TypeRef: "type", FunctionRef: "function", ListVal: "list",
             UserFunction: "function"}
    for cls, name in names.items():
        if isinstance(target, cls):
            return name
    return "method"


def header_width(typ: StructType) -> int:
    return sum(width_of(ftype) or 0 for _, ftype, _ in typ.fields)


def lookahead_field(peek: Val, name: str, loc: Loc) -> Val:
    """`packet.lookahead<H>().f`: peek at H's bits up to the end of f (fields are laid out
    from the most significant bit, as extract reads them) and keep f's, the low ones."""
    offset = 0
    for fname, ftype, _ in peek.type.fields:
        w = width_of(ftype) or 0
        offset += w
        if fname == name:
            if offset > MAX_WIDTH:
                raise P4Error(loc, f"field '{fname}' ends {offset} bits into the "
                              f"packet; lookahead reaches at most {MAX_WIDTH} bits")
            return Val({"op": "slice", "w": w, "a": {"op": "lookahead", "w": offset},
                        "hi": w - 1, "lo": 0}, ftype)
    raise P4Error(loc, f"header {peek.type.name} has no field '{name}'")


@dataclass
class StackLast:
    """`hs.last` in a parser: the element at nextIndex - 1. In a parser, elements become valid
    only by extract(hs.next), in order, so that element is the highest valid one: its fields
    read as a chain of validity tests (the IR has no run-time stack index)."""
    stack: StackRef

    def field(self, name: str, node: Node) -> Val:
        header = self.stack.type.base
        index = next((i for i, (fname, _, _) in enumerate(header.fields) if fname == name), None)
        if index is None:
            raise P4Error(node.loc, f"header {header.name} has no field '{name}'")
        ftype = header.fields[index][1]
        w = width_of(ftype)
        out: dict = {"op": "field", "w": w, "inst": self.stack.instances[0], "field": index}
        for inst in self.stack.instances[1:]:
            out = {"op": "cond", "w": w, "c": {"op": "valid", "w": 1, "inst": inst},
                   "a": {"op": "field", "w": w, "inst": inst, "field": index}, "b": out}
        return Val(out, ftype)


def last_index(stack: StackRef) -> Val:
    """`hs.lastIndex` (bit<32>, nextIndex - 1) in a parser, as StackLast finds it."""
    out = const(0xFFFFFFFF, 32).ir
    for position, inst in enumerate(stack.instances):
        out = {"op": "cond", "w": 32, "c": {"op": "valid", "w": 1, "inst": inst},
               "a": const(position, 32).ir, "b": out}
    return Val(out, Bits(32))
