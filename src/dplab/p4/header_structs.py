"""Struct-typed fields of headers (P4_16 8.2 allows a struct of bit<W>, int<W>, bool and
serializable enum fields, nested structs too, as a header field), flattened onto the IR's
scalar fields (docs/p4-ir.md §3).

`header h_t { bit<8> a; s_t s; }` with `struct s_t { bit<4> x; bit<4> y; }` is the header
type with the fields `a`, `s.x`, `s.y`, in that order (so the wire layout is unchanged);
the header type keeps `("s", s_t)` in its `groups`, and `hdr.h.s` denotes a struct whose
members are those fields (so `hdr.h.s.x`, `hdr.h.s = t` and passing `hdr.h.s` to a
function work as on any struct).
"""

from collections.abc import Callable

from dplab.p4.errors import Loc, P4Error
from dplab.p4.types import StructRef, StructType, type_name, width_of


def flat_fields(prefix: str, typ: StructType, loc: Loc) -> list[tuple[str, object]]:
    """The scalar fields struct `typ` adds to a header as its field `prefix`."""
    if typ.kind != "struct":
        raise P4Error(loc, f"header fields must be bit<W>, int<W>, bool, an enum or a struct "
                      f"of them, not {typ.kind.replace('_', ' ')} {type_name(typ)}")
    fields: list[tuple[str, object]] = []
    for name, ftype, _ in typ.fields:
        if isinstance(ftype, StructType):
            fields.extend(flat_fields(f"{prefix}.{name}", ftype, loc))
        elif width_of(ftype) is None:
            raise P4Error(loc, f"struct {typ.name} is a header field here, so its field {name} "
                          f"must be bit<W>, int<W>, bool or an enum, not {type_name(ftype)}")
        else:
            fields.append((f"{prefix}.{name}", ftype))
    return fields


def group(header_type: StructType, name: str,
          field: Callable[[str], object]) -> StructRef | None:
    """What `h.name` denotes when `name` is a struct-typed field of the header, else None;
    `field(flat name)` gives one of the header's scalar fields."""
    for gname, typ in header_type.groups:
        if gname == name:
            return _view(name, typ, field)
    return None


def _view(prefix: str, typ: StructType, field: Callable[[str], object]) -> StructRef:
    members: dict[str, object] = {}
    for name, ftype, _ in typ.fields:
        path = f"{prefix}.{name}"
        members[name] = _view(path, ftype, field) if isinstance(ftype, StructType) \
            else field(path)
    return StructRef(typ, members)
