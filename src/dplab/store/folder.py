"""Which folders are the lab's own results folders, so ``--fresh`` can never delete anything else.

A store marks a folder as the lab's (the file ``.dplab-results``) when it makes it, finds it
empty, or finds a store written before the marker existed: ``experiment.json`` and
``runs.parquet`` with nothing beside them but what the lab writes there. A folder that held
anything else when the store opened it stays unmarked, and ``discard`` refuses it, as it
refuses ``/``, the home folder and its parents, and the working folder and its parents.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from dplab.store.rows import StoreError

MARKER = ".dplab-results"
MARKER_TEXT = "dplab results folder: `dplab run --fresh` deletes this folder whole.\n"
# What the lab writes into a results folder: the store's files (and their temp files while
# being written), the report and its folders, and per-run pcaps and video frames.
LAB_FOLDERS = {"plots", "csv", "pcap", "frames"}
LAB_FILES = {"experiment.json", "report.html"}
LAB_SUFFIXES = (".parquet", ".tmp")


def claim(folder: Path) -> None:
    """Make ``folder`` if needed and mark it as ours when nothing foreign is in it."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / MARKER).exists() and (_is_empty(folder) or _is_unmarked_store(folder)):
        (folder / MARKER).write_text(MARKER_TEXT)


def discard(folder: Path) -> None:
    """Delete the results folder ``folder`` whole; StoreError, with nothing removed, unless it
    is ours (see module doc). A folder that does not exist is fine (nothing to discard)."""
    if folder.is_symlink():
        raise StoreError(f"{folder}: is a symbolic link; --fresh removes only a results "
                         "folder itself; remove it yourself")
    if not folder.exists():
        return
    target = folder.resolve()
    protected = {"the root folder": Path("/"), "the home folder": Path.home().resolve(),
                 "the working folder": Path.cwd().resolve()}
    for what, place in protected.items():
        if place.is_relative_to(target):
            relation = "is" if place == target else "holds"
            raise StoreError(f"{folder}: --fresh will not delete {target}: it {relation} "
                             f"{what} ({place}); give a results folder of its own")
    if not target.is_dir():
        raise StoreError(f"{folder}: is not a folder; --fresh removes only a results folder")
    if not ((target / MARKER).is_file() or _is_unmarked_store(target)):
        raise StoreError(f"{folder}: --fresh removes only a folder the lab made for results "
                         f"(marked by {MARKER}, or holding only experiment.json, "
                         "*.parquet and the report); this one is not: remove it yourself "
                         "or choose another results folder")
    shutil.rmtree(target)


def _is_empty(folder: Path) -> bool:
    return next(folder.iterdir(), None) is None


def _is_unmarked_store(folder: Path) -> bool:
    """A store written before the marker: the store's two files and nothing but ours."""
    names = {entry.name: entry for entry in folder.iterdir()}
    if not {"experiment.json", "runs.parquet"} <= set(names):
        return False
    return all(_is_lab_output(entry) for entry in names.values())


def _is_lab_output(entry: Path) -> bool:
    if entry.is_symlink():
        return False
    if entry.is_dir():
        return entry.name in LAB_FOLDERS
    return entry.name in LAB_FILES or entry.name.endswith(LAB_SUFFIXES)
