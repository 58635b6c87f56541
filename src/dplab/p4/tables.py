"""Table declarations -> IR tables (docs/p4-ir.md §8)."""

from dplab.p4 import ids, names, priorities
from dplab.p4.annotations import p4info_annotations
from dplab.p4.errors import P4Error
from dplab.p4.exprs import Env
from dplab.p4.limits import checked_size
from dplab.p4.syntax import Node
from dplab.p4.types import ActionRef, ExternRef, Val

MATCH_KINDS = {"exact", "lpm", "ternary", "range", "optional"}
SCOPES = {"tableonly": "table_only", "defaultonly": "default_only"}


class TableCompiler:
    def __init__(self, compiler: object, env: Env) -> None:
        self.c = compiler
        self.env = env

    def compile(self, node: Node, owner: str, index: int) -> dict:
        props = {p.name: p for p in node.props}
        for p in node.props:
            if p.name not in ("key", "actions", "default_action", "size", "entries",
                              "counters", "meters", "support_timeout", "implementation",
                              "largest_priority_wins", "priority_delta"):
                raise P4Error(p.loc, f"table property '{p.name}' is not supported")
        if "actions" not in props:
            raise P4Error(node.loc, f"table {node.name} has no actions")
        table = {"name": self.c.qualified(node, owner), "size": 1024, "keys": [],
                 "actions": [], "const_entries": [], "is_const": False,
                 "direct_counter": None, "direct_meter": None, "support_timeout": False}
        self.c.ids.note("tables", table["name"], node)
        table.update(p4info_annotations(node))
        keys = props["key"].value if "key" in props else []
        selector_keys = [k for k in keys if k.match.text == "selector"]
        # as p4c, selector keys take a match-field number though P4Info leaves them out
        numbers = ids.field_ids([ids.given_id(k) for k in keys])
        table["keys"] = [self.key(k, number) for k, number in zip(keys, numbers, strict=True)
                         if k.match.text != "selector"]
        table["actions"] = self.action_refs(props["actions"].value, table["name"])
        table["default_action"] = self.default_action(props.get("default_action"), table)
        if "implementation" in props:
            self.c.profiles.attach(table, index, props["implementation"], self.env)
            table["selector_keys"] = [self.selector_key(k) for k in selector_keys]
        self.c.profiles.check(table, props, selector_keys)
        if "size" in props:
            size = props["size"].value
            table["size"] = checked_size(size.loc, self.const_int(size), "table size")
        if "support_timeout" in props:
            table["support_timeout"] = bool(self.c.exprs.value(props["support_timeout"].value,
                                                               self.env).const)
        for prop, kind in (("counters", "direct_counter"), ("meters", "direct_meter")):
            if prop in props:
                table[kind] = self.direct(props[prop].value, kind, index)
        if "entries" in props:
            table["is_const"] = props["entries"].const
            table["const_entries"] = self.entries(props["entries"].value, table,
                                                  priorities.settings(props, self.evaluate))
        return table

    def const_int(self, node: Node) -> int:
        val = self.c.exprs.value(node, self.env)
        if val.const is None:
            raise P4Error(node.loc, "expected a constant")
        return val.const

    def key(self, node: Node, number: int) -> dict:
        if node.match.text not in MATCH_KINDS:
            raise P4Error(node.match.loc, f"match kind '{node.match.text}' is not supported")
        val = self.c.exprs.bits(node.expr, self.env)
        return {"id": number, "name": names.local_name(node, node.text), "match": node.match.text,
                "w": val.ir["w"], "expr": val.ir, **p4info_annotations(node)}

    def selector_key(self, node: Node) -> dict:
        """A `selector` key: hashed to pick a group's member, not matched (p4c leaves it
        out of P4Info's match fields)."""
        val = self.c.exprs.bits(node.expr, self.env)
        return {"name": node.text, "w": val.ir["w"], "expr": val.ir}

    def action_of(self, node: Node, with_data: bool) -> tuple[int, list[Node]]:
        """The IR action an action-list entry, default action or entry names, and its
        action-data arguments. Its first arguments bind the directional parameters."""
        name_node = node.func if node.kind == "call" else node
        target = self.c.exprs.denote(name_node, self.env) if name_node.kind == "name" else None
        if not isinstance(target, ActionRef):
            raise P4Error(node.loc, "expected an action name")
        args = node.args if node.kind == "call" else []
        count = len(self.c.action_params(target.name)[0])
        if with_data:
            if len(args) < count:
                raise P4Error(node.loc, f"action {target.name} needs its {count} directional "
                              "argument(s) first")
            bound = self.c.bind(target.name, args[:count], self.env)
            return self.c.action_ir_index(target.name, bound), args[count:]
        if len(args) != count:
            raise P4Error(node.loc, f"action {target.name} has {count} directional "
                          f"parameter(s); the action list binds exactly those, found "
                          f"{len(args)} argument(s)")
        return self.c.action_ir_index(target.name, self.c.bind(target.name, args, self.env)), []

    def action_refs(self, refs: list[Node], table: str) -> list[dict]:
        """The action list. Each P4 action at most once: the control plane names an action
        by its P4Info id, which must pick one binding of it in this table."""
        out = []
        for ref in refs:
            out.append(self.action_ref(ref))
            name = self.c.ir["actions"][out[-1]["action"]]["name"]
            if any(self.c.ir["actions"][a["action"]]["name"] == name for a in out[:-1]):
                raise P4Error(ref.loc, f"action {name} is listed twice in the actions of "
                              f"table {table}")
        return out

    def action_ref(self, ref: Node) -> dict:
        index, _ = self.action_of(ref.call, with_data=False)
        scope = next((SCOPES[a] for a in ref.annos if a in SCOPES), "table_and_default")
        return {"action": index, "scope": scope, **p4info_annotations(ref)}

    def default_no_action(self, table: dict) -> dict:
        """As p4c's front end (frontends/p4/createBuiltins.cpp): a table without
        `default_action` gets `default_action = NoAction()` and, unless its list already
        names NoAction, `@defaultonly NoAction` at the end of its actions (so P4Info lists it
        with scope DEFAULT_ONLY, as in p4c's basic_routing-bmv2.p4.p4info.txtpb)."""
        index = self.c.action_ir_index("NoAction")
        if all(self.c.ir["actions"][a["action"]]["name"] != "NoAction" for a in table["actions"]):
            table["actions"].append({"action": index, "scope": "default_only"})
        return {"action": index, "args": [], "const": False}

    def allowed(self, index: int, table: dict, node: Node) -> None:
        if index not in [a["action"] for a in table["actions"]]:
            raise P4Error(node.loc, f"action {self.c.ir['actions'][index]['name']} (with these "
                          f"directional arguments) is not in the actions of table "
                          f"{table['name']}")

    def default_action(self, prop: Node | None, table: dict) -> dict:
        if prop is None:
            return self.default_no_action(table)
        index, data = self.action_of(prop.value, with_data=True)
        self.allowed(index, table, prop.value)
        return {"action": index,
                "args": self.c.action_args(index, data, prop.value.loc, self.env),
                "const": prop.const}

    def direct(self, node: Node, kind: str, table: int) -> int:
        target = self.c.exprs.denote(node, self.env) if node.kind == "name" else None
        if not isinstance(target, ExternRef) or target.kind != kind:
            raise P4Error(node.loc, f"expected a {kind} instance")
        group = self.c.ir[kind + "s"][target.index]
        if group["table"] is not None and group["table"] != table:
            raise P4Error(node.loc, f"{group['name']} already belongs to another table")
        group["table"] = table
        return target.index

    def evaluate(self, node: Node) -> Val:
        return self.c.exprs.value(node, self.env)

    def entries(self, nodes: list[Node], table: dict, rules: priorities.Settings) -> list[dict]:
        ranks = priorities.entry_priorities(nodes, table["keys"], table["is_const"], rules,
                                            self.evaluate, self.c.warn)
        out = []
        for node, rank in zip(nodes, ranks, strict=True):
            sets = node.sets
            if len(sets) != len(table["keys"]):
                raise P4Error(node.loc, f"the table has {len(table['keys'])} key(s), this entry "
                              f"{len(sets)}")
            matches = [self.match(s, k) for s, k in zip(sets, table["keys"], strict=True)]
            index, data = self.action_of(node.action, with_data=True)
            self.allowed(index, table, node.action)
            args = self.c.action_args(index, data, node.action.loc, self.env)
            item = {"priority": rank, "matches": matches,
                    "action": {"action": index, "args": args}}
            if node.const:  # marked const in a (non-const) entries list
                item["const"] = True
            out.append(item)
        return out

    def value(self, node: Node, width: int) -> int:
        val = self.c.exprs.value(node, self.env, width)
        if val.const is None or val.ir["w"] != width:
            raise P4Error(node.loc, f"expected a bit<{width}> constant")
        return val.const

    def match(self, node: Node, key: dict) -> dict:
        w, kind = key["w"], key["match"]
        if node.kind == "any":
            if kind == "exact":
                raise P4Error(node.loc, "an exact key cannot be '_'")
            return {"kind": "any"}
        if node.kind == "range" and kind == "range":
            return {"kind": "range", "lo": hex(self.value(node.lo, w)),
                    "hi": hex(self.value(node.hi, w))}
        if node.kind == "mask" and kind in ("ternary", "lpm"):
            v, m = self.value(node.value, w), self.value(node.mask, w)
            if kind == "ternary":
                return {"kind": "ternary", "v": hex(v & m), "m": hex(m)}
            plen = bin(m).count("1")
            if m != ((1 << plen) - 1) << (w - plen):
                raise P4Error(node.mask.loc, "an lpm mask must be a prefix")
            return {"kind": "lpm", "v": hex(v & m), "plen": plen}
        if node.kind == "exact":
            v = self.value(node.value, w)
            if kind == "lpm":
                return {"kind": "lpm", "v": hex(v), "plen": w}
            if kind == "ternary":
                return {"kind": "ternary", "v": hex(v), "m": hex((1 << w) - 1)}
            if kind == "range":
                return {"kind": "range", "lo": hex(v), "hi": hex(v)}
            return {"kind": "exact", "v": hex(v)}
        raise P4Error(node.loc, f"this match does not fit a {kind} key")
