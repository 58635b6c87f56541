"""What the planes driven by our controller share: their daemons, waiting on the
controller's counters file (``controller.json`` in the plane's run directory), the
readiness steps and stopping every daemon at once."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dplab.control.counters_file import SERIES_SUFFIX
from dplab.control.forwarding import PROACTIVE
from dplab.planes.base import Plane, PlaneError, SeriesPoint, farthest_hosts, ping_until
from dplab.substrate.network import Network

CONTROLLER_COUNTERS = (
    "packet_ins", "packet_ins_lldp", "packet_ins_arp", "flow_installs", "packet_outs",
    "arp_replies", "arp_floods", "dropped", "switches", "lldp_links", "hosts",
    "proactive_pairs", "flows_set_up", "setup_ms_mean", "setup_ms_p50", "setup_ms_max",
)
# Counters the controller's work over time is told by (``series``).
CONTROL_SERIES = ("packet_ins", "flow_installs", "packet_outs")
POLL_S = 0.1
STOP_GRACE_S = 3.0
# The controller writes its counters every 0.1 s; one that wrote none for this long (its
# lock held by calls that meet their own deadlines first) has stopped answering.
CONTROLLER_ANSWER_S = 20.0
LOG_TAIL_BYTES = 300  # of a dead daemon's log, quoted in the failure


class ControlledPlane(Plane):
    """A plane whose daemons include one named "controller" that writes
    CONTROLLER_COUNTERS to ``stats_file``. Subclasses set ``self.net`` and ``self.dir``
    in start() and add every daemon they start to ``self._daemons``."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.net: Network | None = None
        self.dir = Path()
        self._daemons: list[tuple[str, subprocess.Popen]] = []
        self._started = 0.0
        self._ready_s: float | None = None

    @property
    def stats_file(self) -> Path:
        return self.dir / "controller.json"

    def _has_controller(self) -> bool:
        return True

    def _spawn(self, net: Network, ns: str, name: str, argv: list[str],
               stdout_pipe: bool = False, own_sysfs: bool = True) -> subprocess.Popen:
        """Run ``argv`` in ``ns`` as daemon ``name``, its output in ``<name>.log`` (only
        stderr there with ``stdout_pipe``: stdout is then the caller's to read);
        ``own_sysfs``: see Network.popen."""
        with open(self.dir / f"{name}.log", "w") as log:
            daemon = net.popen(ns, argv, own_sysfs, stdout=subprocess.PIPE if stdout_pipe else log,
                               stderr=log if stdout_pipe else subprocess.STDOUT)
        self._daemons.append((name, daemon))
        return daemon

    # -- ready ---------------------------------------------------------------------------

    def wait_ready(self, timeout: float) -> None:
        """Every switch connected and every link found by LLDP (proactive: all host-pair
        paths installed), then a ping between the farthest hosts (unless option ``ready`` is
        "started")."""
        if self.net is None:
            raise PlaneError(f"{self.kind}: wait_ready() before start()")
        net = self.net
        deadline = time.monotonic() + timeout
        if self._has_controller():
            self._wait_for_discovery(net, deadline, timeout)
            if self.options["mode"] == PROACTIVE:
                self._wait_for_proactive_paths(net, deadline, timeout)
        src, dst = farthest_hosts(net, self.avoid_pairs)
        if self.pings_when_ready() and not ping_until(net, src, dst, deadline):
            raise PlaneError(f"{self.kind}: {src} cannot ping {dst} within {timeout} s "
                             f"(logs in {self.dir})")
        self._ready_s = time.monotonic() - self._started

    def _wait_for_discovery(self, net: Network, deadline: float, timeout: float) -> None:
        switches = len(net.topo.switches())
        links = _switch_links(net)

        def discovered() -> bool:
            counters = self._controller_counters()
            # The controller counts a switch once it answered over its connection (OVS's
            # own is_connected column lags by seconds).
            return counters["switches"] == switches and counters["lldp_links"] == links

        self._wait_for(discovered, deadline - time.monotonic(),
                       lambda: f"not all {switches} switches connected and {links} links "
                               f"discovered within {timeout} s (now "
                               f"{self._controller_counters()})")

    def _wait_for_proactive_paths(self, net: Network, deadline: float, timeout: float) -> None:
        """Every host pings the next one once, so the controller hears every host's ARP."""
        hosts = net.topo.hosts()
        with ThreadPoolExecutor(max_workers=8) as pool:
            pings = [pool.submit(net.run, net.host_ns(h), ["ping", "-c1", "-W1", "-n",
                                 net.host_ip(hosts[(i + 1) % len(hosts)])], check=False)
                     for i, h in enumerate(hosts)]
            for ping in pings:
                ping.result()
        pairs = len(hosts) * (len(hosts) - 1)
        self._wait_for(lambda: self._controller_counters()["proactive_pairs"] == pairs,
                       deadline - time.monotonic(),
                       lambda: f"not all {pairs} host-pair paths installed within {timeout} "
                               f"s (now {self._controller_counters()})")

    def _wait_for(self, condition: Callable[[], bool], seconds: float,
                  failure: str | Callable[[], str],
                  pause: Callable[[], None] = lambda: time.sleep(POLL_S)) -> None:
        """Poll ``condition`` for ``seconds``, calling ``pause`` between checks (a condition
        that itself waits for an event passes a pause that does nothing); fail at once if
        any daemon died. ``failure`` says why it failed; a callable is asked when it does,
        so that it tells the state at the deadline, not at the start."""
        deadline = time.monotonic() + seconds
        while not condition():
            dead = self.failures()
            if dead:
                raise PlaneError(f"{self.kind}: {dead[0]}")
            if time.monotonic() >= deadline:
                raise PlaneError(f"{self.kind}: {failure() if callable(failure) else failure}")
            pause()

    def failures(self) -> list[str]:
        """Each daemon of this plane that has exited: its name, how it ended and its log
        (``<name>.log`` in the plane's run directory), with the log's last words when it
        exited by itself (one killed by a signal wrote nothing about it)."""
        return [f"{name} {_ending(daemon.returncode)}; log {self.dir / name}.log"
                f"{_tail(self.dir / f'{name}.log') if daemon.returncode >= 0 else ''}"
                for name, daemon in self._daemons if daemon.poll() is not None]

    # -- stats and stop ------------------------------------------------------------------

    def series(self, traffic_began: float) -> list[SeriesPoint]:
        """The controller's work per interval of its series file (counters_file): per
        second, ``<counter>_per_s:controller`` for CONTROL_SERIES and ``cpu_pct:controller``
        (its CPU time over the interval, 100 = one core), at the interval's end."""
        try:
            lines = Path(f"{self.stats_file}{SERIES_SUFFIX}").read_text().splitlines()
        except OSError:
            return []  # no controller, or it wrote nothing: unmeasured
        rows = [json.loads(line) for line in lines if line.endswith("}")]  # last may be cut
        points = []
        for a, b in zip(rows, rows[1:], strict=False):
            seconds, t = b["monotonic"] - a["monotonic"], b["monotonic"] - traffic_began
            points += [SeriesPoint(t, f"{name}_per_s:controller", (b[name] - a[name]) / seconds)
                       for name in CONTROL_SERIES]
            points.append(SeriesPoint(t, "cpu_pct:controller",
                                      100 * (b["cpu_s"] - a["cpu_s"]) / seconds))
        return points

    def _fresh_controller_counters(self) -> dict[str, float | None]:
        """Counters written after this call (the controller writes every 0.1 s), so that
        nothing counted just before is missing; PlaneError when a running controller
        wrote none within CONTROLLER_ANSWER_S (it was stopped, or hangs)."""
        asked = time.time()
        deadline = time.monotonic() + CONTROLLER_ANSWER_S
        while self._controller_running():
            try:
                if self.stats_file.stat().st_mtime > asked:
                    break
            except OSError:
                pass
            if time.monotonic() >= deadline:
                raise PlaneError(f"{self.kind}: the controller wrote no counters within "
                                 f"{CONTROLLER_ANSWER_S:g} s (it writes every 0.1 s); log "
                                 f"{self.dir}/controller.log")
            time.sleep(POLL_S / 2)
        return self._controller_counters()

    def _controller_running(self) -> bool:
        return any(name == "controller" and d.poll() is None for name, d in self._daemons)

    def _controller_counters(self) -> dict[str, float | None]:
        try:
            counters = json.loads(self.stats_file.read_text())
        except (OSError, ValueError):
            counters = {}
        return {key: counters.get(key) for key in CONTROLLER_COUNTERS}

    def stop(self) -> None:
        """SIGTERM the controller first, so that it writes its final counters while its
        switches still answer, then every other daemon at once (nothing they hold outlives
        the run: one by one cost most of a second per run); SIGKILL stragglers."""
        running = [(name, daemon) for name, daemon in self._daemons if daemon.poll() is None]
        self._daemons.clear()
        deadline = time.monotonic() + STOP_GRACE_S
        _terminate([daemon for name, daemon in running if name == "controller"], deadline)
        _terminate([daemon for name, daemon in running if name != "controller"], deadline)


def _terminate(daemons: list[subprocess.Popen], deadline: float) -> None:
    """SIGTERM all ``daemons`` at once; SIGKILL those still running at ``deadline``. A
    stopped (SIGSTOP) daemon is continued, so that it takes its SIGTERM at once."""
    for daemon in daemons:
        daemon.terminate()
        daemon.send_signal(signal.SIGCONT)
    for daemon in daemons:
        try:
            daemon.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()


def _ending(code: int) -> str:
    """How a process ended, from its exit status (negative: the signal that killed it)."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _tail(log: Path) -> str:
    """The last line with words in ``log``, quoted after a colon ("" if none or unreadable)."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - LOG_TAIL_BYTES))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    return f": {last[-LOG_TAIL_BYTES:]!r}" if last else ""


def _switch_links(net: Network) -> int:
    switches = set(net.topo.switches())
    return sum(1 for u, v in net.topo.graph.edges if u in switches and v in switches)
