"""Real-time scheduling of the emulator processes (dplab-linkem, dplab-wmedium).

An emulator sleeps in ppoll until a frame comes or its next frame is due; under the normal
policy a wake-up waits behind whatever task (a host's sender, a switch) runs on that core,
and that wait is added to the frame's delay: milliseconds at p99 when the cores are busy.
Under SCHED_FIFO the wake-up preempts every normal task at once.

Why this cannot starve the machine: an emulator only runs while it has frames to move (its
CPU is the work of the frames offered to it, 1 to 2 µs each, plus a 50 µs poll before each
due time) and sleeps otherwise; the priority is modest (below the kernel's threaded
interrupt handlers at 50 and its per-CPU stop and migration threads at 99, so those still
preempt it); and the kernel's real-time throttling
(kernel.sched_rt_runtime_us, 95 % of each second by default, left as it is) keeps the
rest of every second for normal tasks even if an emulator were flooded.
"""

from __future__ import annotations

import os

PRIORITY = 10  # of 1..99 (see above)


def promote(pid: int) -> bool:
    """Run ``pid`` under SCHED_FIFO at PRIORITY; False (and the normal policy kept) where the
    kernel or the container does not allow it. Called once the emulator said ``ready``: it
    sets its own (normal-policy) scheduler slice at start, which would undo an earlier
    promotion."""
    try:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(PRIORITY))
    except OSError:
        return False
    return True
