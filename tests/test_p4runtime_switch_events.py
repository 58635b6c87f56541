"""The switch's data-plane events (packet-ins, digests: what our P4Runtime server turns
into StreamChannel messages) are encoded only when a client subscribed: a switch nobody
listens to drops them unencoded and counts them (`stats` cpu.events_unheard), and its
packet-in and digest counters count them all the same."""

from __future__ import annotations

import time

import pytest
import switch_rig
from switch_rig import Rig, tag_frame

pytestmark = pytest.mark.net

EVENTS = 20  # of each kind per phase
DIGEST_FRAME = tag_frame(9)  # switch_features.p4: a digest of (src MAC, 1)
PACKET_IN_FRAME = tag_frame(10, 3)  # sent to the CPU port, with metadata (port 2, 0)


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    out = switch_rig.ir_folder(tmp_path_factory, "events_ir")
    ir = switch_rig.compile_p4(switch_rig.ROOT / "tests" / "data" / "switch_features.p4", out)
    with Rig(n_ports=3) as rig:
        rig.load(ir)
        yield rig


def cpu_counts(rig: Rig) -> dict[str, int]:
    return rig.client.call("stats")["cpu"]


def send_events(rig: Rig) -> None:
    for _ in range(EVENTS):
        rig.send(1, DIGEST_FRAME)
        rig.send(2, PACKET_IN_FRAME)


def counted(rig: Rig, before: dict[str, int], key: str, grown: int) -> dict[str, int]:
    """The cpu counters once ``key`` has grown by ``grown`` since ``before`` (or 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        now = cpu_counts(rig)
        if now[key] - before[key] >= grown or time.monotonic() > deadline:
            return now
        time.sleep(0.05)


def test_events_without_a_subscriber_are_counted_not_sent_and_with_one_arrive(rig):
    before = cpu_counts(rig)
    send_events(rig)
    after = counted(rig, before, "events_unheard", 2 * EVENTS)
    grown = {key: after[key] - before[key] for key in after}
    assert grown["events_unheard"] == 2 * EVENTS
    assert (grown["digests"], grown["packet_in"], grown["events_dropped"]) == (EVENTS, EVENTS, 0)
    assert rig.client.wait_event("digest", timeout=0.3) is None
    assert rig.client.events == []
    assert rig.client.call("stats")["heap"]["queued_events"] == 0

    rig.client.call("subscribe")
    before = after
    send_events(rig)
    digests = [rig.client.wait_event("digest", timeout=5) for _ in range(EVENTS)]
    packet_ins = [rig.client.wait_event("packet_in", timeout=5) for _ in range(EVENTS)]
    after = counted(rig, before, "digests", EVENTS)
    assert [d and d["data"] for d in digests] == [["0x20000000101", "0x1"]] * EVENTS
    assert [p and (bytes.fromhex(p["payload"]), [m["value"] for m in p["metadata"]])
            for p in packet_ins] == [(PACKET_IN_FRAME, ["0x2", "0x0"])] * EVENTS
    assert after["events_unheard"] == before["events_unheard"]
    assert (after["digests"] - before["digests"], after["packet_in"] - before["packet_in"]) \
        == (EVENTS, EVENTS)
