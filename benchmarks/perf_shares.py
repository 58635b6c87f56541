"""Where one process's CPU time on one core goes, from `perf record -C <core> -g` samples.

Each sample of the process is put in the first bucket whose test its call stack passes:
the sink's receive (veth runs it inside the switch's send: net_rx_action/process_backlog),
the rest of the kernel transmit path (packet_sendmsg), other kernel work (receive, poll,
system-call entry, interrupts), and user space (the leaf frame outside the kernel).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path

SINK_RECEIVE = "sink receive (net_rx_action)"
TRANSMIT = "kernel transmit (packet_sendmsg, sink receive excluded)"
OTHER_KERNEL = "other kernel (receive, poll, syscall entry, interrupts)"
USER = "user space (interpreter, rings)"
BUCKETS = (USER, TRANSMIT, SINK_RECEIVE, OTHER_KERNEL)
KERNEL_DSO = "[kernel.kallsyms]"
IDLE_PID = 0  # the core's idle task


def available() -> bool:
    return shutil.which("perf") is not None


def start(core: int, out: Path) -> subprocess.Popen:
    """Samples every task on `core` with call stacks until stop()."""
    argv = ["perf", "record", "-q", "-C", str(core), "-g", "-o", str(out)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(recorder: subprocess.Popen) -> None:
    recorder.send_signal(signal.SIGINT)  # perf writes its file on SIGINT
    _, err = recorder.communicate(timeout=60)
    if recorder.returncode not in (0, -signal.SIGINT):
        raise RuntimeError(f"perf record failed: {err.strip()}")


def samples(data: Path) -> list[tuple[int, list[tuple[str, str]]]]:
    """(pid, [(symbol, dso), leaf first]) per sample of the recording."""
    out = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "pid,ip,sym,dso"],
        capture_output=True, text=True, check=True,
    ).stdout
    parsed = []
    for block in out.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        stack = [_frame(line) for line in lines[1:]]
        parsed.append((int(lines[0].split()[-1]), stack))
    return parsed


def _frame(line: str) -> tuple[str, str]:
    """'   ffffffff81 process_backlog+0x5d ([kernel.kallsyms])' -> (process_backlog, dso)."""
    head, _, dso = line.strip().rpartition(" (")
    symbol = head.split(" ", 1)[1] if " " in head else "[unknown]"
    return symbol.split("+0x", 1)[0], dso.rstrip(")")


def bucket(stack: list[tuple[str, str]]) -> str:
    symbols = {symbol for symbol, _ in stack}
    if symbols & {"net_rx_action", "process_backlog"}:
        return SINK_RECEIVE
    if "packet_sendmsg" in symbols:
        return TRANSMIT
    if stack and stack[0][1] == KERNEL_DSO:
        return OTHER_KERNEL
    return USER


def shares(data: Path, pid: int) -> dict:
    """Share of the process's samples per bucket, and how many samples the core had busy."""
    all_samples = samples(data)
    mine = Counter(bucket(stack) for p, stack in all_samples if p == pid)
    total = sum(mine.values())
    return {
        "samples": total,
        "busy_core_samples": sum(1 for p, _ in all_samples if p != IDLE_PID),
        "shares": {b: mine[b] / total for b in BUCKETS} if total else None,
    }
