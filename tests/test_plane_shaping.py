"""Link shaping holds on every plane: a 10 Mbit/s link between two switches (TBF at both
ends, as on every link) bounds a TCP flow across it, whichever forwarder sends into it."""

from __future__ import annotations

import pytest
from net_checks import tcp_received

from dplab.planes import create
from dplab.substrate.network import Network
from dplab.topology import catalog

PLANES = {
    "bridge": {},
    "router": {},
    "ovs": {"mode": "proactive"},
    "p4": {"mode": "proactive"},
    "userspace": {"mode": "router"},
}


@pytest.mark.net
@pytest.mark.parametrize("kind", PLANES)
def test_a_shaped_link_between_switches_limits_the_flow(kind: str) -> None:
    topo = catalog.build("linear", switches=2, hosts_per_switch=1, edge_bw=None, core_bw=10.0)
    plane = create(kind, PLANES[kind])
    with Network(topo, addressing=plane.addressing,
                 shared_switch_ns=plane.shared_switch_ns) as net:
        try:
            plane.start(net)
            plane.wait_ready(40)
            received, bps = tcp_received(net, "h1", "h2", seconds=2)
        finally:
            plane.stop()
    assert received > 0
    assert bps <= 11e6, f"{kind}: {bps / 1e6:.1f} Mbit/s across a 10 Mbit/s link"
