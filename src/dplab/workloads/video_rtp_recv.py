"""Receiving end of an RTP video stream, run in a client host's namespace.

    python -m dplab.workloads.video_rtp_recv --port P --relay-port R --out FILE
        --timeout S [--idle 2]

Binds UDP port P, prints "ready", and for every datagram writes one line to FILE:
"recv_ns seq timestamp size" (kernel receive stamp SO_TIMESTAMPNS, RTP sequence number and
timestamp from the header, UDP payload bytes), then passes the datagram unchanged to
127.0.0.1:R, where the client's ffmpeg decodes the stream (and captures its frame). Exits
--idle seconds after the last datagram once something arrived (the stream ended), on
SIGTERM, or after --timeout seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import struct
import sys
import time
from typing import TextIO

RTP_FIXED = struct.Struct("!BBHII")  # V/P/X/CC, M/PT, seq, timestamp, SSRC
TIMESPEC = struct.Struct("@qq")
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's value; named in Python 3.14
POLL_S = 0.2
MAX_DATAGRAM = 65535


def receive(port: int, relay_port: int, out: TextIO, timeout_s: float, idle_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last_arrival: float | None = None
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as relay,
    ):
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.bind(("0.0.0.0", port))
        sock.settimeout(POLL_S)
        print("ready", flush=True)
        while time.monotonic() < deadline:
            if last_arrival is not None and time.monotonic() - last_arrival > idle_s:
                return
            try:
                data, ancillary, _, _ = sock.recvmsg(MAX_DATAGRAM, socket.CMSG_SPACE(TIMESPEC.size))
            except TimeoutError:
                continue
            last_arrival = time.monotonic()
            _record(out, data, ancillary)
            # The decoder leaves once it has its frame; measuring goes on.
            with contextlib.suppress(OSError):
                relay.sendto(data, ("127.0.0.1", relay_port))


def _record(out: TextIO, data: bytes, ancillary: list) -> None:
    if len(data) < RTP_FIXED.size:
        return  # not RTP
    recv_ns = time.time_ns()
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = TIMESPEC.unpack(value[: TIMESPEC.size])
            recv_ns = seconds * 1_000_000_000 + nanoseconds
    _, _, seq, timestamp, _ = RTP_FIXED.unpack_from(data)
    out.write(f"{recv_ns} {seq} {timestamp} {len(data)}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="video_rtp_recv")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--relay-port", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--idle", type=float, default=2.0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds: the file gets closed
    with open(args.out, "w") as out:
        receive(args.port, args.relay_port, out, args.timeout, args.idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
