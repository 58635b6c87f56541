"""Directional action parameters on the P4 switch: a direct call and table actions with
bound out/inout/in arguments change the packet as P4_16 says (tests/p4/dir_params.p4)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, mac

pytestmark = pytest.mark.net

PROGRAM = Path(__file__).resolve().parent / "p4" / "dir_params.p4"
DST, SRC = "02:00:00:00:02:02", "02:00:00:00:01:01"


def tag_frame(a: int, b: int, c: int) -> bytes:
    frame = mac(DST) + mac(SRC) + b"\x88\xb5" + struct.pack("!BBBB", a, b, c, 0)
    return frame + bytes(60 - len(frame))


@pytest.fixture(scope="module")
def ir_path(tmp_path_factory) -> Path:
    return rig_mod.compile_p4(PROGRAM, rig_mod.ir_folder(tmp_path_factory, "dir_params"))


def test_bound_arguments_change_the_packet(ir_path: Path) -> None:
    add_to_id = next(a["id"] for a in json.loads(ir_path.read_text())["actions"]
                     if a["name"] == "DirIngress.add_to")
    with Rig(n_ports=3) as rig:
        rig.load(ir_path)
        # By P4Info id, as P4Runtime installs it: only the directionless `extra` is given.
        rig.client.call("table_add", table="DirIngress.adder",
                        match=[{"kind": "exact", "v": "0x7"}],
                        action={"action": add_to_id, "args": ["0x64"]})
        rig.client.call("table_add", table="DirIngress.marker",
                        match=[{"kind": "exact", "v": "0x7"}],
                        action={"action": "DirIngress.mark", "args": ["0x44"]})
        rig.drain()
        rig.send(1, tag_frame(a=10, b=5, c=7))
        rig.send(1, tag_frame(a=10, b=5, c=9))
        got = rig.capture()
    assert got[1] == [] and got[3] == []          # set_port(egress_spec, 2), a direct call
    hit, miss = sorted(got[2], key=lambda f: f[16])
    for out in (hit, miss):
        assert out[:6] == mac(SRC) and out[6:12] == mac(DST)   # swap_macs(inout header)
    # adder hit: a += (b + 1) + extra, with b copied in (the packet's b stays 5).
    assert list(hit[14:18]) == [10 + 6 + 100, 5, 7, 0x44 + 2]
    # both tables miss: adder's NoAction, marker's default mark(meta.x, 0x33).
    assert list(miss[14:18]) == [10, 5, 9, 0x33 + 2]
