"""The forwarding logic alone (``control.forwarding``), on an in-memory fat-tree: no
switches, no southbound protocol, a simulated clock. What it costs per LLDP round and per
flow set-up as the network grows, apart from the processes and protocols around it.

    .venv/bin/python benchmarks/controller_logic.py [--ks 8,12,16] [--setups 2000]

Per k: the switches connect, 60 simulated seconds of LLDP pass (every probe that leaves a
switch port facing another switch comes back at once as that switch's packet-in), every
host sends one ARP, then ``--setups`` random host pairs send one IPv4 frame each (a flow
set-up: path, rules, packet-out). Printed: probes and LLDP packet-ins per simulated second,
and the logic's own (wall) time for the 60 s of LLDP and per set-up.
"""

from __future__ import annotations

import argparse
import random
import socket
import struct
import time
from collections.abc import Sequence

from dplab.control import packets
from dplab.control.forwarding import Forwarding
from dplab.control.topology_view import PortRef
from dplab.topology import catalog

LLDP_SECONDS = 60.0
TICK_S = 0.1  # as the adapters'


class Wires:
    """A fat-tree's ports: which port faces which (switch links) or which host."""

    def __init__(self, k: int) -> None:
        topo = catalog.build("fattree", k=k)
        switches = set(topo.switches())
        count = dict.fromkeys(switches, 0)
        self.peer: dict[PortRef, PortRef] = {}
        self.host_port: dict[str, PortRef] = {}
        for a, b in topo.graph.edges:
            ends = []
            for node in (a, b):
                if node in switches:
                    count[node] += 1
                    ends.append(PortRef(node, count[node]))
            if len(ends) == 2:
                self.peer[ends[0]], self.peer[ends[1]] = ends[1], ends[0]
            else:
                self.host_port[b if a in switches else a] = ends[0]
        self.ports = {s: list(range(1, n + 1)) for s, n in count.items()}
        self.hosts = topo.hosts()


class Loopback:
    """Southbound whose probes into switch links come back as packet-ins."""

    def __init__(self, wires: Wires) -> None:
        self.wires = wires
        self.arrived: list[tuple[PortRef, bytes]] = []
        self.probes = 0

    def install_path_rule(self, *_rule: object) -> None:
        pass

    def packet_out(self, switch: str, ports: Sequence[int], data: bytes) -> None:
        if data[12:14] != packets.ETH_LLDP.to_bytes(2, "big"):
            return
        for port in ports:
            self.probes += 1
            peer = self.wires.peer.get(PortRef(switch, port))
            if peer is not None:
                self.arrived.append((peer, data))


def measure(k: int, setups: int) -> dict[str, float]:
    wires = Wires(k)
    southbound = Loopback(wires)
    now = [0.0]
    logic = Forwarding(southbound, clock=lambda: now[0])
    for switch in sorted(wires.ports):
        logic.switch_up(switch, wires.ports[switch])
    started = time.perf_counter()
    while now[0] < LLDP_SECONDS:
        now[0] += TICK_S
        logic.tick()
        while southbound.arrived:
            at, data = southbound.arrived.pop()
            logic.packet_in(at.switch, at.port, data)
    lldp_s = time.perf_counter() - started
    macs = {h: f"02:00:00:00:{i >> 8:02x}:{i & 255:02x}" for i, h in enumerate(wires.hosts)}
    for i, host in enumerate(wires.hosts):
        at = wires.host_port[host]
        logic.packet_in(at.switch, at.port, gratuitous_arp(macs[host], i))
    rng = random.Random(1)
    started = time.perf_counter()
    for _ in range(setups):
        src, dst = rng.sample(wires.hosts, 2)
        at = wires.host_port[src]
        frame = packets.build_ethernet(macs[dst], macs[src], packets.ETH_IPV4, bytes(20))
        logic.packet_in(at.switch, at.port, frame)
        now[0] += 0.001
    setup_s = time.perf_counter() - started
    counters = logic.counters()
    return {"k": k, "ports": sum(map(len, wires.ports.values())),
            "links": counters["lldp_links"], "probes_per_s": southbound.probes / LLDP_SECONDS,
            "lldp_in_per_s": counters["packet_ins_lldp"] / LLDP_SECONDS,
            "lldp_logic_s": lldp_s, "setups": counters["flows_set_up"],
            "setup_logic_ms": setup_s / setups * 1000}


def gratuitous_arp(mac: str, index: int) -> bytes:
    addr = socket.inet_aton(f"10.{index >> 16}.{(index >> 8) & 255}.{index & 255}")
    body = struct.pack("!HHBBH6s4s6s4s", 1, packets.ETH_IPV4, 6, 4, packets.ARP_REQUEST,
                       packets.mac_to_bytes(mac), addr, bytes(6), addr)
    return packets.build_ethernet(packets.BROADCAST_MAC, mac, packets.ETH_ARP, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="8,12,16")
    parser.add_argument("--setups", type=int, default=2000)
    args = parser.parse_args()
    print("| k | ports | links found | probes/s | LLDP packet-ins/s | logic time for 60 s "
          "of LLDP (s) | flows set up | logic time per set-up (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (int(k) for k in args.ks.split(",")):
        r = measure(k, args.setups)
        print(f"| {r['k']} | {r['ports']} | {r['links']:.0f} | {r['probes_per_s']:.0f} | "
              f"{r['lldp_in_per_s']:.0f} | {r['lldp_logic_s']:.2f} | {r['setups']:.0f} | "
              f"{r['setup_logic_ms']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
