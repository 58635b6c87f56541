"""The wireless medium (dplab-wmedium) between real namespaces: stations sending at once share
its airtime turn by turn, a station's loss rate holds over 10,000 frames, the access point's
broadcasts reach every station once, and SIGINT stops it with its counters written."""

from __future__ import annotations

import math
import os
import time

import pytest
from wmedium_rig import WMEDIUM_BIN, Rig, receive, received, send

from dplab.substrate import registry

pytestmark = [
    pytest.mark.net,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
    pytest.mark.skipif(not WMEDIUM_BIN.exists(), reason="dplab-wmedium not built"),
]

AP = 0
SIZE = 1000  # UDP payload: frames of 1042 bytes on the medium
COUNTERS = {"tx_frames", "tx_bytes", "airtime_ns", "queue_drops", "lost", "rx_frames",
            "rx_bytes"}


@pytest.fixture(scope="module")
def rig():
    with Rig(stations=3) as rig:
        yield rig


def flood_ap(rig: Rig, offered_pps: dict[int, float], seconds: float, config: dict):
    """Stations send SIZE-byte datagrams to the access point at once, each at its offered
    rate; returns the medium's counters and {station: datagrams received at the AP}."""
    sink = receive(rig, AP, 9200)
    with rig.medium(config) as medium:
        start = time.time() + 0.5
        senders = [send(rig, s, rig.ip(AP), 9200, SIZE, int(pps * seconds), pps, start)
                   for s, pps in offered_pps.items()]
        for p in senders:
            assert p.wait(timeout=30) == 0
        got = received(sink)
    assert medium.stats is not None
    return medium.stats["nodes"], {s: got.get(rig.ip(s), [0])[0] for s in offered_pps}


def within(value: float, want: float, rel: float) -> bool:
    return abs(value - want) <= rel * want


def test_two_stations_sending_at_once_get_half_the_airtime_each(rig):
    """At 20 Mbit/s a 1042-byte frame takes 417 µs: the medium carries about 2,400 a second.
    Station 1 offers 3,000/s, station 2 1,800/s: both more than their half, and unequal, so
    a medium serving frames first come first served would give station 1 62 % of the air;
    turn by turn gives each half."""
    nodes, got = flood_ap(rig, {1: 3000, 2: 1800}, 2.0,
                          rig.config(stations=[(20.0, 0.0), (20.0, 0.0)]))
    s1, s2 = nodes["ws1"], nodes["ws2"]
    assert s1["queue_drops"] > 0 and s2["queue_drops"] > 0, f"not both saturated: {nodes}"
    air = s1["airtime_ns"] / (s1["airtime_ns"] + s2["airtime_ns"])
    assert within(air, 0.5, 0.15), f"station 1 had {air:.1%} of the airtime: {nodes}"
    share = got[1] / (got[1] + got[2])
    assert within(share, 0.5, 0.15), f"station 1 got {share:.1%} of the datagrams: {got}"
    assert nodes["wap"]["rx_frames"] == s1["tx_frames"] + s2["tx_frames"]


def test_a_station_at_half_the_rate_sends_as_many_frames_in_twice_the_airtime(rig):
    """802.11's performance anomaly, as the model's equal turns give it: at 10 and 20 Mbit/s
    the two stations each get about 800 frames a second through, the slower one spending
    twice the airtime on them."""
    nodes, got = flood_ap(rig, {1: 1500, 2: 1500}, 1.5,
                          rig.config(stations=[(10.0, 0.0), (20.0, 0.0)]))
    slow, fast = nodes["ws1"], nodes["ws2"]
    assert slow["queue_drops"] > 0 and fast["queue_drops"] > 0, f"not saturated: {nodes}"
    assert within(slow["tx_frames"] / fast["tx_frames"], 1.0, 0.15), nodes
    assert within(slow["airtime_ns"] / fast["airtime_ns"], 2.0, 0.15), nodes
    assert within(got[1] / got[2], 1.0, 0.15), got


def test_ten_percent_loss_is_within_its_binomial_ci_over_10000_frames(rig):
    n, p = 10_000, 0.10
    config = rig.config(seed=int.from_bytes(os.urandom(4), "big"),
                        stations=[(54.0, 100 * p)], queue_frames=1000)
    sink = receive(rig, AP, 9201)
    with rig.medium(config) as medium:
        assert send(rig, 1, rig.ip(AP), 9201, 64, n, 10_000).wait(timeout=30) == 0
        got = received(sink)
    s1 = medium.stats["nodes"]["ws1"]
    assert s1["tx_frames"] == n and s1["queue_drops"] == 0, s1
    distinct = got[rig.ip(1)][2]
    lost = (n - distinct) / n
    # 99.9 % binomial interval (normal approximation, n p = 1000): the seed is random.
    half = 3.29 * math.sqrt(p * (1 - p) / n)
    assert abs(lost - p) <= half, f"lost {lost:.2%} of {n}, want 10 % ± {half:.2%}"
    assert s1["lost"] == n - distinct, (s1, distinct)


def test_broadcasts_reach_every_station_once_and_a_learnt_unicast_only_its_station(rig):
    sinks = {s: receive(rig, s, 9300, expect=80 if s == 2 else 50) for s in (1, 2, 3)}
    ap_sink = receive(rig, AP, 9300, expect=1)
    with rig.medium(rig.config()) as medium:
        assert send(rig, AP, "10.77.0.255", 9300, 100, 50, 1000).wait(timeout=30) == 0
        # Station 2 has sent nothing yet: a unicast to it reaches every station's NIC.
        assert send(rig, AP, rig.ip(2), 9300, 100, 10, 1000).wait(timeout=30) == 0
        assert send(rig, 2, rig.ip(AP), 9300, 100, 1, 1).wait(timeout=30) == 0
        assert send(rig, AP, rig.ip(2), 9300, 100, 20, 1000).wait(timeout=30) == 0
        got = {s: received(p)[rig.ip(AP)] for s, p in sinks.items()}
        assert received(ap_sink)[rig.ip(2)][0] == 1
    nodes = medium.stats["nodes"]
    assert got[1] == got[3] == [50, 5000, 50], got  # each broadcast once, nothing else
    assert got[2] == [80, 8000, 50], got  # three senders, each numbering from 0
    assert [nodes[f"ws{s}"]["rx_frames"] for s in (1, 2, 3)] == [60, 80, 60], nodes
    assert nodes["wap"]["tx_frames"] == 80


def test_sigint_stops_the_medium_and_it_writes_every_nodes_counters(rig):
    with rig.medium(rig.config()) as medium:
        pid = medium.proc.pid
        start = registry.process_start_time(pid)
        assert registry.is_running(pid, start)
    assert medium.returncode == 0
    assert not registry.is_running(pid, start)
    assert medium.stats is not None
    assert set(medium.stats["nodes"]) == {"wap", "ws1", "ws2", "ws3"}
    for counters in medium.stats["nodes"].values():
        assert set(counters) >= COUNTERS
