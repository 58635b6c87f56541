"""Link shaping holds on every plane with its default I/O: a 10 Mbit/s link between two
switches (TBF at both ends, as on every link; OVS's own HTB on its ports) carries 15 Mbit/s
of offered UDP at its rate, within 10 %, in each direction, whichever forwarder sends into
it. A transmit path that skips the qdisc (XDP, AF_XDP) would show here as a flow far above
the rate. UDP, not TCP: a 2 s TCP flow's ramp-up on a busy machine says nothing of the
shaper. A direction that delivered under the rate is measured once more (a user-space
forwarder that was not scheduled in time drops in its receive buffers, not in the shaper);
every measurement must stay under the rate's upper bound."""

from __future__ import annotations

import pytest
from net_checks import iperf_server_report

from dplab.planes import create
from dplab.substrate.network import Network
from dplab.topology import catalog

PLANES = {
    "bridge": {},
    "router": {},
    "ovs": {"mode": "proactive"},
    "p4": {"mode": "proactive"},
    "xdp": {},
    "userspace": {"mode": "router"},
}
RATE_BPS = 10e6
# Shapers count whole frames; iperf2 counts UDP payload (1470 B in a 1512 B frame).
FRAME_PER_PAYLOAD = (1470 + 8 + 20 + 14) / 1470


@pytest.mark.net
@pytest.mark.parametrize("kind", PLANES)
def test_a_shaped_link_between_switches_holds_its_rate_both_ways(kind: str) -> None:
    topo = catalog.build("linear", switches=2, hosts_per_switch=1, edge_bw=None,
                         core_bw=RATE_BPS / 1e6)
    plane = create(kind, PLANES[kind])
    with Network(topo, addressing=plane.addressing,
                 shared_switch_ns=plane.shared_switch_ns) as net:
        try:
            plane.start(net)
            plane.wait_ready(40)
            rates = {(a, b): _rates(net, a, b) for a, b in (("h1", "h2"), ("h2", "h1"))}
        finally:
            plane.stop()
    for (a, b), bps in rates.items():
        assert max(bps) >= 0.9 * RATE_BPS and max(bps) <= 1.1 * RATE_BPS, \
            f"{kind} ({plane.info()}): {a}->{b} {[round(r / 1e6, 2) for r in bps]} Mbit/s " \
            "on a 10 Mbit/s link"


def _rates(net: Network, src: str, dst: str) -> list[float]:
    """Frame rates (bit/s) of 2 s of 15 Mbit/s UDP src -> dst: one, or two when the first
    fell under the lower bound."""
    rates: list[float] = []
    while len(rates) < 2 and (not rates or rates[0] < 0.9 * RATE_BPS):
        fields = iperf_server_report(net, src, dst, ["-u", "-b", "15M"], 2)
        rates.append(float(fields[8]) * FRAME_PER_PAYLOAD)
    return rates
