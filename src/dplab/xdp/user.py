"""A user's own XDP program for the xdp plane (``options: {program: file.c, maps: file.yaml}``):
compiled with clang as scripts/setup.sh compiles the lab's programs, and its maps filled from
a map entries file.

A map entries file lists entries, each written to one map of the object on every switch (or
only on those it names)::

    entries:
      - {map: fwd, key: [{port: 1}], value: [{port: 2}]}
      - {map: macs, key: [{mac: "02:00:00:00:00:01"}, {hex: "0000"}], value: [{port: 1}],
         switches: [s1]}

A key or value is the C struct's bytes, written as a list of fields in the struct's order:
``u8``/``u16``/``u32``/``u64`` (an integer in host byte order), ``be16``/``be32`` (network
byte order), ``mac`` ("aa:bb:..."), ``ipv4`` (dotted quad, network order), ``hex`` (raw
bytes, for padding or anything else) and ``port`` (the switch's port N as a u32 ifindex, the
value a devmap redirect needs). The file's structure is checked when the plane is created;
the sizes against each map once the object is compiled, before anything is attached.
"""

from __future__ import annotations

import ipaddress
import platform
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dplab import safe_yaml
from dplab.xdp.libbpf import LibbpfError
from dplab.xdp.netns import Interface
from dplab.xdp.programs import BUILD_DIR, XdpProgram

LAB_HEADERS = BUILD_DIR.parent  # counters.h, ports.h, ipv4.h
# scripts/setup.sh's XDP_CFLAGS
CFLAGS = ("-O2", "-g", "-target", "bpf", "-Wall",
          f"-I/usr/include/{platform.machine()}-linux-gnu")
COMPILE_TIMEOUT_S = 60.0
MAX_FILE_BYTES = 1 << 20
MAX_VALUES = 200_000
ENTRY_KEYS = {"map", "key", "value", "switches"}
_INTS = {"u8": (1, "little"), "u16": (2, "little"), "u32": (4, "little"),
         "u64": (8, "little"), "be16": (2, "big"), "be32": (4, "big")}
FIELD_TYPES = (*_INTS, "mac", "ipv4", "hex", "port")
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


class UserProgramError(ValueError):
    """A user program or its entries file is wrong; the message names the file and where."""


class UserProgram:
    """A C source and its entries file (None: no entries), checked at creation; compiled
    once, then loaded and filled per switch."""

    def __init__(self, source: Path, entries: Path | None) -> None:
        if not source.is_file():
            raise UserProgramError(f"option 'program': no file {source}")
        if entries is not None and not entries.is_file():
            raise UserProgramError(f"option 'maps': no file {entries}")
        self.source, self.entries_path = source, entries
        self.entries = load_entries(entries) if entries is not None else []
        self.object: Path | None = None

    def compile(self, out_dir: Path) -> None:
        self.object = compile_program(self.source, out_dir)

    def load(self, map_prefix: str) -> XdpProgram:
        if self.object is None:
            raise UserProgramError(f"{self.source} is not compiled yet")
        return XdpProgram(self.object, None, map_prefix=map_prefix)

    def write_entries(self, program: XdpProgram, switch: str,
                      ports: dict[int, Interface]) -> None:
        """The entries for ``switch`` into ``program``'s maps; ``ports``: port number ->
        the switch's interface."""
        for entry in self.entries:
            if entry.switches is not None and switch not in entry.switches:
                continue
            where = f"{self.entries_path}: entry {entry.index} (map {entry.map})"
            if not program.has_map(entry.map):
                raise UserProgramError(f"{where}: {self.source} has no such map (it has "
                                       f"{program.obj.map_names()})")

            def ifindex(port: int, where: str = where) -> int:
                if port not in ports:
                    raise UserProgramError(f"{where}: {switch} has no port {port} "
                                           f"(it has {sorted(ports)})")
                return ports[port].ifindex

            key, value = entry.encode(ifindex)
            try:
                program.map(entry.map).update(key, value)
            except LibbpfError as exc:
                raise UserProgramError(f"{where}: {exc}") from None


def compile_program(source: Path, out_dir: Path) -> Path:
    """``source`` compiled to ``out_dir/<stem>.o`` (with BTF); a failure carries clang's
    messages, which name the file, line and column."""
    out = out_dir / f"{source.name.split('.')[0]}.o"
    argv = ["clang", *CFLAGS, f"-I{LAB_HEADERS}", f"-I{source.parent}", "-c", str(source),
            "-o", str(out)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise UserProgramError(f"compiling {source}: clang took over {COMPILE_TIMEOUT_S} s"
                               ) from exc
    except FileNotFoundError as exc:
        raise UserProgramError(f"compiling {source}: no clang on PATH (scripts/setup.sh "
                               "installs it)") from exc
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if ": error:" in line]
        raise UserProgramError(f"compiling {source} failed:\n"
                               + "\n".join(errors or done.stderr.splitlines()[-20:]))
    return out


Field = tuple[str, Any]  # (type, value) of one key or value field


@dataclass(frozen=True)
class MapEntry:
    index: int  # position in the file, for messages
    map: str
    key: tuple[Field, ...]
    value: tuple[Field, ...]
    switches: tuple[str, ...] | None  # None: every switch

    def encode(self, port_ifindex: Callable[[int], int]) -> tuple[bytes, bytes]:
        """Key and value bytes; ``port_ifindex(n)`` is the switch's port n's ifindex."""
        return (b"".join(_encode(f, port_ifindex) for f in self.key),
                b"".join(_encode(f, port_ifindex) for f in self.value))


def load_entries(path: Path) -> list[MapEntry]:
    try:
        data = safe_yaml.load_entry_list(path, MAX_FILE_BYTES, MAX_VALUES, "map entries")
    except ValueError as exc:
        raise UserProgramError(str(exc)) from None
    entries = []
    for i, item in enumerate(data):
        try:
            entries.append(_entry(i, item))
        except UserProgramError as exc:
            raise UserProgramError(f"{path}: entry {i}: {exc}") from None
    return entries


def _entry(index: int, item: Any) -> MapEntry:
    if not isinstance(item, dict) or not {"map", "key", "value"} <= set(item):
        raise UserProgramError("needs 'map', 'key' and 'value'")
    unknown = sorted(set(item) - ENTRY_KEYS)
    if unknown:
        raise UserProgramError(f"unknown keys {unknown} (known: {sorted(ENTRY_KEYS)})")
    if not isinstance(item["map"], str):
        raise UserProgramError(f"'map' must be a map's name, not {item['map']!r}")
    switches = item.get("switches")
    if switches is not None and not (isinstance(switches, list)
                                     and all(isinstance(s, str) for s in switches)):
        raise UserProgramError(f"'switches' must be a list of switch names, not {switches!r}")
    return MapEntry(index, item["map"], _fields("key", item["key"]),
                    _fields("value", item["value"]),
                    tuple(switches) if switches is not None else None)


def _fields(what: str, raw: Any) -> tuple[Field, ...]:
    if not isinstance(raw, list) or not raw:
        raise UserProgramError(f"'{what}' must be a list of fields like [{{u32: 1}}]")
    fields = []
    for j, field in enumerate(raw):
        if not isinstance(field, dict) or len(field) != 1:
            raise UserProgramError(f"{what} field {j}: one of {list(FIELD_TYPES)} with its "
                                   f"value, not {field!r}")
        ((kind, value),) = field.items()
        try:
            _check(kind, value)
        except (UserProgramError, ValueError) as exc:
            raise UserProgramError(f"{what} field {j} ({kind}): {exc}") from None
        fields.append((kind, value))
    return tuple(fields)


def _check(kind: str, value: Any) -> None:
    if kind in _INTS or kind == "port":
        size = _INTS[kind][0] if kind in _INTS else 4
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 0 <= value < 1 << (8 * size):
            raise UserProgramError(f"{value!r} is not an integer of {size} bytes")
    elif kind == "mac":
        if not isinstance(value, str) or not _MAC.match(value):
            raise UserProgramError(f"{value!r} is not a MAC address aa:bb:cc:dd:ee:ff")
    elif kind == "ipv4":
        ipaddress.IPv4Address(value)
    elif kind == "hex":
        if not isinstance(value, str):
            raise UserProgramError(f"{value!r} is not a hex string")
        bytes.fromhex(value)
    else:
        raise UserProgramError(f"unknown field type (known: {list(FIELD_TYPES)})")


def _encode(field: Field, port_ifindex: Callable[[int], int]) -> bytes:
    kind, value = field
    if kind in _INTS:
        size, order = _INTS[kind]
        return value.to_bytes(size, order)
    if kind == "port":
        return port_ifindex(value).to_bytes(4, "little")
    if kind == "mac":
        return bytes.fromhex(value.replace(":", ""))
    if kind == "ipv4":
        return ipaddress.IPv4Address(value).packed
    return bytes.fromhex(value)
