"""The order in which p4c lists a program's actions in P4Info.

p4c walks the program's blocks from `main`, its arguments first (parser, verify checksum,
ingress, egress, compute checksum, deparser: testdata flowlet_switching-bmv2 declares
egress before ingress and lists ingress's actions first), then the blocks instantiated in
them. In each control its front end has put the top-level actions the control uses
first, in order of first use (LocalizeAllActions; so NoAction usually leads), then the
control's own actions in source order. An action already listed is not listed again.
A control instantiated in a control follows the actions of the one it is instantiated in,
its own actions named under the instance's path (Ingress.inst.action), as p4c's inliner
names them.
"""

from collections.abc import Iterator

from dplab.p4 import names
from dplab.p4.syntax import Node


def action_ranks(decls: list[Node], stages: list[Node]) -> dict[str, int]:
    """Each action's place in P4Info's `actions`, by fully qualified name."""
    top_level = {names.qualified(d, ""): d for d in decls if d.kind == "action"}
    by_plain_name = {d.name: q for q, d in top_level.items()}
    controls = [d for d in stages if d.kind == "control"]
    controls += [d for d in decls if d.kind == "control" and d not in controls]
    by_name = {d.name: d for d in decls if d.kind == "control"}
    order: dict[str, int] = {}

    def visit(control: Node, owner: str) -> None:
        own = [local for local in control.locals if local.kind == "action"]
        shadowed = {local.name for local in own}
        for name in _names_used(control):
            global_name = by_plain_name.get(name.lstrip("."))
            if global_name and (name.startswith(".") or name not in shadowed):
                order.setdefault(global_name, len(order))
        for local in own:
            order.setdefault(names.qualified(local, owner), len(order))
        for local in control.locals:
            inner = by_name.get(local.type.name) if local.kind == "instance" \
                and local.type.kind == "named" else None
            if inner is not None and inner is not control:
                visit(inner, names.qualified(local, owner))

    for control in controls:
        visit(control, names.block_name(control))
    for name in top_level:   # used nowhere in a control (P4Info leaves these out)
        order.setdefault(name, len(order))
    return order


def _names_used(node: object) -> Iterator[str]:
    """The names a syntax subtree refers to, in source order; a table without
    `default_action` refers to NoAction after its properties (p4c's front end gives it
    `default_action = NoAction()`)."""
    if isinstance(node, Node):
        if node.kind == "name":
            yield node.name
        for key, value in node.__dict__.items():
            if key not in ("kind", "loc", "depth", "name_loc"):
                yield from _names_used(value)
        if node.kind == "table" and all(p.name != "default_action" for p in node.props):
            yield ".NoAction"
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _names_used(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from _names_used(item)
