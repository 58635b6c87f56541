"""Waiting for the processes of a workload to say they are ready."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
POLL_S = 0.02


def wait_ready(items: Sequence[Item], ready: Callable[[Item], bool],
               process: Callable[[Item], subprocess.Popen], timeout_s: float,
               poll_s: float = POLL_S) -> list[Item]:
    """Poll until every item is ready or its process has ended, for at most timeout_s;
    returns the items that are not ready (in order), for the caller to report."""
    deadline = time.monotonic() + timeout_s
    waiting = list(items)
    while waiting and time.monotonic() < deadline:
        waiting = [i for i in waiting if not ready(i) and process(i).poll() is None]
        if waiting:
            time.sleep(poll_s)
    return [item for item in items if not ready(item)]
