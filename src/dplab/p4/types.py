"""The compiler's type model and what names resolve to (instances, fields, tables, externs)."""

from dataclasses import dataclass, field

MAX_WIDTH = 128


@dataclass(frozen=True)
class Bits:
    width: int


@dataclass(frozen=True)
class Signed:
    """`int<W>`: held as its W-bit two's complement pattern (dplab/p4/signed.py)."""

    width: int


@dataclass(frozen=True)
class Varbit:
    """`varbit<W>`: only as a header field (dplab/p4/varbit.py lays it out)."""

    width: int


@dataclass(frozen=True)
class BoolType:
    pass


@dataclass(frozen=True)
class IntType:
    """An integer literal or constant without a width; takes the width of its context."""


@dataclass(frozen=True)
class StringType:
    pass


@dataclass(frozen=True)
class ErrorType:
    pass


# core.p4's error members, in order: a program's own errors are numbered after them.
STANDARD_ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
                   "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument"]


@dataclass(frozen=True)
class EnumType:
    name: str
    members: tuple[tuple[str, int], ...]
    width: int = 32
    serializable: bool = False


@dataclass(frozen=True)
class StructType:
    kind: str      # "header" or "struct"
    name: str
    fields: tuple[tuple[str, object, tuple[int, ...]], ...]   # name, type, @field_list ids
    annos: tuple[tuple[str, str], ...] = ()
    # A header's struct-typed fields, flattened into `fields` as "s.f" (dplab/p4/compiler.py
    # Compiler.struct_type): each one's name and struct type, so `h.s` still denotes it.
    groups: tuple[tuple[str, "StructType"], ...] = ()


@dataclass(frozen=True)
class StackType:
    base: StructType
    size: int


@dataclass(frozen=True)
class ExternType:
    name: str      # counter, register, packet_in, CounterType-like decl names ...
    args: tuple = ()


@dataclass(frozen=True)
class Named:
    """A declared-but-opaque type (parser/control/package type names)."""

    name: str


def width_of(typ: object) -> int | None:
    """Bit width of a scalar type, None for non-scalars."""
    if isinstance(typ, Bits | Signed):
        return typ.width
    if isinstance(typ, BoolType):
        return 1
    if isinstance(typ, ErrorType):
        return 32
    if isinstance(typ, EnumType):
        return typ.width
    return None


def type_name(typ: object) -> str:
    if isinstance(typ, Bits):
        return f"bit<{typ.width}>"
    if isinstance(typ, Signed):
        return f"int<{typ.width}>"
    if isinstance(typ, Varbit):
        return f"varbit<{typ.width}>"
    if isinstance(typ, BoolType):
        return "bool"
    if isinstance(typ, IntType):
        return "int"
    if isinstance(typ, ErrorType):
        return "error"
    if isinstance(typ, EnumType | StructType | ExternType | Named):
        return typ.name
    if isinstance(typ, StackType):
        return f"{typ.base.name}[{typ.size}]"
    return "string"


# --- what an expression denotes --------------------------------------------------------
@dataclass
class Val:
    """A scalar value: an IR expression and its type. `const` holds a compile-time value."""

    ir: dict
    type: object
    const: int | None = None

    @property
    def is_field(self) -> bool:
        return self.ir.get("op") == "field"


@dataclass
class VarbitParts:
    """Where a header with a `varbit<W>` field lives: its fields before the varbit in the
    header's own instance, the varbit as W/8 one-byte header instances (`chunks`: the
    valid ones are its current bytes), the fields after it in `tail` (None if none)."""

    pos: int            # the varbit's index among the header type's fields
    width: int
    chunks: tuple[int, ...]
    tail: int | None


@dataclass
class HeaderRef:
    inst: int
    type: StructType
    varbit: VarbitParts | None = None
    # in a header_union: the instances of the other members (dplab/p4/unions.py)
    siblings: tuple[int, ...] = ()

    @property
    def parts(self) -> list[int]:
        """Every instance the header occupies, in wire order."""
        if self.varbit is None:
            return [self.inst]
        tail = [] if self.varbit.tail is None else [self.varbit.tail]
        return [self.inst, *self.varbit.chunks, *tail]


@dataclass
class VarbitVal:
    """A header's `varbit<W>` field: not a scalar; it can be assigned, extracted into,
    emitted and summed by a csum16 checksum."""

    header: HeaderRef
    name: str


@dataclass
class StackRef:
    stack: int
    instances: list[int]
    type: StackType


@dataclass
class StructRef:
    type: StructType
    members: dict[str, object] = field(default_factory=dict)


@dataclass
class TableRef:
    index: int


@dataclass
class ActionRef:
    name: str


@dataclass
class ControlRef:
    """An instance of a control inside a control: its apply() is inlined at each call. One
    that declares tables, actions or externs has them under its instance path (`path`, as
    p4c names them: Ingress.inst.table), compiled once (dplab/p4/sub_controls.py)."""

    decl: object   # the control's declaration (syntax.Node)
    path: str = ""
    many: bool = False   # its apply may run more than once where it is declared
    shared: dict | None = None   # after its first apply (when `many`): its compiled scope


@dataclass
class ParserRef:
    """An instance of a parser inside a parser: its states are copied in at each apply
    (dplab/p4/sub_parsers.py); `path` names it (Parser.inst)."""

    decl: object   # the parser's declaration (syntax.Node)
    path: str


@dataclass
class ExternRef:
    kind: str      # counter, direct_counter, meter, direct_meter, register, packet_in, packet_out
    index: int
    elem: object = None     # register: element type


@dataclass
class TypeRef:
    type: object


@dataclass
class FunctionRef:
    name: str


@dataclass
class UserFunction:
    """A function the program declares: inlined at each call (dplab/p4/inlining.py)."""

    decl: object   # its declaration (syntax.Node)
    env: dict      # the names in scope where it is declared


@dataclass
class ListVal:
    """A list expression given for a struct or tuple `in` parameter: its scalars, in the
    order of the type's fields (dplab/p4/tuples.py)."""

    items: list[Val]
