"""`varbit<W>` header fields, lowered onto the IR's fixed-size headers (docs/p4-ir.md §3).

A header with a varbit field occupies several instances: its own (the fields before the
varbit, possibly none; its validity is the header's), W/8 one-byte header instances
`<header>.<field>[i]` holding the varbit's bytes, and `<header>.<field>$tail` for the
fields after it. The varbit's current bytes are exactly its valid chunks, always a prefix,
so the deparser's rule "emit the valid instances in order" writes the right bytes and
`copy_header` of each chunk assigns one varbit to another. The one switch support needed
is the IR's `remaining` (bits left after the parser's cursor): an extract checks that the
whole header is there before it reads any of it, as BMv2 does.
"""

from typing import Protocol

from dplab.p4.errors import Loc, P4Error
from dplab.p4.types import (
    STANDARD_ERRORS,
    Bits,
    HeaderRef,
    StructType,
    Val,
    Varbit,
    VarbitParts,
    VarbitVal,
    type_name,
    width_of,
)

MAX_VARBIT = 2048   # bits: each byte is an instance the switch resets per packet
HEADER_TOO_SHORT = STANDARD_ERRORS.index("HeaderTooShort")
PARSER_INVALID_ARGUMENT = STANDARD_ERRORS.index("ParserInvalidArgument")
PACKET_TOO_SHORT = STANDARD_ERRORS.index("PacketTooShort")


class LayoutOwner(Protocol):
    """What this module needs of dplab.p4.compiler.Compiler."""

    def add_instance(self, name: str, kind: str, typ: StructType, fields: list) -> int: ...


def varbit_index(typ: StructType) -> int | None:
    return next((i for i, (_, t, _) in enumerate(typ.fields) if isinstance(t, Varbit)), None)


def check_header(typ: StructType, field_locs: list[Loc]) -> None:
    """At most one varbit per header (P4_16 7.2.2), W whole bytes, the fixed fields on each
    side of it whole bytes (each side is an instance of its own)."""
    found = [i for i, (_, t, _) in enumerate(typ.fields) if isinstance(t, Varbit)]
    if len(found) > 1:
        raise P4Error(field_locs[found[1]], f"header {typ.name} has a second varbit field "
                      f"'{typ.fields[found[1]][0]}': a header may hold at most one")
    if not found:
        return
    pos = found[0]
    width = typ.fields[pos][1].width
    if width % 8 or not 8 <= width <= MAX_VARBIT:
        raise P4Error(field_locs[pos], f"varbit<{width}>: the maximum width must be a "
                      f"multiple of 8 in 8..{MAX_VARBIT}")
    before = sum(width_of(t) for _, t, _ in typ.fields[:pos])
    after = sum(width_of(t) for _, t, _ in typ.fields[pos + 1:])
    if before % 8 or after % 8:
        raise P4Error(field_locs[pos], f"header {typ.name}: the fields before and after "
                      "the varbit must each be a whole number of bytes")


def layout(owner: LayoutOwner, path: str, typ: StructType) -> HeaderRef:
    """The instances of header `path` of a type with a varbit field."""
    pos = varbit_index(typ)
    assert pos is not None
    name, vtype, _ = typ.fields[pos]
    inst = owner.add_instance(path, "header", typ, list(typ.fields[:pos]))
    byte = StructType("header", f"{typ.name}.{name}$byte", (("b", Bits(8), ()),))
    chunks = tuple(owner.add_instance(f"{path}.{name}[{i}]", "header", byte,
                                      list(byte.fields)) for i in range(vtype.width // 8))
    rest = list(typ.fields[pos + 1:])
    tail = owner.add_instance(f"{path}.{name}$tail", "header", typ, rest) if rest else None
    return HeaderRef(inst, typ, VarbitParts(pos, vtype.width, chunks, tail))


def local(owner: LayoutOwner, label: str, name: str, typ: Varbit,
          loc: Loc) -> tuple[VarbitVal, list[dict]]:
    """`varbit<W> v;`: laid out as the varbit field of a header with no other field (an
    empty instance that is never valid, then the W/8 byte chunks), so assignments to and
    from header varbits copy chunks as between headers; it starts empty (no valid chunk)."""
    if typ.width % 8 or not 8 <= typ.width <= MAX_VARBIT:
        raise P4Error(loc, f"varbit<{typ.width}>: the maximum width must be a multiple of 8 "
                      f"in 8..{MAX_VARBIT}")
    ref = layout(owner, label, StructType("header", f"varbit<{typ.width}>",
                                          ((name, typ, ()),)))
    assert ref.varbit is not None
    return VarbitVal(ref, name), [{"kind": "set_invalid", "inst": i} for i in ref.varbit.chunks]


def field(ref: HeaderRef, index: int) -> Val | VarbitVal:
    """Field `index` of the header type: the varbit itself, or a scalar in its instance."""
    parts = ref.varbit
    assert parts is not None
    fname, ftype, _ = ref.type.fields[index]
    if index == parts.pos:
        return VarbitVal(ref, fname)
    inst, at = (ref.inst, index) if index < parts.pos else (parts.tail, index - parts.pos - 1)
    return Val({"op": "field", "w": width_of(ftype), "inst": inst, "field": at}, ftype)


def refuse(what: str, typ: object, loc: Loc) -> None:
    """Places a header with a varbit cannot go (header stacks, locals, lookahead)."""
    if isinstance(typ, StructType) and varbit_index(typ) is not None:
        raise P4Error(loc, f"{what} of header type {typ.name}, which has a varbit field, "
                      "is not supported")


def extract(ref: HeaderRef, size: Val, tmp: Val, loc: Loc) -> list[dict]:
    """`packet.extract(h, size)`: the fixed fields before, `size` bits of varbit, the
    fields after. `size` is taken once, before anything is extracted (it may read fields
    the extract overwrites). Over W → HeaderTooShort; not whole bytes →
    ParserInvalidArgument (p4c's P4Constants: 'a value not supported'); fewer bits left in
    the packet than the fixed fields and `size` → PacketTooShort with nothing extracted
    (BMv2's extract_VL: the header stays invalid, its bytes stay in the payload)."""
    parts = ref.varbit
    if parts is None:
        raise P4Error(loc, f"extract with a size needs a header with a varbit field; "
                      f"{ref.type.name} has none")
    n = {"op": "field", "w": 32, "inst": tmp.ir["inst"], "field": tmp.ir["field"]}
    out: list[dict] = [
        {"kind": "assign", "dst": {"inst": n["inst"], "field": n["field"]}, "src": size.ir},
        {"kind": "verify", "cond": _compare("le", n, parts.width), "error": HEADER_TOO_SHORT},
        {"kind": "verify", "cond": _compare("eq", {"op": "and", "w": 32, "a": n,
                                                   "b": _const(7)}, 0),
         "error": PARSER_INVALID_ARGUMENT},
        {"kind": "verify", "cond": {"op": "ge", "w": 1, "a": {"op": "remaining", "w": 32},
                                    "b": {"op": "add", "w": 32, "a": n,
                                          "b": _const(fixed_bits(ref.type))}},
         "error": PACKET_TOO_SHORT},
        {"kind": "extract", "inst": ref.inst}]
    for i, chunk in enumerate(parts.chunks):
        out.append({"kind": "if", "cond": _compare("gt", n, 8 * i),
                    "then": [{"kind": "extract", "inst": chunk}],
                    "else": [{"kind": "set_invalid", "inst": chunk}]})
    if parts.tail is not None:
        out.append({"kind": "extract", "inst": parts.tail})
    return out


def fixed_bits(typ: StructType) -> int:
    """The bits of a header's fields other than its varbit."""
    return sum(width_of(t) for _, t, _ in typ.fields if not isinstance(t, Varbit))


def _const(v: int) -> dict:
    return {"op": "const", "w": 32, "v": hex(v)}


def _compare(op: str, a: dict, v: int) -> dict:
    return {"op": op, "w": 1, "a": a, "b": _const(v)}


def set_validity(ref: HeaderRef, valid: bool) -> list[dict]:
    """setValid makes the fixed parts valid and keeps the varbit's bytes (its length);
    setInvalid invalidates every part, so nothing of it is emitted."""
    if valid:
        insts = [ref.inst] + ([] if ref.varbit is None or ref.varbit.tail is None
                              else [ref.varbit.tail])
        return [{"kind": "set_valid", "inst": i} for i in insts]
    return [{"kind": "set_invalid", "inst": i} for i in ref.parts]


def copy(target: HeaderRef, source: HeaderRef) -> list[dict]:
    """`hdr.a = hdr.b` of one type: every part (a varbit's bytes and length with it)."""
    return _copy_instances(target.parts, source.parts)


def _copy_instances(targets: list[int] | tuple[int, ...],
                    sources: list[int] | tuple[int, ...]) -> list[dict]:
    """copy_header of each source instance onto its target (validity and fields)."""
    return [{"kind": "copy_header", "dst": d, "src": s}
            for d, s in zip(targets, sources, strict=True) if d != s]


def assign(target: VarbitVal, source: object, loc: Loc) -> list[dict]:
    """`h.v = g.v`: varbits of one maximum width W (P4_16 allows no other source)."""
    want = _width(target)
    if not isinstance(source, VarbitVal) or _width(source) != want:
        what = f"varbit<{_width(source)}>" if isinstance(source, VarbitVal) else \
            type_name(getattr(source, "type", None)) if isinstance(source, Val) else "this"
        raise P4Error(loc, f"cannot assign {what} to varbit<{want}>: only a varbit<{want}> "
                      "field can be assigned to it")
    return _copy_instances(target.header.varbit.chunks, source.header.varbit.chunks)


def _width(v: VarbitVal) -> int:
    return v.header.varbit.width


def checksum_items(v: VarbitVal) -> list[Val]:
    """The varbit's bytes as checksum data: each chunk's byte while valid, else 0. Valid
    chunks are a prefix, so this is the varbit's bytes followed by zeros, which a csum16
    (a ones' complement sum) does not see when they end the data (checksum_data checks)."""
    out = []
    for chunk in v.header.varbit.chunks:
        byte = {"op": "field", "w": 8, "inst": chunk, "field": 0}
        out.append(Val({"op": "cond", "w": 8, "c": {"op": "valid", "w": 1, "inst": chunk},
                        "a": byte, "b": {"op": "const", "w": 8, "v": "0x0"}}, Bits(8)))
    return out


def checksum_data(items: list[object], algo: str, loc: Loc) -> list[dict]:
    """Checksum data with a varbit: only csum16, only as the data's last item."""
    out: list[dict] = []
    for k, item in enumerate(items):
        if isinstance(item, VarbitVal):
            if algo != "csum16" or k != len(items) - 1:
                raise P4Error(loc, f"varbit field {item.name} in checksum data is supported "
                              "only as the last item with HashAlgorithm.csum16")
            out.extend(v.ir for v in checksum_items(item))
        else:
            out.append(item.ir)
    return out


def misuse(v: VarbitVal, loc: Loc) -> P4Error:
    return P4Error(loc, f"varbit field {v.name} is not a value here: a varbit can only be "
                   "assigned from another of its width, extracted, emitted or summed by a "
                   "csum16 checksum")


def min_size_bits(typ: StructType) -> int:
    """`minSizeInBits()`: the header's fixed fields (a varbit counts 0)."""
    return sum(width_of(t) or 0 for _, t, _ in typ.fields)
