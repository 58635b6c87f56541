"""The switch's receive ring frames are sized to its ports' MTU (switch/src/ports.rs): every
frame a port can deliver still crosses the switch whole, from the smallest to the longest
the MTU allows, VLAN-tagged ones included (the tag's 4 bytes beyond the MTU), on ports
whose MTU makes the frames smaller (576) or the default (1500)."""

from __future__ import annotations

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, mac
from test_switch_gso import compiled

pytestmark = pytest.mark.net

ETH_HLEN, VLAN_TAG = 14, b"\x81\x00\x00\x05"  # 802.1Q, VLAN 5


def frame(length: int, tagged: bool = False) -> bytes:
    """A frame of `length` bytes whose payload counts up, so any cut or shift shows."""
    head = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01")
    head += (VLAN_TAG if tagged else b"") + b"\x88\xb6"
    return head + bytes(i % 251 for i in range(length - len(head)))


@pytest.fixture(scope="module")
def forward_ir(tmp_path_factory):
    return compiled(rig_mod.ROOT / "benchmarks" / "switch_forward.p4", tmp_path_factory)


@pytest.mark.parametrize("mtu", [576, 1500])
def test_every_frame_length_the_mtu_allows_crosses_whole(forward_ir, mtu):
    untagged = [frame(n) for n in (60, mtu // 2, mtu + ETH_HLEN - 1, mtu + ETH_HLEN)]
    tagged = [frame(n, tagged=True) for n in (64, mtu + ETH_HLEN + len(VLAN_TAG))]
    with Rig(n_ports=2, mtu=mtu) as rig:
        rig.load(forward_ir)
        for f in untagged + tagged:
            rig.send(1, f)
        got = rig.capture()[2]
        stats = next(p for p in rig.client.call("stats")["ports"] if p["port"] == 1)
    # A capture socket sees a tagged frame with its tag lifted out (as packet metadata).
    expected = untagged + [f[:12] + f[16:] for f in tagged]
    assert got == expected
    assert stats["rx_packets"] == len(expected) and stats["drops"] == 0
    assert stats["rx_bytes"] == sum(map(len, untagged + tagged))
