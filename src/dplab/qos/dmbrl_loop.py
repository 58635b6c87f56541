"""The QoS control loop of study 004, run by the p4 plane beside its switches: for every
switch and class, every sampling interval, read the class's byte counter, compute what the
class used (Λ), set the class's meter to the policy's rate, record a sample.

Policies: ``dmbrl`` (eq. 1-3 of ``dplab.qos.dmbrl``: R = min(max(Λ, Rmin), Rmax), the
interval halved above θhigh and doubled below θlow, each class on its own interval) and
``mbe`` (``dplab.qos.mbe``: the band covering Λ, on a fixed interval). Either way a class's
rate is capped by the capacity its switch has left after the classes above it (their
latest rates). Λ divides by the time measured between the two readings, not the nominal
interval: a late turn must not inflate the load.

Samples (JSON lines, one per turn): t (s since the loop started), monotonic (the same
moment on the machine's monotonic clock, so the plane can place it against the run's
traffic), switch, class, bytes (the counter), used_bps (Λ), rate_bps (written), interval_s
(until the next turn).

    python -m dplab.qos.dmbrl_loop --config loop.json   # {p4info, qos, samples, switches:
                                                        #  {name: {address, device_id}}}
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from p4.config.v1 import p4info_pb2

from dplab.qos import dmbrl, mbe
from dplab.qos.meter_client import MeterClient
from dplab.qos.options import QosSpec, parse

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
SIGNAL_POLL_S = 0.2


@dataclass
class ClassState:
    """One class on one switch: its last reading and when its next turn is due."""

    switch: str
    class_id: int
    last_bytes: int
    last_t: float
    interval_s: float
    rate_bps: float | None = None  # None until the loop has written one

    @property
    def due(self) -> float:
        return self.last_t + self.interval_s


class Loop:
    def __init__(self, spec: QosSpec, clients: dict[str, MeterClient], samples: TextIO,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not spec.runs_loop:
            raise ValueError(f"policy {spec.policy!r} runs no loop")
        self.spec, self.clients, self.samples, self.clock = spec, clients, samples, clock
        self.started = clock()
        self.states = [ClassState(switch, c, client.read_bytes(c), self.started,
                                  spec.interval_s)
                       for switch, client in clients.items() for c in spec.classes]

    def turn(self, state: ClassState) -> None:
        """Read, compute, write and record one class on one switch."""
        now_bytes, now = self.clients[state.switch].read_bytes(state.class_id), self.clock()
        used = dmbrl.used_bandwidth(state.last_bytes, now_bytes, now - state.last_t)
        remaining = self.spec.capacity_bps - self._rates_above(state)
        if self.spec.policy == "dmbrl":
            rate = dmbrl.next_rate(used, remaining, self.spec.limits)
            state.interval_s = dmbrl.next_interval(used, state.interval_s, self.spec.limits)
        else:
            rate = mbe.band_rate(used, self.spec.bands_bps, remaining)
        self.clients[state.switch].write_rate(state.class_id, rate, self.spec.burst_bytes)
        state.last_bytes, state.last_t, state.rate_bps = now_bytes, now, rate
        self.samples.write(json.dumps({
            "t": round(now - self.started, 6), "monotonic": now, "switch": state.switch,
            "class": state.class_id, "bytes": now_bytes, "used_bps": used,
            "rate_bps": rate, "interval_s": state.interval_s}) + "\n")
        self.samples.flush()

    def _rates_above(self, state: ClassState) -> float:
        """The latest rates of the classes above ``state``'s on its switch."""
        above = self.spec.classes[:self.spec.classes.index(state.class_id)]
        return sum(s.rate_bps or 0.0 for s in self.states
                   if s.switch == state.switch and s.class_id in above)

    def run(self, stop: threading.Event) -> None:
        """Turns in order of due time until ``stop`` is set."""
        while not stop.is_set():
            state = min(self.states, key=lambda s: s.due)
            if stop.wait(max(0.0, state.due - self.clock())):
                return
            self.turn(state)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dplab.qos.dmbrl_loop")
    parser.add_argument("--config", required=True, type=Path)
    config = json.loads(parser.parse_args(argv).config.read_text())
    spec = parse(config["qos"])
    info = p4info_pb2.P4Info.FromString(Path(config["p4info"]).read_bytes())
    # Blocked before any thread starts (gRPC's too): only the main thread takes them, below.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    clients = {name: MeterClient(s["address"], s["device_id"], info, spec.meter, spec.counter)
               for name, s in config["switches"].items()}
    try:
        for client in clients.values():
            client.connect()
        with open(config["samples"], "a") as samples:
            loop = Loop(spec, clients, samples)
            print("ready", flush=True)
            return _run_until_signalled(loop)
    finally:
        for client in clients.values():
            client.close()


def _run_until_signalled(loop: Loop) -> int:
    """The loop in a thread until SIGTERM/SIGINT (then it finishes its turn: no sample is
    cut in half); 1 if the loop itself failed (e.g. its switch went away)."""
    stop, failed = threading.Event(), threading.Event()

    def run() -> None:
        try:
            loop.run(stop)
        except Exception:
            failed.set()
            raise

    worker = threading.Thread(target=run, name="qos-loop")
    worker.start()
    while worker.is_alive():
        if signal.sigtimedwait(STOP_SIGNALS, SIGNAL_POLL_S) is not None:
            stop.set()
    worker.join()
    return 1 if failed.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())
