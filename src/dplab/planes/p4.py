"""SDN+P4: one dplab-switch per topology switch, each behind its own P4Runtime server,
all driven by the P4Runtime controller app (the same forwarding logic as the OVS plane).

Every switch runs in its own namespace ``<prefix>-<switch>`` with its P4Runtime server;
switch control sockets, gRPC sockets (unix sockets, so the controller reaches them from
any namespace), compiled program, controller config, counters and logs live in
``<run dir>/p4``. Switch sN is P4Runtime device N (apN: model.AP_BASE + N).

Options: ``mode`` reactive|proactive, ``program`` (a P4 file; default
``p4src/basic_fwd.p4``; ``l3``: p4src/study003/l3_forward.p4 as a router hop on every
switch, its entries derived from the topology by ``planes.l3_routes`` and written to
``<run dir>/p4/l3_entries.json``, no controller: the routing workload), ``entries`` (a
YAML/JSON file of table entries, see ``dplab.p4runtime.entries``), ``tx`` xdp|ring (how
the switches transmit, default xdp; switch/PROTOCOL.md ``--tx``), ``rx_ring_frames``
(each switch's receive ring depth, one ring for all its ports, ``auto`` by default: 2048
frames unless the rings of all switches would not fit in memory, see
``dplab.planes.rx_ring``). With ``xdp`` every peer
end of a switch port (host ends and other switches' ports) gets GRO on: veth takes XDP
frames only into a peer that runs NAPI.
Without ``entries`` the controller drives the switches; it needs basic_fwd's table
``path_rules`` (keys in_port, eth_src, eth_dst), action ``forward`` and controller headers
(``packet_out`` with ``egress_port`` and ``mcast_grp``), so a program must keep those
names, and its rule set (ARP and LLDP to the CPU port, docs/architecture.md).
With ``entries`` the plane is static: no controller runs; the plane loads ``program`` into
every switch over P4Runtime and writes the entries (each to the switches it names, else to
all), and nothing changes them afterwards, except option ``qos`` (study 004, see
``dplab.qos.options``): with a policy other than ``static`` the plane runs the QoS loop
(``python -m dplab.qos.dmbrl_loop``, daemon ``qos``) once the entries are written; it
rewrites the class meters every sampling interval and its samples are in
``<run dir>/p4/qos_samples.jsonl``; ``series()`` hands them on as the run's time series
(the store's plane_series). Ready = every switch up and every link found by LLDP
(proactive: all host-pair paths installed; static: skipped), then a ping between the
farthest hosts; with option ``ready`` "started" no ping (planes.base.READY_WAYS: a program
that drops everything). ``stats()`` has ``pipeline_drops``: the packets the switches'
programs dropped (switch/PROTOCOL.md ``stats``), summed over switches.
"""

from __future__ import annotations

import json
import math
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from dplab.control.forwarding import MODES, REACTIVE
from dplab.control.p4runtime_app import Program, rule_key
from dplab.p4runtime import entries as entries_file
from dplab.p4runtime import switch_link
from dplab.p4runtime.installer import CALL_TIMEOUT_S
from dplab.planes import host_ttl, l3_routes, p4_l3, p4_static, pipeline, rx_ring, tagging
from dplab.planes.base import (
    PlaneError,
    RulePackets,
    SeriesPoint,
    paths_from_rule_packets,
)
from dplab.planes.bridge import off_tree_links
from dplab.planes.controlled import CONTROLLER_COUNTERS, POLL_S, ControlledPlane
from dplab.qos import options as qos_options
from dplab.substrate.network import HOST_IF, Network
from dplab.substrate.rtnl import NsPlan
from dplab.topology.model import node_index

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dplab.workloads.flows import Flow

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PROGRAM = ROOT / "p4src" / "basic_fwd.p4"
# program: l3 — the router hop of study 003 with entries derived from the topology.
L3 = "l3"
L3_PROGRAM = ROOT / "p4src" / "study003" / "l3_forward.p4"
VLAN_PROGRAM = ROOT / "p4src" / "study002" / "vlan.p4"
SWITCH_BIN = ROOT / "switch" / "target" / "release" / "dplab-switch"
CPU_PORT = 255
START_TIMEOUT_S = 15.0
# At most this many switches start at once; the next starts as soon as one of them answers
# on its control socket: at most this many switch processes compete for the cores while
# they start, so START_TIMEOUT_S bounds each one's start whatever the topology's size. All
# at once, 180 switches on 2 loaded cores left the last ones without a control socket past
# any fixed deadline. (Whole batches, each after the one before had answered, left the
# cores idle while each batch's last switches finished.)
START_WINDOW = 32
# How often the starting switches are asked: a start takes tens of milliseconds.
START_POLL_S = 0.01
# The P4Runtime server process says ``ready`` once its interpreter has started, imported
# grpc and protobuf and connected to every switch: seconds on an idle machine, and tens of
# seconds on a loaded one. The wait ends at that line, or at once when the process exits,
# so this deadline only bounds a server that hangs.
SERVERS_READY_TIMEOUT_S = 120.0
# Each call of an install has its deadline (installer.CALL_TIMEOUT_S), the compile its own
# (COMPILE_TIMEOUT_S): an install that got no further for longer than both has stalled.
INSTALL_STALL_S = CALL_TIMEOUT_S + 60.0
# The compiler's bounds (dplab.p4.limits) keep real programs far below this; a program
# that still takes longer is stopped rather than holding up the matrix.
COMPILE_TIMEOUT_S = 60.0
# A switch answers a ping, and the P4Runtime server a Capabilities call, in milliseconds.
ANSWER_TIMEOUT_S = 5.0
# A Read of one switch's path rules: one server process answers every switch's Reads, one
# after another; a busy machine stretches that, and a slow answer is not a failed plane.
PATH_READ_TIMEOUT_S = 30.0
SERVERS = "p4runtime"  # the P4Runtime server process: daemon and log name
TX_MODES = ("xdp", "ring")  # the switch's --tx (switch/PROTOCOL.md)
# The switch finishes partial checksums and cuts TCP/UDP super-packets into wire-sized
# segments itself (switch/PROTOCOL.md), so hosts keep checksum offload, TSO and GSO: far
# cheaper for their stacks. Off stays only what it cannot honour: SCTP's CRC32c,
# tunnel and SCTP segmentation, fraglist GSO, TCP segments with fixed IPv4 ids
# (mangleid) and AccECN's CWR on every segment.
UNHONOURED_OFFLOADS = ("tx-checksum-sctp", "tx-sctp-segmentation", "tx-gso-list",
                       "tx-tcp-mangleid-segmentation", "tx-tcp-accecn-segmentation",
                       "tx-gre-segmentation", "tx-gre-csum-segmentation",
                       "tx-ipxip4-segmentation", "tx-ipxip6-segmentation",
                       "tx-udp_tnl-segmentation", "tx-udp_tnl-csum-segmentation")
# Hosts also receive with GRO: the switch sends segments, the host's stack gets them merged.
# Set over SIOCETHTOOL from this process (rtnl.NsPlan.features), no ethtool process per host;
# a feature this kernel lacks (older kernels lack some, e.g. AccECN's) is left out.
HOST_FEATURES = {**dict.fromkeys(UNHONOURED_OFFLOADS, False), "rx-gro": True}
QOS_LOOP = "qos"  # the QoS loop's daemon and log name
# What a QoS loop sample gives the run's time series: the class's measured load (Λ), the
# rate written to its meter, and the interval until its next turn.
QOS_SERIES = ("used_bps", "rate_bps", "interval_s")


class P4Plane(ControlledPlane):
    kind = "p4"
    addressing = "l2"
    shared_switch_ns = False
    OPTIONS: dict[str, Any] = {"mode": REACTIVE, "program": None, "entries": None,
                               "tx": "xdp", "qos": None, "vlan": None, "pipeline": "plain",
                               "ready": "ping", "rx_ring_frames": rx_ring.AUTO}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        if self.options["mode"] not in MODES:
            raise PlaneError(f"plane p4: option 'mode' must be one of {', '.join(MODES)}, "
                             f"not {self.options['mode']!r}")
        self.vlan = self._vlan_option()
        program = self.options["program"]
        self.l3 = program == L3
        self.deep: int | None = None  # planes.host_ttl: routers on the longest path
        if self.l3 and self.options["entries"] is not None:
            raise PlaneError("plane p4: option 'entries': program 'l3' derives its entries "
                             "from the topology; give no entries file")
        if self.l3 and self.vlan is not None:
            raise PlaneError("plane p4: option 'vlan' cannot be combined with program 'l3' "
                             "(each is its own program with entries from the topology)")
        default = DEFAULT_PROGRAM if self.vlan is None else VLAN_PROGRAM
        self.program = L3_PROGRAM if self.l3 else (
            Path(program) if program is not None else default)
        if not self.program.is_file():
            raise PlaneError(f"plane p4: option 'program': no file {self.program}")
        self._check_pipeline()
        entries = self.options["entries"]
        self.entries_path = Path(entries) if entries is not None else None
        if self.entries_path is not None and not self.entries_path.is_file():
            raise PlaneError(f"plane p4: option 'entries': no file {self.entries_path}")
        # Entries the plane derives from the topology (vlan), written to entries_path as a
        # record and installed from memory (program l3 builds its own: _start_l3).
        self.generated: list[dict[str, Any]] | None = None
        self.l3_hops = 0  # program l3: (switch, host) pairs routed, before aggregation
        self.l3_counts: tuple[int, int] | None = None  # program l3: routes, ARP entries
        if self.options["tx"] not in TX_MODES:
            raise PlaneError(f"plane p4: option 'tx' must be one of {', '.join(TX_MODES)}, "
                             f"not {self.options['tx']!r}")
        self.qos = self._qos_spec()
        self._rx_option = rx_ring.check_option(self.options["rx_ring_frames"])
        self.rx_ring: rx_ring.RingChoice | None = None  # chosen at start, for the ports
        self._entries_written: int | None = None
        self._recorded: Future | None = None  # program l3: its entries' record written
        # The controller's program, when its path_rules entries count their packets (a
        # direct counter, as basic_fwd's path_hits): they tell each flow's path.
        self._path_program: Program | None = None

    def _vlan_option(self) -> int | None:
        """The VLAN id of the tagging workload (None: no tagging). Its entries come from
        the topology, so it takes no entries file."""
        if self.options["vlan"] is not None and self.options["entries"] is not None:
            raise PlaneError("plane p4: option 'vlan' derives the entries from the topology; "
                             "leave out option 'entries'")
        return tagging.vid_option(self.options["vlan"], self.kind)

    def _check_pipeline(self) -> None:
        pipeline.check_option(self.options["pipeline"], self.kind)
        if self.options["pipeline"] == "complex":
            try:
                pipeline.check_markers(self.program)
            except pipeline.PipelineError as exc:
                raise PlaneError(f"plane p4: option 'pipeline': {exc}") from exc

    def _qos_spec(self) -> qos_options.QosSpec | None:
        if self.options["qos"] is None:
            return None
        if self.entries_path is None:
            raise PlaneError("plane p4: option 'qos' needs option 'entries' (a static "
                             "plane: the loop drives the meters of the entries' program)")
        try:
            return qos_options.parse(self.options["qos"])
        except qos_options.QosError as exc:
            raise PlaneError(str(exc)) from exc

    def _has_controller(self) -> bool:
        return self.entries_path is None and not self.l3 and self.vlan is None

    def info(self) -> dict[str, str]:
        """The switch's transmit mode; XDP frames skip qdiscs, so shaped ports send through
        the ring whatever the mode (switch/PROTOCOL.md)."""
        return {"forwarding": "dplab-switch (user space, AF_PACKET receive)",
                "transmit": f"{self.options['tx']} (ring on shaped ports)",
                **tagging.info(self.vlan, f"program {self.program.name}, entries from the "
                                          "topology"),
                "rx ring": (f"{self.rx_ring.frames} frames per switch: {self.rx_ring.reason}"
                            if self.rx_ring else f"{self._rx_option} (chosen at start: "
                            "stats' rx_ring_frames)"),
                **pipeline.info(self.options["pipeline"]), **host_ttl.info(self.deep)}

    # -- start ---------------------------------------------------------------------------

    def start(self, net: Network) -> None:
        misnamed = [s for s in net.topo.switches() if not s[-1:].isdigit()]
        if misnamed:  # the device id comes from the number (model.node_index)
            raise PlaneError(f"p4: switch {misnamed[0]!r} is not named s<number> or ap<number>")
        self.net = net
        self._started = time.monotonic()
        switches = net.topo.switches()
        self.rx_ring = rx_ring.choose(self._rx_option, len(switches), sum(
            len(net.switch_ports(s)) for s in switches), rx_ring.mem_available())
        self.dir = net.run_dir / "p4"
        self.dir.mkdir(parents=True, exist_ok=True)
        program = self.program
        if self.options["pipeline"] == "complex":
            program = pipeline.p4_program(self.program, self.dir)
        if self.vlan is not None:  # a static plane from here on, its entries from the topology
            self.entries_path, self.generated = self._write_vlan_entries(net)
        compiling = Compilation(program, self.dir)  # while the daemons start
        installing: p4_static.Installing | None = None
        try:
            self._set_host_offloads(net)
            if self.options["tx"] == "xdp":
                self._set_switch_peer_gro(net)
            # Its interpreter starts while the first switches do; not before the offloads
            # above, which take seconds at a thousand hosts and would eat into its wait for
            # the first switch (--switch-wait).
            servers = self._start_servers(net)
            lines = p4_static.ServerLines(servers)
            if not self._has_controller():  # each switch installed as soon as it is served
                installing = self._installing(net, compiling, lines)
                installing.start()
            self._start_switches(net, installing)
            if installing is None:
                self._wait_for_servers(servers, lines)
            else:
                if self.l3:
                    self.deep = host_ttl.fit(net, self.kind)
                self._wait_for_install(installing)
            compiled = compiling.files()
        finally:
            compiling.cancel()  # first: the install's thread may wait for it
            if installing is not None:
                installing.stop()
        if installing is None:
            self._start_controller(net, compiled)
        elif self.qos is not None and self.qos.runs_loop:
            self._start_qos_loop(net, compiled)

    def _write_vlan_entries(self, net: Network) -> tuple[Path, list[dict[str, Any]]]:
        """The tagging workload's entries (p4src/study002/vlan.p4's tables) for every
        switch of the topology, as an entries file in the run directory."""
        out: list[dict[str, Any]] = []
        switches = net.topo.switches()
        cut = off_tree_links(net.topo.graph.subgraph(switches), switches)
        for switch, part in tagging.plan(net.topo, net.host_mac, cut).items():
            out.append({"multicast_group": 1, "replicas": list(part.flood),
                        "switches": [switch]})
            for port in part.access:
                out += [{"table": "access_port", "match": {"standard_metadata.ingress_port": port},
                         "action": "push_tag", "params": {"vid": self.vlan},
                         "switches": [switch]},
                        {"table": "access_egress", "match": {"standard_metadata.egress_port": port},
                         "action": "pop_tag", "switches": [switch]}]
            out += [{"table": "vlan_fwd", "match": {"hdr.vlan.vid": self.vlan,
                                                    "hdr.ethernet.dst_addr": mac},
                     "action": "forward", "params": {"port": port}, "switches": [switch]}
                    for mac, port in part.routes.items()]
        path = self.dir / "vlan_entries.json"
        path.write_text(json.dumps({"entries": out}, indent=1))
        return path, out

    def _installing(self, net: Network, compiling: Compilation,
                    lines: p4_static.ServerLines) -> p4_static.Installing:
        """The static install: program l3's entries (``_l3_entries``) or the entries file's,
        prepared in the install's thread while the switches start."""
        if self.l3:
            self.entries_path = self.dir / "l3_entries.json"
            source, entries_of = "program l3's entries", self._l3_entries
        else:
            source, entries_of = "option 'entries'", self._load_entries
        targets = [p4_static.Target(s, node_index(s), self._grpc(s))
                   for s in net.topo.switches()]
        return p4_static.Installing(lines, targets,
                                    lambda: self._prepare(net, compiling, entries_of),
                                    source, str(self.entries_path))

    def _prepare(self, net: Network, compiling: Compilation,
                 entries_of: Callable[[Network, p4info_pb2.P4Info], list[entries_file.Entry]],
                 ) -> p4_static.Prepared:
        """The pipeline config and each switch's entries, in their order, sorted out in one
        pass (a thousand-host topology has hundreds of thousands, each naming one switch)."""
        compiled = compiling.files()
        info = p4info_pb2.P4Info.FromString(compiled["p4info_bin"].read_bytes())
        config = pb.ForwardingPipelineConfig(p4_device_config=compiled["ir"].read_bytes(),
                                             p4info=info)
        mine: dict[str, list[entries_file.Entry]] = {s: [] for s in net.topo.switches()}
        for entry in entries_of(net, info):
            for switch in mine if entry.switches is None else dict.fromkeys(entry.switches):
                mine[switch].append(entry)
        return p4_static.Prepared(config, mine)

    def _l3_entries(self, net: Network, info: p4info_pb2.P4Info) -> list[entries_file.Entry]:
        """``program: l3``: its entries built from the topology's routes into P4Runtime
        entities (``planes.p4_l3``), while a thread writes them to ``l3_entries.json`` as a
        record: encoding the record costs about as much as building the entities."""
        tables, self.l3_hops = l3_routes.lpm_tables(net)
        self.l3_counts = (sum(len(t.routes) for t in tables), sum(len(t.arp) for t in tables))
        try:
            entries = p4_l3.entries(tables, info)
        except p4_l3.ProgramMismatch as exc:
            raise PlaneError(f"p4: program l3: {self.program}: {exc}") from exc
        path = self.entries_path
        assert path is not None
        recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="l3-record")
        self._recorded = recorder.submit(
            lambda: path.write_text(json.dumps({"entries": p4_l3.record(tables)})))
        recorder.shutdown(wait=False)  # its thread ends with the record
        return entries

    def _load_entries(self, net: Network, info: p4info_pb2.P4Info) -> list[entries_file.Entry]:
        try:
            entries = (entries_file.load(self.entries_path, info) if self.generated is None
                       else entries_file.parse(self.generated, info, str(self.entries_path)))
        except entries_file.EntriesError as exc:
            raise PlaneError(f"p4: option 'entries': {exc}") from exc
        switches = set(net.topo.switches())
        for entry in entries:
            unknown = sorted(set(entry.switches or ()) - switches)
            if unknown:
                raise PlaneError(f"p4: option 'entries': {self.entries_path}: entry "
                                 f"{entry.index}: no switch {unknown[0]!r} in topology "
                                 f"{net.topo.name} (switches: {sorted(switches)})")
        return entries

    def _wait_for_install(self, installing: p4_static.Installing) -> None:
        """Until every switch is installed; fails at once when a daemon exits or the install
        failed, and when it got no further for INSTALL_STALL_S: its time grows with the
        entries and the machine's load (minutes for the largest topohub graphs), so only
        a stall is bounded."""
        def done() -> bool:
            if installing.quiet_s() > INSTALL_STALL_S:
                raise PlaneError(f"p4: the install got no further for {INSTALL_STALL_S:g} s "
                                 f"(log {self.dir / SERVERS}.log)")
            return installing.finished()
        self._wait_for(done, math.inf, "", pause=lambda: installing.wait(POLL_S))
        self._entries_written = installing.result()
        if self._recorded is not None:
            self._recorded.result()

    def _control(self, switch: str) -> Path:
        return self.dir / f"{switch}.sock"

    def drops(self) -> dict[str, int] | None:
        """Every switch's port drops by reason (switch/PROTOCOL.md ``stats``), e.g.
        ``{"s5-eth1 refused": 3148}``, and its receive ring's, e.g. ``{"s5 rx_ring": 12}``:
        what its rings could not take, which no kernel counter outside the switch shows.
        None before start."""
        if self.net is None:
            return None
        out: dict[str, int] = {}
        for switch in self.net.topo.switches():
            try:
                stats = switch_link.request(str(self._control(switch)), "stats",
                                            ANSWER_TIMEOUT_S)
            except switch_link.SwitchError as exc:
                raise PlaneError(f"p4: switch-{switch}: stats: {exc}") from exc
            for port in stats["ports"]:
                for reason, count in port["drop_reasons"].items():
                    out[f"{port['name']} {reason}"] = count
            # The receive ring is every port's (switch/PROTOCOL.md stats: rx_ring).
            out[f"{switch} rx_ring"] = stats["rx_ring"]["drops"]
        return out

    def _grpc(self, switch: str) -> str:
        return f"unix:{self.dir / switch}.grpc"

    def _set_host_offloads(self, net: Network) -> None:
        """Host ends: off what the switch cannot honour, GRO on (see HOST_FEATURES)."""
        net.configure({net.host_ns(h): NsPlan(features={HOST_IF: HOST_FEATURES})
                       for h in net.topo.hosts()})

    def _set_switch_peer_gro(self, net: Network) -> None:
        """GRO on at every switch port that faces another switch: there it is the peer end
        of that switch's port, which then runs NAPI and so takes the XDP frames sent to it
        (host ends get GRO on with their offloads). The receiving switch gets what GRO
        merged as super-packets and cuts them itself, as it does the hosts' (PROTOCOL.md)."""
        switches = set(net.topo.switches())
        plans = {net.switch_ns(s): NsPlan(features={
            ifname: {"rx-gro": True} for port, ifname in net.switch_ports(s).items()
            if net.neighbour(s, port) in switches}) for s in switches}
        net.configure({ns: plan for ns, plan in plans.items() if plan.features})

    def _start_switches(self, net: Network, installing: p4_static.Installing | None) -> None:
        """Every switch, at most START_WINDOW starting at a time: the next starts once one
        of them answers a ping on its control socket (the socket opens once the switch is
        ready for requests); each must within START_TIMEOUT_S. A static plane's install
        that failed meanwhile (``installing``) fails the start at once."""
        starting: dict[str, float] = {}  # control socket -> when its switch started

        def wait_until(count: int) -> None:
            """Until at most ``count`` switches are starting; fails for one past its time."""
            def few() -> bool:
                failed = installing.failure() if installing is not None else None
                if failed is not None:
                    raise failed
                _drop_answered(starting)
                late = [path for path, t in starting.items()
                        if time.monotonic() - t > START_TIMEOUT_S]
                if late:
                    raise PlaneError(f"p4: switch control socket {late[0]} did not answer "
                                     f"within {START_TIMEOUT_S} s (logs in {self.dir})")
                return len(starting) <= count
            self._wait_for(few, 2 * START_TIMEOUT_S, "p4: switches did not start",
                           pause=lambda: time.sleep(START_POLL_S))

        for switch in net.topo.switches():
            wait_until(START_WINDOW - 1)
            self._start_switch(net, switch)
            starting[str(self._control(switch))] = time.monotonic()
        wait_until(0)

    def _start_switch(self, net: Network, switch: str) -> None:
        # Each switch has a namespace of its own, made by this run: its loopback may carry
        # the switch's warm-up frames (switch/src/dataplane/warmup.rs).
        argv = [str(SWITCH_BIN), "--cpu-port", str(CPU_PORT), "--control",
                str(self._control(switch)), "--warm-loopback", "on",
                "--tx", self.options["tx"], "--rx-frames", str(self.rx_ring.frames)]
        for port, ifname in sorted(net.switch_ports(switch).items()):
            argv += ["--port", f"{port}={ifname}"]
        # The switch reads nothing under /sys (it finds tracefs itself: PROTOCOL.md --tx):
        # its network namespace alone, no mount namespace per process.
        self._spawn(net, net.switch_ns(switch), f"switch-{switch}", argv, own_sysfs=False)

    def _start_servers(self, net: Network) -> subprocess.Popen:
        """One process serves every switch, each on its own gRPC socket with its own state
        (``python -m dplab.p4runtime --serve``): one interpreter start per run, not per
        switch. It connects to the switches in their start order and waits for each
        control socket itself: about one start-up (START_TIMEOUT_S) after the
        one before it."""
        argv = [sys.executable, "-m", "dplab.p4runtime", "--switch-wait", str(START_TIMEOUT_S)]
        for switch in net.topo.switches():
            argv += ["--serve", str(node_index(switch)), str(self._control(switch)),
                     self._grpc(switch)]
        return self._spawn(net, net.switch_ns(net.topo.switches()[0]), SERVERS, argv,
                           stdout_pipe=True)

    def _wait_for_servers(self, servers: subprocess.Popen,
                          lines: p4_static.ServerLines) -> None:
        """Until the servers print ``ready`` (every switch connected, every gRPC socket
        listening; the ``serving`` line of each before it says nothing more here); fails
        at once when any daemon exits."""
        said: list[bytes | None] = [None]

        def ready() -> bool:
            said[0] = lines.next(POLL_S)
            return said[0] is not None and not said[0].startswith(p4_static.SERVING)
        self._wait_for(ready, SERVERS_READY_TIMEOUT_S,
                       f"the P4Runtime servers were not ready within {SERVERS_READY_TIMEOUT_S} s "
                       f"(log {self.dir / SERVERS}.log)",
                       pause=lambda: None)  # next() above waits
        if said[0] != p4_static.READY:
            raise _not_ready(servers, "the P4Runtime servers",
                             self.dir / f"{SERVERS}.log")

    def _start_controller(self, net: Network, compiled: dict[str, Path]) -> None:
        config = self.dir / "controller-config.json"
        config.write_text(json.dumps({
            "ir": str(compiled["ir"]), "p4info": str(compiled["p4info_bin"]),
            "switches": {s: {"address": self._grpc(s), "device_id": node_index(s),
                             "ports": sorted(net.switch_ports(s)),
                             "hairpin_ports": [p for p in [net.wlan_port(s)] if p is not None]}
                         for s in net.topo.switches()}}))
        argv = [sys.executable, "-m", "dplab.control.p4runtime_app", "--config", str(config),
                "--mode", self.options["mode"], "--stats-file", str(self.stats_file)]
        self._spawn(net, net.switch_ns(net.topo.switches()[0]), "controller", argv)
        program = Program(compiled["ir"], compiled["p4info_bin"])
        # A user's program without a direct counter on path_rules reads as zero hits
        # everywhere: its flows' paths are unknown, not empty.
        if any(c.direct_table_id == program.table_id for c in program.p4info.direct_counters):
            self._path_program = program

    def flow_paths(self, flows: Sequence[Flow]) -> dict[str, list[str]]:
        """Under the controller: the switches whose ``path_rules`` entries for the flow's
        (src MAC, dst MAC) forwarded packets (their direct counter ``path_hits``, read over
        P4Runtime), ordered by hops from the source host. A static plane's entries are the
        user's, with no rule per host pair: nothing to tell."""
        counted = self.path_rule_packets()
        if self.net is None or counted is None:
            return {}
        return paths_from_rule_packets(self.net, flows, counted)

    def path_rule_packets(self) -> RulePackets | None:
        """Every switch's ``path_rules`` entries, read at once; None without a controller
        or without a direct counter on the table."""
        if self.net is None or self._path_program is None:
            return None
        switches = self.net.topo.switches()
        with ThreadPoolExecutor(max_workers=8) as pool:
            return dict(zip(switches, pool.map(self._path_rule_packets, switches),
                            strict=True))

    def _path_rule_packets(self, switch: str) -> dict[tuple[str, str], int]:
        """(src MAC, dst MAC) -> packets ``switch``'s path rules for the pair forwarded."""
        program = self._path_program
        assert program is not None
        request = pb.ReadRequest(device_id=node_index(switch))
        wanted = request.entities.add().table_entry
        wanted.table_id = program.table_id
        wanted.counter_data.SetInParent()  # with each entry's direct counter
        pairs: dict[tuple[str, str], int] = {}
        with grpc.insecure_channel(self._grpc(switch)) as channel:
            try:
                for response in p4runtime_pb2_grpc.P4RuntimeStub(channel).Read(
                        request, timeout=PATH_READ_TIMEOUT_S):
                    for entity in response.entities:
                        entry = entity.table_entry
                        _in_port, src, dst = rule_key(entry, program.match_ids)
                        pair = (src.hex(":"), dst.hex(":"))
                        pairs[pair] = pairs.get(pair, 0) + entry.counter_data.packet_count
            except grpc.RpcError as exc:
                raise PlaneError(f"p4: reading {switch}'s path rules over P4Runtime: "
                                 f"{exc.code().name} {exc.details()}; log "
                                 f"{self.dir / SERVERS}.log") from exc
        return pairs

    @property
    def qos_samples_file(self) -> Path:
        return self.dir / "qos_samples.jsonl"

    def _start_qos_loop(self, net: Network, compiled: dict[str, Path]) -> None:
        """The loop connects to every switch and prints ``ready`` before traffic may start:
        its first counter readings are the baselines of its first intervals."""
        config = self.dir / "qos-config.json"
        config.write_text(json.dumps({
            "p4info": str(compiled["p4info_bin"]), "qos": self.options["qos"],
            "samples": str(self.qos_samples_file),
            "switches": {s: {"address": self._grpc(s), "device_id": node_index(s)}
                         for s in net.topo.switches()}}))
        argv = [sys.executable, "-m", "dplab.qos.dmbrl_loop", "--config", str(config)]
        loop = self._spawn(net, net.switch_ns(net.topo.switches()[0]), QOS_LOOP, argv,
                           stdout_pipe=True)
        stdout = loop.stdout
        assert stdout is not None
        self._wait_for(lambda: bool(select.select([stdout], [], [], POLL_S)[0]),
                       START_TIMEOUT_S, f"the QoS loop was not ready within "
                       f"{START_TIMEOUT_S} s (log {self.dir / QOS_LOOP}.log)",
                       pause=lambda: None)
        if stdout.readline().strip() != b"ready":
            raise _not_ready(loop, "the QoS loop", self.dir / f"{QOS_LOOP}.log")

    def _qos_samples(self) -> list[dict[str, Any]] | None:
        """The loop's samples so far (None: no loop ran, or its file cannot be read)."""
        if self.qos is None or not self.qos.runs_loop:
            return None
        try:
            text = self.qos_samples_file.read_text()
        except OSError:
            return None
        # The loop may still be writing: a last line without its newline is not whole yet.
        return [json.loads(line) for line in text.split("\n")[:-1]]

    def _qos_stats(self) -> dict[str, float | None]:
        """How many turns the loop took and how many meter rates it wrote that differ
        from the class's previous one (None: no loop ran)."""
        if self.qos is None or not self.qos.runs_loop:
            return {}
        samples = self._qos_samples()
        if samples is None:
            return {"qos_turns": None, "qos_rate_changes": None}
        last: dict[tuple[str, int], float] = {}
        changes = 0
        for sample in samples:
            key = (sample["switch"], sample["class"])
            changes += last.get(key) != sample["rate_bps"]
            last[key] = sample["rate_bps"]
        return {"qos_turns": len(samples), "qos_rate_changes": changes}

    def series(self, traffic_began: float) -> list[SeriesPoint]:
        """The controller's series (ControlledPlane.series) and the QoS loop's turns: per
        turn, per metric of QOS_SERIES a point
        ``<metric>:<switch>:class<id>`` at the turn's time since the traffic began (the
        loop and this process read the same monotonic clock)."""
        points = []
        for sample in self._qos_samples() or []:
            t = sample["monotonic"] - traffic_began
            subject = f"{sample['switch']}:class{sample['class']}"
            points += [SeriesPoint(t, f"{metric}:{subject}", sample[metric])
                       for metric in QOS_SERIES]
        return points + super().series(traffic_began)

    # -- stats and stop ------------------------------------------------------------------

    def stats(self) -> dict[str, float | None]:
        """The controller's counters (written after this call, so nothing just counted is
        missing) and the time it took to become ready. A daemon that died during the run
        (the P4Runtime server, a switch, the controller) is in failures(); one that stops
        answering fails this call with a PlaneError naming it. ``rx_ring_frames``: each
        switch's receive ring depth (info() says why)."""
        static = ({} if self.entries_path is None
                  else {"entries_written": self._entries_written, **self._qos_stats(),
                        **self._l3_route_stats()})
        if self.net is None:
            return {**dict.fromkeys((*CONTROLLER_COUNTERS, "ready_s", "pipeline_drops",
                                     "rx_ring_frames")), **static}
        self._check_answering(self.net)
        return {**self._fresh_controller_counters(), "ready_s": self._ready_s,
                "pipeline_drops": self._pipeline_drops(self.net),
                "rx_ring_frames": None if self.rx_ring is None else float(self.rx_ring.frames),
                **static}

    def _l3_route_stats(self) -> dict[str, float | None]:
        """``program: l3``: the IPv4 routes and ARP entries written (aggregated), and the
        (switch, host) pairs they route (one route each before aggregation)."""
        if self.l3_counts is None:
            return {}
        routes, arp = self.l3_counts
        return {"static_routes": float(routes), "arp_entries": float(arp),
                "routes_unaggregated": float(self.l3_hops)}

    def _pipeline_drops(self, net: Network) -> float:
        """The packets every switch's program dropped so far (mark_to_drop and the like;
        switch/PROTOCOL.md ``stats``: ``pipeline.drops``), summed."""
        total = 0
        for switch in net.topo.switches():
            try:
                stats = switch_link.request(str(self._control(switch)), "stats",
                                            ANSWER_TIMEOUT_S)
            except switch_link.SwitchError as exc:
                raise PlaneError(f"p4: switch-{switch}: stats: {exc}") from exc
            total += int(stats["pipeline"]["drops"])
        return float(total)

    def _check_answering(self, net: Network) -> None:
        """PlaneError naming the first switch, or the P4Runtime servers' process, that does
        not answer within ANSWER_TIMEOUT_S: a stopped daemon has not exited, so
        failures() does not see it, but its switches are no longer under control."""
        for switch in net.topo.switches():
            try:
                switch_link.ping(str(self._control(switch)), ANSWER_TIMEOUT_S)
            except switch_link.SwitchError as exc:
                raise PlaneError(f"p4: switch-{switch}: {exc}; log "
                                 f"{self.dir}/switch-{switch}.log") from exc
        with grpc.insecure_channel(self._grpc(net.topo.switches()[0])) as channel:
            try:
                p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                    pb.CapabilitiesRequest(), timeout=ANSWER_TIMEOUT_S)
            except grpc.RpcError as exc:
                raise PlaneError(f"p4: the P4Runtime servers did not answer Capabilities "
                                 f"within {ANSWER_TIMEOUT_S:g} s ({exc.code().name}); log "
                                 f"{self.dir / SERVERS}.log") from exc


def _not_ready(daemon: subprocess.Popen, what: str, log: Path) -> PlaneError:
    """The failure of ``daemon``, which printed something other than ``ready`` on its
    stdout: it is on its way out (waited for within START_TIMEOUT_S), or misbehaves."""
    try:
        how = f"exited ({daemon.wait(START_TIMEOUT_S)})"
    except subprocess.TimeoutExpired:
        how = "printed something other than ready"
    return PlaneError(f"p4: {what} {how}; log {log}")


class Compilation:
    """``program`` being compiled into ``outdir`` (see dplab.p4.cli) in a process of its
    own, which may take COMPILE_TIMEOUT_S from its start. A static plane's install thread
    reads it while the plane's own thread may cancel it."""

    def __init__(self, program: Path, outdir: Path) -> None:
        self.program = program
        self.deadline = time.monotonic() + COMPILE_TIMEOUT_S
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dplab.p4.cli", str(program), str(outdir)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._reading = threading.Lock()  # one thread reads the compiler's output
        self._files: dict[str, Path] | None = None

    def files(self) -> dict[str, Path]:
        """The files written, by kind (read once, then kept); the compiler's warnings go
        on to our stderr. PlaneError with the compiler's message for bad input, or the
        time limit."""
        with self._reading:
            if self._files is None:
                self._files = self._read()
            return self._files

    def _read(self) -> dict[str, Path]:
        # A compiler that has exited is read whatever the time: communicate() raises
        # TimeoutExpired past its deadline even when the output is all there (at a
        # thousand hosts the switches' start outlasts the compile's deadline).
        finished = self.process.poll() is not None
        try:
            out, err = self.process.communicate(
                timeout=None if finished else max(self.deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise PlaneError(f"p4: option 'program': compiling {self.program} took longer "
                             f"than {COMPILE_TIMEOUT_S:g} s; stopped") from None
        said = err.strip().splitlines()
        if self.process.returncode != 0:
            sys.stderr.write("".join(f"{line}\n" for line in said[:-1]))
            raise PlaneError("p4: option 'program': " + (
                said[-1] if said else f"the compiler exited ({self.process.returncode})"))
        sys.stderr.write(err)
        return {kind: Path(path) for kind, path in json.loads(out).items()}

    def cancel(self) -> None:
        """Stop the compiler if it still runs (the plane failed to start meanwhile): a
        thread reading it then sees it end."""
        if self.process.poll() is None:
            self.process.kill()
        with self._reading:
            if self.process.returncode is None:  # nobody read it
                self.process.communicate()


def _drop_answered(sockets: dict[str, float]) -> None:
    """Drops from ``sockets`` the switch control sockets that answer a ping (one that does
    not exist yet is not asked)."""
    for path in [p for p in sockets if Path(p).exists()]:
        try:
            switch_link.ping(path, ANSWER_TIMEOUT_S)
        except switch_link.SwitchError:
            continue
        del sockets[path]
