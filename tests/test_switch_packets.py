"""Packet tests of the P4 switch (switch/): crafted frames into real veth ports, checked on exit."""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import TAG_TYPE, Rig, exchange, mac, tag_frame, udp_frame

pytestmark = pytest.mark.net

HERE = Path(__file__).resolve().parent
SRC_MAC = "02:00:00:00:01:01"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, Path]:
    out = rig_mod.ir_folder(tmp_path_factory, "switch_ir")
    return {
        "l3": rig_mod.compile_p4(rig_mod.ROOT / "benchmarks" / "switch_l3.p4", out),
        "features": rig_mod.compile_p4(HERE / "data" / "switch_features.p4", out),
    }


@pytest.fixture(scope="module")
def features(compiled):
    with Rig(n_ports=3) as rig:
        rig.load(compiled["features"])
        rig.client.call("subscribe")
        yield rig


def tag_of(frame: bytes) -> dict[str, int]:
    kind, value, hash_value, color, instance = struct.unpack("!BBIBB", frame[14:22])
    return {"kind": kind, "value": value, "hash": hash_value, "color": color, "instance": instance}


def test_l3_forwarding_rewrites_macs_ttl_and_checksum(compiled):
    with Rig(n_ports=3) as rig:
        rig.load(compiled["l3"])
        rig.client.call(
            "table_add",
            table="L3Ingress.ipv4_lpm",
            match=[{"kind": "lpm", "v": "0x0a000200", "plen": 24}],
            action={"action": "L3Ingress.ipv4_forward", "args": ["0x020000000002", "0x2"]},
        )
        sent = udp_frame("02:00:00:00:00:aa", SRC_MAC, "10.0.1.1", "10.0.2.5", size=100, ttl=64)
        got = exchange(
            rig, 1, [sent, udp_frame("02:00:00:00:00:aa", SRC_MAC, "10.0.1.1", "10.0.9.9")]
        )
        assert got[1] == [] and got[3] == []
        assert len(got[2]) == 1
        out = got[2][0]
        assert out[:6] == mac("02:00:00:00:00:02") and out[6:12] == mac("02:00:00:00:00:aa")
        assert out[22] == 63  # TTL decremented
        assert rig_mod.ipv4_checksum(out[14:34]) == 0  # checksum updated correctly
        assert out[34:] == sent[34:]  # payload untouched
        stats = rig.client.call("stats")
        assert stats["pipeline"]["packets"] == 2 and stats["pipeline"]["drops"] == 1
        entries = rig.client.call("table_read", table="L3Ingress.ipv4_lpm")["entries"]
        assert entries[0]["packets"] == 1 and entries[0]["bytes"] == 100


def test_counter_counts_packets_and_bytes(features):
    c = features.client
    c.call("counter_write", counter="FeatIngress.port_counter", packets=0, bytes=0)
    got = exchange(features, 1, [tag_frame(1)] * 3)
    assert len(got[2]) == 3
    cell = c.call("counter_read", counter="FeatIngress.port_counter", index=1)["cells"][0]
    assert cell == {"index": 1, "packets": 3, "bytes": 180}


def test_register_accumulates(features):
    features.client.call("register_write", register="FeatIngress.accumulator", value="0x0")
    got = exchange(features, 1, [tag_frame(2, 5), tag_frame(2, 7)])
    assert [tag_of(f)["value"] for f in got[2]] == [5, 12]
    cells = features.client.call("register_read", register="FeatIngress.accumulator", index=0)[
        "cells"
    ]
    assert cells == [{"index": 0, "value": "0xc"}]


def test_meter_colours_a_burst(features):
    features.client.call(
        "meter_set",
        meter="FeatIngress.rate_meter",
        index=0,
        config={"cir": 1, "cburst": 1, "pir": 2, "pburst": 2},
    )
    got = exchange(features, 1, [tag_frame(3)] * 5)
    assert [tag_of(f)["color"] for f in got[2]] == [0, 1, 2, 2, 2]
    features.client.call("meter_set", meter="FeatIngress.rate_meter", index=0, config=None)
    got = exchange(features, 1, [tag_frame(3)] * 3)
    assert [tag_of(f)["color"] for f in got[2]] == [0, 0, 0]


def test_crc32_hash(features):
    got = exchange(features, 1, [tag_frame(4)])
    assert tag_of(got[2][0])["hash"] == zlib.crc32(mac(SRC_MAC)) % 65536


def test_multicast_replicates_with_rid(features):
    features.client.call(
        "mcast_group_set", group=1, replicas=[{"port": 2, "rid": 7}, {"port": 3, "rid": 9}]
    )
    got = exchange(features, 1, [tag_frame(5)])
    assert [tag_of(f) | {"hash": 0} for f in got[2]] == [
        {"kind": 5, "value": 7, "hash": 0, "color": 0, "instance": 5}
    ]
    assert [tag_of(f)["value"] for f in got[3]] == [9]
    assert got[1] == []


def test_rounds_say_when_every_copy_of_a_frame_is_sent(features):
    """`stats` `rounds` (switch/PROTOCOL.md): once the switch counted a frame read and a
    later reply's `ended` reached the `begun` read with it, `tx_packets` count all its copies
    (a burst of multicast frames here), and no other frame arrives after them."""
    features.client.call("mcast_group_set", group=1,
                         replicas=[{"port": 2, "rid": 1}, {"port": 3, "rid": 2}])
    before = {p["port"]: p["tx_packets"] for p in features.client.call("stats")["ports"]}
    for _ in range(40):
        features.send(1, tag_frame(5))
    settled = features.settled_stats()
    assert settled is not None
    assert settled["rounds"]["ended"] <= settled["rounds"]["begun"]
    sent = {p["port"]: p["tx_packets"] - before[p["port"]] for p in settled["ports"]}
    assert sent == {1: 0, 2: 40, 3: 40}
    got = features.capture()
    assert [len(got[p]) for p in (1, 2, 3)] == [0, 40, 40]
    assert all(frames == [] for frames in features.capture(wait=0.2).values())


def test_ingress_clone_goes_to_the_session_port(features):
    features.client.call("clone_session_set", session=5, replicas=[{"port": 3, "rid": 0}])
    got = exchange(features, 1, [tag_frame(6)])
    assert [tag_of(f)["instance"] for f in got[2]] == [0]
    assert [tag_of(f)["instance"] for f in got[3]] == [1]


def test_resubmit_preserves_field_list(features):
    got = exchange(features, 1, [tag_frame(7)])
    assert [(tag_of(f)["instance"], tag_of(f)["value"]) for f in got[2]] == [(6, 0x5A)]


def test_recirculate_preserves_field_list(features):
    got = exchange(features, 1, [tag_frame(8)])
    assert [(tag_of(f)["instance"], tag_of(f)["value"]) for f in got[2]] == [(4, 0x77)]


def test_digest_reaches_the_control_channel(features):
    got = exchange(features, 1, [tag_frame(9)])
    assert all(frames == [] for frames in got.values())
    event = features.client.wait_event("digest")
    assert event is not None
    assert event["data"] == [hex(int(SRC_MAC.replace(":", ""), 16)), "0x1"]


def test_packet_in_and_packet_out(features):
    c = features.client
    frame = tag_frame(10, 3)
    got = exchange(features, 2, [frame])
    assert all(frames == [] for frames in got.values())
    event = c.wait_event("packet_in")
    assert event is not None
    assert [m["value"] for m in event["metadata"]] == ["0x2", "0x0"]
    assert bytes.fromhex(event["payload"]) == frame
    features.drain()
    c.call("packet_out", payload=frame.hex(), metadata=[{"id": 1, "value": "0x3"}])
    got = features.capture()
    assert got[3] == [frame] and got[1] == [] and got[2] == []


def test_ternary_priorities(features):
    c = features.client
    table = "FeatIngress.classify"
    c.call(
        "table_add",
        table=table,
        match=[{"kind": "ternary", "v": "0x10", "m": "0xf0"}],
        priority=10,
        action={"action": "FeatIngress.set_color", "args": ["0x1"]},
    )
    c.call(
        "table_add",
        table=table,
        match=[{"kind": "ternary", "v": "0x12", "m": "0xff"}],
        priority=20,
        action={"action": "FeatIngress.set_color", "args": ["0x2"]},
    )
    got = exchange(features, 1, [tag_frame(11, 0x12), tag_frame(11, 0x13), tag_frame(11, 0x23)])
    assert [tag_of(f)["color"] for f in got[2]] == [2, 1, 0]


def test_wrong_requests_get_codes(features):
    c = features.client
    assert c.request("table_add", table="nope", match=[])["code"] == "NOT_FOUND"
    entry = {
        "table": "FeatIngress.classify",
        "match": [{"kind": "ternary", "v": "0x1", "m": "0xff"}],
        "priority": 5,
        "action": {"action": "FeatIngress.set_color", "args": ["0x1"]},
    }
    c.call("table_add", **entry)
    assert c.request("table_add", **entry)["code"] == "ALREADY_EXISTS"
    too_wide = entry | {
        "priority": 6,
        "action": {"action": "FeatIngress.set_color", "args": ["0x100"]},
    }
    assert c.request("table_add", **too_wide)["code"] == "INVALID_ARGUMENT"
    no_priority = entry | {"priority": 0}
    assert c.request("table_add", **no_priority)["code"] == "INVALID_ARGUMENT"
    assert c.request("table_delete", **(entry | {"priority": 99}))["code"] == "NOT_FOUND"
    c.call("table_delete", **entry)


def test_malformed_frames_do_not_stop_the_switch(features):
    rng = random.Random(7)
    before = features.client.call("stats")["ports"][0]["rx_packets"]
    frames = [bytes(rng.getrandbits(8) for _ in range(rng.randint(14, 120))) for _ in range(300)]
    frames += [tag_frame(1)[:16], mac("02:00:00:00:02:02") + mac(SRC_MAC) + TAG_TYPE]
    exchange(features, 1, frames)
    assert features.switch_alive()
    after = features.client.call("stats")["ports"][0]["rx_packets"]
    assert after - before == len(frames)
    got = exchange(features, 1, [tag_frame(1)])
    assert len(got[2]) == 1
