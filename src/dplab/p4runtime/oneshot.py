"""One-shot action selector programming (P4Runtime spec 9.2.3, "One Shot Action Selector
Programming"): a table entry whose action is an ``ActionProfileActionSet``.

The server realises a set as hidden members (one per action, in the set's order, equal
actions not merged) and a hidden group holding them with the set's weights, in the table's
selector, under ids of its own choosing; the entry names the group. Reads give the set back
as written, rebuilt from the group and its members; ActionProfileMember/Group reads never
show hidden ones (the spec forbids returning the desugared form).

A selector is programmed either with one shots or with ActionProfileMember/Group, never
both (9.2.3: INVALID_ARGUMENT). Which way is known while it holds members or groups: the
switch marks each hidden group ``one_shot`` (switch/PROTOCOL.md), so the mark lives with
the entries and a restarted server reads one shots back as written; a selector holding
nothing is free for either way.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime import codec
from dplab.p4runtime.codec import P4InfoIndex
from dplab.p4runtime.errors import P4RuntimeError, invalid
from dplab.p4runtime.selector_rules import (
    check_weight,
    size_semantics,
    watch_from_switch,
    watch_to_switch,
)
from dplab.p4runtime.switch_link import SwitchLink

ONE_SHOTS, MEMBERS = "one shots", "ActionProfileMember/Group"


class OneShots:
    def __init__(self, switch: SwitchLink, index: P4InfoIndex) -> None:
        self.switch = switch
        self.index = index

    # -- which way a selector is programmed ----------------------------------------------

    def refuse_unless(self, profile: p4info_pb2.ActionProfile, way: str) -> None:
        """INVALID_ARGUMENT when the profile is already programmed the other way: its
        hidden groups name one shots, any other member or group the other way."""
        pid = profile.preamble.id
        groups = self._groups(pid)
        if any(g.get("one_shot") for g in groups):
            used = ONE_SHOTS
        elif groups or self._members(pid):
            used = MEMBERS
        else:
            return  # an empty profile takes either way
        if used != way:
            raise invalid(f"{profile.preamble.name} is programmed with {used}: it cannot "
                          f"also take {way} (P4Runtime spec 9.2.3)")

    def may_hold(self, table: p4info_pb2.Table) -> bool:
        """Whether the table's entries may be one shots: its implementation is a selector
        (a table's ``implementation_id`` is its profile's id)."""
        profile = self.index.action_profiles.get(table.implementation_id)
        return profile is not None and profile.with_selector

    def hidden_profiles(self) -> set[int]:
        """The profiles programmed with one shots: their members and groups are hidden."""
        return {g["profile"] for g in self.switch.call("profile_group_read")["groups"]
                if g.get("one_shot")}

    # -- write -----------------------------------------------------------------------------

    def realise(self, table: p4info_pb2.Table, action_set: pb.ActionProfileActionSet) -> dict:
        """Creates the set's hidden members and group; returns the entry's switch action.
        On a failure nothing hidden is left behind."""
        profile = self._selector_of(table)
        pid = profile.preamble.id
        calls = [self._checked_call(table, profile, a) for a in action_set.action_profile_actions]
        _check_size(profile, action_set)
        self.refuse_unless(profile, ONE_SHOTS)
        member_ids = _unused({m["member"] for m in self._members(pid)}, len(calls))
        [group_id] = _unused({g["group"] for g in self._groups(pid)}, 1)
        created: list[int] = []
        try:
            for member_id, call in zip(member_ids, calls, strict=True):
                self.switch.call("profile_member_add", profile=pid, member=member_id,
                                 action=call)
                created.append(member_id)
            members = [{"member": m, "weight": a.weight,
                        **watch_to_switch(a, f"{profile.preamble.name}: an action of the set")}
                       for m, a in zip(member_ids, action_set.action_profile_actions,
                                       strict=True)]
            # max_size: the largest a group may be (the set was checked against it)
            self.switch.call("profile_group_add", profile=pid, group=group_id,
                             max_size=profile.max_group_size, members=members,
                             one_shot=True)
        except P4RuntimeError:
            for member_id in reversed(created):
                self.switch.call("profile_member_delete", profile=pid, member=member_id)
            raise
        return {"group": group_id}

    def release(self, table: p4info_pb2.Table, action: dict) -> None:
        """Deletes the hidden group (and its members) a one-shot entry's switch ``action``
        named, once no entry names it; anything else is left alone."""
        if "group" not in action or not self.may_hold(table):
            return
        pid = table.implementation_id
        group = self._group(pid, action["group"])
        if group is None or not group.get("one_shot"):
            return
        self.switch.call("profile_group_delete", profile=pid, group=group["group"])
        for member in group["members"]:
            self.switch.call("profile_member_delete", profile=pid, member=member["member"])

    # -- read ------------------------------------------------------------------------------

    def action_sets(self, table: p4info_pb2.Table) -> dict[int, pb.ActionProfileActionSet]:
        """The action set of each hidden group of the table's selector, by group id ({}
        when the table has no selector or it holds no one shot)."""
        if not self.may_hold(table):
            return {}
        pid = table.implementation_id
        hidden = [g for g in self._groups(pid) if g.get("one_shot")]
        if not hidden:
            return {}
        actions = {m["member"]: m["action"] for m in self._members(pid)}
        sets = {}
        for group in hidden:
            out = pb.ActionProfileActionSet()
            for m in group["members"]:
                item = out.action_profile_actions.add(weight=m["weight"])
                codec.action_from_switch(self.index, actions[m["member"]], item.action)
                watch_from_switch(m, item)
            sets[group["group"]] = out
        return sets

    def action_set_of(self, table: p4info_pb2.Table,
                      item: dict | None) -> pb.ActionProfileActionSet | None:
        """The action set of a switch entry ``item``, None if it is not a one shot."""
        if item is None or "group" not in item["action"]:
            return None
        return self.action_sets(table).get(item["action"]["group"])

    # -- helpers ---------------------------------------------------------------------------

    def _selector_of(self, table: p4info_pb2.Table) -> p4info_pb2.ActionProfile:
        profile = self.index.action_profiles.get(table.implementation_id)
        if profile is None:
            raise invalid(f"table {table.preamble.name} has no action profile: an entry "
                          "names an action, not an action set")
        if not profile.with_selector:
            raise invalid(f"table {table.preamble.name} is implemented by "
                          f"{profile.preamble.name}, an action profile without a selector: "
                          "one shots program tables with an action selector (spec 9.2.3)")
        return profile

    def _checked_call(self, table: p4info_pb2.Table, profile: p4info_pb2.ActionProfile,
                      action: pb.ActionProfileAction) -> dict:
        """The switch's call of one action of a set; the set's rules of spec 9.2.3."""
        name = profile.preamble.name
        check_weight(profile, action.weight, f"{name}: an action of the set")
        if not action.HasField("action"):
            raise invalid(f"{name}: each action of an action set needs an action")
        return codec.action_to_switch(self.index, table, action.action, default=False)

    def _members(self, profile_id: int) -> list[dict]:
        return self.switch.call("profile_member_read", profile=profile_id)["members"]

    def _groups(self, profile_id: int) -> list[dict]:
        return self.switch.call("profile_group_read", profile=profile_id)["groups"]

    def _group(self, profile_id: int, group_id: int) -> dict | None:
        return next((g for g in self._groups(profile_id) if g["group"] == group_id), None)


def _check_size(profile: p4info_pb2.ActionProfile,
                action_set: pb.ActionProfileActionSet) -> None:
    """Spec 9.2.3: the set's size (its weights, or its actions under sum_of_members) must
    not pass a nonzero ``max_group_size`` (INVALID_ARGUMENT). Without one, the switch
    refuses what its selector cannot hold (RESOURCE_EXHAUSTED, as for a group)."""
    limit = profile.max_group_size
    actions = action_set.action_profile_actions
    by_members = size_semantics(profile) == "sum_of_members"
    size = len(actions) if by_members else sum(a.weight for a in actions)
    if limit and size > limit:
        what = "actions" if by_members else "weights add up to"
        raise invalid(f"{profile.preamble.name}: the action set's {what} {size}, over its "
                      f"max_group_size {limit}")


def _unused(taken: set[int], count: int) -> list[int]:
    """The ``count`` smallest ids (1 and up) not in ``taken``."""
    found: list[int] = []
    candidate = 1
    while len(found) < count:
        if candidate not in taken:
            found.append(candidate)
        candidate += 1
    return found
