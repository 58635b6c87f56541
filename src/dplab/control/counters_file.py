"""The controller's counters file: written by both southbound apps, read by the planes.

Beside it, ``<stats_file>.series`` gets one JSON line a SERIES_INTERVAL_S: the counters
with the controller's monotonic clock (``monotonic``, the planes' clock too: one per
machine) and its process's CPU seconds so far (``cpu_s``, user + system, every thread), so
a plane can tell packet-ins, installs and CPU per interval (ControlledPlane.series).
"""

from __future__ import annotations

import json
import os
import threading
import time

from dplab.control.forwarding import Forwarding

SERIES_SUFFIX = ".series"
SERIES_INTERVAL_S = 1.0
_series_written: dict[str, float] = {}  # stats file -> monotonic time of its last line


def write_counters(stats_file: str | None, logic: Forwarding, lock: threading.Lock) -> None:
    """``logic``'s counters and its packet-ins per host pair (``packet_ins_by_pair``),
    taken under ``lock``, to ``stats_file`` if there is one, replaced atomically so readers
    never see half a file; the counters (not the pairs) as a line of its series when
    SERIES_INTERVAL_S passed since the last."""
    if stats_file is None:
        return
    with lock:
        totals = logic.counters()
        counters: dict = {**totals, "packet_ins_by_pair": logic.pair_packet_ins()}
    now = time.monotonic()
    if now - _series_written.get(stats_file, -SERIES_INTERVAL_S) >= SERIES_INTERVAL_S:
        _series_written[stats_file] = now
        line = {**totals, "monotonic": now, "cpu_s": time.process_time()}
        with open(f"{stats_file}{SERIES_SUFFIX}", "a") as out:
            out.write(json.dumps(line) + "\n")
    partial = f"{stats_file}.tmp"
    with open(partial, "w") as out:
        json.dump(counters, out)
    os.replace(partial, stats_file)
