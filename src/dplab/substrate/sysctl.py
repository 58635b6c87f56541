"""Set sysctls inside network namespaces without spawning a process per namespace.

A helper thread enters each namespace with setns(2) (which moves only the calling thread)
and writes /proc/sys there: /proc/sys/net shows the namespace of the thread that opens it.
The thread ends afterwards, so no other thread ever runs in a foreign namespace.

Each namespace has its own sysctl directories below /proc/sys, but the top one's dentries
(``net`` in the one /proc/sys) hang in one dcache hash chain, which every lookup from any
namespace walks: resolving ``/proc/sys/net`` costs time in proportion to the namespaces
that looked it up before. So it is resolved once per namespace, and each key opened
relative to it (below it the parents are per namespace: short chains).
"""

from __future__ import annotations

import ctypes
import os
import threading

from dplab.substrate.registry import NETNS_DIR, SubstrateError

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def set_sysctls(settings: dict[str, dict[str, str]]) -> None:
    """``{netns: {"net.ipv4.ip_forward": "1", ...}}``; raises SubstrateError naming the failure."""
    errors: list[str] = []
    worker = threading.Thread(target=_write_all, args=(settings, errors), daemon=True)
    worker.start()
    worker.join()
    if errors:
        raise SubstrateError("; ".join(errors))


def _write_all(settings: dict[str, dict[str, str]], errors: list[str]) -> None:
    for netns, values in settings.items():
        try:
            enter_netns(netns)
        except OSError as exc:
            errors.append(f"cannot enter namespace {netns}: {exc}")
            continue
        tops: dict[str, int] = {}  # /proc/sys/<top> -> its directory fd in this namespace
        try:
            for key, value in values.items():
                try:
                    _write(tops, key, value)
                except OSError as exc:
                    errors.append(f"sysctl {key}={value} in {netns}: {exc}")
        finally:
            for fd in tops.values():
                os.close(fd)


def _write(tops: dict[str, int], key: str, value: str) -> None:
    top, _, rest = key.replace(".", "/").partition("/")
    if top not in tops:
        tops[top] = os.open(f"/proc/sys/{top}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fd = os.open(rest, os.O_WRONLY | os.O_CLOEXEC, dir_fd=tops[top])
    with open(fd, "w") as f:
        f.write(value)


def enter_netns(netns: str) -> None:
    """Move the calling thread (only it) into namespace ``netns``."""
    fd = os.open(NETNS_DIR / netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    finally:
        os.close(fd)
