"""Count the frames matching a filter that arrive on an interface; run inside a namespace.

    python -m dplab.workloads.frame_count --iface eth0 --filter 'udp and ...' [--sink-udp P]

Prints ``ready`` once counting, and on SIGTERM/SIGINT one JSON line ``{"frames": N}``.

How: a packet socket on the interface with the filter (classic BPF, compiled by
``tcpdump -dd``) attached before it is bound, so nothing unfiltered is ever counted. The
socket is never read: the kernel's PACKET_STATISTICS count every frame that passed the
filter, also those dropped because the (small) receive buffer was full, so the count does
not depend on how fast this process runs. The tap sees frames as the receiving kernel
takes them off the link, after XDP (none here) and before IP, so nothing the host's stack
does later (a full socket, a firewall) changes the count. Outgoing frames of the host are
seen too: the filter must tell them apart (e.g. by source address).

``--sink-udp P`` also binds a UDP socket on port P that is never read, so the host does
not answer the datagrams with ICMP port-unreachable (a sink, like a discard service).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import signal
import socket
import struct
import subprocess
import sys

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_ATTACH_FILTER = 26
RECV_BUFFER = 4096  # the kernel's floor applies; the buffer only ever holds dropped frames


def compile_filter(iface: str, expression: str) -> list[tuple[int, int, int, int]]:
    """The filter as classic BPF instructions (code, jt, jf, k), from `tcpdump -dd`."""
    done = subprocess.run(["tcpdump", "-i", iface, "-dd", expression], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise ValueError(f"filter {expression!r}: {done.stderr.strip()}")
    program = []
    for line in done.stdout.splitlines():
        fields = line.strip().strip("{},").split(",")
        program.append(tuple(int(f.strip(), 0) for f in fields))
    return program


def open_counter(iface: str, program: list[tuple[int, int, int, int]]) -> socket.socket:
    """A packet socket bound to iface that counts what passes `program`."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0: receives nothing
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
    code = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buffer = ctypes.create_string_buffer(code)
    fprog = struct.pack("HL", len(program), ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    sock.bind((iface, ETH_P_ALL))
    return sock


def frames_counted(sock: socket.socket) -> int:
    """Frames that passed the filter since the last call (the kernel adds its drops in)."""
    packets, _drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return packets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="frame_count", description=__doc__.split("\n")[0])
    parser.add_argument("--iface", required=True)
    parser.add_argument("--filter", required=True, help="a tcpdump expression")
    parser.add_argument("--sink-udp", type=int, help="bind this UDP port and never read it")
    args = parser.parse_args(argv)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    sink = None
    if args.sink_udp is not None:
        sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
        sink.bind(("0.0.0.0", args.sink_udp))
    counter = open_counter(args.iface, compile_filter(args.iface, args.filter))
    print("ready", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    print(json.dumps({"frames": frames_counted(counter)}), flush=True)
    counter.close()
    if sink is not None:
        sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
