"""The p4 plane's receive ring depth (dplab.planes.rx_ring): the default while every
switch's rings (one receive ring per switch, a transmit ring per port) fit in their share of
available memory, halved until they do, refused when even the shallowest ring does not fit."""

from __future__ import annotations

import pytest

from dplab.planes import rx_ring
from dplab.planes.base import PlaneError
from dplab.planes.p4 import P4Plane

GIB = 1 << 30


def test_default_depth_while_the_rings_fit():
    choice = rx_ring.choose(rx_ring.AUTO, switches=4, ports=64, available=8 * GIB)
    assert choice.frames == rx_ring.DEFAULT_FRAMES
    assert choice.reason.startswith("the default: 4 receive rings of 2048 frames and 64 "
                                    "transmit rings")


def test_a_k16_fat_tree_keeps_the_default_depth_in_8_gib():
    # 320 switches, 5120 ports: one receive ring per switch, not per port.
    assert rx_ring.choose(rx_ring.AUTO, 320, 5120, available=8 * GIB).frames == 2048


def test_halved_until_every_ring_fits_in_its_share():
    switches, ports, available = 320, 5120, 6 * GIB
    choice = rx_ring.choose(rx_ring.AUTO, switches, ports, available)
    budget = available * rx_ring.RING_SHARE
    assert rx_ring.ring_bytes(choice.frames, switches, ports) <= budget
    assert rx_ring.ring_bytes(choice.frames * 2, switches, ports) > budget  # the deepest that fits
    assert choice.frames < rx_ring.DEFAULT_FRAMES
    assert "the default 2048 would need 320 receive rings" in choice.reason


def test_too_little_memory_for_the_shallowest_ring_is_refused():
    with pytest.raises(PlaneError, match=r"do not fit: 320 receive rings of 64 frames and "
                                         r"5120 transmit rings .* at the fewest frames \(64\)"):
        rx_ring.choose(rx_ring.AUTO, 320, 5120, available=1 * GIB)


def test_a_count_given_is_kept_and_bad_ones_are_named():
    assert rx_ring.choose(512, 320, 5120, available=1 * GIB).frames == 512
    assert P4Plane({"rx_ring_frames": 256}).info()["rx ring"].startswith("256 (chosen at start")
    for bad in (32, 1 << 17, "deep", True, 512.0):
        with pytest.raises(PlaneError, match="option 'rx_ring_frames' must be 'auto' or a"):
            P4Plane({"rx_ring_frames": bad})


def test_mem_available_read_from_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   12000000 kB\n")
    assert rx_ring.mem_available(meminfo) == 12000000 * 1024
