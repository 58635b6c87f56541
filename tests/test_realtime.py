"""substrate.realtime: an emulator's process raised to SCHED_FIFO, and a refusal reported."""

from __future__ import annotations

import os
import subprocess

from dplab.substrate import realtime


def test_a_process_is_raised_to_fifo_at_the_modest_priority():
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert realtime.promote(proc.pid)
        assert os.sched_getscheduler(proc.pid) == os.SCHED_FIFO
        assert os.sched_getparam(proc.pid).sched_priority == realtime.PRIORITY
    finally:
        proc.kill()
        proc.wait()


def test_a_refusal_is_reported_not_raised():
    proc = subprocess.Popen(["true"])
    proc.wait()  # reaped: the kernel has no such process any more
    assert realtime.promote(proc.pid) is False
