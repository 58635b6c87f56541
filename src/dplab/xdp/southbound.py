"""control.forwarding's Southbound on BPF maps: a path rule is an entry of the switch's
`rules` map (xdp/controlled.bpf.c), written from here; a packet-out leaves through a packet
socket on the switch's port. Idle timeouts are kept here and enforced by ``expire()`` from
the hit times the program writes into each rule; the packets it counts into each rule tell
which switches a flow crossed (``rule_packets()``)."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from dplab.xdp.netns import Interface, inside
from dplab.xdp.programs import XdpProgram

ETH_P_ALL = 0x0003
RULE_KEY = struct.Struct("<I6s6s")  # struct rule_key: in_port (ifindex), eth_src, eth_dst
RULE = struct.Struct("<IIQQ")  # struct rule: out_port (ifindex), pad, last_hit_ns, packets
PACKET_IN = struct.Struct("<II")  # struct packet_in's head: in_port (ifindex), len


@dataclass
class ControlledSwitch:
    """One switch as the southbound sees it: its program and its ports by number."""

    name: str
    ns: str
    program: XdpProgram
    ports: dict[int, Interface]


class PathRule(NamedTuple):
    """A path rule as a switch's map holds it, in the controller's terms."""

    switch: str
    in_port: int
    eth_src: str
    eth_dst: str
    out_port: int
    idle_timeout: int  # 0: permanent


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def mac_text(mac: bytes) -> str:
    return ":".join(f"{b:02x}" for b in mac)


class XdpSouthbound:
    def __init__(self, switches: list[ControlledSwitch]) -> None:
        self.switches = {s.name: s for s in switches}
        self._port_of = {s.name: {i.ifindex: p for p, i in s.ports.items()} for s in switches}
        self._sockets = {s.name: _port_sockets(s) for s in switches}
        self._timeouts: dict[tuple[str, bytes], int] = {}

    def install_path_rule(self, switch: str, in_port: int, eth_src: str, eth_dst: str,
                          out_port: int, idle_timeout: int) -> None:
        sw = self.switches[switch]
        key = RULE_KEY.pack(sw.ports[in_port].ifindex, mac_bytes(eth_src), mac_bytes(eth_dst))
        rules = sw.program.map("rules")
        # A rule installed again keeps its packets (as OpenFlow 1.3's add over the same
        # match and P4Runtime's modify keep its counters); those the program counts
        # between this read and the write are lost.
        old = rules.lookup(key)
        packets = RULE.unpack(old)[3] if old is not None else 0
        # A new rule counts as just hit, so its idle time starts now.
        rules.update(key, RULE.pack(sw.ports[out_port].ifindex, 0, time.monotonic_ns(),
                                    packets))
        if idle_timeout:
            self._timeouts[(switch, key)] = idle_timeout
        else:
            self._timeouts.pop((switch, key), None)

    def packet_out(self, switch: str, ports: Sequence[int], data: bytes) -> None:
        for port in ports:
            self._sockets[switch][port].send(data)

    def decode_packet_in(self, switch: str, record: bytes) -> tuple[int, bytes]:
        """(ingress port number, frame) of a ring-buffer record of ``switch``."""
        ifindex, length = PACKET_IN.unpack_from(record)
        return self._port_of[switch][ifindex], record[PACKET_IN.size:PACKET_IN.size + length]

    def expire(self) -> int:
        """Delete the rules idle for longer than their timeout; how many went. The program
        writes bpf_ktime_get_ns(), CLOCK_MONOTONIC, as time.monotonic_ns() reads it."""
        now, gone = time.monotonic_ns(), 0
        for (switch, key), timeout in list(self._timeouts.items()):
            rules = self.switches[switch].program.map("rules")
            value = rules.lookup(key)
            if value is not None and now - RULE.unpack(value)[2] <= timeout * 1_000_000_000:
                continue
            if value is not None:
                rules.delete(key)
                gone += 1
            del self._timeouts[(switch, key)]
        return gone

    def path_rules(self) -> list[PathRule]:
        """Every switch's rules, read back from its map."""
        found = []
        for name, switch in self.switches.items():
            rules = switch.program.map("rules")
            for key in rules.iter_keys():
                value = rules.lookup(key)
                if value is None:
                    continue  # expired meanwhile
                in_index, src, dst = RULE_KEY.unpack(key)
                found.append(PathRule(name, self._port_of[name][in_index], mac_text(src),
                                      mac_text(dst), self._port_of[name][RULE.unpack(value)[0]],
                                      self._timeouts.get((name, key), 0)))
        return found

    def rule_packets(self) -> dict[str, dict[tuple[str, str], int]]:
        """switch -> (src MAC, dst MAC) -> packets its rules for the pair forwarded."""
        counted: dict[str, dict[tuple[str, str], int]] = {}
        for name, switch in self.switches.items():
            rules = switch.program.map("rules")
            pairs = counted.setdefault(name, {})
            for key in rules.iter_keys():
                value = rules.lookup(key)
                if value is None:
                    continue  # expired meanwhile
                _in_index, src, dst = RULE_KEY.unpack(key)
                pair = (mac_text(src), mac_text(dst))
                pairs[pair] = pairs.get(pair, 0) + RULE.unpack(value)[3]
        return counted

    def close(self) -> None:
        for sockets in self._sockets.values():
            for sock in sockets.values():
                sock.close()
        self._sockets = {}


def _port_sockets(switch: ControlledSwitch) -> dict[int, socket.socket]:
    """A packet socket per port, made inside the switch's namespace (a socket stays in the
    namespace it was made in)."""
    sockets = {}
    with inside(switch.ns):
        for port, interface in switch.ports.items():
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # sends only
            sock.bind((interface.name, ETH_P_ALL))
            sockets[port] = sock
    return sockets
