"""User-space forwarding: one ``dplab-fwd`` process per switch (switch/fwd), no SDN, no P4.

``mode: bridge`` makes each a learning bridge (MAC learning, flooding); where the switches
form loops, the ports off the spanning tree STP would converge to are left out, as the
bridge plane does (``bridge.off_tree_links``). ``mode: router`` makes each an IPv4 router
over the routes the router plane computes (``router.next_hops``): longest-prefix match,
source and destination MACs rewritten, TTL lowered, checksum updated. The kernel of each
switch namespace keeps only what is addressed to the switch itself (ARP and ping of the
hosts' gateways); its IP forwarding stays off, so every forwarded packet is the
forwarder's. Configurations and logs live in ``<run dir>/userspace``.

Study 002's workloads: ``vlan: <id>`` (a bridge only) makes the forwarders tag at the edges
as the other planes' ``vlan`` does, over the ports ``tagging.plan`` gives: a frame from a
host gets the 802.1Q tag pushed at its switch, crosses the switch links tagged and is popped
at the port towards the destination host. ``pipeline: complex`` puts every packet through
``pipeline.EXTRA_LOOKUPS`` match-all tables before it is forwarded; ``counters(switch)``
reads each table's hits from the running forwarder."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import networkx as nx

from dplab.planes import host_ttl, pipeline, tagging
from dplab.planes.base import Plane, PlaneError, farthest_hosts, ping_until
from dplab.planes.bridge import off_tree_links
from dplab.planes.controlled import _ending, _tail
from dplab.planes.router import next_hops
from dplab.substrate.network import Network

ROOT = Path(__file__).resolve().parents[3]
FWD_BIN = ROOT / "switch" / "target" / "release" / "dplab-fwd"
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
MODES = {"bridge": "l2", "router": "l3"}


class UserspacePlane(Plane):
    kind = "userspace"
    shared_switch_ns = False
    OPTIONS: dict[str, Any] = {"mode": "bridge", "vlan": None, "pipeline": "plain"}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        mode = self.options["mode"]
        if mode not in MODES:
            raise PlaneError(f"plane userspace: option 'mode' must be bridge or router, "
                             f"not {mode!r}")
        self.mode: str = mode
        self.addressing = MODES[mode]
        self.vlan = tagging.vid_option(self.options["vlan"], self.kind)
        if self.vlan is not None and mode != "bridge":
            raise PlaneError("plane userspace: option 'vlan' tags frames a bridge forwards; "
                             "it needs mode bridge")
        pipeline.check_option(self.options["pipeline"], self.kind)
        self.net: Network | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.cut_links: set[frozenset[str]] = set()
        self.routes = 0
        self.deep: int | None = None  # planes.host_ttl: routers on the longest path
        self.counters: dict[str, dict[str, Any]] = {}
        self._started = 0.0
        self._ready_s: float | None = None

    def start(self, net: Network) -> None:
        if net.addressing != self.addressing:
            raise PlaneError(f"userspace: mode {self.mode} needs a network built with "
                             f"addressing={self.addressing!r}")
        if not FWD_BIN.exists():
            raise PlaneError(f"userspace: no forwarder at {FWD_BIN} "
                             f"(cargo build --release in switch/)")
        self.net = net
        self._started = time.monotonic()
        if self.mode == "router":
            self.deep = host_ttl.fit(net, self.kind)
        switches = net.topo.switches()
        # Forwarding is the forwarder's alone, whatever the namespace was given.
        net.sysctl({net.switch_ns(s): {"net.ipv4.ip_forward": "0"} for s in switches})
        if self.mode == "bridge":
            fabric = net.topo.graph.subgraph(switches)
            if not nx.is_forest(fabric):
                self.cut_links = off_tree_links(fabric, switches)
        macs = _port_macs(net)
        run_dir = net.run_dir / "userspace"
        run_dir.mkdir(parents=True, exist_ok=True)
        hops = next_hops(net) if self.mode == "router" else {}
        plan = (tagging.plan(net.topo, net.host_mac, self.cut_links)
                if self.vlan is not None else {})
        for switch in switches:
            config = self._config(net, switch, macs, dict(hops.get(switch, [])))
            if self.vlan is not None:
                config["vlan"] = {"vid": self.vlan, "access": list(plan[switch].access)}
            path = run_dir / f"{switch}.json"
            path.write_text(json.dumps(config, indent=1))
            log = (run_dir / f"{switch}.log").open("w")
            self.procs[switch] = net.popen(net.switch_ns(switch),
                                           [str(FWD_BIN), "--config", str(path)],
                                           stdout=subprocess.PIPE, stderr=log)
            log.close()
        for switch, proc in self.procs.items():
            _wait_ready_line(proc, switch, run_dir / f"{switch}.log")

    def _config(self, net: Network, switch: str, macs: dict[str, str],
                hops: dict[str, str]) -> dict[str, Any]:
        """The forwarder's configuration for ``switch`` (switch/fwd/src/config.rs)."""
        ports = [{"number": port, "iface": ifname, "mac": macs[ifname]}
                 for port, ifname in sorted(net.switch_ports(switch).items())
                 if frozenset((switch, net.neighbour(switch, port))) not in self.cut_links]
        extra = pipeline.EXTRA_LOOKUPS if self.options["pipeline"] == "complex" else 0
        config: dict[str, Any] = {"switch": switch, "mode": self.mode, "ports": ports,
                                  "extra_lookups": extra}
        if self.mode == "router":
            config["routes"] = self._routes(net, switch, macs, hops)
            config["local"] = [net.host_gateway(h) for h in net.topo.hosts()
                               if _port_to(net, switch, h) is not None]
            self.routes += len(config["routes"])
        return config

    def _routes(self, net: Network, switch: str, macs: dict[str, str],
                hops: dict[str, str]) -> list[dict[str, Any]]:
        """A route to every host's /24: out of the port to the host itself (to its MAC),
        or to the next switch on a shortest path (to that switch's port's MAC)."""
        routes = []
        for host in net.topo.hosts():
            port = _port_to(net, switch, host)
            if port is not None:
                next_mac = net.host_mac(host)
            elif host in hops:
                port = _port_to(net, switch, hops[host])
                back = _port_to(net, hops[host], switch)
                assert port is not None and back is not None
                next_mac = macs[net.switch_ports(hops[host])[back]]
            else:
                continue  # a host this switch cannot reach
            prefix = f"{net.host_gateway(host).rsplit('.', 1)[0]}.0/24"  # as router's
            routes.append({"prefix": prefix, "port": port, "next_hop_mac": next_mac})
        return routes

    def wait_ready(self, timeout: float) -> None:
        if self.net is None:
            raise PlaneError("userspace: wait_ready() before start()")
        src, dst = farthest_hosts(self.net)
        if not ping_until(self.net, src, dst, time.monotonic() + timeout):
            raise PlaneError(f"userspace: {src} cannot ping {dst} within {timeout} s")
        self._ready_s = time.monotonic() - self._started

    def info(self) -> dict[str, str]:
        return {"forwarding": f"user space (dplab-fwd over AF_PACKET), {self.mode}",
                **tagging.info(self.vlan, "pushed and popped by the forwarder at the host "
                                          "ports"),
                **pipeline.info(self.options["pipeline"]), **host_ttl.info(self.deep)}

    def live_counters(self, switch: str) -> dict[str, Any]:
        """The running forwarder of ``switch``'s counters (main.rs ``report``: packets,
        drops by reason, ``extra_lookups``: each extra table's hits), asked for with
        SIGUSR1; PlaneError if it does not answer within STOP_TIMEOUT_S."""
        proc = self.procs[switch]
        assert proc.stdout is not None
        proc.send_signal(signal.SIGUSR1)
        if not select.select([proc.stdout], [], [], STOP_TIMEOUT_S)[0]:
            raise PlaneError(f"userspace: the forwarder of {switch} did not report its "
                             f"counters within {STOP_TIMEOUT_S} s")
        return json.loads(proc.stdout.readline())

    def stats(self) -> dict[str, float | None]:
        """ready_s: start() to first ping across; processes: forwarders running now;
        routes (router) or blocked_ports (bridge: the links left out of the tree, one
        blocked port per link as STP would)."""
        running = sum(proc.poll() is None for proc in self.procs.values())
        stats: dict[str, float | None] = {"ready_s": self._ready_s,
                                          "processes": float(running)}
        if self.mode == "router":
            stats["routes"] = float(self.routes)
        else:
            stats["blocked_ports"] = float(len(self.cut_links))
        return stats

    def failures(self) -> list[str]:
        """Each forwarder that has exited: its switch, how it ended and its log."""
        return [f"the forwarder of {switch} {_ending(proc.returncode)}; log {log}"
                f"{_tail(log) if proc.returncode >= 0 else ''}"
                for switch, proc in self.procs.items() if proc.poll() is not None
                for log in [self._log(switch)]]

    def _log(self, switch: str) -> Path:
        assert self.net is not None
        return self.net.run_dir / "userspace" / f"{switch}.log"

    def stop(self) -> None:
        """Stops every forwarder and keeps the counters each prints as it ends."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for switch, proc in self.procs.items():
            try:
                out, _ = proc.communicate(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            lines = out.decode(errors="replace").splitlines()
            if lines and lines[-1].startswith("{"):
                self.counters[switch] = json.loads(lines[-1])
        self.procs = {}
        self.net = None


def _port_to(net: Network, switch: str, node: str) -> int | None:
    """The port of ``switch`` whose link goes to ``node`` (None: none does)."""
    return next((port for port in net.switch_ports(switch)
                 if net.neighbour(switch, port) == node), None)


def _port_macs(net: Network) -> dict[str, str]:
    """Every switch interface's MAC, by interface name (``ip -j link`` in each namespace)."""
    def read(switch: str) -> list[dict[str, Any]]:
        return json.loads(net.run(net.switch_ns(switch), ["ip", "-j", "link", "show"]).stdout)

    with ThreadPoolExecutor(max_workers=8) as pool:
        links = [link for found in pool.map(read, net.topo.switches()) for link in found]
    return {link["ifname"]: link["address"] for link in links if "address" in link}


def _wait_ready_line(proc: subprocess.Popen, switch: str, log: Path) -> None:
    """Until the forwarder of ``switch`` prints ``ready`` (every port open); PlaneError
    naming its log when it exits first or stays silent past START_TIMEOUT_S."""
    stdout = proc.stdout
    assert stdout is not None
    if not select.select([stdout], [], [], START_TIMEOUT_S)[0]:
        raise PlaneError(f"userspace: the forwarder of {switch} was not ready within "
                         f"{START_TIMEOUT_S} s (log {log})")
    if stdout.readline().strip() != b"ready":
        proc.wait()
        raise PlaneError(f"userspace: the forwarder of {switch} exited ({proc.returncode}): "
                         f"{log.read_text().strip()[-300:]}")
