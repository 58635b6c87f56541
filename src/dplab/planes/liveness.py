"""A run whose plane stopped being the plane it was asked for: the daemon checks between
traffic phases, and the daemons' logs kept in the results when the run fails (the run
directory that held them goes with the network)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from dplab.planes.base import Plane, PlaneError
from dplab.workloads.flows import FlowResult

# A log longer than this is kept from its end: a daemon's last words say why it stopped.
KEPT_LOG_BYTES = 4 << 20


class RunFailed(RuntimeError):
    """A run failed inside its network; the message says why and where its logs are kept.
    ``expected``: the plane failed as a plane can (a PlaneError), not a bug of ours."""

    def __init__(self, message: str, expected: bool) -> None:
        super().__init__(message)
        self.expected = expected


def check_daemons(plane: Plane, results: list[FlowResult], last: int, when: str) -> None:
    """PlaneError naming every daemon of ``plane`` that has exited, ``when`` (e.g. "during
    traffic phase 2/3"); the ``last`` results (those of that phase) are then marked failed
    in place with that reason: the plane lost a daemon at some moment of theirs. Results
    before them stay as measured."""
    dead = plane.failures()
    if not dead:
        return
    for i in range(len(results) - last, len(results)):
        results[i] = dataclasses.replace(
            results[i], ok=False, error=f"{plane.kind} lost a daemon {when} (the run's "
                                        "error says which)")
    raise PlaneError(f"{plane.kind}: {'; '.join(dead)} ({when})")


def failed_run(exc: Exception, run_dir: Path, kept: Path) -> RunFailed:
    """The failure ``exc`` of a run whose files are in ``run_dir``, as a RunFailed: every
    log there is copied to ``kept`` (same relative paths) and the message names the copies,
    which outlive the run directory (or ``kept`` itself, if it named no file there)."""
    message = f"{type(exc).__name__}: {exc}"
    try:
        copies = keep_logs(run_dir, kept)
    except OSError as err:  # the failure itself stays the run's error
        return RunFailed(f"{message} (its logs could not be kept: {err})",
                         expected=isinstance(exc, PlaneError))
    if copies:
        message = message.replace(str(run_dir), str(kept))
        if str(kept) not in message:
            message += f" (the run's logs: {kept})"
    return RunFailed(message, expected=isinstance(exc, PlaneError))


def keep_logs(run_dir: Path, kept: Path) -> list[Path]:
    """Copy every ``*.log`` under ``run_dir`` to ``kept``, a long one's last
    KEPT_LOG_BYTES only; the copies made."""
    copies = []
    for log in sorted(p for p in run_dir.rglob("*.log") if p.is_file()):
        copy = kept / log.relative_to(run_dir)
        copy.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "rb") as src, open(copy, "wb") as dst:
            src.seek(max(0, src.seek(0, 2) - KEPT_LOG_BYTES))
            shutil.copyfileobj(src, dst)
        copies.append(copy)
    return copies
