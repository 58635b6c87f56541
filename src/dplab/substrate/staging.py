"""Staging folders named after the process that made them, so a dead owner's can be found.

A run stages files outside its run directory in two places: its flows' temp folder (in the
system temp folder) and video content being encoded (in the video cache, renamed into place
when complete). SIGKILL or a crash leaves them behind. Their names carry the owner's pid and
start time (``owner_tag``), and ``reclaim`` removes those whose owner is gone, as
``registry.reclaim_stale`` does for runs. A start time compared along with the pid means a
reused pid is not taken for the owner.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from dplab.substrate.registry import is_alive, process_start_time


def owner_tag() -> str:
    """``<pid>-<start ticks>`` of this process, for the names of its staging folders."""
    return f"{os.getpid()}-{process_start_time(os.getpid())}"


def reclaim(folder: Path, marker: str) -> list[Path]:
    """Remove the entries of ``folder`` named ``...<marker><pid>-<start>...`` whose owner is
    dead (a bare ``<pid>``, from before the start time was added: whose pid is unused);
    return what was removed."""
    owner = re.compile(re.escape(marker) + r"(\d+)(?:-(\d+))?(?=-|$)")
    try:
        entries = sorted(folder.iterdir())
    except OSError:  # no such folder yet: nothing staged there
        return []
    removed = []
    for entry in entries:
        found = owner.search(entry.name)
        if found is None or entry.is_symlink() or not entry.is_dir():
            continue
        pid, start = int(found[1]), found[2]
        alive = is_alive(pid, int(start)) if start else process_start_time(pid) is not None
        if not alive:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
