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
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

PM_QOS_DEVICE = Path("/dev/cpu_dma_latency")
CPU_SYSFS = Path("/sys/devices/system/cpu")
POLL_STATE = "POLL"  # the cpuidle state that spins instead of halting
# Experiment field cpu_idle (spec.model.CpuIdle): "machine" leaves idle behaviour as it is.
SETTINGS = ("machine", "poll")


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


def idle_behaviour(setting: str) -> AbstractContextManager[None]:
    """What to hold for an experiment's `cpu_idle` setting: the polling request, or nothing."""
    if setting not in SETTINGS:
        raise ValueError(f"cpu_idle: expected one of {', '.join(SETTINGS)}, got {setting!r}")
    return polling_idle() if setting == "poll" else nullcontext()


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


@dataclass(frozen=True)
class IdleRecord:
    """Under which idle behaviour a span (one run) was measured."""

    setting: str  # the experiment's cpu_idle
    wakeup_target_us: int | None  # the loosest PM QoS target read during the span
    polled_share: float | None  # share of the span's idle time spent polling


class IdleWatch:
    """Watches one span: the PM QoS target and idle-state times at its start and at
    `finish`. Of the two targets the looser one is kept: if either was not 0, the span was
    not wholly under polling."""

    def __init__(self, setting: str) -> None:
        self.setting = setting
        self._target = wakeup_latency_target_us()
        self._before = idle_times_us()

    def finish(self) -> IdleRecord:
        targets = [t for t in (self._target, wakeup_latency_target_us()) if t is not None]
        return IdleRecord(self.setting, max(targets, default=None),
                          polled_share(self._before, idle_times_us()))
