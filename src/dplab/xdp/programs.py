"""The compiled XDP programs (``xdp/build/*.o``, made by scripts/setup.sh) loaded per switch:
one object per switch, its maps named after the run and the switch, its program attached to
interfaces of one namespace, its counters read back."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path

from dplab.xdp.libbpf import BpfMap, BpfObject, LibbpfError, TcFilter, TcxLink, XdpLink
from dplab.xdp.netns import Interface, inside

BUILD_DIR = Path(__file__).resolve().parents[3] / "xdp" / "build"
XDP_SECTIONS = ("xdp", "xdp.frags")
TC_SECTIONS = ("tc", "classifier")
# xdp/qdisc.h: the key of `shaped` saying a flood port is shaped; slots of `flood_ports`.
FLOOD_SHAPED = 0
MAX_FLOOD = 256  # = MAX_PORTS of xdp/ports.h
# The slots of every program's `counters` map, in xdp/counters.h's enum counter order.
COUNTERS = ("rx", "fwd", "flood", "pass", "drop", "learn", "controller", "tx", "qdisc")


class ProgramMissing(FileNotFoundError):
    """An XDP object file is not built."""


def object_path(name: str) -> Path:
    path = BUILD_DIR / f"{name}.o"
    if not path.is_file():
        raise ProgramMissing(f"{path} is not built: scripts/setup.sh compiles xdp/{name}.bpf.c "
                             "(needs clang and libbpf-dev)")
    return path


class XdpProgram:
    """Program ``program`` of object ``obj`` (``xdp/build/<obj>.o``, or an object file's path),
    loaded once, attachable to many interfaces; ``close()`` detaches it everywhere and frees
    its maps."""

    def __init__(self, obj: str | Path, program: str | None, map_prefix: str = "",
                 tc_program: str | None = None) -> None:
        """``program`` None: the object's one XDP program, and its one tc program if it has
        one (attached beside it as a cls_bpf filter on tc ingress: the users' XDP + tc
        hybrids). ``tc_program``: a tc program of the object to attach beside a named XDP
        program, on tcx ingress through a BPF link (the lab's own programs, xdp/qdisc.h)."""
        path = obj if isinstance(obj, Path) else object_path(obj)
        self.obj = BpfObject(path, map_prefix=map_prefix)
        try:
            self._fd = self.obj.program_fd(program if program is not None
                                           else self._only_program(XDP_SECTIONS, "xdp"))
            self._tcx_fd = self.obj.program_fd(tc_program) if tc_program is not None else None
            self._tc_fd = self._hybrid_tc_fd() if program is None else None
        except BaseException:
            self.obj.close()
            raise
        self._links: list[XdpLink | TcxLink] = []
        self._tc_links: list[tuple[str, TcFilter]] = []

    def map(self, name: str) -> BpfMap:
        return self.obj.map(name)

    def set_ports(self, ns: str, ports: Iterable[Interface]) -> None:
        """The devmap `ports` holds these interfaces (resolved in ``ns``)."""
        devmap = self.obj.map("ports")
        with inside(ns):
            for port in ports:
                index = struct.pack("<I", port.ifindex)
                devmap.update(index, index)

    def set_hairpin_ports(self, ports: Iterable[Interface]) -> None:
        """xdp/qdisc.h's `hairpin`: ports whose frames may go back out of themselves (an
        access point's wlan port)."""
        table, one = self.obj.map("hairpin"), struct.pack("<I", 1)
        for port in ports:
            table.update(struct.pack("<I", port.ifindex), one)

    def set_qdisc_ports(self, shaped: Iterable[Interface], flood: Sequence[Interface]) -> None:
        """xdp/qdisc.h's maps: frames to the ``shaped`` ports leave through their qdisc, and
        so do all floods when one of the ``flood`` ports is shaped."""
        table, flood_table = self.obj.map("shaped"), self.obj.map("flood_ports")
        one = struct.pack("<I", 1)
        shaped_indexes = {port.ifindex for port in shaped}
        for ifindex in shaped_indexes:
            table.update(struct.pack("<I", ifindex), one)
        if shaped_indexes & {port.ifindex for port in flood}:
            table.update(struct.pack("<I", FLOOD_SHAPED), one)
        if len(flood) > MAX_FLOOD:
            raise LibbpfError(f"{self.obj.path}: {len(flood)} flood ports, "
                              f"flood_ports holds {MAX_FLOOD}")
        for slot, port in enumerate(flood):
            flood_table.update(struct.pack("<I", slot), struct.pack("<I", port.ifindex))

    def attach(self, ns: str, interfaces: Iterable[Interface]) -> None:
        with inside(ns):
            for interface in interfaces:
                label = f"{interface.name} in {ns}"
                self._links.append(XdpLink(self._fd, interface.ifindex, label))
                if self._tcx_fd is not None:
                    self._links.append(TcxLink(self._tcx_fd, interface.ifindex, label))
                if self._tc_fd is not None:
                    self._tc_links.append((ns, TcFilter(self._tc_fd, interface.ifindex,
                                                         label)))

    def _hybrid_tc_fd(self) -> int | None:
        if not self._sections(TC_SECTIONS):
            return None
        return self.obj.program_fd(self._only_program(TC_SECTIONS, "tc"))

    def _sections(self, kinds: tuple[str, ...]) -> list[str]:
        return [name for name, section in self.obj.programs().items()
                if section.split("/")[0] in kinds]

    def _only_program(self, kinds: tuple[str, ...], what: str) -> str:
        found = self._sections(kinds)
        if len(found) != 1:
            raise LibbpfError(f"{self.obj.path}: needs exactly one program in a "
                              f"SEC(\"{what}\") section, has {found or 'none'}")
        return found[0]

    def has_map(self, name: str) -> bool:
        return name in self.obj.map_names()

    def counters(self) -> dict[str, int]:
        """Each counter summed over the CPUs ({} for a program without xdp/counters.h's
        `counters` map)."""
        if not self.has_map("counters"):
            return {}
        table = self.obj.map("counters")
        return {name: sum(struct.unpack("<Q", value)[0]
                          for value in table.lookup_per_cpu(struct.pack("<I", slot)))
                for slot, name in enumerate(COUNTERS)}

    def close(self) -> None:
        """Idempotent."""
        for link in self._links:
            link.detach()
        self._links = []
        for ns, tc in self._tc_links:
            try:
                with inside(ns):
                    tc.detach()
            except OSError:  # the namespace is gone, and its interfaces' filters with it
                pass
        self._tc_links = []
        self.obj.close()
