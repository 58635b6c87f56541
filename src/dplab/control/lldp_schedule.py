"""When each LLDP probe goes out, and how long a link may stay unconfirmed.

ONOS probes every port every 3 s. A controller that is one Python process cannot always
keep that up on a large network: a fat-tree of k=16 has 5,120 ports, so a 3 s round is
1,700 probes a second, each a packet-out on its way out and, where it crosses a link, a
packet-in on its way back, through the controller, the P4Runtime server (or OVS) and the
switches, all sharing the machine. Sent faster than that path carries them, probes queue
in it and every other packet-in and packet-out waits behind them.

So a round's probes are sent at the rate the path is measured to carry: PROBES_IN_FLIGHT
probes over the time a probe takes to come back (its round trip: packet-out sent to its
packet-in handled, smoothed as TCP smooths its RTT). By Little's law LLDP then keeps
about PROBES_IN_FLIGHT messages in the path's queues whatever its speed, so a flood's or
a flow's packet-out waits behind at most that many probes; when the path slows (a busy
server, a loaded machine), probes come back later and the rate drops. Never more than
twice that many are in flight (WINDOW_SLACK): the window holds when the path slows faster
than the round trips can tell, which a rate measured on a quiet path would otherwise
fill with a whole round; a probe counts as in flight until it comes back or is
LOST_AFTER_RTTS round trips old (lost, or sent out of a port where a host, not a switch,
listens). When the path is fast, a round is ONOS's 3 s (its probes spread evenly over
it) at any size. A round lasts ``max(LLDP_INTERVAL_S, ports / rate)``, or longer while
the window is full; a link is cut after MISSED_ROUNDS rounds of the longest of this one
(as planned, or as long as it has taken so far) and the last, plus EXPIRY_MARGIN_S.

A port that just came up (a switch's, at connect) is probed at once and again REPROBE_S
later, outside the rounds: its neighbour may not have been ready for the first probe, and
a new link should not wait a whole round to be found.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from dplab.control.topology_view import PortRef

LLDP_INTERVAL_S = 3.0  # a round's shortest length, as ONOS's probe rate
# Probes the rate keeps in flight (see above): at the 300-700 packet-outs a second one
# P4Runtime server process moved for a k=16 fat-tree (docs/benchmarks.md), LLDP then adds
# 0.1-0.2 s at most to another packet-out's wait.
PROBES_IN_FLIGHT = 64
# Before any probe has come back: the round trip at which the rate is the fixed 200
# probes a second this pacing replaced (what one controller carried at k=12).
UNMEASURED_RTT_S = PROBES_IN_FLIGHT / 200
# A round trip below this counts as this (a probe answered within the same clock reading,
# as in unit tests with a fake fabric): the rate stays finite.
MIN_RTT_S = 0.001
RTT_GAIN = 1 / 8  # weight of a new round-trip sample (RFC 6298's alpha)
# The window is this many times the probes the rate keeps in flight: it binds only when
# the path slows faster than the round trips show.
WINDOW_SLACK = 2
# A probe this many smoothed round trips old is no longer counted in flight (TCP's RTO is
# about the smoothed round trip and four deviations).
LOST_AFTER_RTTS = 3
MISSED_ROUNDS = 3
EXPIRY_MARGIN_S = 1.0  # 3 rounds of 3 s and this: ONOS's 10 s on a small network
REPROBE_S = 0.5


class ProbeSchedule:
    """Rounds of probes over every port at the measured rate, and the re-probes of ports
    just come up. Tell it each probe ``sent`` and each ``heard`` back; ``due(now, ports)``
    says which ports to probe now: call it often (a tick of 0.1–0.5 s)."""

    def __init__(self) -> None:
        self._round: list[PortRef] = []
        self._next = 0  # index in self._round of the next port to probe
        self._round_start = float("-inf")
        self._last_round_s = LLDP_INTERVAL_S
        self._credit = 0.0  # probes the rate allows and not yet sent
        self._paid_to = 0.0  # time up to which the rate has added credit
        self._soon: dict[PortRef, float] = {}  # port -> when to probe it again
        # port -> when its last probe went out (for its round trip, however late); the
        # probes counted in flight, and every probe sent, oldest first, to take those too
        # old out of the flight
        self._sent_at: dict[PortRef, float] = {}
        self._flying: dict[PortRef, float] = {}
        self._sent: deque[tuple[float, PortRef]] = deque()
        self._rtt_s: float | None = None  # smoothed; None until a probe came back

    def rate(self) -> float:
        """Probes a second the path is measured to carry."""
        return PROBES_IN_FLIGHT / self._path_rtt_s()

    def _path_rtt_s(self) -> float:
        """The round trip the pacing goes by: the smoothed one, at least MIN_RTT_S, or
        UNMEASURED_RTT_S before a probe came back."""
        return UNMEASURED_RTT_S if self._rtt_s is None else max(self._rtt_s, MIN_RTT_S)

    @property
    def rtt_s(self) -> float | None:
        """The smoothed round trip of a probe, seconds; None before one came back."""
        return self._rtt_s

    @property
    def interval(self) -> float:
        """The current round's length at the current rate, seconds."""
        return max(LLDP_INTERVAL_S, len(self._round) / self.rate())

    def link_timeout(self, now: float) -> float:
        """Seconds a link may go without a probe crossing it before it is cut at ``now``:
        rounds as long as the longest of this one's length at the current rate, the time
        it has taken so far (a full window or late ticks stretch it) and the last round,
        so that neither a rising rate nor a stalled round cuts links its probes have not
        reached yet."""
        so_far = now - self._round_start if self._round else 0.0
        longest = max(self.interval, so_far, self._last_round_s)
        return MISSED_ROUNDS * longest + EXPIRY_MARGIN_S

    def window(self) -> int:
        """Probes that may be in flight at once."""
        return WINDOW_SLACK * PROBES_IN_FLIGHT

    def in_flight(self, now: float) -> int:
        """Probes sent and neither heard back nor LOST_AFTER_RTTS round trips old."""
        oldest = now - LOST_AFTER_RTTS * self._path_rtt_s()
        while self._sent and self._sent[0][0] < oldest:
            when, port = self._sent.popleft()
            if self._flying.get(port) == when:
                del self._flying[port]
        return len(self._flying)

    def sent(self, port: PortRef, now: float) -> None:
        self._sent_at[port] = self._flying[port] = now
        self._sent.append((now, port))

    def heard(self, port: PortRef, now: float) -> None:
        """The probe last sent out of ``port`` came back (as a packet-in) at ``now``."""
        sent = self._sent_at.pop(port, None)
        self._flying.pop(port, None)
        if sent is None:
            return  # an older probe's copy, or one sent before a restart: no sample
        rtt = now - sent
        self._rtt_s = rtt if self._rtt_s is None else self._rtt_s + RTT_GAIN * (rtt - self._rtt_s)

    def _send_share(self, now: float, out: list[PortRef]) -> None:
        """Adds to ``out`` the round's probes its rate allows by ``now`` (spread evenly
        over the round) and the window has room for."""
        self._credit += len(self._round) / self.interval * (now - self._paid_to)
        self._paid_to = now
        room = max(0, self.window() - self.in_flight(now))
        upto = min(len(self._round), self._next + int(self._credit), self._next + room)
        out += self._round[self._next:upto]
        self._credit = min(self._credit - (upto - self._next), self.window())
        self._next = upto

    def probe_again_soon(self, ports: list[PortRef], now: float) -> None:
        for port in ports:
            self._soon.setdefault(port, now + REPROBE_S)

    def due(self, now: float, ports: Callable[[], list[PortRef]]) -> list[PortRef]:
        """The ports to probe now; ``ports`` lists every port, asked at a round's start."""
        out: list[PortRef] = []
        self._send_share(now, out)
        if self._next >= len(self._round) and now >= self._round_start + self.interval:
            if self._round:  # how long the round that ends took counts for expiry
                self._last_round_s = now - self._round_start
            self._round, self._next, self._round_start = ports(), 0, now
            self._credit, self._paid_to = 1.0, now
            self._send_share(now, out)
        again = [port for port, when in self._soon.items() if when <= now]
        for port in again:
            del self._soon[port]
        return out + again
