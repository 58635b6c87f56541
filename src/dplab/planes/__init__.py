"""Data planes behind one interface: ``create(kind, options)`` returns a Plane."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from dplab.planes.base import Plane, PlaneError
from dplab.substrate import Network
from dplab.topology.model import Topology

# kind -> "module:class"; imported only when asked for, so a plane's heavy or missing
# dependencies never break the others.
PLANES = {
    "bridge": "dplab.planes.bridge:BridgePlane",
    "router": "dplab.planes.router:RouterPlane",
    "ovs": "dplab.planes.ovs:OvsPlane",
    "p4": "dplab.planes.p4:P4Plane",
    "xdp": "dplab.planes.xdp:XdpPlane",
    "userspace": "dplab.planes.userspace:UserspacePlane",
    "direct": "dplab.planes.baseline:DirectPlane",
    "loopback": "dplab.planes.baseline:LoopbackPlane",
}


def create(kind: str, options: dict[str, Any] | None = None) -> Plane:
    """A new, not yet started plane of ``kind``; PlaneError for unknown kinds or options."""
    if kind not in PLANES:
        raise PlaneError(f"unknown plane {kind!r} (known: {', '.join(sorted(PLANES))})")
    module_name, class_name = PLANES[kind].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PlaneError(f"plane {kind!r} is not available: {exc}") from exc
    return getattr(module, class_name)(options or {})


@contextlib.contextmanager
def running(kind: str, options: dict[str, Any] | None, topo: Topology,
            ready_timeout: float) -> Iterator[tuple[Network, Plane]]:
    """Plane ``kind`` forwarding on a network built for ``topo``: started, ready within
    ``ready_timeout`` seconds, stopped at the end (then the network goes)."""
    plane = create(kind, options)
    with plane.network(topo) as net:
        try:
            plane.start(net)
            plane.wait_ready(ready_timeout)
            yield net, plane
        finally:
            plane.stop()


__all__ = ["PLANES", "Plane", "PlaneError", "create", "running"]
