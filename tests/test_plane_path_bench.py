"""benchmarks/plane_path.py: its measurements, once at a tiny size, give real figures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import plane_path  # noqa: E402  (a script beside its doc_section helper, not a package)

TINY = plane_path.Sizes(packets=40, packet_ms=5.0, payload=32, tcp_s=1.0)


@pytest.mark.net
def test_one_bridge_hop_adds_delay_and_carries_tcp():
    floor = plane_path.measure_one_switch(plane_path.DIRECT, TINY)
    hop = plane_path.measure_one_switch("bridge", TINY)
    for figures in (floor, hop):
        assert figures["packets_received"] == figures["packets_sent"] == TINY.packets
        assert 0 < figures["owd_p50_us"] <= figures["owd_p99_us"]
        assert figures["tcp_default_gbit"] > 0.05
        assert figures["tcp_off_gbit"] > 0.05
    assert floor["offloads"] == hop["offloads"] == "tx on tso on gso on"  # veth defaults


@pytest.mark.net
def test_a_chain_of_two_bridges_delivers_the_stream():
    far = plane_path.measure_chain("bridge", 2, TINY)
    assert far["packets_received"] == far["packets_sent"] == TINY.packets
    assert 0 < far["owd_p50_us"] <= far["owd_p99_us"]
