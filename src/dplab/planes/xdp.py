"""eBPF/XDP forwarding: a program on every switch port (native XDP on veth), its tables in
BPF maps the lab writes through libbpf (dplab.xdp).

Modes:
- ``l2``: learning switch (xdp/l2_switch.bpf.c), one MAC table per switch, flooding through
  a devmap broadcast; loops cut as the bridge plane cuts them (the spanning tree STP would
  converge to): ports off the tree stay out of the flood set and drop what arrives.
- ``l3``: router from a static LPM-trie table (xdp/l3_router.bpf.c) the lab fills from the
  router plane's shortest paths, with both MACs of every hop. ARP goes to the switch
  namespace's stack (XDP_PASS), which answers for the gateway addresses; forwarding stays
  off there, so only the program forwards.
- ``l3-fib``: the router plane's kernel routes and addresses, and a program
  (xdp/l3_fib.bpf.c) asking that FIB (``bpf_fib_lookup``); until the stack has resolved a
  next hop's neighbour entry, the frame goes to the stack, which forwards it itself.
- ``reactive`` / ``proactive``: the lab's forwarding application (control.forwarding, as
  over OpenFlow and P4Runtime) in a thread of this process drives xdp/controlled.bpf.c
  through BPF maps (dplab.xdp.southbound): packet-ins through a ring buffer, path rules as
  map entries, packet-outs through packet sockets.

Or the user's own program (options ``program``, ``maps``, ``addressing``; dplab.xdp.user):
compiled with clang at start, loaded on every switch with its `ports` devmap filled and
its map entries file written, attached to every switch port, and a tc program in the same
object attached beside it on tc ingress. ``addressing: l3`` gives the switches the router
plane's addresses, routes and ip_forward, for a program that passes frames to the stack.
Ready once the farthest hosts ping each other; option ``ready: started`` skips that ping
(planes.base.READY_WAYS), for a program through which no ping passes (a drop program).

Every host's ``eth0`` runs an XDP_PASS program: a veth takes frames its peer's XDP program
redirects into it only while it runs XDP itself (xdp/pass.bpf.c says why). Hosts checksum
in software (transmit checksum offload off on ``eth0``): a veth hands TCP and UDP frames
over with the checksum left to "hardware" (CHECKSUM_PARTIAL), which an XDP redirect does
not carry along, so the receiver would get them with a wrong checksum and drop them.
A redirected frame goes straight into the peer veth, past the output port's qdisc, where a
link's rate (TBF), delay and loss (netem) live. So on a switch with such ports the program
sends frames for them up as skbs with its decision in XDP metadata, and tc_qdisc (the same
object's tc program, xdp/qdisc.h) redirects them to that port's egress, through its qdisc;
frames to the other ports keep the XDP redirect. ``info()`` names the ports of each path.
A user's program gets no such path: its redirects (and XDP_TX) skip the qdisc. So a user's
program on a topology whose switch ports have a rate, delay or loss is refused when the
plane is checked against the topology (``network()``: at plan time, before anything runs),
naming the links, unless option ``unshaped_ports: true`` accepts that those links are not
shaped at the switch's side (the host's side keeps its qdisc); ``info()`` then names them.
"""

from __future__ import annotations

import ipaddress
import struct
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

from dplab.control.forwarding import PROACTIVE, REACTIVE
from dplab.control.topology_view import PortRef
from dplab.planes import host_ttl
from dplab.planes.aggregate import aggregate
from dplab.planes.base import (
    Plane,
    PlaneError,
    RulePackets,
    farthest_hosts,
    paths_from_rule_packets,
    ping_until,
)
from dplab.planes.bridge import off_tree_links
from dplab.planes.router import RouterPlane, next_hops
from dplab.substrate.network import HOST_IF, Network
from dplab.substrate.wmedium import AP_IF
from dplab.topology.model import Topology
from dplab.xdp.controller import XdpController
from dplab.xdp.libbpf import LibbpfError
from dplab.xdp.netns import Interface, interfaces
from dplab.xdp.programs import COUNTERS, ProgramMissing, XdpProgram
from dplab.xdp.southbound import ControlledSwitch, XdpSouthbound
from dplab.xdp.user import UserProgram, UserProgramError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dplab.workloads.flows import Flow

# mode -> (object in xdp/build, program in it)
MODES = {"l2": ("l2_switch", "xdp_l2"), "l3": ("l3_router", "xdp_l3"),
         "l3-fib": ("l3_fib", "xdp_fib"), REACTIVE: ("controlled", "xdp_ctl"),
         PROACTIVE: ("controlled", "xdp_ctl")}
CONTROLLED = (REACTIVE, PROACTIVE)
USER = "program"  # the mode of a plane running the user's own program
POLL_S = 0.1
LOCAL = 0  # a next hop's ifindex for the switch's own addresses: to the stack
TC_QDISC = "tc_qdisc"  # xdp/qdisc.h: sends what the XDP program passed it through a qdisc


class XdpPlane(Plane):
    kind = "xdp"
    shared_switch_ns = False
    OPTIONS: dict[str, Any] = {"mode": None, "program": None, "maps": None,
                               "addressing": "l2", "unshaped_ports": False, "ready": "ping"}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.user: UserProgram | None = None
        if self.options["program"] is not None:
            self.user = _user_program(self.options)
            mode = USER
            self.addressing = self.options["addressing"]
        else:
            mode = self.options["mode"] if self.options["mode"] is not None else "l2"
            if not isinstance(mode, str) or mode not in MODES:
                raise PlaneError(f"plane xdp: option 'mode' must be one of "
                                 f"{', '.join(MODES)}, not {mode!r}")
            for option in ("maps", "addressing", "unshaped_ports"):
                if self.options[option] != self.OPTIONS[option]:
                    raise PlaneError(f"plane xdp: option {option!r} goes with 'program'")
            self.addressing = "l3" if mode.startswith("l3") else "l2"
        self.options["mode"] = mode
        self.net: Network | None = None
        self.switch_programs: dict[str, XdpProgram] = {}
        self.host_program: XdpProgram | None = None
        self.controller: XdpController | None = None
        self._final_controller: dict[str, float | None] = {}
        self._final: dict[str, dict[str, int]] = {}
        self.cut_links: set[frozenset[str]] = set()
        self.qdisc_ports: dict[str, list[str]] = {}  # switch -> ports its qdisc must see
        self.deep: int | None = None  # planes.host_ttl: routers on the longest path
        self._started = 0.0
        self._ready_s: float | None = None
        self._build_dir: tempfile.TemporaryDirectory[str] | None = None
        self.unshaped_links: list[str] = []  # the user's program: links it leaves unshaped

    def network(self, topo: Topology) -> Network:
        """Refuses the user's program on shaped switch ports unless the experiment accepts
        them unshaped (module docstring)."""
        self._check_shaping(topo)
        return super().network(topo)

    def _check_shaping(self, topo: Topology) -> None:
        if self.user is None:
            return
        self.unshaped_links = shaped_switch_links(topo)
        if self.unshaped_links and not self.options["unshaped_ports"]:
            raise PlaneError(
                f"plane xdp: option 'program': {self.user.source}'s XDP redirects and XDP_TX "
                f"skip the switch ports' qdiscs, so the rate, delay or loss of "
                f"{', '.join(self.unshaped_links)} would not apply on the switch's side; give "
                f"those links none (e.g. topology params edge_bw: null), or set option "
                f"'unshaped_ports: true' to run with them unshaped there")

    def start(self, net: Network) -> None:
        if net.addressing != self.addressing:
            raise PlaneError(f"xdp: mode {self.options['mode']} needs a network built with "
                             f"addressing={self.addressing!r}, not {net.addressing!r}")
        self.net = net
        self._started = time.monotonic()
        self.qdisc_ports = {}
        self._check_shaping(net.topo)
        if self.addressing == "l3":  # the switches route
            self.deep = host_ttl.fit(net, self.kind)
        try:
            self._prepare_stacks(net)
            fabric = net.topo.graph.subgraph(net.topo.switches())
            if self.options["mode"] == "l2" and not nx.is_forest(fabric):
                self.cut_links = off_tree_links(fabric, net.topo.switches())
            ports = {s: interfaces(net.switch_ns(s)) for s in net.topo.switches()}
            self._attach_host_side(net)
            for switch in net.topo.switches():
                self._load_switch(net, switch, ports)
            if self.options["mode"] in CONTROLLED:
                self._start_controller(net, ports)
        except (LibbpfError, ProgramMissing, OSError, UserProgramError) as exc:
            self.stop()
            raise PlaneError(f"xdp: {exc}") from exc

    def _prepare_stacks(self, net: Network) -> None:
        mode = self.options["mode"]
        if mode == "l3-fib" or (mode == USER and self.addressing == "l3"):
            RouterPlane({}).start(net)  # addresses, routes, ip_forward: the FIB to ask
        elif mode == "l3":
            net.sysctl({net.switch_ns(s): {"net.ipv4.ip_forward": "0"}
                        for s in net.topo.switches()})

    def _attach_host_side(self, net: Network) -> None:
        """A pass program on every peer of a switch port: a veth takes XDP redirects only
        when its peer runs XDP. An access point's wlan port's peer is in its medium's
        namespace."""
        self.host_program = XdpProgram("pass", "xdp_pass")
        for host in net.topo.hosts():
            ns = net.host_ns(host)
            net.run(ns, ["ethtool", "-K", HOST_IF, "tx", "off"])
            self.host_program.attach(ns, [interfaces(ns)[HOST_IF]])
        for ap in net.topo.access_points():
            ns = net.medium_ns(ap)
            self.host_program.attach(ns, [interfaces(ns)[AP_IF]])

    def _load_switch(self, net: Network, switch: str,
                     ports: dict[str, dict[str, Interface]]) -> None:
        ns, own = net.switch_ns(switch), ports[switch]
        switch_ports = [own[name] for name in net.switch_ports(switch).values()]
        if self.user is not None:
            self._load_user(self.user, net, switch, ports).attach(ns, switch_ports)
            return
        obj, program_name = MODES[self.options["mode"]]
        shaped = [own[name] for name in qdisc_ports(net, switch)]
        program = XdpProgram(obj, program_name, map_prefix=f"{net.prefix}{switch}",
                             tc_program=TC_QDISC if shaped else None)
        self.switch_programs[switch] = program
        if self.options["mode"] == "l2":
            flood = [own[name] for port, name in net.switch_ports(switch).items()
                     if frozenset((switch, net.neighbour(switch, port))) not in self.cut_links]
        else:
            flood = switch_ports
        program.set_ports(ns, flood)
        if (wlan := net.wlan_port(switch)) is not None:
            program.set_hairpin_ports([own[net.switch_ports(switch)[wlan]]])
        if shaped:
            self.qdisc_ports[switch] = [port.name for port in shaped]
            program.set_qdisc_ports(shaped, flood)
        if self.options["mode"] == "l3":
            routes = program.map("routes")
            for key, value in static_routes(net, switch, ports):
                routes.update(key, value)
        program.attach(ns, switch_ports)

    def _load_user(self, user: UserProgram, net: Network, switch: str,
                   ports: dict[str, dict[str, Interface]]) -> XdpProgram:
        """The user's object on ``switch`` (compiled on the first switch): its `ports`
        devmap (if it has one) holds every switch port, then the entries file's entries for
        this switch are written. Kept in switch_programs first, so stop() frees it if an
        entry fails."""
        if self._build_dir is None:
            self._build_dir = tempfile.TemporaryDirectory(prefix=f"{net.prefix}xdp-")
            user.compile(Path(self._build_dir.name))
        program = user.load(map_prefix=f"{net.prefix}{switch}")
        self.switch_programs[switch] = program
        ns, own = net.switch_ns(switch), ports[switch]
        numbered = {port: own[name] for port, name in net.switch_ports(switch).items()}
        if program.has_map("ports"):
            program.set_ports(ns, numbered.values())
        user.write_entries(program, switch, numbered)
        return program

    def _start_controller(self, net: Network, ports: dict[str, dict[str, Interface]]) -> None:
        switches = [ControlledSwitch(s, net.switch_ns(s), self.switch_programs[s],
                                     {p: ports[s][name] for p, name in
                                      net.switch_ports(s).items()})
                    for s in net.topo.switches()]
        hairpin = tuple(PortRef(ap, port) for ap in net.topo.access_points()
                        if (port := net.wlan_port(ap)) is not None)
        self.controller = XdpController(XdpSouthbound(switches), self.options["mode"], hairpin)
        self.controller.start()

    def wait_ready(self, timeout: float) -> None:
        if self.net is None:
            raise PlaneError("xdp: wait_ready() before start()")
        deadline = time.monotonic() + timeout
        if self.controller is not None:
            self._wait_for_discovery(self.net, self.controller, deadline)
        src, dst = farthest_hosts(self.net, self.avoid_pairs)
        if self.pings_when_ready() and not ping_until(self.net, src, dst, deadline):
            raise PlaneError(f"xdp ({self.options['mode']}): {src} cannot ping {dst} "
                             f"within {timeout} s")
        self._ready_s = time.monotonic() - self._started

    def _wait_for_discovery(self, net: Network, controller: XdpController,
                            deadline: float) -> None:
        """Every switch up and every switch link found by LLDP; proactive: after every host
        pinged its next one (so the controller heard every host's ARP), every host pair's
        path installed."""
        switches = set(net.topo.switches())
        links = sum(1 for u, v in net.topo.graph.edges if u in switches and v in switches)
        self._wait_for(controller, deadline, "lldp_links", links)
        if self.options["mode"] == PROACTIVE:
            hosts = net.topo.hosts()
            for i, host in enumerate(hosts):
                net.popen(net.host_ns(host), ["ping", "-c1", "-W1", "-n",
                                              net.host_ip(hosts[(i + 1) % len(hosts)])])
            self._wait_for(controller, deadline, "proactive_pairs",
                           len(hosts) * (len(hosts) - 1))

    def _wait_for(self, controller: XdpController, deadline: float, counter: str,
                  wanted: int) -> None:
        while controller.counters()[counter] != wanted:
            if time.monotonic() >= deadline:
                raise PlaneError(f"xdp ({self.options['mode']}): {counter} is not {wanted} in "
                                 f"time (now {controller.counters()})")
            time.sleep(POLL_S)

    def switch_counters(self) -> dict[str, dict[str, int]]:
        """switch -> the program's counters (rx, fwd, flood, pass, drop, learn); after stop(),
        their last values."""
        if not self.switch_programs:
            return self._final
        return {s: program.counters() for s, program in self.switch_programs.items()}

    def info(self) -> dict[str, str]:
        if self.user is not None:
            unshaped = (f"; accepted (option unshaped_ports), these links are not shaped "
                        f"on the switch's side: {', '.join(self.unshaped_links)}"
                        if self.unshaped_links else "; no switch port has a rate, delay or "
                        "loss to keep")
            return {"forwarding": f"the user's XDP program {self.user.source} in the kernel",
                    "transmit": "as the program says: an XDP redirect or XDP_TX skips the "
                                f"output port's qdisc{unshaped}", **host_ttl.info(self.deep)}
        obj, program = MODES[self.options["mode"]]
        shaped = ", ".join(p for ports in self.qdisc_ports.values() for p in ports)
        transmit = (f"XDP redirect to ports without shaping; through the port's qdisc "
                    f"(XDP_PASS, then {TC_QDISC} on tcx ingress redirects to its egress) to "
                    f"ports with a rate, delay or loss: {shaped}" if shaped else
                    "XDP redirect (no switch port has a rate, delay or loss to keep)")
        return {"forwarding": f"XDP program {program} (xdp/{obj}.bpf.c) in the kernel",
                "transmit": transmit, **host_ttl.info(self.deep)}

    def stats(self) -> dict[str, float | None]:
        """ready_s; xdp_<counter>: summed over switches; <switch>_<counter>: per switch.
        None when no program ran. Under a controller also its counters (those of the ovs
        and p4 planes, and rules_expired) and xdp_rules (path rules in the maps now)."""
        counters = self.switch_counters()
        out: dict[str, float | None] = {"ready_s": self._ready_s, **self._controller_stats()}
        for name in COUNTERS:
            values = [c[name] for c in counters.values()]
            out[f"xdp_{name}"] = float(sum(values)) if values else None
        for switch, values in counters.items():
            out.update({f"{switch}_{name}": float(v) for name, v in values.items()})
        return out

    def _controller_stats(self) -> dict[str, float | None]:
        if self.controller is None:
            return self._final_controller
        try:
            counters = self.controller.counters()
        except RuntimeError as exc:
            raise PlaneError(f"xdp: {exc}") from exc
        return {**counters, "xdp_rules": float(len(self.controller.southbound.path_rules()))}

    def flow_paths(self, flows: Sequence[Flow]) -> dict[str, list[str]]:
        """Under a controller: the switches whose path rule for the flow's (src MAC,
        dst MAC) forwarded packets (the program counts each rule's hits), ordered by hops
        from the source host. The other modes keep no rule per host pair: nothing to tell."""
        counted = self.path_rule_packets()
        if self.net is None or counted is None:
            return {}
        return paths_from_rule_packets(self.net, flows, counted)

    def path_rule_packets(self) -> RulePackets | None:
        """From every switch's ``rules`` map; None without a controller."""
        return None if self.controller is None else self.controller.rule_packets()

    def memory(self) -> dict[str, dict[str, int]]:
        """switch -> bytes the kernel accounts to its object's ``programs`` and ``maps``
        (the hosts' pass program left out); {} when stopped."""
        return {switch: dict(zip(("programs", "maps"), program.obj.memory(), strict=True))
                for switch, program in self.switch_programs.items()}

    def run_time_ns(self) -> int | None:
        """Nanoseconds the kernel spent in the switches' programs (XDP and tc) while
        run-time statistics were on (``libbpf.run_time_stats``); None when stopped or not
        accounted. The hosts' pass program is left out."""
        times = [program.obj.run_time_ns() for program in self.switch_programs.values()]
        if not times or None in times:
            return None
        return sum(t for t in times if t is not None)

    def failures(self) -> list[str]:
        """The controller thread, once an error stopped it (the programs forward on with
        the rules they hold, but nothing answers a packet-in any more)."""
        if self.controller is None or self.controller.error is None:
            return []
        return [f"the controller thread failed: {self.controller.error!r}"]

    def stop(self) -> None:
        """Stop the controller, detach every program and free every map (idempotent)."""
        if self.controller is not None:
            self.controller.stop()
            if self.controller.error is None:
                self._final_controller = self._controller_stats()
            self.controller = None
        if self.switch_programs:
            self._final = self.switch_counters()
        for program in [*self.switch_programs.values(), self.host_program]:
            if program is not None:
                program.close()
        self.switch_programs, self.host_program, self.net = {}, None, None
        if self._build_dir is not None:
            self._build_dir.cleanup()
            self._build_dir = None


def _user_program(options: dict[str, Any]) -> UserProgram:
    if options["mode"] is not None:
        raise PlaneError("plane xdp: options 'mode' and 'program' exclude each other")
    if not isinstance(options["unshaped_ports"], bool):
        raise PlaneError(f"plane xdp: option 'unshaped_ports' must be true or false, not "
                         f"{options['unshaped_ports']!r}")
    if options["addressing"] not in ("l2", "l3"):
        raise PlaneError(f"plane xdp: option 'addressing' must be l2 or l3, not "
                         f"{options['addressing']!r}")
    try:
        return UserProgram(Path(options["program"]),
                           Path(options["maps"]) if options["maps"] is not None else None)
    except UserProgramError as exc:
        raise PlaneError(f"plane xdp: {exc}") from exc


def qdisc_ports(net: Network, switch: str) -> list[str]:
    """The ports of ``switch`` whose link has a qdisc to keep: a rate (TBF), delay or loss
    (netem)."""
    graph = net.topo.graph
    return [name for port, name in net.switch_ports(switch).items()
            if _has_qdisc(graph.edges[switch, net.neighbour(switch, port)])]


def shaped_switch_links(topo: Topology) -> list[str]:
    """``s1-h1 (100 Mbit/s)``: every link at a switch port with a qdisc to keep. A wireless
    link's rate and loss are the medium emulator's (between the AP's wlan port and the
    station), which XDP on the AP does not skip."""
    switches = set(topo.switches())
    return [f"{a}-{b} ({_shaping(link)})" for a, b, link in topo.graph.edges(data=True)
            if (a in switches or b in switches) and not link.get("wireless")
            and _has_qdisc(link)]


def _shaping(link: dict[str, Any]) -> str:
    parts = [f"{link['bw_mbit']:g} Mbit/s" if link.get("bw_mbit") is not None else "",
             *(f"{link[key]:g} {unit}" if (link.get(key) or 0) > 0 else ""
               for key, unit in (("delay_ms", "ms delay"), ("jitter_ms", "ms jitter"),
                                 ("loss_pct", "% loss")))]
    return ", ".join(p for p in parts if p)


def _has_qdisc(link: dict[str, Any]) -> bool:
    return (link.get("bw_mbit") is not None or (link.get("delay_ms") or 0) > 0
            or (link.get("jitter_ms") or 0) > 0 or (link.get("loss_pct") or 0) > 0)


def static_routes(net: Network, switch: str, ports: dict[str, dict[str, Interface]]
                  ) -> list[tuple[bytes, bytes]]:
    """The l3 program's LPM-trie entries for ``switch``: each host's /24 to the port towards
    it with the output port's MAC and the next node's (remote hosts' aggregated exactly,
    ``planes.aggregate``), and the gateway addresses on this switch to its own stack."""
    entries = []
    own = ports[switch]
    hosts = set(net.topo.hosts())
    for host in sorted(hosts.intersection(net.topo.graph.neighbors(switch))):
        name = net.switch_ports(switch)[net.port_towards(switch, host)]  # the wlan port: shared
        mac = bytes.fromhex(net.host_mac(host).replace(":", ""))
        entries.append(route_entry(_host_subnet(net, host), own[name], mac))
        gateway = ipaddress.ip_network(f"{net.host_gateway(host)}/32")
        entries.append((_route_key(gateway), struct.pack("<I6s6s", LOCAL, b"", b"")))
    remote = []
    for host, nearer in next_hops(net)[switch]:
        out = own[_port_towards(net, switch, nearer)]
        peer = ports[nearer][_port_towards(net, nearer, switch)]
        remote.append((_host_subnet(net, host), (out, peer.mac)))
    entries += [route_entry(subnet, out, mac) for subnet, (out, mac) in aggregate(remote)]
    return entries


def _host_subnet(net: Network, host: str) -> ipaddress.IPv4Network:
    return ipaddress.ip_network(f"{net.host_gateway(host)}/24", strict=False)


def route_entry(subnet: ipaddress.IPv4Network, out: Interface, next_mac: bytes
                ) -> tuple[bytes, bytes]:
    """An entry of the l3 program's `routes`: ``subnet`` leaves by ``out``, from its MAC to
    ``next_mac`` (struct route_key -> struct next_hop of xdp/l3_router.bpf.c)."""
    return _route_key(subnet), struct.pack("<I6s6s", out.ifindex, out.mac, next_mac)


def _route_key(subnet: ipaddress.IPv4Network) -> bytes:
    # struct route_key: prefix length in host order, then the address in network order
    return struct.pack("<I4s", subnet.prefixlen, subnet.network_address.packed)


def _port_towards(net: Network, switch: str, neighbour: str) -> str:
    for port, name in net.switch_ports(switch).items():
        if net.neighbour(switch, port) == neighbour:
            return name
    raise PlaneError(f"xdp: {switch} has no port towards {neighbour}")
