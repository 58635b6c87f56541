"""Conventional L2: a Linux bridge in every switch namespace, kernel STP where there are loops."""

from __future__ import annotations

import json
import time
from typing import Any

import networkx as nx

from dplab.planes.base import Plane, PlaneError, farthest_hosts, ping_until
from dplab.substrate.network import Network

BRIDGE = "br0"
# Shortest timers the kernel accepts with STP on (centiseconds): ready ~2 x forward delay.
STP_TIMERS = "forward_delay 200 hello_time 100 max_age 600"
SETTLED = {"forwarding", "blocking", "disabled"}
POLL_S = 0.2


class BridgePlane(Plane):
    kind = "bridge"
    addressing = "l2"
    shared_switch_ns = False
    # stp: "auto" (on when the switches form a loop), True or False.
    OPTIONS: dict[str, Any] = {"stp": "auto"}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        if self.options["stp"] not in ("auto", True, False):
            raise PlaneError(f"plane bridge: option 'stp' must be auto, true or false, "
                             f"not {self.options['stp']!r}")
        self.net: Network | None = None
        self.stp = False
        self._started = 0.0
        self._ready_s: float | None = None

    def start(self, net: Network) -> None:
        self.net = net
        self.stp = self._wants_stp(net)
        self._started = time.monotonic()
        net.ip_batch({net.switch_ns(s): self._bridge_lines(net, s, i)
                      for i, s in enumerate(net.topo.switches(), start=1)})

    def _wants_stp(self, net: Network) -> bool:
        if self.options["stp"] != "auto":
            return bool(self.options["stp"])
        switches = net.topo.graph.subgraph(net.topo.switches())
        return bool(switches) and not nx.is_forest(switches)

    def _bridge_lines(self, net: Network, switch: str, order: int) -> list[str]:
        # A priority from the switch order makes s1 the STP root on every run: the same tree.
        stp = f"stp_state 1 priority {min(order, 0xFFFF)} {STP_TIMERS}" if self.stp else ""
        lines = [f"link add {BRIDGE} type bridge {stp}".strip()]
        lines += [f"link set {port} master {BRIDGE}" for port in net.switch_ports(switch).values()]
        return [*lines, f"link set {BRIDGE} up"]

    def wait_ready(self, timeout: float) -> None:
        net = self._require_started()
        deadline = time.monotonic() + timeout
        while self.stp and not self._ports_settled(net):
            if time.monotonic() >= deadline:
                raise PlaneError(f"bridge: STP did not settle within {timeout} s "
                                 f"(ports still listening/learning)")
            time.sleep(POLL_S)
        src, dst = farthest_hosts(net)
        if not ping_until(net, src, dst, deadline):
            raise PlaneError(f"bridge: {src} cannot ping {dst} within {timeout} s")
        self._ready_s = time.monotonic() - self._started

    def _ports_settled(self, net: Network) -> bool:
        for switch in net.topo.switches():
            out = net.run(net.switch_ns(switch), ["bridge", "-j", "link", "show"]).stdout
            if any(port.get("state") not in SETTLED for port in json.loads(out or "[]")):
                return False
        return True

    def stats(self) -> dict[str, float | None]:
        """ready_s: start() to first ping across; blocked_ports: STP-blocked ports now."""
        if self.net is None:
            return {"ready_s": None, "blocked_ports": None}
        blocked = 0
        for switch in self.net.topo.switches():
            out = self.net.run(self.net.switch_ns(switch), ["bridge", "-j", "link", "show"]).stdout
            blocked += sum(port.get("state") == "blocking" for port in json.loads(out or "[]"))
        return {"ready_s": self._ready_s, "blocked_ports": float(blocked)}

    def stop(self) -> None:
        self.net = None

    def _require_started(self) -> Network:
        if self.net is None:
            raise PlaneError("bridge: wait_ready() before start()")
        return self.net
