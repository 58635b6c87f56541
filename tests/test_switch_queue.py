"""The P4 switch's queue metadata (switch/PROTOCOL.md, *Semantics notes*): a program copies
standard_metadata's queue fields into a header in egress; the frames that come out say what
the traffic manager set. The queue is an egress port's packets of one round of the switch,
waiting for that round's send; the copies of a multicast group are queued at once and
each waits for the egress passes of those made before it (measured, in microseconds)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, mac
from test_switch_superpackets import SEGMENTS, send_super_packet, with_extensions

pytestmark = pytest.mark.net

PROGRAM = Path(__file__).resolve().parent / "p4" / "queue_fields.p4"
REPLICAS = 4  # copies of every frame, all leaving by port 2
REPORT = struct.Struct("!IIII6s6sH")
U32 = 1 << 32
# A copy's measured wait above this would be garbage, not a wait (a loaded machine may
# take the switch's core for some milliseconds, never for a second).
MAX_WAIT_US = 1_000_000


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    ir = rig_mod.compile_p4(PROGRAM, rig_mod.ir_folder(tmp_path_factory, "queue_ir"))
    with Rig(n_ports=2) as r:
        r.load(ir)
        replicas = [{"port": 2, "rid": rid} for rid in range(1, REPLICAS + 1)]
        r.client.call("mcast_group_set", group=1, replicas=replicas)
        yield r


def frame(seq: int) -> bytes:
    head = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb5"
    return head + struct.pack("!I", seq) + bytes(46)


def report(out: bytes) -> dict[str, int]:
    enq_ts, enq_depth, deq_delta, deq_depth, ingress_ts, egress_ts, rid = REPORT.unpack(
        out[14 : 14 + REPORT.size]
    )
    return {
        "enq_timestamp": enq_ts,
        "enq_qdepth": enq_depth,
        "deq_timedelta": deq_delta,
        "deq_qdepth": deq_depth,
        "ingress_ts": int.from_bytes(ingress_ts, "big"),
        "egress_ts": int.from_bytes(egress_ts, "big"),
        "rid": rid,
        "seq": struct.unpack("!I", out[14 + REPORT.size : 18 + REPORT.size])[0],
    }


def send_and_collect(rig: Rig, count: int) -> list[dict[str, int]]:
    """Sends `count` frames into port 1; returns the reports of port 2's frames, in order."""
    rig.drain()
    for seq in range(count):
        rig.send(1, frame(seq))
    return [report(f) for f in rig.capture()[2]]


def test_copies_for_one_port_queue_behind_each_other(rig):
    reports = send_and_collect(rig, 1)
    assert [r["rid"] for r in reports] == [1, 2, 3, 4]
    # Nothing else went to port 2 in that round: the copies count the queue up from 0.
    assert [r["enq_qdepth"] for r in reports] == [0, 1, 2, 3]
    assert [r["deq_qdepth"] for r in reports] == [0, 1, 2, 3]
    assert_copies_waited_in_turn(reports)


def assert_copies_waited_in_turn(reports: list[dict[str, int]]) -> None:
    """The copies of one frame, in the order they were made, waited at least as long as
    the copy before them (all were queued at once), and not implausibly long."""
    for before, r in zip(reports, reports[1:], strict=False):
        if r["rid"] > before["rid"]:
            assert r["deq_timedelta"] >= before["deq_timedelta"], (before, r)
    assert all(0 <= r["deq_timedelta"] < MAX_WAIT_US for r in reports)


def test_timestamps_share_the_switch_clock(rig):
    first = send_and_collect(rig, 1)
    second = send_and_collect(rig, 1)
    for r in first + second:
        assert r["enq_timestamp"] == r["ingress_ts"] % U32
        assert r["egress_ts"] % U32 == (r["enq_timestamp"] + r["deq_timedelta"]) % U32
    # A later packet entered the queue later (microseconds since the switch started).
    assert second[0]["enq_timestamp"] > first[0]["enq_timestamp"]


def test_a_burst_counts_the_queue_up_within_each_round(rig):
    reports = send_and_collect(rig, 25)
    assert len(reports) == 25 * REPLICAS
    assert [r["seq"] for r in reports] == [s for s in range(25) for _ in range(REPLICAS)]
    # However the frames fell into rounds, each copy finds the queue either empty (a new
    # round) or one longer than the copy before it found it, in the same round.
    for before, r in zip(reports, reports[1:], strict=False):
        same_round = r["enq_qdepth"] == before["enq_qdepth"] + 1
        assert same_round or r["enq_qdepth"] == 0, (before, r)
        assert same_round or r["rid"] == 1, "the copies of one frame are made in one round"
        assert r["deq_qdepth"] == r["enq_qdepth"]
        if same_round:
            assert r["enq_timestamp"] == before["enq_timestamp"]
    assert_copies_waited_in_turn(reports)


def test_the_segments_of_a_super_packet_queue_up_in_one_round(rig):
    """One TSO super-packet is one frame of the receive ring: its segments all go through
    the pipeline in one round, so their copies fill port 2's queue one behind the other."""
    rig.drain()
    send_super_packet(rig, 1, with_extensions())
    got: list[bytes] = []
    for _ in range(20):  # up to 6 s on a loaded machine, until every copy came out
        got += rig.capture(0.3)[2]
        if len(got) >= SEGMENTS * REPLICAS:
            break
    reports = [report(f) for f in got]
    depths = [r["enq_qdepth"] for r in reports]
    assert depths == list(range(SEGMENTS * REPLICAS))
    assert [r["deq_qdepth"] for r in reports] == depths
    assert [r["rid"] for r in reports] == [1, 2, 3, 4] * SEGMENTS
    assert len({r["enq_timestamp"] for r in reports}) == 1  # one round, one clock reading
    for r in reports:
        assert r["enq_timestamp"] == r["ingress_ts"] % U32
        assert r["egress_ts"] % U32 == (r["enq_timestamp"] + r["deq_timedelta"]) % U32
    for copies in zip(*[iter(reports)] * REPLICAS, strict=True):
        assert_copies_waited_in_turn(list(copies))
