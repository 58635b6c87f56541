"""Control-plane names, as p4c gives them (docs/p4-ir.md §10).

p4c's front end gives every control-plane object a `@name`: its own, or its declared name;
a relative name is then prefixed with the enclosing control's or parser's name
(frontends/p4/hierarchicalNames.cpp), an absolute one (leading ".") is kept without the dot.
Parameters, struct fields and table keys keep their `@name` as is (never prefixed).
"""

from collections import Counter

from dplab.p4.errors import P4Error
from dplab.p4.syntax import Node


def name_annotation(node: Node) -> str | None:
    """The string of the node's `@name("...")`, None without one."""
    tokens = getattr(node, "annos", {}).get("name")
    if tokens is None:
        return None
    if len(tokens) != 1 or tokens[0].kind != "str" or tokens[0].text in ("", "."):
        loc = tokens[0].loc if tokens else node.loc
        raise P4Error(loc, '@name takes one non-empty string: @name("name")')
    return tokens[0].text


def local_name(node: Node, default: str | None = None) -> str:
    """A parameter's, key's or field's control-plane name: `@name` or its own."""
    given = name_annotation(node)
    return given if given is not None else default or node.name


def block_name(block: Node) -> str:
    """The prefix a control or parser gives the names declared in it."""
    given = name_annotation(block)
    return given.lstrip(".") if given is not None else block.name


def qualified(node: Node, owner: str) -> str:
    """The fully qualified control-plane name of an object declared in block `owner`
    ("" at the top level)."""
    given = name_annotation(node)
    name = given if given is not None else node.name
    if name.startswith("."):
        return name[1:]
    return f"{owner}.{name}" if owner else name


def aliases(names: list[str]) -> dict[str, str]:
    """Each name's P4Info alias: its shortest suffix of dot-separated components that no
    other name ends with (p4c's P4SymbolSuffixSet::shortestUniqueSuffix)."""
    distinct = set(names)
    parts = {name: name.split(".") for name in distinct}
    counts = Counter(tuple(p[-k:]) for p in parts.values() for k in range(1, len(p) + 1))
    out = {}
    for name, p in parts.items():
        k = next((k for k in range(1, len(p) + 1) if counts[tuple(p[-k:])] < 2), len(p))
        out[name] = ".".join(p[-k:])
    return out
