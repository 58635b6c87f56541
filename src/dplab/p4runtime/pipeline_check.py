"""What SetForwardingPipelineConfig verifies before anything is loaded (spec 14: VERIFY
must refuse a config the target could not realize): the device config is our IR (a JSON
object with the object lists the switch loads) and the P4Info names only objects it has,
under the same ids."""

from __future__ import annotations

import json

from p4.v1 import p4runtime_pb2 as pb

from dplab.p4.p4info_shape import p4info_mismatch
from dplab.p4runtime.errors import invalid

# The P4Info's object lists and the IR's lists of the same objects (each item has an id).
CHECKED_KINDS = ("tables", "actions", "counters", "direct_counters", "meters",
                 "direct_meters", "registers", "digests", "action_profiles")


def verify(config: pb.ForwardingPipelineConfig) -> dict:
    """The config's IR; INVALID_ARGUMENT naming what is wrong with it."""
    if not config.p4_device_config:
        raise invalid("p4_device_config is empty (expected the dplab IR JSON)")
    try:
        ir = json.loads(config.p4_device_config)
    except (UnicodeDecodeError, ValueError) as exc:
        raise invalid(f"p4_device_config is not JSON: {exc}") from exc
    if not isinstance(ir, dict):
        raise invalid("p4_device_config must be a JSON object (the dplab IR)")
    for kind in CHECKED_KINDS:
        _check_kind(config, ir, kind)
    if (mismatch := p4info_mismatch(config.p4info, ir)) is not None:
        raise invalid(mismatch)
    return ir


def _check_kind(config: pb.ForwardingPipelineConfig, ir: dict, kind: str) -> None:
    items = ir.get(kind, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise invalid(f"p4_device_config: '{kind}' must be a list of objects")
    in_ir = {item.get("id") for item in items}
    for obj in getattr(config.p4info, kind):
        if obj.preamble.id not in in_ir:
            raise invalid(f"the P4Info's {kind[:-1]} {obj.preamble.name} "
                          f"(id {obj.preamble.id}) is not in p4_device_config: the P4Info "
                          "does not describe this program")
