"""Start and stop the wireless medium emulator (``dplab-wmedium``, switch/wmedium) of each
access point (docs/wireless.md).

An access point's medium has its own namespace holding one veth end per radio: ``wap`` (the
peer of the AP's wlan port) and ``w<station>`` (the peer of each station's eth0). One
``dplab-wmedium`` process there carries every frame between them with the medium's shared
airtime, each station's rate and loss, and broadcasts to every station; its configuration
is a JSON file in the run directory (switch/wmedium/src/config.rs reads it and names a
bad field). down() stops the processes with SIGTERM; each writes its
counters to its ``stats_path``, which ``Network.medium_reports`` keeps.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dplab.substrate import emulator_process
from dplab.substrate.registry import SubstrateError

if TYPE_CHECKING:
    from dplab.substrate.network import Network

ROOT = Path(__file__).resolve().parents[3]
WMEDIUM_BIN = ROOT / "switch" / "target" / "release" / "dplab-wmedium"
AP_IF = "wap"
# Broadcasts go at the lowest 802.11g rate, as 802.11 sends group-addressed frames at a
# basic rate every station in range can receive.
BASIC_RATE_MBIT = 6.0
QUEUE_FRAMES = 100  # each sender's queue, as a Wi-Fi driver's per-station queue (frames)
# Each radio's counters in dplab-wmedium's stats file (switch/wmedium/src/main.rs); the last
# three count frames the kernel dropped on the way in or out (receive ring full, a port
# that could not be read, a send not taken).
COUNTERS = ("tx_frames", "tx_bytes", "airtime_ns", "queue_drops", "lost", "rx_frames",
            "rx_bytes", "ring_drops", "port_drops", "refused")
STOP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Radio:
    """A station on the medium: its eth0's peer ``ifname`` and its link."""

    station: str
    ifname: str
    rate_mbit: float
    loss_pct: float


@dataclass(frozen=True)
class Medium:
    """One access point's medium: the AP's wlan port ``ap_port`` and its stations."""

    ap: str
    ap_port: str
    radios: tuple[Radio, ...]

    def ifnames(self) -> list[str]:
        return [AP_IF, *(r.ifname for r in self.radios)]


@dataclass
class Running:
    medium: Medium
    namespace: str
    seed: int
    stats_path: Path
    proc: subprocess.Popen
    realtime: bool = False  # whether it runs under SCHED_FIFO (substrate.realtime)


def station_ifname(station: str) -> str:
    return f"w{station}"


def check_binary() -> None:
    if not WMEDIUM_BIN.exists():
        raise SubstrateError(f"wireless topologies need the medium emulator at {WMEDIUM_BIN} "
                             "(cargo build --release in switch/)")


def config(medium: Medium, seed: int, stats_path: Path) -> dict:
    """dplab-wmedium's configuration (switch/wmedium/src/config.rs)."""
    return {"name": medium.ap, "seed": seed, "basic_rate_mbit": BASIC_RATE_MBIT,
            "queue_frames": QUEUE_FRAMES, "overhead_us": 0, "stats_path": str(stats_path),
            "ap": {"ifname": AP_IF},
            "stations": [{"ifname": r.ifname, "rate_mbit": r.rate_mbit, "loss_pct": r.loss_pct}
                         for r in medium.radios]}


def start(net: Network, media: list[Medium]) -> list[Running]:
    """One process per medium, all started at once, each waited for until it says ready and
    then raised to real-time priority (substrate.realtime)."""
    running = []
    for medium in media:
        ns = net.medium_ns(medium.ap)
        seed = random.SystemRandom().getrandbits(63)
        stats_path = net.run_dir / f"wmedium-{medium.ap}.json"
        proc = emulator_process.launch(net, ns, WMEDIUM_BIN, config(medium, seed, stats_path))
        running.append(Running(medium, ns, seed, stats_path, proc))
    deadline = time.monotonic() + emulator_process.START_TIMEOUT_S
    for one in running:
        one.realtime = emulator_process.wait_ready(
            one.proc, deadline, f"medium emulator of {one.medium.ap} ({one.namespace})")
    return running


def stop(running: list[Running]) -> list[dict]:
    """SIGTERM each process; its counters from its stats file (None if it wrote none)."""
    for one in running:
        if one.proc.poll() is None:
            one.proc.send_signal(signal.SIGTERM)
    return [{"ap": one.medium.ap, "namespace": one.namespace, "seed": one.seed,
             "realtime": one.realtime,
             "stations": {r.station: {"ifname": r.ifname, "rate_mbit": r.rate_mbit,
                                      "loss_pct": r.loss_pct} for r in one.medium.radios},
             "stats": _stats(one)} for one in running]


def _stats(one: Running) -> dict | None:
    try:
        one.proc.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        one.proc.kill()
        one.proc.communicate()
        return None
    try:
        return json.loads(one.stats_path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def flat_stats(reports: list[dict]) -> dict[str, float | None]:
    """The media's counters as a run's statistics: ``wmedium_<ap>_<radio>_<counter>``, the
    radio being ``ap`` or a station, ``wmedium_<ap>_cpu_s`` and ``wmedium_<ap>_realtime``
    (1.0 if it ran under SCHED_FIFO, else 0.0); None where a medium gave no counters."""
    out: dict[str, float | None] = {}
    for report in reports:
        cpu = (report["stats"] or {}).get("cpu_s")
        out[f"wmedium_{report['ap']}_cpu_s"] = None if cpu is None else float(cpu)
        out[f"wmedium_{report['ap']}_realtime"] = float(report["realtime"])
        names = {AP_IF: "ap", **{s["ifname"]: name for name, s in report["stations"].items()}}
        nodes = (report["stats"] or {}).get("nodes", {})
        for ifname, radio in names.items():
            for counter in COUNTERS:
                value = nodes.get(ifname, {}).get(counter)
                out[f"wmedium_{report['ap']}_{radio}_{counter}"] = (
                    None if value is None else float(value))
    return out
