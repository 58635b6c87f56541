"""Times Mininet bring-up and teardown of a graph; run by bringup.py with Debian's python3.

Reads {"switch": "ovs-user" | "linuxbridge", "repeat": n, "hosts": [...], "switches": [...],
"links": [[a, b, bw_mbit], ...]} on stdin; prints {"up_s": [...], "down_s": [...]} or
{"error": "..."}. For "ovs-user", OVS_RUNDIR must point at a private, running ovsdb-server
and ovs-vswitchd (this kernel has no openvswitch module: only the userspace datapath works).
"""

import json
import sys
import time
from functools import partial

from mininet.link import TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import OVSSwitch
from mininet.nodelib import LinuxBridge
from mininet.topo import Topo


def build_topo(spec):
    topo = Topo()
    for h in spec["hosts"]:
        topo.addHost(h)
    for s in spec["switches"]:
        topo.addSwitch(s)
    for a, b, bw in spec["links"]:
        topo.addLink(a, b, bw=bw)
    return topo


def switch_class(kind):
    if kind == "ovs-user":
        # Standalone (learning) OVS with STP: no controller, loops are safe.
        return partial(OVSSwitch, datapath="user", failMode="standalone", stp=True)
    if kind == "linuxbridge":
        return partial(LinuxBridge, stp=True)
    raise ValueError(f"unknown switch kind {kind}")


def main():
    spec = json.load(sys.stdin)
    setLogLevel("error")
    up, down = [], []
    for _ in range(spec["repeat"]):
        start = time.perf_counter()
        net = Mininet(topo=build_topo(spec), switch=switch_class(spec["switch"]),
                      link=TCLink, controller=None, autoSetMacs=True)
        try:
            net.start()
            up.append(time.perf_counter() - start)
        finally:
            start = time.perf_counter()
            net.stop()
            down.append(time.perf_counter() - start)
    print(json.dumps({"up_s": up, "down_s": down}))


if __name__ == "__main__":
    try:
        main()
    except BaseException as exc:  # report what failed, as data, to the caller
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
