"""Conventional L2: a Linux bridge in every switch namespace; loops broken by a spanning tree.

Where the switches form loops, the default ("auto" = "tree") computes the spanning tree STP
would converge to (root s1, equal port costs, lower switch first) and leaves the ports off
the tree out of the bridges, so the plane is ready at once. `stp: kernel` runs the kernel's
own STP instead (ready only after 2 x forward delay = 4 s, the kernel's minimum).

A broadcast (an ARP request) crosses every bridged link once, and a veth delivers each
crossing to the CPU's backlog within the same softirq: past net.core.netdev_max_backlog
(host-wide, so not ours to change) the kernel drops the rest, and in a large network whole
ARP floods are lost. Option ``rx`` moves the veth ends to veth's NAPI receive path, where
each end has its own ring (``rtnl.NsPlan.napi``); "auto" does so when a flood would fill
the backlog."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from dplab.planes import tagging, tc_vlan
from dplab.planes.base import Plane, PlaneError, farthest_hosts, ping_until
from dplab.substrate.network import Network
from dplab.substrate.rtnl import NsPlan

BRIDGE = "br0"
# Shortest timers the kernel accepts with STP on (centiseconds): ready ~2 x forward delay.
STP_TIMERS = "forward_delay 200 hello_time 100 max_age 600"
SETTLED = {"forwarding", "blocking", "disabled"}
POLL_S = 0.2
BACKLOG = Path("/proc/sys/net/core/netdev_max_backlog")
RX_CHOICES = ("auto", "napi", "backlog")


class BridgePlane(Plane):
    kind = "bridge"
    addressing = "l2"
    shared_switch_ns = False
    # stp: "auto" (a precomputed tree where the switches form a loop), "tree", "kernel"
    # (kernel STP; true means the same), or false (no loop protection at all).
    # vlan: a VLAN id: tc eBPF at the switch ports facing hosts tags and untags
    # (dplab.planes.tc_vlan); the bridges forward the tagged frames by MAC.
    # rx: how the veth ends receive: "backlog" (the CPU's backlog, veth's default), "napi"
    # (each end's own ring), "auto" (napi when one broadcast's flood reaches the backlog).
    OPTIONS: dict[str, Any] = {"stp": "auto", "vlan": None, "rx": "auto"}
    STP_CHOICES = ("auto", "tree", "kernel", True, False)

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        if self.options["stp"] not in self.STP_CHOICES:
            raise PlaneError(f"plane bridge: option 'stp' must be auto, tree, kernel, true or "
                             f"false, not {self.options['stp']!r}")
        if self.options["rx"] not in RX_CHOICES:
            raise PlaneError(f"plane bridge: option 'rx' must be one of {', '.join(RX_CHOICES)},"
                             f" not {self.options['rx']!r}")
        self.vlan = self._vlan_option()
        self.net: Network | None = None
        self.stp = False
        self.cut_links: set[frozenset[str]] = set()
        self.napi: bool | None = None  # whether start() put the veth ends on NAPI
        self._started = 0.0
        self._ready_s: float | None = None

    def _vlan_option(self) -> int | None:
        if self.options["vlan"] is not None and self._loop_choice_is_kernel():
            raise PlaneError("plane bridge: option 'vlan' tags along the precomputed tree; "
                             "the kernel's STP ('stp: kernel') would send its BPDUs tagged")
        return tagging.vid_option(self.options["vlan"], self.kind)

    def _loop_choice_is_kernel(self) -> bool:
        return self.options["stp"] is True or self.options["stp"] == "kernel"

    def start(self, net: Network) -> None:
        self.net = net
        mode = self._loop_mode(net)
        self.stp = mode == "kernel"
        self.cut_links = off_tree_links(net.topo.graph.subgraph(net.topo.switches()),
                                        net.topo.switches()) if mode == "tree" else set()
        self._started = time.monotonic()
        self.napi = self._napi_wanted(net)
        plans = {ns: NsPlan(napi=ends) for ns, ends in _veth_ends(net).items()} if self.napi else {}
        if self.stp:  # kernel STP's options go through ip(8)
            net.ip_batch({net.switch_ns(s): self._bridge_lines(net, s, i)
                          for i, s in enumerate(net.topo.switches(), start=1)})
        else:
            for s in net.topo.switches():
                plan = self._bridge_plan(net, s)
                plan.napi = plans.pop(net.switch_ns(s), NsPlan()).napi
                plans[net.switch_ns(s)] = plan
        net.configure(plans)
        self._hairpin_wlan_ports(net)
        if self.vlan is not None:
            tc_vlan.attach(net, self.vlan, self.cut_links)

    def _napi_wanted(self, net: Network) -> bool:
        """Whether the veth ends take the NAPI path: with rx auto, when one broadcast, which
        crosses every bridged link once, queues as many frames as the backlog holds."""
        if self.options["rx"] != "auto":
            return self.options["rx"] == "napi"
        return len(net.links) - len(self.cut_links) >= _backlog()

    def _hairpin_wlan_ports(self, net: Network) -> None:
        """An access point's stations all sit behind its one wlan port: a frame from one
        station to another must go back out of the port it came in on, which a bridge port
        does only in hairpin mode (as a Linux AP's bridge under hostapd)."""
        net.ip_batch({net.switch_ns(ap): [f"link set dev {net.switch_ports(ap)[port]} type "
                                          "bridge_slave hairpin on"]
                      for ap in net.topo.access_points()
                      if (port := net.wlan_port(ap)) is not None})

    def _loop_mode(self, net: Network) -> str:
        """"kernel", "tree" or "none": how this run keeps frames from looping."""
        choice = self.options["stp"]
        if self._loop_choice_is_kernel():
            return "kernel"
        if choice is False:
            return "none"
        if choice == "tree":
            return "tree"
        switches = net.topo.graph.subgraph(net.topo.switches())
        return "none" if not switches or nx.is_forest(switches) else "tree"

    def _bridge_lines(self, net: Network, switch: str, order: int) -> list[str]:
        # A priority from the switch order makes s1 the STP root on every run: the same tree.
        stp = f"stp_state 1 priority {min(order, 0xFFFF)} {STP_TIMERS}" if self.stp else ""
        lines = [f"link add {BRIDGE} type bridge {stp}".strip()]
        for port, ifname in net.switch_ports(switch).items():
            if frozenset((switch, net.neighbour(switch, port))) in self.cut_links:
                lines.append(f"link set {ifname} down")
            else:
                lines.append(f"link set {ifname} master {BRIDGE}")
        return [*lines, f"link set {BRIDGE} up"]

    def _bridge_plan(self, net: Network, switch: str) -> NsPlan:
        """The bridge without STP, made over rtnetlink: no process per switch."""
        plan = NsPlan(bridges=[BRIDGE], up=[BRIDGE])
        for port, ifname in net.switch_ports(switch).items():
            if frozenset((switch, net.neighbour(switch, port))) in self.cut_links:
                plan.down.append(ifname)
            else:
                plan.masters.append((ifname, BRIDGE))
        return plan

    def wait_ready(self, timeout: float) -> None:
        net = self._require_started()
        deadline = time.monotonic() + timeout
        while self.stp and not self._ports_settled(net):
            if time.monotonic() >= deadline:
                raise PlaneError(f"bridge: STP did not settle within {timeout} s "
                                 f"(ports still listening/learning)")
            time.sleep(POLL_S)
        src, dst = farthest_hosts(net, self.avoid_pairs)
        if not ping_until(net, src, dst, deadline):
            raise PlaneError(f"bridge: {src} cannot ping {dst} within {timeout} s")
        self._ready_s = time.monotonic() - self._started

    def _ports_settled(self, net: Network) -> bool:
        for switch in net.topo.switches():
            out = net.run(net.switch_ns(switch), ["bridge", "-j", "link", "show"]).stdout
            if any(port.get("state") not in SETTLED for port in json.loads(out or "[]")):
                return False
        return True

    def info(self) -> dict[str, str]:
        rx = self.options["rx"]
        return {"forwarding": "Linux kernel (bridge)",
                "veth_rx": (f"auto: napi when a broadcast crosses at least "
                            f"net.core.netdev_max_backlog ({_backlog()}) links, else backlog"
                            if rx == "auto" else f"{rx} (option rx)"),
                **tagging.info(self.vlan, "tc eBPF push/pop at the host ports")}

    def stats(self) -> dict[str, float | None]:
        """ready_s: start() to first ping across; blocked_ports: STP-blocked ports now, or
        with a precomputed tree the links left out (STP blocks one port per such link);
        veth_napi: 1 when the veth ends received through NAPI (option rx), else 0."""
        if self.net is None:
            return {"ready_s": None, "blocked_ports": None, "veth_napi": None}
        blocked = len(self.cut_links)
        # Only the kernel's STP blocks ports: without it no bridge need be asked (a process
        # per switch, thousands on the largest graphs).
        for switch in self.net.topo.switches() if self.stp else ():
            out = self.net.run(self.net.switch_ns(switch), ["bridge", "-j", "link", "show"]).stdout
            blocked += sum(port.get("state") == "blocking" for port in json.loads(out or "[]"))
        return {"ready_s": self._ready_s, "blocked_ports": float(blocked),
                "veth_napi": None if self.napi is None else float(self.napi)}

    def stop(self) -> None:
        self.net = None

    def _require_started(self) -> Network:
        if self.net is None:
            raise PlaneError("bridge: wait_ready() before start()")
        return self.net


def _backlog() -> int:
    return int(BACKLOG.read_text())


def _veth_ends(net: Network) -> dict[str, list[str]]:
    """Namespace -> the veth ends of the network's wired links in it."""
    ends: dict[str, list[str]] = {}
    for link in net.links:
        for end in (link.a, link.b):
            ends.setdefault(net.node_ns(end.node), []).append(end.ifname)
    return ends


def off_tree_links(switches: nx.Graph, order: list[str]) -> set[frozenset[str]]:
    """Switch links outside the tree STP converges to with equal costs: breadth first from
    the first switch, a switch's lower-ordered neighbours first (lower bridge id wins)."""
    rank = {s: i for i, s in enumerate(order)}

    def by_rank(nodes: Iterable[str]) -> list[str]:
        return sorted(nodes, key=rank.__getitem__)

    tree = {frozenset(edge) for component in nx.connected_components(switches)
            for edge in nx.bfs_edges(switches, min(component, key=rank.__getitem__),
                                     sort_neighbors=by_rank)}
    return {frozenset(e) for e in switches.edges} - tree
