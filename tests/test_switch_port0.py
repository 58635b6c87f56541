"""Port 0 is a data port, as in BMv2 (switch/PROTOCOL.md `--port`): tests/data/switch_port0.p4
forwards port 0 to port 1 and back through the real switch, and a packet whose program leaves
`egress_spec` at its initial 0 leaves through port 0."""

from __future__ import annotations

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, exchange, mac

pytestmark = pytest.mark.net


@pytest.fixture(scope="module")
def port0_ir(tmp_path_factory):
    return rig_mod.compile_p4(rig_mod.ROOT / "tests" / "data" / "switch_port0.p4",
                              rig_mod.ir_folder(tmp_path_factory, "switch_port0"))


def frame(n: int) -> bytes:
    return mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb6" + bytes([n]) * 46


def test_port_0_forwards_both_ways_and_is_the_default_egress(port0_ir):
    with Rig(n_ports=3, first_port=0) as rig:
        rig.load(port0_ir)
        from_0 = exchange(rig, 0, [frame(0)])
        from_1 = exchange(rig, 1, [frame(1)])
        from_2 = exchange(rig, 2, [frame(2)])
        ports = {p["port"]: p for p in rig.client.call("stats")["ports"]}
    assert from_0 == {0: [], 1: [frame(0)], 2: []}
    assert from_1 == {0: [frame(1)], 1: [], 2: []}
    assert from_2 == {0: [frame(2)], 1: [], 2: []}
    assert (ports[0]["rx_packets"], ports[0]["tx_packets"]) == (1, 2)
