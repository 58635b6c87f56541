"""Waiting for the processes of a workload to say they are ready."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from dplab.workloads.flows import FlowNetwork

Item = TypeVar("Item")
POLL_S = 0.02
LISTING_TIMEOUT_S = 5.0


def wait_ready(items: Sequence[Item], ready: Callable[[Item], bool],
               process: Callable[[Item], subprocess.Popen], timeout_s: float,
               poll_s: float = POLL_S) -> list[Item]:
    """Poll until every item is ready or its process has ended, for at most timeout_s;
    returns the items that are not ready (in order), for the caller to report."""
    deadline = time.monotonic() + timeout_s
    waiting = list(items)
    while waiting and time.monotonic() < deadline:
        waiting = [i for i in waiting if not ready(i) and process(i).poll() is None]
        if waiting:
            time.sleep(poll_s)
    return [item for item in items if not ready(item)]


def bound_ports(net: FlowNetwork, ns: str, udp: bool) -> set[int]:
    """Local ports of the listening TCP (or bound UDP) sockets in namespace ns, from `ss`."""
    listing = net.run(ns, ["ss", "-Hln", "-u" if udp else "-t"], timeout=LISTING_TIMEOUT_S,
                      check=False)
    ports = set()
    for line in listing.stdout.splitlines():
        fields = line.split()
        port = fields[3].rsplit(":", 1)[-1] if len(fields) > 3 else ""
        if port.isdigit():
            ports.add(int(port))
    return ports
