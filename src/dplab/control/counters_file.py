"""The controller's counters file: written by both southbound apps, read by the planes."""

from __future__ import annotations

import json
import os
import threading

from dplab.control.forwarding import Forwarding


def write_counters(stats_file: str | None, logic: Forwarding, lock: threading.Lock) -> None:
    """``logic``'s counters and its packet-ins per host pair (``packet_ins_by_pair``),
    taken under ``lock``, to ``stats_file`` if there is one, replaced atomically so readers
    never see half a file."""
    if stats_file is None:
        return
    with lock:
        counters: dict = {**logic.counters(), "packet_ins_by_pair": logic.pair_packet_ins()}
    partial = f"{stats_file}.tmp"
    with open(partial, "w") as out:
        json.dump(counters, out)
    os.replace(partial, stats_file)
