"""The link emulator's accuracy and cost: one-way delay error (p50, p99) of a 1,000 pps probe
stream across a 10 ms link, alone and beside a pktblast load, and the most packets one
dplab-linkem process forwards (64-byte UDP frames offered by pktblast as fast as it can)
with its CPU time per packet (from its own report).

usage: PYTHONPATH=src .venv/bin/python benchmarks/linkem.py [--load-pps 50000]

The same probes across a plain veth pair (no emulator, no delay) give the hosts' share.

Prints one JSON object. The probe's one-way delay is the receiver's kernel timestamp
(SO_TIMESTAMPNS) minus the time the sender wrote into the datagram, both CLOCK_REALTIME of
this machine; the error is that minus the configured delay, so it includes the hosts' own
stack (tens of µs).
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import networkx as nx

from dplab.substrate import Network
from dplab.topology.model import HOST, Topology

PKTBLAST = Path(__file__).resolve().parents[1] / "switch" / "target" / "release" / "dplab-pktblast"
DELAY_MS = 10.0

PROBE_RX = textwrap.dedent("""
    import socket, struct, sys
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS (Python names only SO_TIMESTAMP)
    s.bind(("0.0.0.0", 9100)); s.settimeout(5.0)
    print("ready", flush=True)
    owd = []
    try:
        while True:
            data, anc, _, _ = s.recvmsg(64, 64)
            sec, nsec = struct.unpack("qq", anc[0][2][:16])
            owd.append(sec * 1e9 + nsec - struct.unpack("!d", data[:8])[0])
            s.settimeout(1.0)
    except TimeoutError:
        pass
    print(" ".join(f"{x:.0f}" for x in owd), flush=True)
""")
PROBE_TX = textwrap.dedent("""
    import socket, struct, sys, time
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    n, dst, gap = int(sys.argv[1]), sys.argv[2], 1.0 / float(sys.argv[3])
    start = time.monotonic()
    for i in range(n):
        while time.monotonic() < start + i * gap:
            time.sleep(gap / 4)
        s.sendto(struct.pack("!d", float(time.time_ns())) + bytes(24), (dst, 9100))
""")


def pair(delay_ms: float = DELAY_MS) -> Topology:
    """Two hosts on one link: through dplab-linkem, or a plain veth pair with delay 0."""
    g = nx.Graph()
    g.add_nodes_from(["h1", "h2"], kind=HOST)
    g.add_edge("h1", "h2", bw_mbit=None, delay_ms=delay_ms, emulator="dplab")
    return Topology("pair", g)


def udp_frame(net: Network) -> str:
    """A 64-byte Ethernet frame (60 + FCS) h1 → h2, UDP to the discard port."""
    mac = lambda h: bytes.fromhex(net.host_mac(h).replace(":", ""))  # noqa: E731
    src, dst = socket.inet_aton(net.host_ip("h1")), socket.inet_aton(net.host_ip("h2"))
    payload = bytes(18)
    udp = struct.pack("!HHHH", 9999, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
    total = sum(struct.unpack("!10H", ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip = ip[:10] + struct.pack("!H", ~total & 0xFFFF) + ip[12:]
    return (mac("h2") + mac("h1") + b"\x08\x00" + ip + udp).hex()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def delay_error(net: Network, load_pps: int, delay_ms: float = DELAY_MS) -> dict:
    h1, h2 = net.host_ns("h1"), net.host_ns("h2")
    net.run(h1, ["ping", "-c", "1", "-W", "2", net.host_ip("h2")])  # ARP before the probes
    rx = net.popen(h2, [sys.executable, "-c", PROBE_RX], stdout=subprocess.PIPE, text=True)
    assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
    blast = None
    if load_pps:
        blast = net.popen(h1, [str(PKTBLAST), "--iface", "eth0", "--frame", udp_frame(net),
                               "--seconds", "4", "--pps", str(load_pps)],
                          stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)  # the load runs before the first probe
    net.run(h1, [sys.executable, "-c", PROBE_TX, "2000", net.host_ip("h2"), "1000"],
            timeout=30)
    owd = [float(x) for x in rx.stdout.readline().split()]
    load = json.loads(blast.communicate()[0]) if blast else None
    errors_us = [(x - delay_ms * 1e6) / 1e3 for x in owd]
    return {"probes": len(owd), "load_pps": load and round(load["pps"]),
            "error_p50_us": round(percentile(errors_us, 0.5), 1),
            "error_p99_us": round(percentile(errors_us, 0.99), 1)}


def rx_packets(net: Network) -> int:
    out = net.run(net.host_ns("h2"), ["cat", "/sys/class/net/eth0/statistics/rx_packets"])
    return int(out.stdout)


def max_rate(seconds: float = 3.0) -> dict:
    with Network(pair()) as net:
        before, t0 = rx_packets(net), time.monotonic()
        blast = net.run(net.host_ns("h1"), [str(PKTBLAST), "--iface", "eth0", "--frame",
                                            udp_frame(net), "--seconds", str(seconds)],
                        timeout=60)
        time.sleep(2 * DELAY_MS / 1e3)
        after, t1 = rx_packets(net), time.monotonic()
        offered = json.loads(blast.stdout)
    report = net.emulator_reports[0]["report"]
    way = report["a_to_b"]
    return {"offered_pps": round(offered["pps"]), "forwarded_pps": round((after - before) /
                                                                         (t1 - t0)),
            "emulator_sent": way["sent"], "emulator_cpu_s": report["cpu_s"],
            "cpu_ns_per_packet": round(report["cpu_s"] * 1e9 / max(1, way["sent"]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load-pps", type=int, default=50_000)
    args = parser.parse_args()
    result = {}
    with Network(pair(0.0)) as net:  # the hosts' own stacks, no emulator: what to subtract
        result["plain_veth_low_load"] = delay_error(net, 0, 0.0)
        result["plain_veth_high_load"] = delay_error(net, args.load_pps, 0.0)
    with Network(pair()) as net:
        result["low_load"] = delay_error(net, 0)
        result["high_load"] = delay_error(net, args.load_pps)
    result["max_rate"] = max_rate()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
