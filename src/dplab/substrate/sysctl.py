"""Set sysctls inside network namespaces without spawning a process per namespace.

A helper thread enters each namespace with setns(2) (which moves only the calling thread)
and writes /proc/sys there: /proc/sys/net shows the namespace of the thread that opens it.
The thread ends afterwards, so no other thread ever runs in a foreign namespace.
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
        for key, value in values.items():
            try:
                with open(f"/proc/sys/{key.replace('.', '/')}", "w") as f:
                    f.write(value)
            except OSError as exc:
                errors.append(f"sysctl {key}={value} in {netns}: {exc}")


def enter_netns(netns: str) -> None:
    """Move the calling thread (only it) into namespace ``netns``."""
    fd = os.open(NETNS_DIR / netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    finally:
        os.close(fd)
