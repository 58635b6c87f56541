"""A dumbbell for Mininet: n hosts on a left switch, n on a right one, a bottleneck between.

Runs as-is under Mininet (``sudo mn --custom mininet_dumbbell.py --topo dumbbell,n=3``) and
imports into dplab (``topology: {mininet: topologies/examples/mininet_dumbbell.py,
name: dumbbell, params: {n: 3}}``): left hosts l1..ln become h1..hn, right hosts r1..rn
become hn+1..h2n, so dplab's pairs run l1 -> r1, l2 -> r2, ... across the bottleneck.
"""

from mininet.topo import Topo


class Dumbbell(Topo):
    def build(self, n=2, bottleneck_bw=10, edge_bw=100, delay=None):
        left = self.addSwitch("sl1")
        right = self.addSwitch("sr1")
        bottleneck = {"bw": bottleneck_bw}
        if delay is not None:
            bottleneck["delay"] = delay
        self.addLink(left, right, **bottleneck)
        for i in range(1, n + 1):
            self.addLink(self.addHost(f"l{i}"), left, bw=edge_bw)
            self.addLink(self.addHost(f"r{i}"), right, bw=edge_bw)


topos = {"dumbbell": Dumbbell}
