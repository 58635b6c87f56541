"""Run prefixes and the record of everything a run created, so a crashed run can be reclaimed.

A run owns the prefix ``dl`` + 4 hex digits. Its record ``/run/dplab/<prefix>.json`` names
the owner (pid and start time, so a reused pid is not mistaken for the owner), the
namespaces, the processes it spawned and the directories to remove. The record is written
*before* any namespace exists, so every namespace of a live run is covered by a record whose
owner is alive. ``reclaim_stale`` removes what runs with a dead owner left behind, plus
namespaces named like ours (``dlXXXX-...``) that no live record covers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_DIR = Path("/run/dplab")
NETNS_DIR = Path("/run/netns")
PREFIX_RE = re.compile(r"^dl[0-9a-f]{4}$")
OUR_NETNS_RE = re.compile(r"^(dl[0-9a-f]{4})-.+$")
KILL_GRACE_S = 0.5


class SubstrateError(RuntimeError):
    """The substrate could not build or tear down what was asked; the message says what."""


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def is_alive(pid: int, start_time: int | None) -> bool:
    return start_time is not None and process_start_time(pid) == start_time


@dataclass
class RunRecord:
    prefix: str
    owner_pid: int
    owner_start: int | None
    namespaces: list[str] = field(default_factory=list)
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return RECORD_DIR / f"{self.prefix}.json"

    def save(self) -> None:
        # Saved on every process started, so that a crash leaves none unrecorded: its
        # fields straight to JSON, no asdict() deep copy (~1.3 ms a save at a thousand
        # hosts' namespaces, most of a p4 switch's start in the plane's process).
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(vars(self)))
        tmp.replace(self.path)

    def owner_alive(self) -> bool:
        return is_alive(self.owner_pid, self.owner_start)

    def add_namespaces(self, names: list[str]) -> None:
        known = set(self.namespaces)  # a list scan per name is quadratic at 7,000 namespaces
        self.namespaces.extend(n for n in dict.fromkeys(names) if n not in known)
        self.save()

    def add_process(self, pid: int) -> None:
        self.processes.append((pid, process_start_time(pid)))
        self.save()

    def add_path(self, path: Path) -> None:
        if self.prefix not in path.name:
            raise SubstrateError(f"will not record {path} for cleanup: name lacks {self.prefix}")
        self.paths.append(str(path))
        self.save()

    @classmethod
    def load(cls, path: Path) -> RunRecord | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        data["processes"] = [tuple(p) for p in data.get("processes", [])]
        return cls(**data)


def new_run() -> RunRecord:
    """Allocate a fresh prefix and write its record (owned by this process) atomically."""
    RECORD_DIR.mkdir(parents=True, exist_ok=True)
    taken = {m.group(1) for m in map(OUR_NETNS_RE.match, list_netns()) if m}
    for _ in range(1000):
        prefix = f"dl{secrets.token_hex(2)}"
        if prefix in taken:
            continue
        try:  # O_EXCL: two runs starting at once never get the same prefix
            fd = os.open(RECORD_DIR / f"{prefix}.json", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.close(fd)
        record = RunRecord(prefix, os.getpid(), process_start_time(os.getpid()))
        record.save()
        return record
    raise SubstrateError("could not find a free run prefix (dlXXXX) after 1000 tries")


def list_netns() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def pids_in_netns(names: list[str]) -> list[int]:
    """Processes whose network namespace is one of ``names`` (one pass over /proc)."""
    inodes = set()
    for name in names:
        with contextlib.suppress(OSError):
            inodes.add(f"net:[{os.stat(NETNS_DIR / name).st_ino}]")
    if not inodes:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/net") in inodes:
                    found.append(int(entry))
    return found


def kill_processes(pids: list[int], grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM, wait up to ``grace_s`` for them to go, then SIGKILL the rest."""
    starts = {pid: process_start_time(pid) for pid in pids}
    alive = [p for p, s in starts.items() if s is not None and p != os.getpid()]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if is_running(p, starts[p])]
        if alive:
            time.sleep(0.01)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def is_running(pid: int, start: int | None) -> bool:
    """Alive and not a zombie (a zombie has already left its namespaces)."""
    if not is_alive(pid, start):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def delete_netns(names: list[str]) -> None:
    """Delete namespaces (with their interfaces) in one ``ip -batch``; missing ones are fine."""
    existing = set(list_netns())
    todo = [n for n in names if n in existing and OUR_NETNS_RE.match(n)]
    if not todo:
        return
    script = "".join(f"netns del {n}\n" for n in todo)
    subprocess.run(["ip", "-force", "-batch", "-"], input=script, text=True,
                   capture_output=True, check=False)
    left = set(todo) & set(list_netns())
    if left:
        raise SubstrateError(f"could not delete namespaces {sorted(left)}")


def teardown(record: RunRecord, remove_record: bool = True) -> None:
    """Kill everything the run spawned, delete its namespaces and paths, drop its record."""
    with signals_deferred():
        _teardown(record, remove_record)


def _teardown(record: RunRecord, remove_record: bool) -> None:
    namespaces = sorted(set(record.namespaces) | set(netns_with_prefix(record.prefix)))
    own = [pid for pid, start in record.processes if is_alive(pid, start)]
    kill_processes(sorted(set(own) | set(pids_in_netns(namespaces))))
    delete_netns(namespaces)
    for path in record.paths:
        if record.prefix in Path(path).name:
            shutil.rmtree(path, ignore_errors=True)
    if remove_record:
        record.path.unlink(missing_ok=True)


def netns_with_prefix(prefix: str) -> list[str]:
    return [n for n in list_netns() if n.startswith(f"{prefix}-")]


def reclaim_stale() -> list[str]:
    """Tear down runs whose owner is dead and orphan ``dlXXXX-`` namespaces; return the prefixes."""
    RECORD_DIR.mkdir(parents=True, exist_ok=True)
    live: set[str] = set()
    reclaimed = []
    for path in sorted(RECORD_DIR.glob("dl*.json")):
        record = RunRecord.load(path)
        if record is None:
            continue  # being written right now by new_run(), or unreadable: not ours to judge
        if record.owner_alive():
            live.add(record.prefix)
        else:
            teardown(record)
            reclaimed.append(record.prefix)
    orphans = sorted({m.group(1) for m in map(OUR_NETNS_RE.match, list_netns()) if m} - live)
    for prefix in orphans:
        if (RECORD_DIR / f"{prefix}.json").exists():
            continue  # a record appeared meanwhile: its run is starting
        teardown(RunRecord(prefix, 0, None), remove_record=False)
        reclaimed.append(prefix)
    return reclaimed


# Signals that ask a runner to stop; each is held back while a teardown runs.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def cleanup_on_signals() -> dict[int, Any]:
    """Turn SIGTERM and SIGHUP into SystemExit and keep SIGINT as KeyboardInterrupt; the
    handlers they replace (for a caller in a longer-lived process to put back).

    Call once in the main thread of a runner: the exception unwinds every ``with Network``
    block, whose ``__exit__`` tears the run down. Only the first SIGTERM/SIGHUP raises: a
    later one would land in that unwinding (a storm of them, or a second ``kill``) and cut a
    teardown short before ``signals_deferred`` is entered. (SIGKILL cannot be caught: the
    next ``reclaim_stale()`` removes what such a run left.)
    """
    exiting: list[int] = []

    def exit_on(signum: int, _frame: object) -> None:
        if exiting:
            return
        exiting.append(signum)
        raise SystemExit(128 + signum)

    return {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
            signal.SIGTERM: signal.signal(signal.SIGTERM, exit_on),
            signal.SIGHUP: signal.signal(signal.SIGHUP, exit_on)}


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP (main thread only: Python runs handlers there)
    so a teardown is never cut short; afterwards the first one held back is delivered again,
    to whatever handler is then in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {}
    try:  # a signal landing between two swaps still finds the swapped ones put back
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, lambda number, _: pending.append(number))
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(signum, handler)
        if pending:
            signal.raise_signal(pending[0])


def teardown_own() -> list[str]:
    """Tear down every run this process owns (what an interrupted unwinding may have
    skipped) and say what is still there afterwards: empty means nothing is left."""
    me = (os.getpid(), process_start_time(os.getpid()))
    left = []
    with signals_deferred():
        for path in sorted(RECORD_DIR.glob("dl*.json")):
            record = RunRecord.load(path)
            if record is None or (record.owner_pid, record.owner_start) != me:
                continue
            with contextlib.suppress(SubstrateError, OSError):
                teardown(record)
            if record.path.exists():
                left.append(f"run record {record.path}")
            left.extend(f"namespace {n}" for n in netns_with_prefix(record.prefix))
    return left
