"""What the controller knows of the network: switches, their ports, LLDP-discovered links, hosts."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class PortRef:
    switch: str
    port: int


class TopologyView:
    """Switches and the links between their ports, as discovered by LLDP.

    A port with an LLDP neighbour is an infrastructure port; every other port is an edge
    port, where hosts live. Links are undirected: one probe seen in either direction
    proves the cable.

    Paths and edge ports are asked for per packet-in but change only with the topology:
    both are kept until the next change (a switch, port or link comes or goes), the paths
    as one breadth-first tree per source switch, so that a packet-in costs the length of
    its path, not a walk over the network.
    """

    def __init__(self) -> None:
        self._ports: dict[str, set[int]] = {}
        self._peer: dict[PortRef, PortRef] = {}
        self._last_seen: dict[frozenset[PortRef], float] = {}
        # Kept until the topology changes (_changed): per source switch, every reachable
        # switch's (previous switch, its out-port towards it); each switch's neighbours;
        # the edge ports per switch.
        self._trees: dict[str, dict[str, tuple[str, PortRef]]] = {}
        self._neighbours: dict[str, list[tuple[str, PortRef]]] | None = None
        self._edges: dict[str, list[int]] | None = None

    def add_switch(self, switch: str, ports: list[int]) -> None:
        self._ports[switch] = set(ports)
        self._changed()

    def remove_switch(self, switch: str) -> None:
        for port in self._ports.pop(switch, set()):
            self._drop_link(PortRef(switch, port))
        self._changed()

    def add_port(self, ref: PortRef) -> None:
        self._ports.setdefault(ref.switch, set()).add(ref.port)
        self._changed()

    def remove_port(self, ref: PortRef) -> None:
        self._ports.get(ref.switch, set()).discard(ref.port)
        self._drop_link(ref)
        self._changed()

    def switches(self) -> list[str]:
        return sorted(self._ports)

    def has_switch(self, switch: str) -> bool:
        return switch in self._ports

    def ports(self, switch: str) -> list[int]:
        return sorted(self._ports.get(switch, ()))

    def has_port(self, ref: PortRef) -> bool:
        return ref.port in self._ports.get(ref.switch, ())

    def all_ports(self) -> list[PortRef]:
        return [PortRef(s, p) for s in self.switches() for p in self.ports(s)]

    def saw_link(self, a: PortRef, b: PortRef, now: float) -> bool:
        """Record a probe sent from ``a`` arriving at ``b``; True if the link is new or rewired."""
        is_new = self._peer.get(a) != b
        if is_new:
            self._drop_link(a)
            self._drop_link(b)
            self._peer[a], self._peer[b] = b, a
            self._changed()
        self._last_seen[frozenset((a, b))] = now
        return is_new

    def expire_links(self, oldest_allowed: float) -> int:
        """Forget links not confirmed since ``oldest_allowed``; returns how many went."""
        stale = [key for key, seen in self._last_seen.items() if seen < oldest_allowed]
        for key in stale:
            self._drop_link(next(iter(key)))
        return len(stale)

    def link_count(self) -> int:
        return len(self._last_seen)

    def is_infrastructure(self, ref: PortRef) -> bool:
        return ref in self._peer

    def edge_ports(self, switch: str) -> list[int]:
        if self._edges is None:
            self._edges = {s: [p for p in self.ports(s) if PortRef(s, p) not in self._peer]
                           for s in self._ports}
        return self._edges.get(switch, [])

    def path(self, src: str, dst: str) -> list[PortRef] | None:
        """Shortest switch path from ``src`` to ``dst`` as the out-port taken at each hop.

        The last switch has no out-port here (the caller knows where its host hangs), so the
        result has one entry per link crossed; None when the switches are not connected.
        Of several shortest paths, the first a breadth-first search taking neighbours in
        name order finds: the same every time.
        """
        if src not in self._ports or dst not in self._ports:
            return None
        if src not in self._trees:
            self._trees[src] = self._tree(src)
        tree = self._trees[src]
        if dst != src and dst not in tree:
            return None
        hops = []
        at = dst
        while at != src:
            at, out = tree[at]
            hops.append(out)
        return hops[::-1]

    def _tree(self, src: str) -> dict[str, tuple[str, PortRef]]:
        """Breadth-first from ``src`` over the links, neighbours in name order."""
        if self._neighbours is None:
            self._neighbours = self._adjacency()
        neighbours = self._neighbours
        tree: dict[str, tuple[str, PortRef]] = {}
        queue = deque([src])
        while queue:
            here = queue.popleft()
            for there, out in neighbours.get(here, ()):
                if there != src and there not in tree:
                    tree[there] = (here, out)
                    queue.append(there)
        return tree

    def _adjacency(self) -> dict[str, list[tuple[str, PortRef]]]:
        """Per switch, (neighbour, out-port towards it), in neighbour name order; of
        parallel links between two switches the one with the lowest port pair, every time."""
        links: dict[tuple[str, str], tuple[PortRef, PortRef]] = {}
        for a, b in self._peer.items():
            cable = min(a, b), max(a, b)
            if links.get((a.switch, b.switch), cable) >= cable:
                links[(a.switch, b.switch)] = cable
        neighbours: dict[str, list[tuple[str, PortRef]]] = {}
        for (here, there), cable in sorted(links.items()):
            out = cable[0] if cable[0].switch == here else cable[1]
            neighbours.setdefault(here, []).append((there, out))
        return neighbours

    def peer(self, ref: PortRef) -> PortRef:
        return self._peer[ref]

    def _changed(self) -> None:
        self._trees.clear()
        self._neighbours = None
        self._edges = None

    def _drop_link(self, ref: PortRef) -> None:
        peer = self._peer.pop(ref, None)
        if peer is not None:
            self._peer.pop(peer, None)
            self._last_seen.pop(frozenset((ref, peer)), None)
            self._changed()


class HostTable:
    """Where each host MAC is attached and which MAC owns each IPv4 address."""

    def __init__(self) -> None:
        self.location: dict[str, PortRef] = {}
        self.mac_of_ip: dict[str, str] = {}

    def learn(self, mac: str, where: PortRef, ip: str | None = None) -> bool:
        """Record a host seen at an edge port; True if it is new or has moved."""
        if ip is not None:
            self.mac_of_ip[ip] = mac
        changed = self.location.get(mac) != where
        self.location[mac] = where
        return changed

    def forget_at(self, where: PortRef) -> None:
        """Drop hosts wrongly learned on a port that turned out to be a link."""
        for mac in [m for m, loc in self.location.items() if loc == where]:
            del self.location[mac]
            for ip in [i for i, m in self.mac_of_ip.items() if m == mac]:
                del self.mac_of_ip[ip]
