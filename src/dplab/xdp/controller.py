"""The lab's forwarding application (control.forwarding) driving XDP switches from a thread
of this process: packet-ins come from the switches' ring buffers, rules and packet-outs go
through XdpSouthbound. The thread alone calls into Forwarding; readers take the lock."""

from __future__ import annotations

import threading
import time

from dplab.control.forwarding import Forwarding
from dplab.control.topology_view import PortRef
from dplab.xdp.libbpf import RingBuffers
from dplab.xdp.southbound import XdpSouthbound

TICK_S = 0.5  # Forwarding.tick() and idle-rule expiry
POLL_MS = 50
JOIN_S = 5.0


class XdpController:
    def __init__(self, southbound: XdpSouthbound, mode: str,
                 hairpin: tuple[PortRef, ...] = ()) -> None:
        """``hairpin``: ports floods go back out of (an access point's wlan port)."""
        self.southbound = southbound
        self.forwarding = Forwarding(southbound, mode, hairpin=hairpin)
        self.rings = RingBuffers()
        for switch in southbound.switches.values():
            self.rings.add(switch.program.map("packet_ins"), switch.name)
        self.expired = 0
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xdp-controller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            with self._lock:
                for switch in self.southbound.switches.values():
                    self.forwarding.switch_up(switch.name, sorted(switch.ports))
            next_tick = time.monotonic()
            while not self._stopping.is_set():
                records = self.rings.poll(POLL_MS)
                with self._lock:
                    for switch, record in records:
                        port, frame = self.southbound.decode_packet_in(switch, record)
                        self.forwarding.packet_in(switch, port, frame)
                    if time.monotonic() >= next_tick:
                        next_tick = time.monotonic() + TICK_S
                        self.forwarding.tick()
                        self.expired += self.southbound.expire()
        except BaseException as exc:  # reported by counters() and stop(), never lost
            self.error = exc

    def counters(self) -> dict[str, float | None]:
        """Forwarding's counters, plus rules_expired; raises what stopped the thread."""
        if self.error is not None:
            raise RuntimeError(f"the XDP controller thread failed: {self.error!r}") from self.error
        with self._lock:
            return {**self.forwarding.counters(), "rules_expired": float(self.expired)}

    def pair_packet_ins(self) -> dict[str, int]:
        """Forwarding's packet-ins per host pair (the counters file's ``packet_ins_by_pair``
        under the other southbounds)."""
        with self._lock:
            return self.forwarding.pair_packet_ins()

    def rule_packets(self) -> dict[str, dict[tuple[str, str], int]]:
        """XdpSouthbound.rule_packets, between the thread's turns: no rule expires while
        the maps are walked (a key deleted under a walk restarts it, counting some twice)."""
        with self._lock:
            return self.southbound.rule_packets()

    def stop(self) -> None:
        """Idempotent."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(JOIN_S)
        self.rings.close()
        self.southbound.close()
