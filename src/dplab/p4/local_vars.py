"""Header- and struct-typed local variables (docs/p4-ir.md §3, "Locals").

A scalar local is a field of the hidden `$locals` metadata instance (Compiler.new_local).
A header local needs a validity bit and `copy_header`, so it becomes a hidden header
instance of its own, named `$local.<name>$<index>`: the parser never extracts into it and
the deparser never emits it unless the program copies it into a real header. A struct local
is its members, each made the same way (scalars in `$locals`, headers as hidden instances);
a header_union local is its member headers (dplab/p4/unions.py).

P4_16 (8.17, 8.22): an uninitialised header local is invalid, so the declaration lowers to
`set_invalid`; each execution of the declaration (an action called twice in one packet)
makes it invalid again. Uninitialised scalars get 0, as scalar locals do (P4 leaves them
unspecified).
"""

from typing import Protocol

from dplab.p4 import unions, varbit
from dplab.p4.errors import Loc, P4Error
from dplab.p4.exprs import const
from dplab.p4.types import HeaderRef, StackType, StructRef, StructType, Val, type_name


class LocalsOwner(Protocol):
    """What this module needs of dplab.p4.compiler.Compiler."""

    ir: dict

    def new_local(self, name: str, typ: object, loc: Loc) -> Val: ...

    def add_instance(self, name: str, kind: str, typ: StructType, fields: list) -> int: ...


def compound_local(owner: LocalsOwner, name: str, typ: StructType,
                   loc: Loc) -> tuple[HeaderRef | StructRef, list[dict]]:
    """The reference a header/struct local denotes, and the statements that give it its
    uninitialised state (headers invalid, scalars 0)."""
    if typ.kind == "header":
        varbit.refuse(f"local variable {name}", typ, loc)
        label = f"$local.{name}${len(owner.ir['instances'])}"
        inst = owner.add_instance(label, "header", typ, list(typ.fields))
        return HeaderRef(inst, typ), [{"kind": "set_invalid", "inst": inst}]
    if unions.is_union(typ):
        init = []

        def member(fname: str, htype: StructType) -> HeaderRef:
            header, more = compound_local(owner, f"{name}.{fname}", htype, loc)
            init.extend(more)
            return header
        return unions.union_ref(typ, member), init
    ref, init = StructRef(typ), []
    for fname, ftype, _ in typ.fields:
        if isinstance(ftype, StackType):
            raise P4Error(loc, f"local variable {name}: field {fname} is a header stack "
                          f"({type_name(ftype)}); header stacks in local variables are not "
                          "supported")
        if isinstance(ftype, StructType):
            ref.members[fname], more = compound_local(owner, f"{name}.{fname}", ftype, loc)
            init.extend(more)
            continue
        val = owner.new_local(f"{name}.{fname}", ftype, loc)
        ref.members[fname] = val
        init.append({"kind": "assign", "dst": {"inst": val.ir["inst"],
                                               "field": val.ir["field"]},
                     "src": const(0, val.ir["w"]).ir})
    return ref, init


def uninitialised(ref: object) -> list[dict]:
    """Statements giving an existing local (scalar, header or struct) the state its
    declaration gives it: headers invalid, scalars 0."""
    if isinstance(ref, Val):
        return [{"kind": "assign", "dst": {"inst": ref.ir["inst"], "field": ref.ir["field"]},
                 "src": const(0, ref.ir["w"]).ir}]
    if isinstance(ref, HeaderRef):
        return [{"kind": "set_invalid", "inst": inst} for inst in ref.parts]
    return [stmt for member in ref.members.values() for stmt in uninitialised(member)]


def copy_compound(target: object, source: object, loc: Loc) -> list[dict]:
    """`target = source` for two headers or structs of one type: a header copies its
    validity and fields (copy_header), a struct each member in turn."""
    if isinstance(target, Val) and isinstance(source, Val):
        return [{"kind": "assign", "dst": {"inst": target.ir["inst"],
                                           "field": target.ir["field"]}, "src": source.ir}]
    if isinstance(target, HeaderRef) and isinstance(source, HeaderRef):
        # every part (one for a header without varbit); a union member made valid by it
        # leaves the other members invalid
        return varbit.copy(target, source) + unions.after_assignment(target)
    if isinstance(target, StructRef) and isinstance(source, StructRef) \
            and unions.is_union(target.type):
        # the whole union's state: each member's validity as the source has it
        return [step for name, member in target.members.items()
                for step in varbit.copy(member, source.members[name])]
    if isinstance(target, StructRef) and isinstance(source, StructRef):
        out: list[dict] = []
        for fname, member in target.members.items():
            out.extend(copy_compound(member, source.members[fname], loc))
        return out
    raise P4Error(loc, f"copying a header stack ({type_name(getattr(target, 'type', None))}) "
                  "as part of a struct is not supported")
