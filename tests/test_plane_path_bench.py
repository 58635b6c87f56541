"""benchmarks/plane_path.py: its measurements, once at a tiny size, give real figures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import plane_path  # noqa: E402  (a script beside its doc_section helper, not a package)

TINY = plane_path.Sizes(packets=40, packet_ms=5.0, payload=32, tcp_s=1.0)


@pytest.mark.net
def test_bridge_hop_and_chain_beside_the_direct_pair_give_real_figures():
    with plane_path.forwarding(plane_path.DIRECT, plane_path.direct_pair()) as floor_net:
        hop, floors = plane_path.measure_plane("bridge", floor_net, 2, TINY)
    assert len(floors) == 2  # one floor stream beside the single switch, one beside the chain
    for stream in (hop, *floors):
        assert stream["error"] is None
        assert stream["packets_received"] == stream["packets_sent"] == TINY.packets
        assert 0 < stream["owd_p50_us"] <= stream["owd_p99_us"]
    assert hop["added_p50_us"] == hop["owd_p50_us"] - floors[0]["owd_p50_us"]
    assert hop["slope_p50_us"] is not None
    assert hop["offloads"] == "tx on tso on gso on"  # veth defaults: the bridge keeps them
    assert hop["tcp_default_gbit"] > 0.05 and hop["tcp_off_gbit"] > 0.05
