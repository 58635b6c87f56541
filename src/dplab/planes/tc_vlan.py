"""The bridge plane's VLAN tagging: ``xdp/tc_vlan.bpf.c`` as tc filters on every switch port
that faces a host (push on ingress, pop on egress), the VLAN id in its map ``vlan_id``.

One object is loaded per run; its two programs are attached in every switch's namespace
and the object is closed again: the filters hold the programs (and they their map), and
they go with the switch namespaces at the run's end, so nothing outlives the run."""

from __future__ import annotations

import struct
from pathlib import Path

from dplab.planes import tagging
from dplab.planes.base import PlaneError
from dplab.substrate.network import Network
from dplab.xdp import libbpf, netns

ROOT = Path(__file__).resolve().parents[3]
OBJECT = ROOT / "xdp" / "build" / "tc_vlan.o"


def attach(net: Network, vid: int, cut: set[frozenset[str]]) -> None:
    """Tag at every access port of every switch (the bridges' tree leaves out the switch
    links ``cut``)."""
    if not OBJECT.is_file():
        raise PlaneError(f"bridge: option 'vlan' needs {OBJECT} (scripts/setup.sh builds it)")
    plan = tagging.plan(net.topo, net.host_mac, cut)
    try:
        obj = libbpf.BpfObject(OBJECT, map_prefix=f"{net.prefix}v")
    except libbpf.LibbpfError as exc:
        raise PlaneError(f"bridge: option 'vlan': {exc}") from exc
    try:
        obj.map("vlan_id").update(struct.pack("=I", 0), struct.pack("=I", vid))
        push, pop = obj.program_fd("tc_vlan_push"), obj.program_fd("tc_vlan_pop")
        for switch, part in plan.items():
            ns = net.switch_ns(switch)
            ifindex = {name: i.ifindex for name, i in netns.interfaces(ns).items()}
            with netns.inside(ns):
                for port in part.access:
                    ifname = net.switch_ports(switch)[port]
                    # Never detached: the filters go with the switch namespaces.
                    label = f"{ns}/{ifname}"
                    libbpf.TcFilter(push, ifindex[ifname], label, "ingress")
                    libbpf.TcFilter(pop, ifindex[ifname], label, "egress", add_qdisc=False)
    except libbpf.LibbpfError as exc:
        raise PlaneError(f"bridge: option 'vlan': {exc}") from exc
    finally:
        obj.close()
