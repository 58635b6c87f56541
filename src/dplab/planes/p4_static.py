"""A static p4 plane's install: each switch gets the program and its entries over
P4Runtime as soon as the P4Runtime server process serves it, while later switches still
start.

The server process says on stdout when it serves each device (``serving <device id>``,
then ``ready`` once it serves all: ``python -m dplab.p4runtime``). A thread of this module
first prepares the pipeline config and every switch's entries (from what needs no switch:
the topology and the compiled program, whose compile also runs meanwhile), then reads
those lines and hands each switch served to a pool of installers
(``p4runtime.installer``). Installing after every switch had started left one core idle
through the start and the other through the install; at a thousand hosts each took
seconds.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.entries import Entry
from dplab.p4runtime.installer import InstallError, install
from dplab.planes.base import PlaneError

INSTALLERS = 8  # switches installed at once: each mostly waits for the one server process
# How often the reading thread looks whether the plane gave up on the start meanwhile.
POLL_S = 0.1
SERVING, READY = b"serving", b"ready"


@dataclass(frozen=True)
class Prepared:
    """What every switch gets: the pipeline config, and each switch's entries in order."""

    config: pb.ForwardingPipelineConfig
    entries: dict[str, list[Entry]]


@dataclass(frozen=True)
class Target:
    switch: str
    device_id: int
    address: str  # its P4Runtime server's gRPC address


class ServerLines:
    """The P4Runtime server process's stdout, a line at a time, each waited for within a
    timeout (its lines come whole: it flushes each)."""

    def __init__(self, server: subprocess.Popen) -> None:
        assert server.stdout is not None
        self._fd = server.stdout.fileno()  # read unbuffered: select() sees what is left
        self._buffer = b""

    def next(self, timeout_s: float) -> bytes | None:
        """The next line without its newline; b"" once the process closed its stdout;
        None when no whole line came within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                return None
            chunk = os.read(self._fd, 4096)
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.strip()


class Installing:
    """Installs every switch of ``targets`` in a thread of its own from start() on.
    Errors name the entries by ``source`` (what the user knows them as, e.g. "option
    'entries'") and ``where`` (their file)."""

    def __init__(self, lines: ServerLines, targets: list[Target],
                 prepare: Callable[[], Prepared], source: str, where: str) -> None:
        self._lines, self._prepare = lines, prepare
        self._targets = {target.device_id: target for target in targets}
        self._source, self._where = source, where
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._error: BaseException | None = None
        self._written = 0
        self._lock = threading.Lock()
        self._progress = time.monotonic()  # when it last got further (``quiet_s``)
        self._pool = ThreadPoolExecutor(max_workers=INSTALLERS, thread_name_prefix="install")
        self._thread = threading.Thread(target=self._run, name="installing", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finished(self) -> bool:
        """Every switch installed, or the install failed (``result`` says which)."""
        return self._finished.is_set()

    def failure(self) -> PlaneError | None:
        """The install's failure so far (None: none yet); the plane stops starting
        switches for it."""
        with self._lock:
            error = self._error
        if error is None or isinstance(error, PlaneError):
            return error
        return PlaneError(f"p4: installing the switches: {error!r}")

    def quiet_s(self) -> float:
        """Seconds since the install last got further: prepared, a switch served or a
        switch installed."""
        return time.monotonic() - self._progress

    def wait(self, timeout_s: float) -> None:
        self._finished.wait(timeout_s)

    def result(self) -> int:
        """The entries written (once ``finished``); the install's PlaneError if it failed."""
        failure = self.failure()
        if failure is not None:
            raise failure
        return self._written

    def stop(self) -> None:
        """Ends the reading and the installs not begun (the plane's start failed, or all
        are done). Installs in flight end with their calls: the plane's stop() ends the
        server they talk to."""
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        try:
            prepared = self._prepare()
            self._progress = time.monotonic()
            jobs = []
            for target in self._served():
                jobs.append(self._pool.submit(self._install, prepared, target))
                jobs[-1].add_done_callback(self._note)  # a failure stops what follows
            for job in jobs:
                if not job.cancelled() and job.exception() is None:
                    self._written += job.result()
        except BaseException as exc:  # handed to the plane's thread by failure()
            self._fail(exc)
        finally:
            self._finished.set()

    def _served(self):
        """Each target as soon as the server says it serves it, until it says ``ready``
        (or the plane gives up)."""
        while not self._stop.is_set():
            line = self._lines.next(POLL_S)
            if line is None:
                continue
            if line == READY:
                return
            word, _, device = line.partition(b" ")
            if word != SERVING or not device.isdigit() or int(device) not in self._targets:
                raise PlaneError(f"p4: the P4Runtime server process said {line!r}, not "
                                 f"'{SERVING.decode()} <device id>' or '{READY.decode()}'"
                                 if line else "p4: the P4Runtime server process exited")
            self._progress = time.monotonic()
            yield self._targets[int(device)]

    def _install(self, prepared: Prepared, target: Target) -> int:
        if self._stop.is_set():
            return 0
        entries = prepared.entries[target.switch]
        try:
            install(target.address, target.device_id, prepared.config, entries, self._where)
        except InstallError as exc:
            raise PlaneError(f"p4: {self._source}: {exc}") from exc
        return len(entries)

    def _note(self, job: Future) -> None:
        self._progress = time.monotonic()
        if not job.cancelled() and job.exception() is not None:
            self._fail(job.exception())

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
        self._stop.set()
