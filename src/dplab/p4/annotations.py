"""A declaration's annotations as p4c writes them into P4Info (docs/p4-ir.md §10).

p4c (control-plane/p4RuntimeSerializer.cpp, addAnnotations/addDocumentation) copies every
annotation of a P4Info object into `annotations` as text, except the ones with fields of
their own: `@name` and `@id` (name, id), `@brief` and `@description` (`doc`). An
unstructured body is its tokens joined by single blanks (`@sai_field(A / B)`, `@refers_to(t
, f)` in p4c-made P4Info); structured annotations (`@x[...]`, P4_16 spec 18.3) go to
`structured_annotations` instead. Annotations a P4Info field already stands for (an action
profile's `@max_group_size`, ...) are left out, as p4c does.
"""

from collections.abc import Callable

from dplab.p4.errors import Loc, P4Error
from dplab.p4.lexer import Token
from dplab.p4.syntax import Annotation, Node

OWN_FIELDS = frozenset({"name", "id", "brief", "description"})
DOC = ("brief", "description")
# the PkgInfo fields `@pkginfo(key="...", ...)` on `main` sets (p4c: name, version,
# organization, contact, url; `arch` is the architecture's unless a program overrides it)
PKGINFO_KEYS = ("name", "version", "organization", "contact", "url")


def annotation_text(anno: Annotation) -> str:
    if not anno.body:
        return f"@{anno.name}"
    return f"@{anno.name}({' '.join(_token_text(t) for t in anno.body)})"


def _token_text(token: Token) -> str:
    return f'"{token.text}"' if token.kind == "str" else token.text


def p4info_annotations(node: Node | None, skip: frozenset[str] = frozenset()) -> dict:
    """The IR keys (`annotations`, `structured_annotations`, `doc`) for the node's
    annotations; only the non-empty ones, so objects without annotations stay as before."""
    written = getattr(getattr(node, "annos", None), "written", [])
    out: dict = {}
    for anno in written:
        if anno.structured:
            out.setdefault("structured_annotations", []).append(_structured(anno))
        elif anno.name in DOC:
            out.setdefault("doc", {})[anno.name] = _doc_text(anno)
        elif anno.name not in OWN_FIELDS | skip:
            out.setdefault("annotations", []).append(annotation_text(anno))
    return out


def _doc_text(anno: Annotation) -> str:
    if len(anno.body) != 1 or anno.body[0].kind != "str":
        raise P4Error(anno.loc, f'@{anno.name} takes one string: @{anno.name}("...")')
    return anno.body[0].text


def _structured(anno: Annotation) -> dict:
    """`@x[1, "a"]` -> expressions; `@x[k=1, j="a"]` -> key-value pairs (P4_16 18.3)."""
    items = _split_commas(anno)
    if items and len(items[0]) > 1 and items[0][1].text == "=":
        pairs = []
        for item in items:
            if len(item) < 3 or item[0].kind != "id" or item[1].text != "=":
                raise P4Error(item[0].loc, "write every pair of a structured annotation as "
                              "key=value")
            pairs.append([item[0].text, _literal(item[2:])])
        return {"name": anno.name, "kv": pairs}
    return {"name": anno.name, "expressions": [_literal(item) for item in items]}


def _split_commas(anno: Annotation) -> list[list[Token]]:
    items: list[list[Token]] = [[]]
    for token in anno.body:
        if token.text == "," and token.kind == "op":
            items.append([])
        else:
            items[-1].append(token)
    if items == [[]]:
        return []
    for item in items:
        if not item:
            raise P4Error(anno.loc, f"@{anno.name}[...] has an empty element")
    return items


def _literal(tokens: list[Token]) -> dict:
    """A structured annotation's value: a string, integer or boolean literal."""
    sign = -1 if tokens[0].text == "-" and len(tokens) == 2 else 1
    value = tokens[-1]
    if len(tokens) == 1 and value.kind == "str":
        return {"string": value.text}
    if len(tokens) == 1 and value.text in ("true", "false"):
        return {"bool": value.text == "true"}
    if value.kind == "int" and (len(tokens) == 1 or sign == -1):
        return {"int": sign * value.value}
    raise P4Error(tokens[0].loc, "a structured annotation's values must be string, integer "
                  "or boolean literals")


def pkg_info(main: Node, warn: Callable[[Loc, str], None]) -> dict:
    """P4Info's `pkg_info` fields from `@pkginfo(...)` on the `main` instance, and its other
    annotations as any object's (doc, annotations, structured_annotations), as p4c's
    addPkgInfo; empty without them (p4c then writes only `arch`)."""
    out = p4info_annotations(main, frozenset({"pkginfo"}))
    for anno in getattr(main.annos, "written", []):
        if anno.name == "pkginfo" and not anno.structured:
            for item in _split_commas(anno):
                out.update(_pkginfo_pair(item, warn))
    return out


def _pkginfo_pair(item: list[Token], warn: Callable[[Loc, str], None]) -> dict:
    if len(item) != 3 or item[0].kind != "id" or item[1].text != "=" or item[2].kind != "str":
        raise P4Error(item[0].loc, '@pkginfo takes key="string" pairs: '
                      '@pkginfo(name="prog", version="1.0")')
    key = item[0].text
    if key == "arch":   # p4c takes it, with this warning
        warn(item[0].loc, "The 'arch' field in PkgInfo should be set by the compiler, "
             "not by the user")
    elif key not in PKGINFO_KEYS:
        warn(item[0].loc, f"unknown @pkginfo key '{key}' ignored "
             f"(known: {', '.join(PKGINFO_KEYS)})")
        return {}
    return {key: item[2].text}
