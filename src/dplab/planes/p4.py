"""SDN+P4: one dplab-switch per topology switch, each behind its own P4Runtime server,
all driven by the P4Runtime controller app (the same forwarding logic as the OVS plane).

Every switch runs in its own namespace ``<prefix>-<switch>`` with its P4Runtime server;
switch control sockets, gRPC sockets (unix sockets, so the controller reaches them from
any namespace), compiled program, controller config, counters and logs live in
``<run dir>/p4``. Switch sN is P4Runtime device N.

Options: ``mode`` reactive|proactive, ``program`` (a P4 file; default
``p4src/basic_fwd.p4``; the controller needs basic_fwd's table, action and controller
headers, so a user program must keep those names). Ready = every switch up and every link
found by LLDP (proactive: all host-pair paths installed), then a ping between the
farthest hosts.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dplab.control.forwarding import MODES, REACTIVE
from dplab.p4.cli import compile_command
from dplab.p4.errors import P4Error
from dplab.planes.base import PlaneError
from dplab.planes.controlled import CONTROLLER_COUNTERS, ControlledPlane
from dplab.substrate.network import HOST_IF, Network

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PROGRAM = ROOT / "p4src" / "basic_fwd.p4"
SWITCH_BIN = ROOT / "switch" / "target" / "release" / "dplab-switch"
CPU_PORT = 255
START_TIMEOUT_S = 15.0
OFFLOADS_OFF = ("for i in \"$@\"; do ethtool -K \"$i\" tx off tso off gso off >/dev/null "
                "|| exit 1; done")


class P4Plane(ControlledPlane):
    kind = "p4"
    addressing = "l2"
    shared_switch_ns = False
    OPTIONS: dict[str, Any] = {"mode": REACTIVE, "program": None}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        if self.options["mode"] not in MODES:
            raise PlaneError(f"plane p4: option 'mode' must be one of {', '.join(MODES)}, "
                             f"not {self.options['mode']!r}")
        program = self.options["program"]
        self.program = Path(program) if program is not None else DEFAULT_PROGRAM
        if not self.program.is_file():
            raise PlaneError(f"plane p4: option 'program': no file {self.program}")

    # -- start ---------------------------------------------------------------------------

    def start(self, net: Network) -> None:
        misnamed = [s for s in net.topo.switches() if not s[1:].isdigit()]
        if misnamed:  # the device id is the number
            raise PlaneError(f"p4: switch {misnamed[0]!r} is not named s<number>")
        self.net = net
        self._started = time.monotonic()
        self.dir = net.run_dir / "p4"
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            compiled = compile_command(self.program, self.dir)
        except P4Error as exc:
            raise PlaneError(f"p4: option 'program': {exc}") from exc
        self._offloads_off(net)
        for switch in net.topo.switches():
            self._start_switch(net, switch)
        self._wait_for(lambda: all(self._control(s).exists() for s in net.topo.switches()),
                       START_TIMEOUT_S, "the switches did not open their control sockets")
        for switch in net.topo.switches():
            self._start_server(net, switch)
        self._start_controller(net, compiled)

    def _control(self, switch: str) -> Path:
        return self.dir / f"{switch}.sock"

    def _grpc(self, switch: str) -> str:
        return f"unix:{self.dir / switch}.grpc"

    def _offloads_off(self, net: Network) -> None:
        """The switch forwards frames as they are: checksums must be filled in and
        segments real (switch/PROTOCOL.md)."""
        jobs = [(net.host_ns(h), [HOST_IF]) for h in net.topo.hosts()]
        jobs += [(net.switch_ns(s), list(net.switch_ports(s).values()))
                 for s in net.topo.switches()]
        with ThreadPoolExecutor(max_workers=8) as pool:
            for done in [pool.submit(net.run, ns, ["sh", "-c", OFFLOADS_OFF, "sh", *ifs])
                         for ns, ifs in jobs]:
                done.result()

    def _start_switch(self, net: Network, switch: str) -> None:
        argv = [str(SWITCH_BIN), "--cpu-port", str(CPU_PORT), "--control",
                str(self._control(switch))]
        for port, ifname in sorted(net.switch_ports(switch).items()):
            argv += ["--port", f"{port}={ifname}"]
        self._spawn(net, net.switch_ns(switch), f"switch-{switch}", argv)

    def _start_server(self, net: Network, switch: str) -> None:
        argv = [sys.executable, "-m", "dplab.p4runtime", "--switch-socket",
                str(self._control(switch)), "--listen", self._grpc(switch),
                "--device-id", switch[1:]]
        self._spawn(net, net.switch_ns(switch), f"p4runtime-{switch}", argv)

    def _start_controller(self, net: Network, compiled: dict[str, Path]) -> None:
        config = self.dir / "controller-config.json"
        config.write_text(json.dumps({
            "ir": str(compiled["ir"]), "p4info": str(compiled["p4info_bin"]),
            "switches": {s: {"address": self._grpc(s), "device_id": int(s[1:]),
                             "ports": sorted(net.switch_ports(s))}
                         for s in net.topo.switches()}}))
        argv = [sys.executable, "-m", "dplab.control.p4runtime_app", "--config", str(config),
                "--mode", self.options["mode"], "--stats-file", str(self.stats_file)]
        self._spawn(net, net.switch_ns(net.topo.switches()[0]), "controller", argv)

    # -- stats and stop ------------------------------------------------------------------

    def stats(self) -> dict[str, float | None]:
        """The controller's counters (written after this call, so nothing just counted is
        missing) and the time it took to become ready."""
        if self.net is None:
            return dict.fromkeys((*CONTROLLER_COUNTERS, "ready_s"))
        return {**self._fresh_controller_counters(), "ready_s": self._ready_s}
