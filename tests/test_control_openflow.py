"""The os-ken adapter as OVS sees it: datapath ids, trap rules, path rules of a real flow."""

from __future__ import annotations

import subprocess

import pytest

from dplab.planes import create
from dplab.substrate.network import Network
from dplab.topology import catalog


def dump_flows(plane, switch: str) -> list[str]:
    mgmt = plane.dir / f"{plane.bridge(switch)}.mgmt"
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", f"unix:{mgmt}"],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()[1:]


def datapath_id(plane, switch: str) -> int:
    out = plane.vsctl("get", "bridge", plane.bridge(switch), "datapath_id")
    return int(out.strip().strip('"'), 16)


@pytest.mark.net
def test_switches_get_traps_and_a_ping_leaves_path_rules_on_every_hop() -> None:
    topo = catalog.build("linear", switches=3)  # h1-s1-s2-s3-h3
    plane = create("ovs", {"mode": "reactive"})
    with Network(topo, addressing="l2", shared_switch_ns=True) as net:
        try:
            plane.start(net)
            plane.wait_ready(30)
            net.run(net.host_ns("h1"), ["ping", "-c1", "-W2", "-n", net.host_ip("h3")])
            ids = {s: datapath_id(plane, s) for s in topo.switches()}
            flows = {s: dump_flows(plane, s) for s in topo.switches()}
            h1, h3 = net.host_mac("h1"), net.host_mac("h3")
        finally:
            plane.stop()

    assert ids == {"s1": 1, "s2": 2, "s3": 3}
    for switch, rules in flows.items():
        text = "\n".join(rules)
        assert "priority=0 actions=CONTROLLER:65535" in text, switch
        assert "priority=40000,arp actions=CONTROLLER:65535" in text, switch
        assert "priority=40000,dl_type=0x88cc actions=CONTROLLER:65535" in text, switch
        forward = [r for r in rules if f"dl_src={h1},dl_dst={h3}" in r]
        assert len(forward) == 1, (switch, rules)
        assert "idle_timeout=10" in forward[0] and "priority=10" in forward[0]
        assert "n_packets=0" not in forward[0]  # the echo request really went this way
