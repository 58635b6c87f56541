"""The interface every data plane implements (see docs/architecture.md, planes)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dplab.substrate.network import Network


class PlaneError(RuntimeError):
    """A plane was misconfigured or did not become ready; the message says which and why."""


class Plane(ABC):
    """One data plane on every switch of a Network.

    Subclasses set ``kind``, ``addressing`` ("l2"/"l3": what the Network must build) and
    ``shared_switch_ns``, and list the option keys they accept in ``OPTIONS`` (key -> default).
    """

    kind: str = ""
    addressing: str = "l2"
    shared_switch_ns: bool = False
    OPTIONS: dict[str, Any] = {}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise PlaneError(f"plane {self.kind!r}: unknown option {unknown[0]!r} "
                             f"(known: {sorted(self.OPTIONS) or 'none'})")
        self.options = {**self.OPTIONS, **options}

    @abstractmethod
    def start(self, net: Network) -> None:
        """Configure the switches of ``net`` and start daemons/controller."""

    @abstractmethod
    def wait_ready(self, timeout: float) -> None:
        """Return once the plane forwards; raise PlaneError if not within ``timeout`` s."""

    @abstractmethod
    def stats(self) -> dict[str, float | None]:
        """Plane counters (e.g. packet_ins, flow_installs, setup_ms); None = not measured."""

    @abstractmethod
    def stop(self) -> None:
        """Stop daemons; idempotent (whatever runs in the namespaces dies with them anyway)."""
