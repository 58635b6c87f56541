"""What the controller knows of the network: switches, their ports, LLDP-discovered links, hosts."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True, order=True)
class PortRef:
    switch: str
    port: int


class TopologyView:
    """Switches and the links between their ports, as discovered by LLDP.

    A port with an LLDP neighbour is an infrastructure port; every other port is an edge
    port, where hosts live. Links are undirected: one probe seen in either direction
    proves the cable.
    """

    def __init__(self) -> None:
        self._ports: dict[str, set[int]] = {}
        self._peer: dict[PortRef, PortRef] = {}
        self._last_seen: dict[frozenset[PortRef], float] = {}
        # Paths are asked for per host pair but change only with the topology: memoize them.
        self._paths: dict[tuple[str, str], list[PortRef] | None] = {}

    def add_switch(self, switch: str, ports: list[int]) -> None:
        self._ports[switch] = set(ports)
        self._paths.clear()

    def remove_switch(self, switch: str) -> None:
        for port in self._ports.pop(switch, set()):
            self._drop_link(PortRef(switch, port))
        self._paths.clear()

    def add_port(self, ref: PortRef) -> None:
        self._ports.setdefault(ref.switch, set()).add(ref.port)

    def remove_port(self, ref: PortRef) -> None:
        self._ports.get(ref.switch, set()).discard(ref.port)
        self._drop_link(ref)

    def switches(self) -> list[str]:
        return sorted(self._ports)

    def ports(self, switch: str) -> list[int]:
        return sorted(self._ports.get(switch, ()))

    def saw_link(self, a: PortRef, b: PortRef, now: float) -> bool:
        """Record a probe sent from ``a`` arriving at ``b``; True if the link is new or rewired."""
        is_new = self._peer.get(a) != b
        if is_new:
            self._drop_link(a)
            self._drop_link(b)
            self._peer[a], self._peer[b] = b, a
            self._paths.clear()
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
        return [p for p in self.ports(switch) if PortRef(switch, p) not in self._peer]

    def path(self, src: str, dst: str) -> list[PortRef] | None:
        """Shortest switch path from ``src`` to ``dst`` as the out-port taken at each hop.

        The last switch has no out-port here (the caller knows where its host hangs), so the
        result has one entry per link crossed; None when the switches are not connected.
        """
        if (src, dst) not in self._paths:
            self._paths[(src, dst)] = self._shortest_path(src, dst)
        return self._paths[(src, dst)]

    def _shortest_path(self, src: str, dst: str) -> list[PortRef] | None:
        graph = self._graph()
        if src not in graph or dst not in graph:
            return None
        try:
            hops = nx.shortest_path(graph, src, dst)
        except nx.NetworkXNoPath:
            return None
        pairs = zip(hops, hops[1:], strict=False)
        return [PortRef(a, graph.edges[a, b]["ports"][a]) for a, b in pairs]

    def peer(self, ref: PortRef) -> PortRef:
        return self._peer[ref]

    def _graph(self) -> nx.Graph:
        graph = nx.Graph()
        graph.add_nodes_from(self._ports)
        # Sorted so that, of parallel links between two switches, the lowest ports win every time.
        for a, b in sorted(self._peer.items(), reverse=True):
            graph.add_edge(a.switch, b.switch, ports={a.switch: a.port, b.switch: b.port})
        return graph

    def _drop_link(self, ref: PortRef) -> None:
        peer = self._peer.pop(ref, None)
        if peer is not None:
            self._peer.pop(peer, None)
            self._last_seen.pop(frozenset((ref, peer)), None)
            self._paths.clear()


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
