"""Keep idle CPUs polling instead of halting while a run lasts (experiment `cpu_idle: poll`).

On a VM an idle vCPU halts, which exits to the hypervisor; waking it again for the next
packet, thread hand-off or timer costs ~10-30 µs on these machines: more than a forwarding
step, and it lands on every wake-up a user-space data plane, a gRPC call or a receiver makes.
The kernel's PM QoS interface lets a process ask for a CPU wake-up latency; a request of
0 µs makes the cpuidle governor pick its polling state, so a wake-up is a flag check.

The request lasts while the file stays open, and the kernel drops it when the process ends,
by a crash too: nothing is left on the host to clean up. While it is held, the idle CPUs
of the whole machine poll (they burn their time instead of sleeping).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PM_QOS_DEVICE = Path("/dev/cpu_dma_latency")
CPU_SYSFS = Path("/sys/devices/system/cpu")
POLL_STATE = "POLL"  # the cpuidle state that spins instead of halting


class CpuIdleError(Exception):
    """The PM QoS request could not be made."""


@contextmanager
def polling_idle() -> Iterator[None]:
    """Holds a 0 µs CPU wake-up latency request (idle CPUs poll) for the `with` block."""
    try:
        fd = os.open(PM_QOS_DEVICE, os.O_WRONLY)
    except OSError as exc:
        raise CpuIdleError(f"cpu_idle poll: cannot open {PM_QOS_DEVICE}: {exc.strerror}") from exc
    try:
        os.write(fd, struct.pack("i", 0))
        yield
    finally:
        os.close(fd)


def wakeup_latency_target_us() -> int | None:
    """The machine's current PM QoS wake-up latency target in µs (None: no such interface)."""
    try:
        fd = os.open(PM_QOS_DEVICE, os.O_RDONLY)
    except OSError:
        return None
    try:
        return struct.unpack("i", os.read(fd, 4))[0]
    finally:
        os.close(fd)


def idle_times_us() -> dict[str, int]:
    """Time all CPUs have spent in each cpuidle state since boot, by state name (µs)."""
    totals: dict[str, int] = {}
    for state in CPU_SYSFS.glob("cpu[0-9]*/cpuidle/state[0-9]*"):
        try:
            name = (state / "name").read_text().strip()
            spent = int((state / "time").read_text())
        except (OSError, ValueError):
            continue
        totals[name] = totals.get(name, 0) + spent
    return totals


def polled_share(before: dict[str, int], after: dict[str, int]) -> float | None:
    """Share of the idle time between two `idle_times_us` readings spent polling (None: no
    idle time, or no cpuidle states to read)."""
    spent = {name: after[name] - before.get(name, 0) for name in after}
    total = sum(spent.values())
    if total <= 0:
        return None
    return spent.get(POLL_STATE, 0) / total
