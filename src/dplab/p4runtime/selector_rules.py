"""Rules a selector's group members share, written as ActionProfileGroup members or as one
shots' actions (P4Runtime spec 9.2.2, 9.2.3): weights under the selector's size semantics,
and watch ports in both of the fields the spec has for them."""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime import codec
from dplab.p4runtime.errors import invalid

Watched = pb.ActionProfileGroup.Member | pb.ActionProfileAction


def size_semantics(profile: p4info_pb2.ActionProfile) -> str:
    """How the selector's group sizes count (P4Info 1.3+; unset: sum of weights)."""
    return profile.WhichOneof("selector_size_semantics") or "sum_of_weights"


def check_weight(profile: p4info_pb2.ActionProfile, weight: int, what: str) -> None:
    """Spec 9.2.2/9.2.3: a weight is > 0 and, under sum_of_members, at most the profile's
    nonzero ``max_member_weight`` (INVALID_ARGUMENT)."""
    if weight <= 0:
        raise invalid(f"{what} has weight {weight} (weights are > 0)")
    cap = (profile.sum_of_members.max_member_weight
           if size_semantics(profile) == "sum_of_members" else 0)
    if cap and weight > cap:
        raise invalid(f"{what}: weight {weight} is over max_member_weight {cap}")


def watch_to_switch(member: Watched,
                    what: str) -> dict:
    """The switch's watch field of a member (or a one shot's action): ``watch_port`` (the
    port as a binary string) or the deprecated ``watch`` (a number), or none."""
    kind = member.WhichOneof("watch_kind")
    if kind == "watch_port":
        if not member.watch_port or len(member.watch_port) > 4:
            raise invalid(f"{what}: watch_port must be a port number of 1 to 4 bytes")
        return {"watch_port": int.from_bytes(member.watch_port, "big")}
    if kind == "watch":
        if member.watch <= 0:
            raise invalid(f"{what}: watch {member.watch} is not a port")
        return {"watch": member.watch}
    return {}


def watch_from_switch(item: dict, member: Watched
                      ) -> None:
    """Fills a read member's watch field in the form it was written in."""
    if "watch_port" in item:
        member.watch_port = codec.canonical_bytes(item["watch_port"])
    elif "watch" in item:
        member.watch = item["watch"]
