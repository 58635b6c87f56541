"""``dplab calibrate``: what this machine can emulate faithfully, measured once, stored per
machine (host name and kernel), read by ``dplab validate`` (``feasibility``).

Measured with the lab's own parts, as an experiment would use them:

- timer wake-up latency: how late a 1 ms sleep (clock_nanosleep, as seen by a Python
  process: the interpreter's few µs included) wakes up; p50, p99, max over ``TIMER_SAMPLES``;
- pktblast's ceiling: a pps flow (64 B frames) asked for ``pps.MAX_PPS`` between two hosts
  on one Linux bridge, its ``offered_pps`` (the most the sender gets out of this machine);
- each plane's faithful rate: two hosts on one switch of the plane (unshaped links, the
  plane's default options), after one warm-up step at the lowest rate (a new flow's first
  frames pay for rule and cache set-up, which is not a rate limit), pps flows of 64 B
  frames at rising rates (``LADDER``); the highest rate the sender achieved (≥ 95 % of
  target) and the plane forwarded with at most ``MAX_LOSS_PCT`` loss. A rate that fails is
  tried once more (a shared machine has moments); the ladder stops at the first rate that
  fails twice: past it the figures measure the host, not the plane.
  None when even the lowest rate failed (``lowest_pps`` says which that was).

Where: ``$DPLAB_CALIBRATION_DIR`` or ``/var/lib/dplab``, file
``calibration-<host>-<kernel>.json``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dplab import planes
from dplab.planes.base import PlaneError
from dplab.substrate.network import Network
from dplab.topology import catalog
from dplab.workloads import pps
from dplab.workloads.flows import Flow, run_flows

DEFAULT_DIR = Path("/var/lib/dplab")
PLANES = ("bridge", "ovs", "p4")
LADDER = (5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 400_000, 800_000)
SHORT_LADDER = (5_000,)
STEP_S, SHORT_STEP_S = 1.0, 0.5
FRAME_BYTES = 64
MAX_LOSS_PCT = 1.0
MIN_OFFERED_SHARE = 0.95
TIMER_SAMPLES, SHORT_TIMER_SAMPLES = 1000, 100
TIMER_SLEEP_S = 0.001
READY_TIMEOUT_S = 60.0

Progress = Callable[[str], None]


class CalibrationError(ValueError):
    """A calibration file that cannot be read; the message names it."""


def calibration_path(directory: Path | None = None) -> Path:
    base = directory or Path(os.environ.get("DPLAB_CALIBRATION_DIR", DEFAULT_DIR))
    return base / f"calibration-{platform.node()}-{platform.release()}.json"


def load(path: Path | None = None) -> dict[str, Any] | None:
    """This machine's calibration, or None when it was never measured."""
    path = path or calibration_path()
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"{path}: cannot read calibration: {exc}") from None


def save(calibration: dict[str, Any], path: Path | None = None) -> Path:
    path = path or calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(calibration, indent=2, sort_keys=True))
    os.replace(tmp, path)
    return path


def measure(plane_kinds: Sequence[str] = PLANES, short: bool = False,
            progress: Progress | None = None) -> dict[str, Any]:
    """Every figure of the module docstring; ``short`` (for tests): fewer timer samples,
    a one-rate ladder without warm-up, half-second steps."""
    say = progress or (lambda _msg: None)
    step_s = SHORT_STEP_S if short else STEP_S
    say("timer wake-up latency")
    timer = timer_latency(SHORT_TIMER_SAMPLES if short else TIMER_SAMPLES)
    load_start = os.getloadavg()[0]
    plane_figures: dict[str, Any] = {}
    blast = None
    for kind in plane_kinds:
        say(f"{kind}: pps ladder")
        try:
            with _rig(kind) as net:
                if kind == "bridge":
                    blast = _step(net, pps.MAX_PPS, step_s)["offered_pps"]
                plane_figures[kind] = ladder(net, SHORT_LADDER if short else LADDER, step_s,
                                             say, warm_up=not short)
        except PlaneError as exc:  # e.g. its programs are not built here: the others go on
            say(f"{kind}: not measured: {exc}")
            plane_figures[kind] = {"faithful_pps": None, "error": str(exc), "steps": []}
    return {"host": platform.node(), "kernel": platform.release(),
            "cores": os.cpu_count(), "measured": datetime.now(UTC).isoformat(timespec="seconds"),
            "mode": "short" if short else "full",
            "load_average": {"start": load_start, "end": os.getloadavg()[0]},
            "timer_wakeup_us": timer, "frame_bytes": FRAME_BYTES,
            "pktblast_max_pps": blast, "planes": plane_figures}


def timer_latency(samples: int) -> dict[str, float]:
    late = []
    for _ in range(samples):
        start = time.perf_counter()
        time.sleep(TIMER_SLEEP_S)
        late.append((time.perf_counter() - start - TIMER_SLEEP_S) * 1e6)
    late.sort()
    return {"p50": statistics.median(late), "p99": late[int(0.99 * (len(late) - 1))],
            "max": late[-1], "samples": samples}


class _rig:
    """Two hosts on one switch of plane ``kind``, ready; torn down on exit."""

    def __init__(self, kind: str) -> None:
        self.plane = planes.create(kind, {})
        topo = catalog.build("single", hosts=2, edge_bw=None)
        self.net = self.plane.network(topo)

    def __enter__(self) -> Network:
        self.net.up()
        try:
            self.plane.start(self.net)
            self.plane.wait_ready(READY_TIMEOUT_S)
        except BaseException:
            self.__exit__()
            raise
        return self.net

    def __exit__(self, *_exc: object) -> None:
        try:
            self.plane.stop()
        finally:
            self.net.down()


def ladder(net: Network, rates: Sequence[int], step_s: float, say: Progress,
           warm_up: bool = True) -> dict[str, Any]:
    """Rising rates until one is not forwarded faithfully; the highest faithful one."""
    warmup = _step(net, rates[0], step_s) if warm_up else None
    steps, faithful = [], None
    for rate in rates:
        for _attempt in range(2):
            step = _step(net, rate, step_s)
            steps.append(step)
            say(f"  {rate} pps: offered {step['offered_pps']}, loss {step['loss_pct']} %")
            if step["faithful"]:
                break
        if not step["faithful"]:
            break
        faithful = rate
    return {"faithful_pps": faithful, "lowest_pps": rates[0], "warmup": warmup,
            "steps": steps}


def faithful_text(plane: dict[str, Any]) -> str:
    """'200,000 pps', 'under 5,000 pps' (even the ladder's lowest rate failed) or 'not
    measured (<why>)'."""
    if plane.get("error"):
        return f"not measured ({plane['error']})"
    if plane.get("faithful_pps") is None:
        return f"under {plane.get('lowest_pps', 0):,} pps"
    return f"{plane['faithful_pps']:,} pps"


def _step(net: Network, rate: float, seconds: float) -> dict[str, Any]:
    flow = Flow("calibrate-pps-h1-h2", "pps", "h1", "h2",
                {"pps": rate, "size": FRAME_BYTES, "duration": seconds})
    [result] = run_flows(net, [flow])
    offered, loss = result.summary.get("offered_pps"), result.summary.get("loss_pct")
    faithful = (result.ok and offered is not None and loss is not None
                and offered >= MIN_OFFERED_SHARE * rate and loss <= MAX_LOSS_PCT)
    return {"target_pps": rate, "offered_pps": offered, "loss_pct": loss,
            "faithful": bool(faithful), "error": result.error}
