"""v1model action profiles and action selectors -> the IR's `action_profiles` (docs/p4-ir.md
§8.6) and the `implementation`/`selector_keys` of the tables they implement."""

from dplab.p4.annotations import p4info_annotations
from dplab.p4.errors import Loc, P4Error
from dplab.p4.exprs import Env
from dplab.p4.limits import checked_size
from dplab.p4.names import name_annotation
from dplab.p4.syntax import Node, name_loc
from dplab.p4.types import ExternRef

PROFILE_KINDS = {"action_profile": 1, "action_selector": 3}   # kind -> argument count
SIZE_SEMANTICS = ("sum_of_weights", "sum_of_members")
SELECTOR_ANNOTATIONS = ("max_group_size", "selector_size_semantics", "max_member_weight")


class ProfileCompiler:
    def __init__(self, compiler: object) -> None:
        self.c = compiler

    def declare(self, node: Node, name: str, kind: str, env: Env,
                prop: Node | None = None) -> int:
        """A named instance (`action_selector(...) ecmp;`) or one made inline in a table's
        `implementation` property `prop`; returns its index in the IR's `action_profiles`.
        An inline one takes its annotations from the property (`@max_group_size(4)
        implementation = action_selector(...);`), as p4c's getTableImplementationAnnotations
        does, and is warned about at the property."""
        annotated = prop if prop is not None else node
        annos = getattr(annotated, "annos", {})
        warn_at = prop.loc if prop is not None else name_loc(node)
        args = node.args
        if len(args) != PROFILE_KINDS[kind]:
            raise P4Error(node.loc, f"{kind} takes {PROFILE_KINDS[kind]} argument(s)")
        profile = {"name": name, "size": self.positive(args[-1 if kind == "action_profile"
                                                           else 1], env, "size"),
                   "max_group_size": 0, "tables": [], "selector": None,
                   **p4info_annotations(annotated, frozenset(SELECTOR_ANNOTATIONS))}
        if kind == "action_profile":
            self.warn_selector_annotations(annos, name, warn_at)
        else:
            profile.update(self.selector(node, annos, env))
        self.c.ir["action_profiles"].append(profile)
        return len(self.c.ir["action_profiles"]) - 1

    def selector(self, node: Node, annos: dict, env: Env) -> dict:
        """An action_selector's `max_group_size` (`@max_group_size(n)`, else 0) and
        `selector`: hash algorithm, output width, size semantics."""
        args = node.args
        groups = annos.get("max_group_size")
        size = self.positive(groups[0], env, "@max_group_size") if groups else 0
        algo = self.c.stmts.algorithm(args[0], env, "action_selector needs")
        selector = {"algo": algo, "output_width": self.positive(args[2], env, "outputWidth")}
        if not 1 <= selector["output_width"] <= 64:
            raise P4Error(args[2].loc, "outputWidth must be 1..64 bits")
        selector.update(self.size_semantics(annos, env))
        return {"max_group_size": size, "selector": selector}

    def warn_selector_annotations(self, annos: dict, name: str, warn_at: Loc) -> None:
        """As p4c (p4RuntimeArchHandler's addActionProfile, WARN_IGNORE; its testdata
        action_profile_sum_of_members_annotation.p4): a selector's annotations on an
        action_profile mean nothing; it warns where they sit and ignores them."""
        for anno in SELECTOR_ANNOTATIONS:
            if anno in annos:
                self.c.warn(warn_at, f"Ignoring annotation @{anno} on action profile "
                            f"'{name}', which does not have a selector")

    def size_semantics(self, annos: dict, env: Env) -> dict:
        """A selector's `@selector_size_semantics("sum_of_weights"|"sum_of_members")`, None
        without it (p4c then writes no semantics in P4Info; the switch and P4Runtime take
        sum_of_weights) and, for sum_of_members, `@max_member_weight(n)` (0 without it: no
        limit)."""
        semantics = None
        if annos.get("selector_size_semantics"):
            token = annos["selector_size_semantics"][0]
            semantics = token.text.strip('"')
            if semantics not in SIZE_SEMANTICS:
                raise P4Error(token.loc, f"@selector_size_semantics must be one of "
                              f"{', '.join(SIZE_SEMANTICS)}, not {token.text}")
        weight = annos.get("max_member_weight")
        if weight and semantics != "sum_of_members":
            raise P4Error(weight[0].loc, "@max_member_weight needs "
                          "@selector_size_semantics(\"sum_of_members\")")
        limit = self.positive(weight[0], env, "@max_member_weight") if weight else 0
        return {"size_semantics": semantics, "max_member_weight": limit}

    def positive(self, node: Node, env: Env, what: str) -> int:
        value = self.c.exprs.value(node, env, 32).const
        if value is None or value <= 0:
            raise P4Error(node.loc, f"{what} must be a positive constant")
        return checked_size(node.loc, value, what)

    def attach(self, table: dict, index: int, prop: Node, env: Env) -> None:
        """Binds the table to the profile its `implementation` names or makes."""
        value = prop.value
        if value.kind == "call" and value.func.kind == "name" \
                and value.func.name in PROFILE_KINDS:
            name = self.inline_name(table["name"], prop)
            profile = self.declare(value, name, value.func.name, env, prop)
        else:
            target = self.c.exprs.denote(value, env) if value.kind == "name" else None
            if not isinstance(target, ExternRef) or target.kind not in PROFILE_KINDS:
                raise P4Error(value.loc, "implementation must be an action_profile or "
                              "action_selector (an instance or a constructor call)")
            profile = target.index
        shared = self.c.ir["action_profiles"][profile]
        for other in shared["tables"]:
            self.check_same_actions(shared["name"], self.c.ir["tables"][other], table,
                                    value.loc)
        shared["tables"].append(index)
        table["implementation"] = profile

    def inline_name(self, table: str, prop: Node) -> str:
        """A profile made in place is named by the property's `@name`, as written, not
        prefixed with its control (p4c's getTableImplementationName; testdata
        action_profile-bmv2.p4: `@name("ap") implementation = action_profile(...)` is "ap").
        p4c refuses one without `@name` when it writes P4Info; we name it after its table
        and warn where p4c stops."""
        given = name_annotation(prop)
        if given is not None:
            return given.lstrip(".")
        self.c.warn(prop.loc, f"Table '{table}' has an anonymous table property "
                    "'implementation' with no name annotation, which p4c refuses for "
                    f"P4Runtime; add @name(\"...\") (named '{table}' here)")
        return table

    def check_same_actions(self, profile: str, other: dict, table: dict, loc: Loc) -> None:
        """Tables sharing a profile have the same actions (P4Runtime spec 9.2), each bound
        alike: a member holds one IR action, run by whichever of them hits it."""
        theirs, mine = self.action_indices(other), self.action_indices(table)
        if sorted(theirs) != sorted(mine):
            raise P4Error(loc, f"tables sharing {profile} must have the same actions "
                          f"(P4Runtime spec 9.2); {other['name']} has others")
        for name, index in mine.items():
            if theirs[name] != index:
                raise P4Error(loc, f"tables sharing {profile} must bind action {name} to the "
                              f"same arguments: a member runs one binding; {other['name']} "
                              "binds it to others")

    def action_indices(self, table: dict) -> dict[str, int]:
        return {self.c.ir["actions"][a["action"]]["name"]: a["action"] for a in table["actions"]}

    def check(self, table: dict, props: dict[str, Node], selector_keys: list[Node]) -> None:
        """What v1model (BMv2) does not allow on a table with an implementation."""
        profile = table.get("implementation")
        if profile is None:
            if selector_keys:
                raise P4Error(selector_keys[0].match.loc, "a 'selector' key needs "
                              "implementation = action_selector(...)")
            return
        selector = self.c.ir["action_profiles"][profile]["selector"]
        if selector_keys and selector is None:
            raise P4Error(selector_keys[0].match.loc, "a 'selector' key needs an "
                          "action_selector, this table has an action_profile")
        if "entries" in props:
            raise P4Error(props["entries"].loc, "a table with an action profile or selector "
                          "cannot have entries: its entries name members or groups")
        default = table["default_action"]
        if default["args"] or self.c.ir["actions"][default["action"]]["name"] != "NoAction":
            raise P4Error(props["default_action"].value.loc, "a table with an action profile or "
                          "selector takes only NoAction as default action (BMv2)")
