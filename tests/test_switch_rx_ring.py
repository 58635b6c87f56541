"""Packets the kernel drops at a switch port's full receive ring show in the switch's `stats`
(drop reason `rx_ring`, switch/PROTOCOL.md): the switch is stopped (SIGSTOP) so nothing
drains its ring, more frames than the ring holds are sent into port 1, and the kernel's
PACKET_STATISTICS count, which resets on every read, is accumulated across reads."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, mac

pytestmark = pytest.mark.net

RING_FRAMES = 2048  # the switch's receive ring holds about this many (RX_FRAMES, pktio phy/port.rs)
SENT = 2 * RING_FRAMES
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


def port1(rig: Rig) -> dict:
    return next(p for p in rig.client.call("stats")["ports"] if p["port"] == 1)


def test_full_receive_ring_drops_are_counted_and_accumulated():
    frame = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + b"\x88\xb6" + bytes(46)
    with Rig(n_ports=2) as rig:
        assert port1(rig)["drop_reasons"]["rx_ring"] == 0
        os.kill(rig.proc.pid, signal.SIGSTOP)
        try:
            wait_stopped(rig.proc.pid)
            for _ in range(SENT):
                rig.send(1, frame)
        finally:
            os.kill(rig.proc.pid, signal.SIGCONT)
        first = port1(rig)
        second = port1(rig)
    reasons = first["drop_reasons"]
    # The ring held ~RING_FRAMES; most of the rest found it full (some may have been
    # dropped before it, in the kernel's backlog, which no switch count sees).
    assert reasons["rx_ring"] > 0, first
    assert first["rx_packets"] + reasons["rx_ring"] <= SENT
    assert first["drops"] == sum(reasons.values())
    # Read twice: the kernel's count was reset by the first read, the switch's was not.
    assert second["drop_reasons"]["rx_ring"] == reasons["rx_ring"]
