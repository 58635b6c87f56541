"""Start and stop the user-space link emulator (``dplab-linkem``, switch/linkem) on the links
the substrate emulates itself (see network.Network.emulated_links).

Each emulated link has its own namespace holding ``ea`` (the peer of the link's a-end) and
``eb`` (the peer of its b-end) and one ``dplab-linkem`` process between them, started with a
JSON configuration in the run directory. Both directions get the link's delay, jitter and
loss, as netem on both ends would (and as in Mininet). Each process draws from its own
seed, kept in its report: the link's ``linkem`` ``seed`` plus the link's number (so one
``linkem`` mapping for every link of a topology still gives each link its own draws, and a
run with that seed repeats them), or else a random one chosen here. down() stops the
processes with SIGTERM and keeps their counters in ``Network.emulator_reports`` before
teardown removes what is left.
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
from dplab.topology import linkem_settings

if TYPE_CHECKING:
    from dplab.substrate.network import Link, Network

ROOT = Path(__file__).resolve().parents[3]
LINKEM_BIN = ROOT / "switch" / "target" / "release" / "dplab-linkem"
A_IF, B_IF = "ea", "eb"
# The keys of one direction in dplab-linkem's configuration (switch/linkem/src/config.rs).
DIRECTION_KEYS = tuple(k for k in linkem_settings.KEYS if k != "seed")
STOP_TIMEOUT_S = 5.0


# dplab-linkem's counters per direction (switch/linkem/src/main.rs `Counters`).
COUNTERS = ("received", "sent", "lost", "queue_full", "limit", "duplicated", "corrupted",
            "port_drops", "refused")


@dataclass
class Emulator:
    link: str
    ends: tuple[str, str]  # the nodes at the link's a and b ends
    namespace: str
    seed: int
    proc: subprocess.Popen
    realtime: bool = False  # whether it runs under SCHED_FIFO (substrate.realtime)


def check_binary() -> None:
    if not LINKEM_BIN.exists():
        raise SubstrateError(f"links with delay/jitter/loss need the link emulator at "
                             f"{LINKEM_BIN} (cargo build --release in switch/)")


def direction(link: Link) -> dict:
    """One direction's settings in dplab-linkem's configuration: the link's delay, jitter and
    loss, then its ``linkem`` direction settings over them."""
    loss = {"model": "random", "pct": link.loss_pct} if link.loss_pct > 0 else {"model": "none"}
    own = {k: v for k, v in (link.linkem or {}).items() if k in DIRECTION_KEYS}
    return {"delay_us": link.delay_ms * 1000.0, "jitter_us": link.jitter_ms * 1000.0,
            "loss": loss, **own}


def seed(link: Link, number: int) -> int:
    """The seed of link number ``number``'s emulator (see the module's docstring)."""
    chosen = (link.linkem or {}).get("seed")
    if chosen is None:
        return random.SystemRandom().getrandbits(63)
    return (chosen + number) % linkem_settings.SEED_LIMIT


def start(net: Network, links: list[Link]) -> list[Emulator]:
    """Start one emulator per link, all at once, wait until each says ``ready``, then raise
    it to real-time priority (substrate.realtime)."""
    emulators = []
    for link in links:
        ns = net.emulator_ns(link)
        link_seed = seed(link, net.links.index(link))
        config = {"link": link.label, "a": A_IF, "b": B_IF, "seed": link_seed,
                  "a_to_b": direction(link), "b_to_a": direction(link)}
        proc = emulator_process.launch(net, ns, LINKEM_BIN, config)
        emulators.append(Emulator(link.label, (link.a.node, link.b.node), ns, link_seed, proc))
    deadline = time.monotonic() + emulator_process.START_TIMEOUT_S
    for emulator in emulators:
        emulator.realtime = emulator_process.wait_ready(
            emulator.proc, deadline, f"link emulator of {emulator.link} ({emulator.namespace})")
    return emulators


def stop(emulators: list[Emulator]) -> list[dict]:
    """SIGTERM each emulator and collect its report (None if it did not give one)."""
    for emulator in emulators:
        if emulator.proc.poll() is None:
            emulator.proc.send_signal(signal.SIGTERM)
    return [{"link": e.link, "ends": e.ends, "namespace": e.namespace, "seed": e.seed,
             "realtime": e.realtime, "report": _report(e)} for e in emulators]


def _report(emulator: Emulator) -> dict | None:
    try:
        out, _ = emulator.proc.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        emulator.proc.kill()
        emulator.proc.communicate()
        return None
    lines = out.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


def flat_stats(reports: list[dict]) -> dict[str, float | None]:
    """The emulators' counters as a run's statistics: ``linkem_<from>_to_<to>_<counter>`` per
    direction of each emulated link, ``linkem_<a>_<b>_cpu_s`` and ``linkem_<a>_<b>_realtime``
    (1.0 if it ran under SCHED_FIFO, else 0.0); None where an emulator gave no report (the
    seed, up to 2**63, is in the report but would not survive a float)."""
    out: dict[str, float | None] = {}
    for r in reports:
        a, b = r["ends"]
        report = r["report"] or {}
        for way, (src, dst) in (("a_to_b", (a, b)), ("b_to_a", (b, a))):
            counters = report.get(way, {})
            for counter in COUNTERS:
                value = counters.get(counter)
                out[f"linkem_{src}_to_{dst}_{counter}"] = None if value is None else float(value)
        cpu = report.get("cpu_s")
        out[f"linkem_{a}_{b}_cpu_s"] = None if cpu is None else float(cpu)
        out[f"linkem_{a}_{b}_realtime"] = float(r["realtime"])
    return out
