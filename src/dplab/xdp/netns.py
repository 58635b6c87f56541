"""Work inside one network namespace from the calling thread: XDP links and devmap entries
name interfaces by ifindex, which the kernel resolves in the caller's namespace."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from pyroute2 import IPRoute
from pyroute2.netns import setns


@dataclass(frozen=True)
class Interface:
    name: str
    ifindex: int
    mac: bytes  # 6 bytes


@contextlib.contextmanager
def inside(ns: str) -> Iterator[None]:
    """The calling thread in namespace ``ns`` for the block (setns(2) changes only the calling
    thread's namespace, so other threads are unaffected), then back where it was."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns(ns, flags=0)  # flags=0: never create a missing namespace
        try:
            yield
        finally:
            setns(home)
    finally:
        os.close(home)


def interfaces(ns: str) -> dict[str, Interface]:
    """Every interface of namespace ``ns`` by name, read over netlink."""
    with inside(ns), IPRoute() as ipr:
        links = ipr.get_links()
    found = {}
    for link in links:
        name, mac = link.get_attr("IFLA_IFNAME"), link.get_attr("IFLA_ADDRESS") or "0:0:0:0:0:0"
        found[name] = Interface(name, link["index"], bytes.fromhex(mac.replace(":", "")))
    return found
