"""The switch's rehearsals and kernel warm-ups leave no trace.

Before each expected packet of a steady stream the data-plane thread runs the latest packet
through the pipeline once more, to warm the caches (switch/src/dataplane.rs `rehearse`), and
sends one throw-away frame into its namespace's loopback to warm the kernel's send path
(switch/src/dataplane/warmup.rs). A paced stream through tests/p4/rt_features.p4 makes it
do both; every counter, direct counter, register and digest must then count each real
packet exactly once, only the real packets come out of the ports, and the loopback carried
exactly the warm-up frames.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, udp_frame

pytestmark = pytest.mark.net

HERE = Path(__file__).resolve().parent
PERIOD_S = 0.02
# The switch needs a few gaps to see a steady stream; stop once it rehearsed this often.
ENOUGH_REHEARSALS = 5
MOST_PACKETS = 250


@pytest.fixture(scope="module")
def rt_features(tmp_path_factory) -> Path:
    out = rig_mod.ir_folder(tmp_path_factory, "ir")
    return rig_mod.compile_p4(HERE / "p4" / "rt_features.p4", out)


def rehearsals(rig: Rig) -> int:
    return rig.client.call("stats")["pipeline"]["rehearsals"]


def loopback_tx_packets(rig: Rig) -> int:
    shown = subprocess.run(["ip", "-n", rig.sw_ns, "-s", "-j", "link", "show", "dev", "lo"],
                           capture_output=True, text=True, check=True).stdout
    return json.loads(shown)[0]["stats64"]["tx"]["packets"]


def paced_stream(rig: Rig, frame: bytes) -> int:
    """Sends `frame` into port 1 on a fixed schedule until the switch has rehearsed enough;
    returns how many were sent."""
    start, sent = time.monotonic(), 0
    while sent < MOST_PACKETS and (sent % 10 or rehearsals(rig) < ENOUGH_REHEARSALS):
        time.sleep(max(0.0, start + sent * PERIOD_S - time.monotonic()))
        rig.send(1, frame)
        sent += 1
    return sent


def test_rehearsals_count_nothing_and_warmups_stay_on_loopback(rt_features):
    with Rig(n_ports=3) as rig:
        rig.load(rt_features)
        c = rig.client
        c.call("subscribe")
        c.call("table_add", table="RtIngress.fwd_lpm",
               match=[{"kind": "lpm", "v": "0x0a000200", "plen": 24}],
               action={"action": "RtIngress.forward", "args": ["0x2"]})
        frame = udp_frame("02:00:00:00:02:02", "02:00:00:00:01:01", "10.0.1.1", "10.0.2.2",
                          ttl=2)
        rig.drain()
        sent = paced_stream(rig, frame)
        got = rig.capture()

        assert rehearsals(rig) >= ENOUGH_REHEARSALS, f"no steady stream seen in {sent} packets"
        assert got[2] == [got[2][0]] * sent and got[3] == []
        port_cell = c.call("counter_read", counter="RtIngress.port_counter", index=1)["cells"][0]
        assert port_cell["packets"] == sent
        assert c.call("register_read", register="RtIngress.scratch", index=0)["cells"] == [
            {"index": 0, "value": hex(sent)}]
        entry = c.call("table_read", table="RtIngress.fwd_lpm")["entries"][0]
        assert (entry["packets"], entry["bytes"]) == (sent, sent * len(frame))
        stats = c.call("stats")
        assert stats["pipeline"]["packets"] == sent
        warmups = stats["pipeline"]["warmups"]
        assert warmups >= 1, "a steady stream was rehearsed but the kernel never warmed"
        assert loopback_tx_packets(rig) == warmups
        assert stats["cpu"]["digests"] == sent
