"""Packet traces for the trace workload: a pcap (pcapng too) or a CSV of time, size, tos.

CSV: one packet per line, `time,size[,tos]`, time in seconds (any origin, non-decreasing),
size = the IPv4 packet's length in bytes, tos = its ToS byte (decimal or 0x..; empty or
absent: the default). A first line that is not numbers is a header. pcap: every IPv4 packet,
its capture time, IP total length and ToS. Times come back relative to the first packet.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from scapy.error import Scapy_Exception
from scapy.layers.inet import IP
from scapy.utils import PcapReader

PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
               b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a")  # pcap (µs, ns; both orders), pcapng


class TraceError(ValueError):
    """The trace file cannot be replayed; the message names the file, the line and why."""


@dataclass(frozen=True)
class TracePacket:
    offset_s: float  # after the trace's first packet
    size: int  # IPv4 packet bytes
    tos: int | None


def load(path: Path) -> list[TracePacket]:
    """The packets of ``path``, a pcap or a CSV (told apart by the file's first bytes)."""
    try:
        with open(path, "rb") as file:
            magic = file.read(4)
    except OSError as exc:
        raise TraceError(f"trace {path}: cannot read it ({exc.strerror})") from None
    packets = _from_pcap(path) if magic in PCAP_MAGICS else _from_csv(path)
    if not packets:
        raise TraceError(f"trace {path}: no packets in it")
    first = packets[0][0]
    return [TracePacket(t - first, size, tos) for t, size, tos in packets]


def _from_pcap(path: Path) -> list[tuple[float, int, int | None]]:
    try:
        with PcapReader(str(path)) as reader:
            return [(float(p.time), p[IP].len, p[IP].tos) for p in reader if IP in p]
    except Scapy_Exception as exc:
        raise TraceError(f"trace {path}: not a readable pcap ({exc})") from None


def _from_csv(path: Path) -> list[tuple[float, int, int | None]]:
    try:
        lines = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    except UnicodeDecodeError:
        raise TraceError(f"trace {path}: neither a pcap nor a UTF-8 CSV") from None
    packets: list[tuple[float, int, int | None]] = []
    for number, row in enumerate(lines, start=1):
        if not row or row[0].strip().startswith("#"):
            continue
        try:
            packets.append(_csv_packet(row))
        except ValueError:
            if number == 1:
                continue  # a header
            raise TraceError(f"trace {path}, line {number}: expected time,size[,tos] with "
                             f"numbers, got {','.join(row)!r}") from None
        if len(packets) > 1 and packets[-1][0] < packets[-2][0]:
            raise TraceError(f"trace {path}, line {number}: time {packets[-1][0]:g} is "
                             f"before the line above's {packets[-2][0]:g}")
    return packets


def _csv_packet(row: list[str]) -> tuple[float, int, int | None]:
    if not 2 <= len(row) <= 3:
        raise ValueError(row)
    tos_text = row[2].strip() if len(row) == 3 else ""
    return float(row[0]), int(row[1]), int(tos_text, 0) if tos_text else None
