"""Open vSwitch on the userspace datapath under our os-ken OpenFlow 1.3 controller.

Everything runs inside the run's shared switch namespace ``<prefix>-sw``: a private
ovsdb-server and ovs-vswitchd (their database, sockets, pid files and logs in
``<run dir>/ovs``, never the host's /run/openvswitch) and the controller, which OVS
reaches on 127.0.0.1. One bridge per switch, named prefix + switch (``dl3fa2s1``), with
datapath id N for switch sN and OpenFlow port numbers equal to the topology's.

Options: ``mode`` reactive|proactive (see ``dplab.control.forwarding``), ``controller``
(false: no controller, the bridges are standalone learning switches with RSTP on loops),
``datapath`` auto|netdev|system, ``ports`` (how the userspace datapath reaches its veth
ports, see PORTS; the kernel datapath has one kind of port and takes ``auto`` only) and
``qos`` (study 004's static baseline: OpenFlow meters per DSCP class, installed by the
controller on every switch; ``dplab.qos.openflow_meter``).
``forwarding: l3`` makes every bridge a router hop instead, with no controller: static
OpenFlow rules from ``planes.l3_routes`` (IPv4 by destination: set both MACs, dec_ttl,
output; ARP by target address), installed before ready (the routing workload).
In proactive mode, wait_ready() makes every host ping one other host once so the
controller learns all hosts from their ARP and installs every path before traffic starts.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

from dplab.control.forwarding import MODES, REACTIVE
from dplab.planes import host_ttl, l3_routes, ovsdb, pipeline, tagging
from dplab.planes.base import PlaneError, RulePackets, paths_from_rule_packets
from dplab.planes.bridge import off_tree_links
from dplab.planes.controlled import CONTROLLER_COUNTERS, ControlledPlane
from dplab.qos import openflow_meter
from dplab.substrate.network import HOST_IF, Network
from dplab.substrate.rtnl import TX_CHECKSUMS_OFF, NsPlan
from dplab.topology.model import node_index

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dplab.workloads.flows import Flow

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
OPENFLOW_PORT = 6653  # private: the controller listens inside our own namespace
RULES_PER_SWITCH = 3  # table-miss, LLDP trap, ARP trap
# A path rule in ovs-ofctl dump-flows: its packet count, then its match's MACs.
_PATH_RULE = re.compile(r"n_packets=(?P<packets>\d+),.*?dl_src=(?P<src>[0-9a-f:]{17}),"
                        r"dl_dst=(?P<dst>[0-9a-f:]{17})")
DATAPATHS = ("netdev", "system")
FORWARDING = ("l2", "l3")
# How the userspace (netdev) datapath does port I/O. AF_PACKET ("netdev") needs the hosts'
# and ports' TX checksum offload off (so TSO and GSO go too): OVS forwards frames as they
# come and would never fill in a checksum left to "offload"; every 1500-byte frame is then
# its own trip through ovs-vswitchd. "netdev-tso" turns on userspace TSO
# (other_config:userspace-tso-enable): OVS takes and sends offloaded super-packets with
# their virtio-net header, so offloads stay on. "afxdp" and "afxdp-sleep" receive and send
# through AF_XDP sockets, which OVS always serves from a PMD thread: busy polling a core
# ("afxdp"), or sleeping up to PMD_MAXSLEEP_US when its queues are idle ("afxdp-sleep",
# other_config:pmd-maxsleep). AF_XDP cannot take offloaded frames (offloads off as for
# "netdev") and transmits past the qdisc, where the link's shaping lives: refused on shaped
# links.
PORTS = ("netdev", "netdev-tso", "afxdp", "afxdp-sleep")
# The fastest that keeps shaping (docs/benchmarks.md, "OVS port I/O"): 4-6x netdev's TCP,
# at a somewhat higher idle latency across many bridges.
DEFAULT_PORTS = "netdev-tso"
BYPASS_QDISC = ("afxdp", "afxdp-sleep")
PMD_MAXSLEEP_US = 1000
# Deadlines of the calls into OVS's daemons: each tool gets its own --timeout (it exits
# with SIGALRM when the daemon does not answer in time) and the subprocess a few seconds
# more, in case the tool itself hangs.
VSCTL_TIMEOUT_S = 30
# ovs-vswitchd's configuration of the topology's bridges grows with their ports: it adds
# each to its one userspace datapath, with an AF_PACKET socket and an HTB qdisc, and
# re-walks the datapath's ports as it does; so the deadline for all of it does too.
CONFIGURE_BASE_S = 30
CONFIGURE_PER_PORT_S = 0.05
OFCTL_TIMEOUT_S = 5
# Writing a bridge's flows waits for ovs-vswitchd's main loop, whose passes just after it
# added thousands of ports took up to 15 s (fat-tree k=16); bridges are written
# FLOW_WRITERS at a time, so their waits overlap.
ADD_FLOWS_TIMEOUT_S = 30
FLOW_WRITERS = 8
TOOL_GRACE_S = 5


class OvsPlane(ControlledPlane):
    kind = "ovs"
    addressing = "l2"
    shared_switch_ns = True
    # datapath: "auto" takes the kernel datapath ("system") where the openvswitch module is
    # loaded, else the userspace one ("netdev"), which works on any kernel.
    OPTIONS: dict[str, Any] = {"mode": REACTIVE, "controller": True, "datapath": "auto",
                               "ports": "auto", "qos": None, "forwarding": "l2",
                               "vlan": None, "pipeline": "plain"}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        if self.options["mode"] not in MODES:
            raise PlaneError(f"plane ovs: option 'mode' must be one of {', '.join(MODES)}, "
                             f"not {self.options['mode']!r}")
        if not isinstance(self.options["controller"], bool):
            raise PlaneError(f"plane ovs: option 'controller' must be true or false, "
                             f"not {self.options['controller']!r}")
        if self.options["datapath"] not in ("auto", *DATAPATHS):
            raise PlaneError(f"plane ovs: option 'datapath' must be auto, netdev or system, "
                             f"not {self.options['datapath']!r}")
        self.datapath = _pick_datapath(self.options["datapath"])
        if self.options["forwarding"] not in FORWARDING:
            raise PlaneError(f"plane ovs: option 'forwarding' must be l2 or l3, "
                             f"not {self.options['forwarding']!r}")
        self.l3 = self.options["forwarding"] == "l3"
        self.deep: int | None = None  # planes.host_ttl: routers on the longest path
        self.ports = _pick_ports(self.datapath, self.options["ports"])
        self.meters = self._meters()
        self.vlan = self._study002_options()

    def _meters(self) -> list[openflow_meter.MeterClass]:
        if self.options["qos"] is None:
            return []
        if not self._has_controller():
            raise PlaneError("plane ovs: option 'qos' needs the controller (it installs the "
                             "meters); leave option 'controller' true and 'forwarding' l2")
        try:
            return openflow_meter.parse(self.options["qos"])
        except openflow_meter.MeterError as exc:
            raise PlaneError(str(exc)) from exc

    def _study002_options(self) -> int | None:
        """Check options ``vlan`` (a VLAN id for the tagging workload, or None) and
        ``pipeline``; the plane writes their flows itself from the topology, in place of
        a controller's (whose rules would bypass them)."""
        vlan = tagging.vid_option(self.options["vlan"], self.kind)
        pipeline.check_option(self.options["pipeline"], self.kind)
        for name, asked in (("vlan", vlan is not None),
                            ("pipeline", self.options["pipeline"] != "plain")):
            if asked and self.l3:
                raise PlaneError(f"plane ovs: option '{name}' cannot be combined with "
                                 f"'forwarding: l3' (both write the bridges' only flows)")
            if asked and self.options["controller"]:
                raise PlaneError(f"plane ovs: option '{name}' needs 'controller: false' (the "
                                 f"plane writes its flows; a controller's would bypass them)")
        return vlan

    # -- start ---------------------------------------------------------------------------

    def start(self, net: Network) -> None:
        if not net.shared_switch_ns:
            raise PlaneError("ovs: the network must be built with shared_switch_ns=True")
        misnamed = [s for s in net.topo.switches() if not s[-1:].isdigit()]
        if misnamed:  # the datapath id (and the controller's name for it) is the number
            raise PlaneError(f"ovs: switch {misnamed[0]!r} is not named s<number> or "
                             "ap<number>")
        if self.ports in BYPASS_QDISC:
            _refuse_shaped_links(net, self.ports)
        self.net = net
        self._started = time.monotonic()
        self.dir = net.run_dir / "ovs"
        self.dir.mkdir(parents=True, exist_ok=True)
        if self._has_controller():
            self._start_controller(net)  # first: its Python start-up overlaps OVS's
        if self.ports in ("netdev", *BYPASS_QDISC):
            self._disable_tx_checksum_offload(net)
        self._start_ovsdb(net)
        self.vsctl("--no-wait", "set", "open_vswitch", ".", *global_config(self.ports))
        self._start_daemon(net, "ovs-vswitchd", [f"unix:{self.db_sock}"])
        if self._has_controller():
            # Bridges connect at once when the controller already listens, else after a back-off.
            self._wait_for(self.stats_file.exists, 15.0, "the controller did not start")
        self._add_bridges(net)
        if self.l3:
            self.deep = host_ttl.fit(net, self.kind)
            install_l3_rules(self, net)
        self._add_study002_flows(net)

    def _add_bridges(self, net: Network) -> None:
        """Every bridge, port and QoS in OVSDB transactions of their own (ovsdb), then one
        wait until ovs-vswitchd has applied them all (its cur_cfg reaches their next_cfg)."""
        loops = _switches_have_loops(net)
        rows = [self._bridge_row(net, switch, loops) for switch in net.topo.switches()]
        ports = sum(len(row.ports) for row in rows)
        deadline = math.ceil(CONFIGURE_BASE_S + CONFIGURE_PER_PORT_S * ports)  # whole s
        try:
            cfg = ovsdb.add_bridges(f"unix:{self.db_sock}", rows, VSCTL_TIMEOUT_S)
        except ovsdb.OvsdbError as exc:
            raise PlaneError(f"ovs: {exc}") from exc
        self._wait_until_applied(cfg, deadline, f"{len(rows)} bridges, {ports} ports")

    def _wait_until_applied(self, cfg: int, seconds: int, what: str) -> None:
        """Until ovs-vswitchd's cur_cfg reaches ``cfg`` (``ovs-vsctl wait-until``, which
        OVSDB tells of the change); at once a PlaneError if one of our daemons died."""
        argv = ["ovs-vsctl", f"--db=unix:{self.db_sock}", "--no-wait", f"--timeout={seconds}",
                "wait-until", "open_vswitch", ".", f"cur_cfg>={cfg}"]
        late = f"ovs-vswitchd did not apply {what} within {seconds} s (log {self.dir}/" \
               "ovs-vswitchd.log)"
        waiting = subprocess.Popen(argv, env=private_env(self.dir), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        try:
            self._wait_for(lambda: waiting.poll() is not None, seconds + TOOL_GRACE_S, late)
        finally:
            if waiting.poll() is None:
                waiting.kill()
            _, err = waiting.communicate()
        if waiting.returncode == -signal.SIGALRM:  # its own --timeout
            raise PlaneError(f"{self.kind}: {late}")
        if waiting.returncode != 0:
            raise PlaneError(f"{self.kind}: ovs-vsctl wait-until failed: {err.strip()}")

    def _add_study002_flows(self, net: Network) -> None:
        """The plane's own flows in every bridge, none by default: the complex pipeline's
        extra tables (dplab.planes.pipeline), then from the table after them the VLAN
        tagging's flows (dplab.planes.tagging) or, without tagging, NORMAL forwarding."""
        complex_ = self.options["pipeline"] == "complex"
        if self.vlan is None and not complex_:
            return
        table = pipeline.EXTRA_LOOKUPS if complex_ else 0
        switches = net.topo.switches()
        cut = off_tree_links(net.topo.graph.subgraph(switches), switches)
        parts = tagging.plan(net.topo, net.host_mac, cut)
        self.add_flows({switch: [
            *(pipeline.ovs_flows() if complex_ else []),
            *([f"table={table},priority=1,actions=NORMAL"] if self.vlan is None
              else tagging.openflow(parts[switch], self.vlan, table))]
            for switch in switches}, "")

    @property
    def switch_ns(self) -> str:
        assert self.net is not None
        return self.net.switch_ns(self.net.topo.switches()[0])

    @property
    def db_sock(self) -> Path:
        return self.dir / "db.sock"

    def bridge(self, switch: str) -> str:
        assert self.net is not None
        return f"{self.net.prefix}{switch}"

    def _disable_tx_checksum_offload(self, net: Network) -> None:
        """The userspace datapath forwards veth frames as they are, so a checksum left to
        "offload" would never be filled in: TCP would fail while ping works."""
        plans = {net.host_ns(h): NsPlan(features={HOST_IF: TX_CHECKSUMS_OFF})
                 for h in net.topo.hosts()}
        plans[self.switch_ns] = NsPlan(features={
            i: TX_CHECKSUMS_OFF for s in net.topo.switches() for i in net.switch_ports(s).values()})
        net.configure(plans)

    def _start_ovsdb(self, net: Network) -> None:
        db = create_db(self.dir)
        self._start_daemon(net, "ovsdb-server", [str(db), f"--remote=punix:{self.db_sock}"])
        self._wait_for(lambda: self.db_sock.exists(), 10.0, "ovsdb-server did not open its socket")
        self.vsctl("--no-wait", "init")

    def _start_daemon(self, net: Network, name: str, args: list[str]) -> None:
        """Run ``name`` in the foreground inside the switch namespace, files in our dir."""
        argv = daemon_argv(self.dir, name, args)
        self._daemons.append((name, net.popen(self.switch_ns, argv, env=private_env(self.dir),
                                              stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL)))

    def _start_controller(self, net: Network) -> None:
        argv = [sys.executable, "-m", "dplab.control.controller_main",
                "--mode", self.options["mode"], "--port", str(OPENFLOW_PORT),
                "--stats-file", str(self.stats_file)]
        if self.meters:
            argv += ["--meters", openflow_meter.to_json(self.meters)]
        hairpin = [[ap, port] for ap in net.topo.access_points()
                   if (port := net.wlan_port(ap)) is not None]
        if hairpin:
            argv += ["--hairpin", json.dumps(hairpin)]
        self._spawn(net, self.switch_ns, "controller", argv)

    def _bridge_row(self, net: Network, switch: str, loops: bool) -> ovsdb.BridgeRow:
        """``switch``'s bridge and ports (``loops``: whether the switches form loops, which
        standalone bridges then break with RSTP); each shaped link's port gets the link's
        rate back as an HTB QoS (OVS replaces the port's root qdisc, the substrate's TBF,
        with its own)."""
        controller = self._has_controller()
        ports = []
        for port, ifname in net.switch_ports(switch).items():
            link = net.topo.graph.edges[switch, net.neighbour(switch, port)]
            rate = link.get("bw_mbit")
            ports.append(ovsdb.PortRow(ifname, port, interface_type(self.ports),
                                       None if rate is None else round(rate * 1e6)))
        # Only our static flows forward under l3 and VLAN tagging; a bridge under the
        # controller waits for its flows.
        secure = controller or self.l3 or self.vlan is not None
        return ovsdb.BridgeRow(
            name=self.bridge(switch), datapath_type=self.datapath,
            other_config={"datapath-id": f"{node_index(switch):016x}",
                          "disable-in-band": "true"},
            fail_mode="secure" if secure else "standalone", rstp=loops and not secure,
            controller=f"tcp:127.0.0.1:{OPENFLOW_PORT}" if controller else None,
            # A short reconnect back-off: the controller may still be starting up.
            controller_max_backoff_ms=1000,
            # No inactivity probe: the controller runs beside OVS and its exit is a failure
            # of the plane (failures()); a probe only cuts a controller that is busy (one
            # Python process serving every switch) for 5 s, and each reconnect makes it
            # busier (a new LLDP round, its paths to relearn), as at 320 bridges.
            controller_inactivity_probe_ms=0, ports=tuple(ports))

    def vsctl(self, *args: str) -> str:
        """ovs-vsctl against our own database (never the host's)."""
        return run_tool(["ovs-vsctl", f"--db=unix:{self.db_sock}", *args], VSCTL_TIMEOUT_S,
                        "ovsdb-server and ovs-vswitchd", private_env(self.dir))

    def _has_controller(self) -> bool:
        return self.options["controller"] and not self.l3

    def add_flows(self, flows: dict[str, list[str]], suffix: str) -> None:
        """Each switch's ``flows`` into its bridge (``ovs-ofctl add-flows`` of the file
        ``<switch><suffix>.flows`` in the plane's directory), FLOW_WRITERS at a time."""
        def write(switch: str) -> None:
            path = self.dir / f"{switch}{suffix}.flows"
            path.write_text("\n".join(flows[switch]) + "\n")
            run_tool(["ovs-ofctl", "--protocols=OpenFlow13", "add-flows",
                      f"unix:{self.dir / self.bridge(switch)}.mgmt", str(path)],
                     ADD_FLOWS_TIMEOUT_S, "ovs-vswitchd")

        with ThreadPoolExecutor(max_workers=FLOW_WRITERS) as pool:
            list(pool.map(write, flows))

    def info(self) -> dict[str, str]:
        kernel = self.datapath == "system"
        return {"forwarding": f"Open vSwitch {_ovs_version()}",
                "datapath": "kernel (system)" if kernel else "userspace (netdev)",
                "ports": self.ports,
                "TSO": "on" if kernel or self.ports == "netdev-tso" else "off",
                **_meters_info(self.meters),
                **tagging.info(self.vlan, "access ports (tag=), NORMAL forwarding"),
                **pipeline.info(self.options["pipeline"]), **host_ttl.info(self.deep)}

    # -- stats and stop ------------------------------------------------------------------

    def stats(self) -> dict[str, float | None]:
        """Controller counters (None without a controller), OVS's flow count over all
        bridges, and the path rules among them (flows beyond the controller's traps)."""
        if self.net is None:
            return dict.fromkeys((*CONTROLLER_COUNTERS, "ovs_flows", "ovs_path_flows",
                                  "ready_s"))
        out = self._fresh_controller_counters()
        flows = self._ovs_flow_count(self.net)
        out["ovs_flows"] = flows
        out["ovs_path_flows"] = None
        if flows is not None and self._has_controller():
            metering = len(self.meters) + 1 if self.meters else 0  # + table 0's go-on rule
            out["ovs_path_flows"] = flows - ((RULES_PER_SWITCH + metering)
                                             * len(self.net.topo.switches()))
        out["ready_s"] = self._ready_s
        return out

    def flow_paths(self, flows: Sequence[Flow]) -> dict[str, list[str]]:
        """The switches whose path rule for the flow's (src MAC, dst MAC) counted packets,
        ordered by hops from the source host. Without a controller OVS forwards by its own
        learning (NORMAL), with no rule per pair: nothing to tell."""
        counted = self.path_rule_packets()
        if self.net is None or counted is None:
            return {}
        return paths_from_rule_packets(self.net, flows, counted)

    def path_rule_packets(self) -> RulePackets | None:
        """From every bridge's path rules (``ovs-ofctl dump-flows``: n_packets); None
        without a controller."""
        if self.net is None or not self.options["controller"]:
            return None
        net = self.net
        counted: RulePackets = {}
        for switch in net.topo.switches():
            mgmt = self.dir / f"{self.bridge(switch)}.mgmt"
            out = run_tool(["ovs-ofctl", "--protocols=OpenFlow13", "dump-flows",
                            f"unix:{mgmt}"], OFCTL_TIMEOUT_S, "ovs-vswitchd")
            rules = counted.setdefault(switch, {})
            for rule in _PATH_RULE.finditer(out):
                pair = (rule["src"], rule["dst"])
                rules[pair] = rules.get(pair, 0) + int(rule["packets"])
        return counted

    def _ovs_flow_count(self, net: Network) -> float | None:
        """None once ovs-vswitchd has exited (failures() says so); PlaneError when it does
        not answer within OFCTL_TIMEOUT_S."""
        if any(name == "ovs-vswitchd" and d.poll() is not None for name, d in self._daemons):
            return None
        total = 0
        for switch in net.topo.switches():
            mgmt = self.dir / f"{self.bridge(switch)}.mgmt"
            out = run_tool(["ovs-ofctl", "--protocols=OpenFlow13", "dump-aggregate",
                            f"unix:{mgmt}"], OFCTL_TIMEOUT_S, "ovs-vswitchd")
            total += int(out.rsplit("flow_count=", 1)[1].split()[0])
        return float(total)


def run_tool(argv: list[str], timeout_s: float, daemon: str,
             env: dict[str, str] | None = None) -> str:
    """Run OVS tool ``argv`` (ovs-vsctl, ovs-ofctl, ovs-appctl) with its own
    ``--timeout`` and a subprocess deadline behind it; its stdout. PlaneError naming
    ``daemon`` (what the tool talks to) when it does not answer in time, or the tool's own
    words when it fails."""
    what = " ".join([argv[0], *[a for a in argv[1:] if not a.startswith("-")][:1]])
    try:
        done = subprocess.run([argv[0], f"--timeout={timeout_s:g}", *argv[1:]],
                              capture_output=True, text=True, env=env, check=False,
                              timeout=timeout_s + TOOL_GRACE_S)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode == -signal.SIGALRM:
        raise PlaneError(f"ovs: {daemon} did not answer {what} within {timeout_s:g} s")
    if done.returncode != 0:
        raise PlaneError(f"ovs: {what}... failed: {done.stderr.strip()}")
    return done.stdout


def private_env(run_dir: Path) -> dict[str, str]:
    """The environment of OVS daemons and tools whose files live in ``run_dir``: OVS puts
    bridge management sockets in OVS_RUNDIR, so they stay out of the host's."""
    return {**os.environ, "OVS_RUNDIR": str(run_dir), "OVS_LOGDIR": str(run_dir),
            "OVS_DBDIR": str(run_dir)}


def create_db(run_dir: Path) -> Path:
    """A fresh OVS database ``run_dir/conf.db``."""
    db = run_dir / "conf.db"
    subprocess.run(["ovsdb-tool", "create", str(db), str(SCHEMA)], check=True,
                   capture_output=True, timeout=VSCTL_TIMEOUT_S)
    return db


def daemon_argv(run_dir: Path, name: str, args: list[str]) -> list[str]:
    """``name`` (ovsdb-server, ovs-vswitchd) in the foreground, its control socket, pid
    file and log in ``run_dir``."""
    return [name, *args, f"--unixctl={run_dir / name}.ctl", f"--pidfile={run_dir / name}.pid",
            f"--log-file={run_dir / name}.log"]


def _meters_info(meters: list[openflow_meter.MeterClass]) -> dict[str, str]:
    if not meters:
        return {}
    classes = ", ".join(f"DSCP {m.dscp} at {m.rate_kbps} kbit/s" for m in meters)
    return {"qos": f"static OpenFlow meters (drop band, burst {meters[0].burst_kbit} kbit): "
                   f"{classes}"}


@functools.cache
def _ovs_version() -> str:
    done = subprocess.run(["ovs-vswitchd", "--version"], capture_output=True, text=True,
                          check=False)
    first = done.stdout.splitlines()[0] if done.returncode == 0 and done.stdout else ""
    return first.rsplit(" ", 1)[-1] or "(version unknown)"


def _pick_datapath(wanted: str) -> str:
    kernel_has_ovs = Path("/sys/module/openvswitch").exists()
    if wanted == "auto":
        return "system" if kernel_has_ovs else "netdev"
    if wanted == "system" and not kernel_has_ovs:
        raise PlaneError("plane ovs: datapath 'system' needs the kernel's openvswitch module, "
                         "which this kernel does not have; use 'netdev' (userspace)")
    return wanted


def _pick_ports(datapath: str, wanted: Any) -> str:
    if datapath == "system":
        if wanted not in ("auto", "system"):
            raise PlaneError(f"plane ovs: option 'ports' {wanted!r} needs the userspace "
                             "datapath (datapath: netdev); the kernel datapath has system "
                             "ports only")
        return "system"
    if wanted == "auto":
        return DEFAULT_PORTS
    if wanted not in PORTS:
        raise PlaneError(f"plane ovs: option 'ports' must be auto or one of "
                         f"{', '.join(PORTS)}, not {wanted!r}")
    return wanted


def _refuse_shaped_links(net: Network, ports: str) -> None:
    """AF_XDP transmits past the qdisc, where both the substrate's TBF and OVS's HTB live."""
    switches = set(net.topo.switches())
    for a, b, link in net.topo.graph.edges(data=True):
        if link.get("bw_mbit") is not None and {a, b} & switches:
            raise PlaneError(f"plane ovs: ports {ports!r} send past the qdisc, so link "
                             f"{a}-{b} would lose its {link['bw_mbit']} Mbit/s shaping; use "
                             f"ports netdev-tso or netdev, or leave the link unshaped")


def global_config(ports: str) -> list[str]:
    """Open_vSwitch settings (ovs-vsctl set open_vswitch . ...) for port I/O ``ports``."""
    tso = "true" if ports == "netdev-tso" else "false"
    out = [f"other_config:userspace-tso-enable={tso}"]
    if ports == "afxdp-sleep":
        out.append(f"other_config:pmd-maxsleep={PMD_MAXSLEEP_US}")
    return out


def interface_type(ports: str) -> str:
    """The Interface type for port I/O ``ports`` ("": the datapath's ordinary port)."""
    return "afxdp" if ports in BYPASS_QDISC else ""


def _switches_have_loops(net: Network) -> bool:
    fabric = net.topo.graph.subgraph(net.topo.switches())
    return bool(fabric) and not nx.is_forest(fabric)


def install_l3_rules(plane: OvsPlane, net: Network) -> None:
    """Every bridge a router hop (``forwarding: l3``): one flow file per bridge, its IPv4
    and ARP routes aggregated exactly as the p4 plane's (``l3_routes.lpm_routes``): the
    prefixes of one bridge never overlap, so one priority serves as longest-prefix match."""
    hop_list = l3_routes.hops(net)
    rules: dict[str, list[str]] = {s: [] for s in net.topo.switches()}
    for route in l3_routes.lpm_routes(hop_list):
        rules[route.switch].append(
            f"priority=100,ip,nw_dst={route.prefix} actions=set_field:{route.own_mac}"
            f"->eth_src,set_field:{route.next_mac}->eth_dst,dec_ttl,output:{route.port}")
    for switch, prefix, port in l3_routes.arp_routes(hop_list):
        rules[switch].append(f"priority=100,arp,arp_tpa={prefix} actions=output:{port}")
    plane.add_flows(rules, "-l3")
