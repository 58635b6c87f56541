"""ONOS ``fwd`` semantics as plain Python: LLDP link discovery, host learning, proxy ARP and
shortest-path rules, installed reactively (on packet-in) or proactively (all host pairs).

The logic speaks to switches only through a ``Southbound`` so the same code drives OVS over
OpenFlow and the P4 switch over P4Runtime. Switches are named (``s3``), ports are numbers.

Every southbound gives each switch the same rule set (see ``Southbound``): ARP and LLDP
always reach the controller (TRAP_PRIORITY), path rules exact on in_port, eth_src and
eth_dst forward to one port (PATH_RULE_PRIORITY, idle timeout as installed), and a miss
reaches the controller (MISS_PRIORITY). The controller answers or floods every ARP itself,
so it learns every host from its ARP, whichever way a switch would have forwarded it.

Proactive mode learns hosts the same way as reactive mode, from their ARP traffic: the plane
makes every host send one ping at start (see ``planes.ovs``), and every time a host or a
link is discovered the controller installs the paths of all known host pairs up front.

Where this differs from ONOS, so that one Python process keeps up with a large network:
LLDP rounds are paced (``lldp_schedule``: a round's probes go at the rate the path is
measured to carry, from the probes' round trips, a round stretched beyond 3 s only where
that rate falls short, a link cut after three missed rounds of that length; ONOS sends
every port's probe every 3 s and cuts after 10 s, which is what a network gets whose path
keeps up); a switch that connects has its own ports probed, not a whole round; shortest
paths are kept per topology (``TopologyView``) rather than computed per packet-in.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from dplab.control import packets
from dplab.control.lldp_schedule import ProbeSchedule
from dplab.control.packets import Arp, EthFrame, PacketError
from dplab.control.topology_view import HostTable, PortRef, TopologyView

REACTIVE = "reactive"
PROACTIVE = "proactive"
MODES = (REACTIVE, PROACTIVE)

REACTIVE_IDLE_TIMEOUT_S = 10
PERMANENT = 0  # idle timeout meaning "never expires"
ARP_FLOOD_HOLDOFF_S = 0.5  # identical ARP floods closer than this are copies, not retries
# Packet-ins of a host pair this soon after its set-up were in flight before the rules
# took effect: forwarded, not set up again, so each flow counts (and is timed) once.
SETUP_HOLDOFF_S = 1.0
# Source MAC of our LLDP probes: locally administered, so no host can own it.
PROBE_MAC = "02:d1:ab:00:00:01"
# The rule set every southbound realises, highest precedence first (OpenFlow priorities,
# as ONOS fwd; a southbound without priorities gives the same order by construction).
TRAPPED_ETHERTYPES = (packets.ETH_LLDP, packets.ETH_ARP)  # always to the controller
TRAP_PRIORITY = 40000
PATH_RULE_PRIORITY = 10
MISS_PRIORITY = 0  # a frame no rule matches goes to the controller


class Southbound(Protocol):
    """What the forwarding logic needs from a switch-control protocol.

    An adapter translates, and decides nothing: from the moment it reports a switch up
    until the switch is gone, the switch sends to the controller (as a packet-in with its
    ingress port) every frame whose ethertype is in TRAPPED_ETHERTYPES and every frame no
    path rule matches, and nothing else; it never floods or learns by itself."""

    def install_path_rule(
        self, switch: str, in_port: int, eth_src: str, eth_dst: str, out_port: int,
        idle_timeout: int,
    ) -> None:
        """Forward frames matching exactly in_port/eth_src/eth_dst (and not trapped) to
        out_port, at PATH_RULE_PRIORITY, replacing a rule of the same match; the switch
        removes it after ``idle_timeout`` seconds without a matching frame (0 = never)."""

    def packet_out(self, switch: str, ports: Sequence[int], data: bytes) -> None:
        """Send ``data`` out of each of ``ports`` of ``switch``, past its rules, once every
        path rule installed before at another switch is in that switch's table (so the
        packet finds the rules of its path waiting; a rule of ``switch`` itself may
        follow the packet-out, which its table does not see)."""


class Forwarding:
    """The controller application; feed it switch events and packet-ins, read ``counters()``."""

    def __init__(
        self, southbound: Southbound, mode: str = REACTIVE,
        clock: Callable[[], float] = time.monotonic, hairpin: Collection[PortRef] = (),
    ) -> None:
        """``hairpin``: ports a flood goes back out of when it came in there (a wireless
        access point's wlan port: the other stations are behind it too)."""
        if mode not in MODES:
            raise ValueError(f"forwarding mode {mode!r} is not one of {', '.join(MODES)}")
        self.southbound = southbound
        self.mode = mode
        self.clock = clock
        self.hairpin = frozenset(hairpin)
        self.topology = TopologyView()
        self.hosts = HostTable()
        self.probes = ProbeSchedule()
        self._last_probe_heard = 0.0
        self._recent_arp_floods: dict[tuple[str, str], float] = {}
        self._installed_pairs: dict[tuple[str, str], tuple[PortRef, ...]] = {}
        self._last_setup: dict[tuple[str, str], float] = {}
        self._setup_ms: list[float] = []
        self._pair_packet_ins: Counter[tuple[str, str]] = Counter()
        self._count = dict.fromkeys(
            ("packet_ins", "packet_ins_lldp", "packet_ins_arp", "flow_installs",
             "packet_outs", "arp_replies", "arp_floods", "dropped"), 0)

    # -- switch events -------------------------------------------------------------------

    def switch_up(self, switch: str, ports: list[int]) -> None:
        self.topology.add_switch(switch, ports)
        refs = [PortRef(switch, port) for port in self.topology.ports(switch)]
        for ref in refs:
            self._send_probe(ref)
        # A neighbour may not have been ready for these probes: they go again soon.
        self.probes.probe_again_soon(refs, self.clock())

    def switch_down(self, switch: str) -> None:
        self.topology.remove_switch(switch)
        self._topology_changed()

    def port_up(self, switch: str, port: int) -> None:
        ref = PortRef(switch, port)
        self.topology.add_port(ref)
        self._send_probe(ref)
        self.probes.probe_again_soon([ref], self.clock())

    def port_down(self, switch: str, port: int) -> None:
        self.topology.remove_port(PortRef(switch, port))
        self._topology_changed()

    def tick(self) -> None:
        """Call often (every 0.1–0.5 s): sends the LLDP probes due (``lldp_schedule``) and
        ages out silent links."""
        for ref in self.probes.due(self.clock(), self.topology.all_ports):
            if self.topology.has_port(ref):  # still there
                self._send_probe(ref)
        # Measured against the newest probe heard, not the clock: when the controller is
        # too busy to read its packet-ins, every link falls silent at once, and none is cut.
        oldest_allowed = self._last_probe_heard - self.probes.link_timeout(self.clock())
        if self.topology.expire_links(oldest_allowed):
            self._topology_changed()

    # -- packet-in -----------------------------------------------------------------------

    def packet_in(self, switch: str, in_port: int, data: bytes) -> None:
        started = self.clock()
        self._count["packet_ins"] += 1
        try:
            frame = packets.parse_ethernet(data)
            if frame.ethertype == packets.ETH_LLDP:
                self._count["packet_ins_lldp"] += 1
                self._on_lldp(PortRef(switch, in_port), frame)
                return
            self._on_host_frame(PortRef(switch, in_port), frame, data, started)
        except PacketError:
            self._count["dropped"] += 1

    def _on_lldp(self, arrived: PortRef, frame: EthFrame) -> None:
        sent_switch, sent_port = packets.parse_lldp(frame.payload)
        sent = PortRef(sent_switch, sent_port)
        if not self.topology.has_switch(sent_switch) or sent == arrived:
            return
        self._last_probe_heard = self.clock()
        self.probes.heard(sent, self._last_probe_heard)
        if self.topology.saw_link(sent, arrived, self._last_probe_heard):
            self.hosts.forget_at(sent)
            self.hosts.forget_at(arrived)
            self._topology_changed()

    def _on_host_frame(self, at: PortRef, frame: EthFrame, data: bytes, started: float) -> None:
        if frame.ethertype == packets.ETH_ARP:
            self._count["packet_ins_arp"] += 1
            self._on_arp(at, packets.parse_arp(frame.payload), data)
            return
        if not self.topology.is_infrastructure(at):
            src_ip = None
            if frame.ethertype == packets.ETH_IPV4:
                src_ip = packets.ipv4_addresses(frame.payload)[0]
            self._learn(frame.src, at, src_ip)
        self._pair_packet_ins[(frame.src, frame.dst)] += 1
        if frame.is_multicast:
            # Only ARP may be broadcast here; other multicast (IPv6 ND, mDNS) is not ours to carry.
            self._count["dropped"] += 1
            return
        if frame.dst not in self.hosts.location:
            self._flood_edges(data, at)
            return
        self._forward_unicast(at, frame, data, started)

    def _forward_unicast(self, at: PortRef, frame: EthFrame, data: bytes, started: float) -> None:
        hops = self._route(at, frame.dst)
        if hops is None:
            self._count["dropped"] += 1
            return
        pair = (frame.src, frame.dst)
        if started - self._last_setup.get(pair, -SETUP_HOLDOFF_S) < SETUP_HOLDOFF_S:
            # Sent before the rules of a set-up just made took effect: forward it only.
            self._packet_out(at.switch, [hops[0][1]], data)
            return
        timeout = REACTIVE_IDLE_TIMEOUT_S if self.mode == REACTIVE else PERMANENT
        self._install(frame.src, frame.dst, hops, timeout)
        self._packet_out(at.switch, [hops[0][1]], data)
        self._last_setup[pair] = started
        self._setup_ms.append((self.clock() - started) * 1000.0)

    # -- ARP -----------------------------------------------------------------------------

    def _on_arp(self, at: PortRef, arp: Arp, data: bytes) -> None:
        if arp.op == packets.ARP_REQUEST and self._is_copy_of_our_flood(arp):
            return  # came back over a link LLDP has not found yet: not the host's location
        if not self.topology.is_infrastructure(at):
            self._learn(arp.sender_mac, at, arp.sender_ip)
        if arp.op == packets.ARP_REQUEST:
            self._on_arp_request(at, arp, data)
        elif arp.op == packets.ARP_REPLY:
            self._deliver_to_host(arp.target_mac, at, data)

    def _is_copy_of_our_flood(self, arp: Arp) -> bool:
        flooded_at = self._recent_arp_floods.get((arp.sender_ip, arp.target_ip))
        return flooded_at is not None and self.clock() - flooded_at < ARP_FLOOD_HOLDOFF_S

    def _on_arp_request(self, at: PortRef, arp: Arp, data: bytes) -> None:
        if arp.sender_ip == arp.target_ip:
            return  # gratuitous ARP: learning it was the whole point
        known_mac = self.hosts.mac_of_ip.get(arp.target_ip)
        if known_mac is not None and known_mac in self.hosts.location:
            self._count["arp_replies"] += 1
            self._packet_out(at.switch, [at.port], packets.build_arp_reply(arp, known_mac))
            return
        self._recent_arp_floods[(arp.sender_ip, arp.target_ip)] = self.clock()
        self._count["arp_floods"] += 1
        self._flood_edges(data, at)

    def _deliver_to_host(self, mac: str, at: PortRef, data: bytes) -> None:
        where = self.hosts.location.get(mac)
        if where is None:
            self._flood_edges(data, at)
        else:
            self._packet_out(where.switch, [where.port], data)

    # -- paths ---------------------------------------------------------------------------

    def _route(self, start: PortRef, dst_mac: str) -> list[tuple[PortRef, int]] | None:
        """(switch and in-port, out-port) of every switch from ``start`` to host ``dst_mac``
        along the shortest path; None when there is no path."""
        dst = self.hosts.location[dst_mac]
        links = self.topology.path(start.switch, dst.switch)
        return None if links is None else self._hops(start, links, dst)

    def _install(self, src_mac: str, dst_mac: str, hops: list[tuple[PortRef, int]],
                 timeout: int) -> None:
        """Rules go in from the last switch backwards so that a packet sent along the path
        finds its rules waiting."""
        for in_ref, out_port in reversed(hops):
            self.southbound.install_path_rule(
                in_ref.switch, in_ref.port, src_mac, dst_mac, out_port, timeout)
        self._count["flow_installs"] += len(hops)

    def _hops(
        self, start: PortRef, links: list[PortRef], dst: PortRef,
    ) -> list[tuple[PortRef, int]]:
        """(switch and in-port, out-port) for every switch on the path."""
        hops = []
        in_ref = start
        for out in links:
            hops.append((in_ref, out.port))
            in_ref = self.topology.peer(out)
        hops.append((in_ref, dst.port))
        return hops

    def _install_all_pairs(self) -> None:
        """Proactive mode: every known host pair gets its path, re-installed when it changes."""
        for src_mac, src in sorted(self.hosts.location.items()):
            for dst_mac, dst in sorted(self.hosts.location.items()):
                if src_mac == dst_mac:
                    continue
                links = self.topology.path(src.switch, dst.switch)
                if links is None:
                    continue
                route = (src, *links, dst)
                if self._installed_pairs.get((src_mac, dst_mac)) != route:
                    self._install(src_mac, dst_mac, self._hops(src, links, dst), PERMANENT)
                    self._installed_pairs[(src_mac, dst_mac)] = route

    # -- helpers -------------------------------------------------------------------------

    def _learn(self, mac: str, at: PortRef, ip: str | None) -> None:
        if self.hosts.learn(mac, at, ip) and self.mode == PROACTIVE:
            self._install_all_pairs()

    def _topology_changed(self) -> None:
        if self.mode == PROACTIVE:
            self._install_all_pairs()

    def _flood_edges(self, data: bytes, came_from: PortRef) -> None:
        """Send to every host-facing port except the one the frame came in on (unless it is
        a hairpin port); never into links, so a looped topology cannot make a broadcast
        storm."""
        for switch in self.topology.switches():
            ports = [p for p in self.topology.edge_ports(switch)
                     if PortRef(switch, p) != came_from or came_from in self.hairpin]
            if ports:
                self._packet_out(switch, ports, data)

    def _send_probe(self, ref: PortRef) -> None:
        probe = packets.build_lldp(ref.switch, ref.port, PROBE_MAC)
        self.probes.sent(ref, self.clock())
        self._packet_out(ref.switch, [ref.port], probe)

    def _packet_out(self, switch: str, ports: list[int], data: bytes) -> None:
        self._count["packet_outs"] += 1
        self.southbound.packet_out(switch, ports, data)

    # -- counters ------------------------------------------------------------------------

    def counters(self) -> dict[str, float | None]:
        """Counts so far. Flow-setup latency is the controller's share: from a packet-in reaching
        the logic to the packet-out of that packet being handed to the southbound; None until
        a flow has been set up."""
        setup = self._setup_ms
        out: dict[str, float | None] = {k: float(v) for k, v in self._count.items()}
        out.update(
            switches=float(len(self.topology.switches())),
            lldp_links=float(self.topology.link_count()),
            lldp_probes_per_s=self.probes.rate(),
            lldp_rtt_ms=None if self.probes.rtt_s is None else 1000 * self.probes.rtt_s,
            hosts=float(len(self.hosts.location)),
            proactive_pairs=float(len(self._installed_pairs)),
            flows_set_up=float(len(setup)),
            setup_ms_mean=statistics.fmean(setup) if setup else None,
            setup_ms_p50=statistics.median(setup) if setup else None,
            setup_ms_max=max(setup) if setup else None,
        )
        return out

    def pair_packet_ins(self) -> dict[str, int]:
        """Packet-ins of host frames other than ARP so far, per ``"<eth_src> <eth_dst>"``."""
        return {f"{src} {dst}": n for (src, dst), n in sorted(self._pair_packet_ins.items())}
