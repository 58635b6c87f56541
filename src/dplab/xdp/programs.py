"""The compiled XDP programs (``xdp/build/*.o``, made by scripts/setup.sh) loaded per switch:
one object per switch, its maps named after the run and the switch, its program attached to
interfaces of one namespace, its counters read back."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

from dplab.xdp.libbpf import BpfMap, BpfObject, XdpLink
from dplab.xdp.netns import Interface, inside

BUILD_DIR = Path(__file__).resolve().parents[3] / "xdp" / "build"
# The slots of every program's `counters` map, in xdp/counters.h's enum counter order.
COUNTERS = ("rx", "fwd", "flood", "pass", "drop", "learn", "controller")


class ProgramMissing(FileNotFoundError):
    """An XDP object file is not built."""


def object_path(name: str) -> Path:
    path = BUILD_DIR / f"{name}.o"
    if not path.is_file():
        raise ProgramMissing(f"{path} is not built: scripts/setup.sh compiles xdp/{name}.bpf.c "
                             "(needs clang and libbpf-dev)")
    return path


class XdpProgram:
    """Program ``program`` of object ``xdp/build/<obj>.o``, loaded once, attachable to many
    interfaces; ``close()`` detaches it everywhere and frees its maps."""

    def __init__(self, obj: str, program: str, map_prefix: str = "") -> None:
        self.obj = BpfObject(object_path(obj), map_prefix=map_prefix)
        self._fd = self.obj.program_fd(program)
        self._links: list[XdpLink] = []

    def map(self, name: str) -> BpfMap:
        return self.obj.map(name)

    def set_ports(self, ns: str, ports: Iterable[Interface]) -> None:
        """The devmap `ports` holds these interfaces (resolved in ``ns``)."""
        devmap = self.obj.map("ports")
        with inside(ns):
            for port in ports:
                index = struct.pack("<I", port.ifindex)
                devmap.update(index, index)

    def attach(self, ns: str, interfaces: Iterable[Interface]) -> None:
        with inside(ns):
            for interface in interfaces:
                self._links.append(XdpLink(self._fd, interface.ifindex,
                                           f"{interface.name} in {ns}"))

    def counters(self) -> dict[str, int]:
        """Each counter summed over the CPUs."""
        table = self.obj.map("counters")
        return {name: sum(struct.unpack("<Q", value)[0]
                          for value in table.lookup_per_cpu(struct.pack("<I", slot)))
                for slot, name in enumerate(COUNTERS)}

    def close(self) -> None:
        """Idempotent."""
        for link in self._links:
            link.detach()
        self._links = []
        self.obj.close()
