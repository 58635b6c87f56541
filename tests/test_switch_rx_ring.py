"""Packets the kernel drops at the switch's full receive ring (one for every port) show in
the switch's `stats` (`rx_ring.drops`, switch/PROTOCOL.md): the switch is stopped (SIGSTOP)
so nothing drains its ring, more frames than the ring holds are sent into ports 1 and 2,
and the kernel's PACKET_STATISTICS count, which resets on every read, is accumulated across
reads."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, mac

pytestmark = pytest.mark.net

RING_FRAMES = 2048  # the switch's receive ring holds about this many (RX_FRAMES, pktio phy/rx.rs)
SENT_PER_PORT = RING_FRAMES
STOP_DEADLINE_S = 5.0


@pytest.fixture(scope="module", autouse=True)
def built(tmp_path_factory):
    rig_mod.ir_folder(tmp_path_factory, "rx_ring")


def wait_stopped(pid: int) -> None:
    """Returns once the process is stopped (state T in /proc/PID/stat)."""
    deadline = time.monotonic() + STOP_DEADLINE_S
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, "the switch did not stop on SIGSTOP"
        time.sleep(0.005)


def read_by_port(rig: Rig) -> dict[int, int]:
    return {p["port"]: p["rx_packets"] for p in rig.client.call("stats")["ports"]}


def test_full_receive_ring_drops_are_counted_and_accumulated():
    frames = {port: mac("02:00:00:00:02:02") + mac(f"02:00:00:00:01:0{port}") + b"\x88\xb6"
              + bytes(46) for port in (1, 2)}
    with Rig(n_ports=3) as rig:
        start = rig.client.call("stats")
        assert start["rx_ring"]["drops"] == 0
        assert start["rx_ring"]["frames"] >= RING_FRAMES
        os.kill(rig.proc.pid, signal.SIGSTOP)
        try:
            wait_stopped(rig.proc.pid)
            for _ in range(SENT_PER_PORT):
                for port, frame in frames.items():
                    rig.send(port, frame)
        finally:
            os.kill(rig.proc.pid, signal.SIGCONT)
        first = rig.client.call("stats")
        second = rig.client.call("stats")
        read = read_by_port(rig)
        deadline = time.monotonic() + STOP_DEADLINE_S
        while not (read[1] and read[2]):  # the switch reads the ring after answering
            assert time.monotonic() < deadline, f"the ring's frames were not read: {read}"
            time.sleep(0.01)
            read = read_by_port(rig)
    ring = first["rx_ring"]
    # The ring held ~RING_FRAMES of both ports' frames together; most of the rest found it
    # full (some may have been dropped before it, in the kernel's backlog, which no switch
    # count sees).
    assert ring["drops"] > 0, first
    # Both ports' frames were in the one ring (the loop above waited for that).
    assert read[1] + read[2] + ring["drops"] <= 2 * SENT_PER_PORT
    assert all(p["drops"] == 0 for p in first["ports"])
    # Read twice: the kernel's count was reset by the first read, the switch's was not.
    assert second["rx_ring"]["drops"] == ring["drops"]
