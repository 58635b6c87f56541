"""The p4 plane on a looped topology: real switches, P4Runtime servers, the controller,
real traffic; nothing left behind."""

from __future__ import annotations

import pytest
from net_checks import check_controlled_plane_on_multipath

from dplab.planes import PlaneError, create


@pytest.mark.net
@pytest.mark.parametrize("mode", ["reactive", "proactive"])
def test_p4_carries_ping_tcp_and_udp_over_a_looped_fabric(mode: str) -> None:
    stats = check_controlled_plane_on_multipath("p4", mode, ready_timeout=40)
    assert stats["ready_s"] > 0


def test_p4_options_are_checked(tmp_path) -> None:
    with pytest.raises(PlaneError, match="'mode'.*'fast'"):
        create("p4", {"mode": "fast"})
    with pytest.raises(PlaneError, match="'program'.*nowhere.p4"):
        create("p4", {"program": str(tmp_path / "nowhere.p4")})
