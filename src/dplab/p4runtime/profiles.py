"""ActionProfileMember and ActionProfileGroup (P4Runtime spec 9.2, "ActionProfileMember &
ActionProfileGroup") as calls on the switch's control socket, and the member or group a
table entry of an indirect table names.

The switch checks and refuses with the spec's codes (members/groups it does not have:
NOT_FOUND, still in use: FAILED_PRECONDITION, a group beyond `max_size`: RESOURCE_EXHAUSTED,
weight 0, a changed `max_size` or a watch port it does not have: INVALID_ARGUMENT); this
module checks what the P4Info says (profile ids, actions of the profile's tables,
selectors, the selector's size semantics: a weight over `max_member_weight` is
INVALID_ARGUMENT). A member's watch port (9.2.2) leaves it out of its group's selection
while the port is down; reads give the watch port back in the field it was written in. A
selector programmed with one shots (``oneshot.py``) takes no member or group writes and
shows none in reads.
"""

from __future__ import annotations

from collections.abc import Iterator

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime import codec
from dplab.p4runtime.codec import P4InfoIndex
from dplab.p4runtime.errors import invalid
from dplab.p4runtime.oneshot import MEMBERS, OneShots
from dplab.p4runtime.selector_rules import (
    check_weight,
    watch_from_switch,
    watch_to_switch,
)
from dplab.p4runtime.switch_link import SwitchLink

INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
COMMAND = {INSERT: "add", MODIFY: "modify", DELETE: "delete"}


class Profiles:
    def __init__(self, switch: SwitchLink, index: P4InfoIndex, oneshots: OneShots) -> None:
        self.switch = switch
        self.index = index
        self.oneshots = oneshots

    def entry_action(self, table: p4info_pb2.Table, action: pb.TableAction) -> dict:
        """The switch's `action` of a table entry: an action of its own in a direct table, a
        member or group id in a table with an action profile/selector (INVALID_ARGUMENT for
        the other kind, spec 9.1.2 and 9.2), or the hidden group realising a one shot
        (9.2.3; the caller releases it if the entry cannot be written)."""
        kind = action.WhichOneof("type")
        profile = self.index.action_profiles.get(table.implementation_id)
        if kind == "action_profile_action_set":
            return self.oneshots.realise(table, action.action_profile_action_set)
        if profile is None:
            if kind != "action":
                raise invalid(f"table {table.preamble.name} has no action profile: an entry "
                              f"names an action, not {kind}")
            return codec.action_to_switch(self.index, table, action.action, default=False)
        if kind == "action":
            raise invalid(f"table {table.preamble.name} is implemented by "
                          f"{profile.preamble.name}: an entry names a member or a group "
                          "(or an action set), not an action")
        if kind == "action_profile_group_id" and not profile.with_selector:
            raise invalid(f"{profile.preamble.name} is an action profile without a selector: "
                          "it has no groups")
        self.oneshots.refuse_unless(profile, MEMBERS)
        if kind == "action_profile_member_id":
            return {"member": action.action_profile_member_id}
        return {"group": action.action_profile_group_id}

    def _profile(self, profile_id: int) -> p4info_pb2.ActionProfile:
        return self.index.lookup("action_profiles", profile_id)

    def write_member(self, op: int, member: pb.ActionProfileMember) -> None:
        profile = self._profile(member.action_profile_id)
        if not member.member_id:
            raise invalid("member_id must not be 0")
        self.oneshots.refuse_unless(profile, MEMBERS)
        key = {"profile": profile.preamble.id, "member": member.member_id}
        if op == DELETE:  # only the ids count (spec 9.2.1)
            self.switch.call("profile_member_delete", **key)
            return
        if not member.HasField("action"):
            raise invalid(f"{profile.preamble.name}: member {member.member_id} needs an action")
        if not profile.table_ids:
            raise invalid(f"{profile.preamble.name} implements no table")
        # the tables sharing a profile have the same actions (the compiler checks it)
        table = self.index.table(profile.table_ids[0])
        action = codec.action_to_switch(self.index, table, member.action, default=False)
        self.switch.call(f"profile_member_{COMMAND[op]}", **key, action=action)

    def write_group(self, op: int, group: pb.ActionProfileGroup) -> None:
        profile = self._profile(group.action_profile_id)
        if not profile.with_selector:
            raise invalid(f"{profile.preamble.name} is an action profile without a selector: "
                          "it has no groups")
        if not group.group_id:
            raise invalid("group_id must not be 0")
        self.oneshots.refuse_unless(profile, MEMBERS)
        key = {"profile": profile.preamble.id, "group": group.group_id}
        if op == DELETE:
            self.switch.call("profile_group_delete", **key)
            return
        members = []
        for m in group.members:
            what = f"{profile.preamble.name}: member {m.member_id}"
            check_weight(profile, m.weight, what)
            members.append({"member": m.member_id, "weight": m.weight, **watch_to_switch(m, what)})
        if group.max_size < 0:
            raise invalid(f"{profile.preamble.name}: negative max_size")
        self.switch.call(f"profile_group_{COMMAND[op]}", **key, members=members,
                         max_size=group.max_size)

    def read_members(self, want: pb.ActionProfileMember) -> Iterator[pb.ActionProfileMember]:
        hidden = self.oneshots.hidden_profiles()
        for item in self._read("profile_member_read", "members", want.action_profile_id):
            if want.member_id in (0, item["member"]) and item["profile"] not in hidden:
                out = pb.ActionProfileMember(action_profile_id=item["profile"],
                                             member_id=item["member"])
                codec.action_from_switch(self.index, item["action"], out.action)
                yield out

    def read_groups(self, want: pb.ActionProfileGroup) -> Iterator[pb.ActionProfileGroup]:
        for item in self._read("profile_group_read", "groups", want.action_profile_id):
            if want.group_id in (0, item["group"]) and not item.get("one_shot"):
                out = pb.ActionProfileGroup(action_profile_id=item["profile"],
                                            group_id=item["group"], max_size=item["max_size"])
                for m in item["members"]:
                    watch_from_switch(m, out.members.add(member_id=m["member"],
                                                         weight=m["weight"]))
                yield out

    def _read(self, cmd: str, key: str, profile_id: int) -> list[dict]:
        """A profile's members or groups, or those of every profile (id 0, spec 9.2)."""
        if profile_id:
            return self.switch.call(cmd, profile=self._profile(profile_id).preamble.id)[key]
        return self.switch.call(cmd)[key]

