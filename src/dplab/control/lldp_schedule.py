"""When each LLDP probe goes out, and how long a link may stay unconfirmed.

ONOS probes every port every 3 s. A controller that is one Python process cannot keep
that up on a large network: a fat-tree of k=12 has 2,160 ports, so a 3 s round is 720
probes a second and, as each link's two ends are probed, 576 LLDP packet-ins a second,
and they used to go out together, in bursts of a whole round, starving every other
packet-in. Here a round is paced instead: it lasts ``max(LLDP_INTERVAL_S, ports /
PROBES_PER_S)`` seconds, and its probes are spread evenly over it, so the probes per
second stay at or under PROBES_PER_S however large the network (a small one keeps ONOS's
3 s). A link is cut after MISSED_ROUNDS rounds of that length without a probe crossing it,
plus EXPIRY_MARGIN_S.

A port that just came up (a switch's, at connect) is probed at once and again REPROBE_S
later, outside the rounds: its neighbour may not have been ready for the first probe, and
a new link should not wait a whole round to be found.
"""

from __future__ import annotations

from collections.abc import Callable

from dplab.control.topology_view import PortRef

LLDP_INTERVAL_S = 3.0  # a round's shortest length, as ONOS's probe rate
PROBES_PER_S = 200  # a round longer than LLDP_INTERVAL_S is stretched to keep to this
MISSED_ROUNDS = 3
EXPIRY_MARGIN_S = 1.0  # 3 rounds of 3 s and this: ONOS's 10 s on a small network
REPROBE_S = 0.5


def round_length(ports: int) -> float:
    """Seconds a round over ``ports`` ports lasts."""
    return max(LLDP_INTERVAL_S, ports / PROBES_PER_S)


class ProbeSchedule:
    """Rounds of probes over every port, each spread evenly over its length, and the
    re-probes of ports just come up. ``due(now, ports)`` says which ports to probe now;
    call it often (a tick of 0.1–0.5 s): each call sends the share of the round that the
    time since the round began has reached."""

    def __init__(self) -> None:
        self._round: list[PortRef] = []
        self._sent = 0  # of self._round
        self._round_start = float("-inf")
        self._interval = LLDP_INTERVAL_S
        self._soon: dict[PortRef, float] = {}  # port -> when to probe it again

    @property
    def interval(self) -> float:
        """The current round's length, seconds."""
        return self._interval

    def link_timeout(self) -> float:
        """Seconds a link may go without a probe crossing it before it is cut."""
        return MISSED_ROUNDS * self._interval + EXPIRY_MARGIN_S

    def probe_again_soon(self, ports: list[PortRef], now: float) -> None:
        for port in ports:
            self._soon.setdefault(port, now + REPROBE_S)

    def due(self, now: float, ports: Callable[[], list[PortRef]]) -> list[PortRef]:
        """The ports to probe now; ``ports`` lists every port, asked at a round's start."""
        out = []
        if now >= self._round_start + self._interval:
            out += self._round[self._sent:]  # a late call finishes the round first
            self._round = ports()
            self._sent = 0
            self._round_start = now
            self._interval = round_length(len(self._round))
        share = (now - self._round_start) / self._interval
        upto = min(len(self._round), int(len(self._round) * share) + 1)
        out += self._round[self._sent:upto]
        self._sent = max(self._sent, upto)
        again = [port for port, when in self._soon.items() if when <= now]
        for port in again:
            del self._soon[port]
        return out + again
