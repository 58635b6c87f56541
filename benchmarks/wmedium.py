"""The wireless medium's cost and accuracy (dplab-wmedium, switch/wmedium), on the rig of
tests/wmedium_rig.py (one access point, stations in namespaces of their own):

- the most frames one medium process carries: station 1 offers 64-byte frames to the
  access point as fast as dplab-pktblast sends them, on a 100 Gbit/s medium (a frame's
  airtime 5 ns: the process, not the model, sets the rate); with the process's CPU time
  per frame delivered, from its own stats;
- airtime share accuracy: two stations at one rate, saturated with unequal offered loads
  (1.2 and 0.75 times what the medium carries, both more than half; queues of SHARE_QUEUE
  frames); station 1's share of
  the datagrams the access point received while both were arriving (its kernel's receive
  timestamps; outside that window one sender had not started or had stopped) and of the
  airtime over the whole run (the medium's counters, start skew included), and the frame
  bit rate the access point received (first to last timestamp) against the configured
  rate;
- latency: ping from station 1 to the access point at 54 Mbit/s (200 echoes, 10 ms apart),
  RTT p50 and p99 against the model's airtime for the request and the reply (the rest is
  the hosts' stacks and the medium process's wake-ups: it sleeps until a transmission
  ends and does not spin).

usage: sudo .venv/bin/python benchmarks/wmedium.py [--repeat 2] [--seconds 3]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from wmedium_rig import NODE_IF, Rig  # noqa: E402  (a module beside the tests, not a package)

PKTBLAST = ROOT / "switch" / "target" / "release" / "dplab-pktblast"
AP = 0
PORT = 9400
SHARE_FRAME = 1042  # bytes on the medium: a 1000-byte UDP payload
SHARE_RATES_MBIT = (20.0, 54.0)
# Deep queues (1,000 frames: 0.15 s of 54 Mbit/s) so that a sender held off its core for a
# while on a loaded machine still has frames waiting: what is measured is the medium, not
# whether pktblast kept up.
SHARE_QUEUE = 1000

# Takes datagrams until nothing came for 1 s; prints {source: [kernel receive timestamp in ns
# of each datagram]} (all of SHARE_FRAME bytes on the medium).
STAMP_RX = textwrap.dedent("""
    import json, socket, struct, sys
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
    s.bind(("0.0.0.0", int(sys.argv[1]))); s.settimeout(10.0)
    print("ready", flush=True)
    got = {}
    try:
        while True:
            data, anc, _, (src, _) = s.recvmsg(2048, 64)
            sec, nsec = struct.unpack("qq", anc[0][2][:16])
            got.setdefault(src, []).append(sec * 10**9 + nsec)
            s.settimeout(1.0)
    except TimeoutError:
        pass
    print(json.dumps(got), flush=True)
""")


def udp_frame(rig: Rig, src: int, dst: int, size: int) -> str:
    """An Ethernet frame of `size` bytes (no FCS) from node `src` to `dst`, UDP to PORT."""
    mac = lambda n: bytes.fromhex(rig.mac(n).replace(":", ""))  # noqa: E731
    payload = bytes(size - 42)
    udp = struct.pack("!HHHH", 9999, PORT, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(rig.ip(src)), socket.inet_aton(rig.ip(dst)))
    total = sum(struct.unpack("!10H", ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip = ip[:10] + struct.pack("!H", ~total & 0xFFFF) + ip[12:]
    return (mac(dst) + mac(src) + b"\x08\x00" + ip + udp).hex()


def blast(rig: Rig, node: int, frame: str, seconds: float,
          pps: float | None = None) -> subprocess.Popen:
    argv = ["ip", "netns", "exec", rig.node_ns(node), str(PKTBLAST), "--iface", NODE_IF,
            "--frame", frame, "--seconds", str(seconds)]
    if pps:
        argv += ["--pps", str(round(pps))]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def max_rate(rig: Rig, seconds: float) -> dict:
    config = rig.config(stations=[(100_000.0, 0.0)], queue_frames=1000)
    with rig.medium(config) as medium:
        out, _ = blast(rig, 1, udp_frame(rig, 1, AP, 60), seconds).communicate(timeout=60)
    offered = json.loads(out)
    nodes = medium.stats["nodes"]
    delivered = nodes["wap"]["rx_frames"] - nodes["wap"]["refused"]
    return {"offered_pps": round(offered["pps"]),
            "delivered_pps": round(delivered / offered["seconds"]),
            "ring_drops": nodes["ws1"]["ring_drops"],
            "queue_drops": nodes["ws1"]["queue_drops"],
            "cpu_s": round(medium.stats["cpu_s"], 3),
            "cpu_ns_per_frame": round(medium.stats["cpu_s"] * 1e9 / max(1, delivered))}


def share(rig: Rig, rate_mbit: float, seconds: float) -> dict:
    capacity_fps = rate_mbit * 1e6 / (SHARE_FRAME * 8)
    config = rig.config(stations=[(rate_mbit, 0.0), (rate_mbit, 0.0)],
                        queue_frames=SHARE_QUEUE)
    sink = rig.popen(AP, STAMP_RX, PORT)
    assert sink.stdout is not None and sink.stdout.readline().strip() == "ready"
    with rig.medium(config) as medium:
        blasts = [blast(rig, s, udp_frame(rig, s, AP, SHARE_FRAME), seconds, k * capacity_fps)
                  for s, k in ((1, 1.2), (2, 0.75))]
        for b in blasts:
            b.communicate(timeout=60)
        got = json.loads(sink.communicate(timeout=60)[0])
    nodes = medium.stats["nodes"]
    air = [nodes[f"ws{s}"]["airtime_ns"] for s in (1, 2)]
    stamps = [got.get(rig.ip(s), []) for s in (1, 2)]
    if not all(stamps):
        return {"rate_mbit": rate_mbit, "failed": f"a station got nothing through: {nodes}"}
    both_from, both_to = max(t[0] for t in stamps), min(t[-1] for t in stamps)
    in_both = [sum(both_from <= x <= both_to for x in t) for t in stamps]
    first, last = min(t[0] for t in stamps), max(t[-1] for t in stamps)
    frames = sum(map(len, stamps))
    received_mbit = 8 * SHARE_FRAME * (frames - 1) / (last - first) * 1e3
    return {"rate_mbit": rate_mbit,
            "datagram_share_1_while_both": round(in_both[0] / sum(in_both), 4),
            "both_for_s": round((both_to - both_from) / 1e9, 3),
            "airtime_share_1_whole_run": round(air[0] / sum(air), 4),
            "received_mbit": round(received_mbit, 3),
            "rate_error_pct": round(100 * (received_mbit / rate_mbit - 1), 2),
            "queue_drops": [nodes[f"ws{s}"]["queue_drops"] for s in (1, 2)],
            "medium_delivered": nodes["wap"]["rx_frames"] - nodes["wap"]["refused"],
            "refused": nodes["wap"]["refused"], "ap_received": frames,
            "air_busy_s": round(sum(air) / 1e9, 3),
            "ring_drops": sum(n["ring_drops"] for n in nodes.values())}


def latency(rig: Rig, rate_mbit: float = 54.0, count: int = 200) -> dict:
    with rig.medium(rig.config(stations=[(rate_mbit, 0.0)])):
        ping = subprocess.run(["ip", "netns", "exec", rig.node_ns(1), "ping", "-c", str(count),
                               "-i", "0.01", "-W", "1", rig.ip(AP)], capture_output=True,
                              text=True, timeout=60)
    rtts = sorted(float(x) * 1e3 for x in re.findall(r"time=([\d.]+) ms", ping.stdout))
    if not rtts:
        return {"rate_mbit": rate_mbit, "failed": ping.stdout[-300:] + ping.stderr[-300:]}
    frame = 98  # an echo of ping's default 56 bytes: 14 + 20 + 8 + 56
    airtime_us = 2 * frame * 8 / rate_mbit
    return {"rate_mbit": rate_mbit, "echoes": len(rtts), "airtime_us": round(airtime_us, 1),
            "rtt_p50_us": round(rtts[len(rtts) // 2], 1),
            "rtt_p99_us": round(rtts[min(len(rtts) - 1, int(0.99 * len(rtts)))], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    result: dict = {"kernel": platform.release(), "cores": os.cpu_count(),
                    "load_before": os.getloadavg()[0], "max_rate": [], "share": [],
                    "latency": []}
    with Rig(stations=2) as rig:
        for _ in range(args.repeat):
            result["max_rate"].append(max_rate(rig, args.seconds))
            for rate in SHARE_RATES_MBIT:
                result["share"].append(share(rig, rate, args.seconds))
            result["latency"].append(latency(rig))
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
