"""Sender and receiver of one G.711-like RTP stream, run inside the hosts' namespaces.

    python -m dplab.workloads.rtp_tool send --dst IP --port P --count N [--packet-ms 20]
        [--payload 160] [--phase-ms MS] [--tos BYTE]
    python -m dplab.workloads.rtp_tool send --dst IP --port P --schedule FILE
    python -m dplab.workloads.rtp_tool recv --port P --out FILE --count N --timeout S

Both take ``--bare``: datagrams without the RTP header (the send stamp first, then padding),
so the smallest one is 12 bytes and a 64-byte Ethernet frame can carry it (the latency
workload); the sender then also sets don't-fragment, so a datagram larger than the path MTU
fails to send (EMSGSIZE, counted in send_errors) instead of leaving as fragments.

The sender paces packets on absolute deadlines (start + i * packet_ms, or start + the
offsets of a --schedule file: one "offset_ns payload tos" line per packet, tos "-" for the
default; the trace workload's replay), so a late wake-up never shifts the packets after it.
Each packet is a real RTP header (RFC 3550: version 2,
payload type 0 = PCMU, sequence number, 8 kHz timestamp, SSRC) and a payload that starts
with the send time (CLOCK_REALTIME ns, taken just before sendto) and the packet index,
padded with PCMU silence (0xFF). At the end it prints one JSON line (packets_sent, errors,
start_ns = the realtime of the schedule's start, late_max_ms = worst wake-up lateness).

The receiver prints "ready" once bound, then writes one line per datagram:
"index rtp_seq send_ns recv_ns", recv_ns being the kernel's receive timestamp
(SO_TIMESTAMPNS), so Python's own scheduling does not enter the one-way delay. The hosts
share one kernel clock, so recv_ns - send_ns is the one-way delay. It exits when the last
packet (index N - 1) arrived, on SIGTERM, or after --timeout seconds.
"""

import argparse
import json
import random
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import NamedTuple, TextIO

RTP_HEADER = struct.Struct("!BBHII")  # V/P/X/CC, M/PT, seq, timestamp, SSRC
STAMP = struct.Struct("!QI")  # send time ns, packet index
TIMESPEC = struct.Struct("@qq")
RTP_VERSION_BITS = 0x80  # version 2, no padding, no extension, no CSRC
MARKER = 0x80
PCMU = 0
SILENCE = 0xFF  # PCMU encoding of a zero sample
SAMPLES_PER_MS = 8  # G.711 samples at 8 kHz
RECV_POLL_S = 0.2
RECV_BUFFER = 65536  # the largest UDP datagram
# Linux's values (in.h); Python's socket module does not name them.
IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = 2  # don't fragment; refuse datagrams beyond the path MTU
# Linux's value (asm-generic, x86 and arm); Python's socket module only names it from 3.14.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def rtp_packet(index: int, seq0: int, ts0: int, ssrc: int, send_ns: int, payload: int,
               bare: bool = False) -> bytes:
    if bare:
        return STAMP.pack(send_ns, index) + bytes([SILENCE]) * (payload - STAMP.size)
    marker = MARKER if index == 0 else 0  # first packet of a talk spurt
    samples = payload  # one byte per G.711 sample
    header = RTP_HEADER.pack(
        RTP_VERSION_BITS,
        marker | PCMU,
        (seq0 + index) & 0xFFFF,
        (ts0 + index * samples) & 0xFFFFFFFF,
        ssrc,
    )
    stamp = STAMP.pack(send_ns, index)
    return header + stamp + bytes([SILENCE]) * (payload - STAMP.size)


class Slot(NamedTuple):
    """One packet to send: when (ns after the schedule's start), payload bytes after the
    RTP header, IPv4 ToS byte (None: the socket's default)."""

    offset_ns: int
    payload: int
    tos: int | None


def periodic(count: int, packet_ms: float, payload: int, tos: int | None) -> list[Slot]:
    period_ns = round(packet_ms * 1e6)
    return [Slot(index * period_ns, payload, tos) for index in range(count)]


def read_schedule(path: Path) -> list[Slot]:
    slots = []
    for line in path.read_text().splitlines():
        offset, payload, tos = line.split()
        slots.append(Slot(int(offset), int(payload), None if tos == "-" else int(tos)))
    return slots


def write_schedule(path: Path, slots: list[Slot]) -> None:
    path.write_text("".join(f"{s.offset_ns} {s.payload} {'-' if s.tos is None else s.tos}\n"
                            for s in slots))


def first_send_ns(now_ns: int, period_ns: int, phase_ns: int | None) -> int:
    """When the first packet leaves: now, or with a phase the first moment after now that is
    `phase_ns` past a whole multiple of the period (the monotonic clock is one for every
    namespace, so streams given different phases interleave)."""
    if phase_ns is None:
        return now_ns
    return (now_ns - phase_ns) // period_ns * period_ns + period_ns + phase_ns


def send(dst: str, port: int, slots: list[Slot], period_ns: int = 0,
         phase_ms: float | None = None, bare: bool = False) -> dict:
    """Send ``slots``; with ``phase_ms`` the start waits for the phase of ``period_ns``;
    ``bare``: without RTP header, don't fragment."""
    phase_ns = None if phase_ms is None else round(phase_ms * 1e6)
    seq0, ts0, ssrc = random.getrandbits(16), random.getrandbits(32), random.getrandbits(32)
    sent, errors, late_max_ns, tos = 0, [], 0, None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        if bare:
            sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        now_mono, start_ns = time.monotonic_ns(), time.time_ns()
        start_mono = first_send_ns(now_mono, period_ns, phase_ns)
        start_ns += start_mono - now_mono  # the wall time of the first send
        for index, slot in enumerate(slots):
            if slot.tos is not None and slot.tos != tos:
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, slot.tos)
                tos = slot.tos
            deadline = start_mono + slot.offset_ns
            ahead = deadline - time.monotonic_ns()
            if ahead > 0:
                time.sleep(ahead / 1e9)
            late_max_ns = max(late_max_ns, time.monotonic_ns() - deadline)
            packet = rtp_packet(index, seq0, ts0, ssrc, time.time_ns(), slot.payload, bare)
            try:
                sock.sendto(packet, (dst, port))
                sent += 1
            except OSError as exc:  # e.g. no route: the packet never left, count it apart
                errors.append(f"packet {index}: {exc.strerror}")
    return {
        "packets_sent": sent,
        "send_errors": len(errors),
        "first_error": errors[0] if errors else None,
        "start_ns": start_ns,
        "ssrc": ssrc,
        "late_max_ms": late_max_ns / 1e6,
    }


def receive(port: int, out: TextIO, count: int, timeout_s: float, bare: bool = False) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.bind(("0.0.0.0", port))
        sock.settimeout(RECV_POLL_S)
        print("ready", flush=True)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            try:
                data, ancillary, _, _ = sock.recvmsg(RECV_BUFFER,
                                                     socket.CMSG_SPACE(TIMESPEC.size))
            except TimeoutError:
                continue
            record = _bare_record(data, ancillary) if bare else _record(data, ancillary)
            if record is None:
                continue  # not one of our packets
            out.write(" ".join(map(str, record)) + "\n")
            if record[0] == count - 1:
                return


def _record(data: bytes, ancillary: list) -> tuple[int, int, int, int] | None:
    if len(data) < RTP_HEADER.size + STAMP.size or data[0] != RTP_VERSION_BITS:
        return None
    recv_ns = _kernel_timestamp(ancillary) or time.time_ns()
    _, _, seq, _, _ = RTP_HEADER.unpack_from(data)
    send_ns, index = STAMP.unpack_from(data, RTP_HEADER.size)
    return index, seq, send_ns, recv_ns


def _bare_record(data: bytes, ancillary: list) -> tuple[int, int, int, int] | None:
    if len(data) < STAMP.size:
        return None
    recv_ns = _kernel_timestamp(ancillary) or time.time_ns()
    send_ns, index = STAMP.unpack_from(data)
    return index, index, send_ns, recv_ns


def _kernel_timestamp(ancillary: list) -> int | None:
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = TIMESPEC.unpack(payload[: TIMESPEC.size])
            return seconds * 1_000_000_000 + nanoseconds
    return None


def _stop_on_sigterm() -> None:
    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)  # unwinds the with-blocks, so every record is flushed

    signal.signal(signal.SIGTERM, stop)


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rtp_tool", description=__doc__.splitlines()[0])
    roles = parser.add_subparsers(dest="role", required=True)
    sender = roles.add_parser("send")
    sender.add_argument("--dst", required=True)
    sender.add_argument("--packet-ms", type=float, default=20.0)
    sender.add_argument("--payload", type=int, default=160)
    sender.add_argument("--phase-ms", type=float, default=None)
    sender.add_argument("--tos", type=int, default=None)
    sender.add_argument("--schedule", type=Path, default=None)
    receiver = roles.add_parser("recv")
    receiver.add_argument("--out", required=True)
    receiver.add_argument("--timeout", type=float, required=True)
    sender.add_argument("--count", type=int)
    receiver.add_argument("--count", type=int, required=True)
    for role in (sender, receiver):
        role.add_argument("--bare", action="store_true", help="no RTP header")
        role.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    if args.role == "send" and args.payload < STAMP.size:
        parser.error(f"--payload must be >= {STAMP.size} bytes (send time and index)")
    if args.role == "send" and (args.count is None) == (args.schedule is None):
        parser.error("give exactly one of --count and --schedule")
    return args


def main(argv: list[str]) -> None:
    args = _arguments(argv)
    if args.role == "send":
        if args.schedule is not None:
            report = send(args.dst, args.port, read_schedule(args.schedule))
        else:
            slots = periodic(args.count, args.packet_ms, args.payload, args.tos)
            report = send(args.dst, args.port, slots, round(args.packet_ms * 1e6),
                          args.phase_ms, args.bare)
        print(json.dumps(report), flush=True)
        return
    _stop_on_sigterm()
    with open(args.out, "w") as out:
        receive(args.port, out, args.count, args.timeout, args.bare)


if __name__ == "__main__":
    main(sys.argv[1:])
