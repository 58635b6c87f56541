"""The named topologies: the three of study 000, the network of study 001 and the usual generators.

Every builder numbers switches ``s1..`` and hosts ``h1..`` in a fixed order, so the same name and
parameters always give the same graph (nothing here is random). Switches carry a ``layer``
(0 = top of the drawing) and a ``role``; the grid carries drawing positions ``pos`` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real

import networkx as nx

from dplab.topology import linkem_settings, radio
from dplab.topology.model import (
    AP_PREFIX,
    CORE_BW_MBIT,
    EDGE_BW_MBIT,
    HOST,
    STATION_PREFIX,
    SWITCH,
    Topology,
    TopologyError,
)

__all__ = ["NAMES", "TopologyError", "build", "describe"]

Pairs = dict[str, list[tuple[str, str]]]

# A topology larger than this is almost surely a typo (fattree k=100 has 250,000 hosts).
MAX_NODES = 2000


@dataclass(frozen=True)
class Impairment:
    """Delay, jitter and loss of each direction of a link (netem or dplab-linkem does them),
    and more dplab-linkem settings (topology.linkem_settings)."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    linkem: dict | None = None


@dataclass(frozen=True)
class LinkAttrs:
    """What every link of one role (core = switch-switch, edge = host-switch) gets."""

    core_bw: float | None = CORE_BW_MBIT
    edge_bw: float | None = EDGE_BW_MBIT
    core: Impairment = Impairment()
    edge: Impairment = Impairment()
    # Who emulates delay/jitter/loss (substrate.network.EMULATORS); None: netem if the kernel
    # has it, else dplab's link emulator.
    emulator: str | None = None
    mtu: int | None = None  # IP MTU of both ends of every link; None: the substrate's 1500


@dataclass(frozen=True)
class RadioAttrs:
    """Stations' links (dplab.topology.radio): one value for all, or a list with one per
    station in order; rate_mbit and loss_pct (None: from the distance) override the model."""

    distance_m: tuple[float | None, ...] | float | None = 10.0
    rate_mbit: tuple[float | None, ...] | float | None = None
    loss_pct: tuple[float | None, ...] | float | None = None

    def of(self, index: int) -> tuple[float | None, float | None, float | None]:
        return tuple(v[index] if isinstance(v, tuple) else v  # type: ignore[return-value]
                     for v in (self.distance_m, self.rate_mbit, self.loss_pct))


class _TooBig(Exception):
    pass


class _Builder:
    """Adds numbered switches, hosts and links to a graph."""

    def __init__(self, links: LinkAttrs, radios: RadioAttrs | None = None) -> None:
        self.graph = nx.Graph()
        self.links = links
        self.radios = radios or RadioAttrs()
        self.counts = {SWITCH: 0, HOST: 0, STATION_PREFIX: 0, AP_PREFIX: 0}

    def switch(self, role: str, layer: int) -> str:
        name = f"s{self._next(SWITCH)}"
        self.graph.add_node(name, kind=SWITCH, role=role, layer=layer)
        return name

    def host(self, switch: str) -> str:
        name = f"h{self._next(HOST)}"
        self.graph.add_node(name, kind=HOST)
        self._link(name, switch, self.links.edge_bw, self.links.edge)
        return name

    def hosts(self, switch: str, count: int) -> list[str]:
        return [self.host(switch) for _ in range(count)]

    def access_point(self, layer: int) -> str:
        name = f"{AP_PREFIX}{self._next(AP_PREFIX)}"
        self.graph.add_node(name, kind=SWITCH, role="access-point", layer=layer)
        return name

    def station(self, ap: str) -> str:
        """A station on ``ap``'s medium, its rate and loss from RadioAttrs (model: radio)."""
        index = self._next(STATION_PREFIX)
        name = f"{STATION_PREFIX}{index}"
        self.graph.add_node(name, kind=HOST)
        distance, rate, loss = self.radios.of(index - 1)
        try:
            link = radio.link(f"{name}–{ap}", distance, rate, loss)
        except radio.RangeError as exc:
            raise TopologyError(str(exc)) from None
        self.graph.add_edge(name, ap, wireless=True, bw_mbit=None, rate_mbit=link.rate_mbit,
                            loss_pct=link.loss_pct, snr_db=link.snr_db, distance_m=distance)
        return name

    def core(self, a: str, b: str) -> None:
        self._link(a, b, self.links.core_bw, self.links.core)

    def _link(self, a: str, b: str, bw: float | None, imp: Impairment) -> None:
        self.graph.add_edge(a, b, bw_mbit=bw, delay_ms=imp.delay_ms, jitter_ms=imp.jitter_ms,
                            loss_pct=imp.loss_pct, emulator=self.links.emulator)
        if imp.linkem is not None:
            self.graph.edges[a, b]["linkem"] = imp.linkem
        if self.links.mtu is not None:
            self.graph.edges[a, b]["mtu"] = self.links.mtu

    def _next(self, kind: str) -> int:
        """The next number for a node of this kind; stops runaway sizes early."""
        self.counts[kind] += 1
        if sum(self.counts.values()) > MAX_NODES:
            raise _TooBig
        return self.counts[kind]

    def host_count(self) -> int:
        return self.counts[HOST] + self.counts[STATION_PREFIX]


# ---------------------------------------------------------------- host pairs


def across_pairs(hosts: list[str]) -> Pairs:
    """First half of the hosts -> second half; CDN: first half -> the last host.

    For the 8 hosts of multipath and grid this is exactly study 000 Table 1.
    VoIP is not in Table 1; it reuses the ICMP pairs (both are light).
    """
    half = len(hosts) // 2
    across = list(zip(hosts[:half], hosts[half:2 * half], strict=True))
    cdn = [(h, hosts[-1]) for h in hosts[:half]]
    return {"icmp": across, "tcp": list(across), "udp": list(across), "cdn": cdn,
            "voip": list(across)}


def internet_pairs() -> Pairs:
    """Study 000 Table 1 for the transit-stub network: client group g is h(4g+1)..h(4g+4)."""
    groups = range(5)
    icmp = [(f"h{4 * g + 1}", f"h{21 + g}") for g in groups]
    return {
        "icmp": icmp,
        "tcp": [(f"h{4 * g + 2}", f"h{26 + g}") for g in groups],
        "udp": [(f"h{4 * g + 3}", f"h{31 + g}") for g in groups],
        "cdn": [(f"h{4 * g + 4}", "h36") for g in groups],
        "voip": list(icmp),
    }


def study001_pairs() -> Pairs:
    """Study 001: iperf clients h2..h6 -> server h1; the 100/1000 Mbit/s UDP runs use h5 -> h1."""
    to_server = [(f"h{i}", "h1") for i in range(2, 7)]
    pairs: Pairs = {cls: list(to_server) for cls in ("icmp", "tcp", "udp", "cdn", "voip")}
    pairs["udp_load"] = [("h5", "h1")]
    return pairs


# ---------------------------------------------------------------- shapes


def _multipath(b: _Builder) -> Pairs:
    spines = [b.switch("spine", 0) for _ in range(2)]
    leaves = [b.switch("leaf", 1) for _ in range(4)]
    for leaf in leaves:
        for spine in spines:
            b.core(leaf, spine)
    # Leaves in pairs joined directly: the extension that gives a third, longer path.
    b.core(leaves[0], leaves[1])
    b.core(leaves[2], leaves[3])
    # h1..h4 on the left leaves, h5..h8 on the right ones, so every pair crosses the spines.
    hosts = [h for leaf in leaves for h in b.hosts(leaf, 2)]
    return across_pairs(hosts)


def _grid(b: _Builder, rows: int, cols: int) -> Pairs:
    cells = [[b.switch("grid", r) for _ in range(cols)] for r in range(rows)]
    for r in range(rows):
        for c in range(cols):
            b.graph.nodes[cells[r][c]]["pos"] = (2.0 * c, -1.0 * r)
            if c + 1 < cols:
                b.core(cells[r][c], cells[r][c + 1])
            if r + 1 < rows:
                b.core(cells[r][c], cells[r + 1][c])
    left = [b.host(cells[r][0]) for r in range(rows)]
    right = [b.host(cells[r][-1]) for r in range(rows)]
    for r in range(rows):
        b.graph.nodes[left[r]]["pos"] = (-1.2, -1.0 * r)
        b.graph.nodes[right[r]]["pos"] = (2.0 * (cols - 1) + 1.2, -1.0 * r)
    return across_pairs(left + right)


# Transit node each stub domain hangs off: client stubs (h1..h20) on s1 and s2, server stubs
# (h21..h36) on s3 and s4, so every Table 1 pair crosses the transit domain (1 or 2 hops).
INTERNET_STUB_TRANSIT = (0, 0, 1, 1, 1, 2, 2, 3, 3)


def _internet(b: _Builder) -> Pairs:
    transit = [b.switch("transit", 0) for _ in range(4)]
    for i, node in enumerate(transit):
        b.core(node, transit[(i + 1) % 4])
    b.core(transit[0], transit[2])  # a chord: the transit domain is not a plain ring
    for t in INTERNET_STUB_TRANSIT:
        gateway = b.switch("stub-gateway", 1)
        inner = b.switch("stub", 1)
        b.core(transit[t], gateway)
        b.core(gateway, inner)
        b.hosts(gateway, 2)
        b.hosts(inner, 2)
    return internet_pairs()


def _fattree(b: _Builder, k: int) -> Pairs:
    if k % 2:
        raise TopologyError(f"fattree: k must be even, got {k}")
    half = k // 2
    cores = [b.switch("core", 0) for _ in range(half * half)]
    pods = [([b.switch("aggregation", 1) for _ in range(half)],
             [b.switch("edge", 2) for _ in range(half)]) for _ in range(k)]
    for aggs, edges in pods:
        for i, agg in enumerate(aggs):
            for core in cores[i * half:(i + 1) * half]:
                b.core(agg, core)
            for edge in edges:
                b.core(agg, edge)
    hosts = [h for _, edges in pods for edge in edges for h in b.hosts(edge, half)]
    return across_pairs(hosts)


def _spineleaf(b: _Builder, spines: int, leaves: int, hosts_per_leaf: int) -> Pairs:
    spine_names = [b.switch("spine", 0) for _ in range(spines)]
    leaf_names = [b.switch("leaf", 1) for _ in range(leaves)]
    for leaf in leaf_names:
        for spine in spine_names:
            b.core(leaf, spine)
    hosts = [h for leaf in leaf_names for h in b.hosts(leaf, hosts_per_leaf)]
    return across_pairs(hosts)


def _study001(b: _Builder) -> Pairs:
    core = b.switch("core", 0)
    for _ in range(3):
        edge = b.switch("edge", 1)
        b.core(core, edge)
        b.hosts(edge, 2)
    return study001_pairs()


def _linear(b: _Builder, switches: int, hosts_per_switch: int) -> Pairs:
    chain = [b.switch("chain", 0) for _ in range(switches)]
    for a, c in zip(chain, chain[1:], strict=False):
        b.core(a, c)
    hosts = [h for s in chain for h in b.hosts(s, hosts_per_switch)]
    return across_pairs(hosts)


def _single(b: _Builder, hosts: int) -> Pairs:
    return across_pairs(b.hosts(b.switch("switch", 0), hosts))


def _tree(b: _Builder, depth: int, fanout: int) -> Pairs:
    level = [b.switch("tree", 0)]
    for d in range(1, depth):
        below = []
        for parent in level:
            for _ in range(fanout):
                child = b.switch("tree", d)
                b.core(parent, child)
                below.append(child)
        level = below
    hosts = [h for s in level for h in b.hosts(s, fanout)]
    return across_pairs(hosts)


def _wifi(b: _Builder, n: int, hosts: int) -> Pairs:
    ap = b.access_point(0)
    stations = [b.station(ap) for _ in range(n)]
    return across_pairs(stations + b.hosts(ap, hosts))


def _wifi2(b: _Builder, n: int, hosts: int) -> Pairs:
    aps = [b.access_point(0) for _ in range(2)]
    b.core(*aps)
    first = (n + 1) // 2
    stations = [b.station(aps[0] if i < first else aps[1]) for i in range(n)]
    return across_pairs(stations + b.hosts(aps[0], hosts))


# ---------------------------------------------------------------- the catalog


@dataclass(frozen=True)
class _Shape:
    make: Callable[..., Pairs]
    params: dict[str, tuple[int, int]]  # name -> (default, minimum)
    description: str
    wireless: bool = False  # takes RADIO_PARAMS


_CATALOG: dict[str, _Shape] = {
    "multipath": _Shape(_multipath, {}, (
        "Study 000 topology I: spine-leaf extended. 2 spines, 4 leaves each linked to both "
        "spines, the leaves also linked in pairs (s3-s4, s5-s6); 2 hosts per leaf, "
        "h1-h4 left, h5-h8 right.")),
    "grid": _Shape(_grid, {"rows": (4, 1), "cols": (3, 2)}, (
        "Study 000 topology II: a rows x cols grid of switches (default 4 x 3); "
        "h1..h<rows> on the left column, the rest on the right column.")),
    "internet": _Shape(_internet, {}, (
        "Study 000 topology III, GT-ITM transit-stub: 4 transit switches in a ring with one "
        "chord (s1-s3); 9 stub domains of 2 switches (a gateway to the transit domain + one "
        "more, 2 hosts each); client stubs h1-h20 on s1/s2, server stubs h21-h36 on s3/s4.")),
    "fattree": _Shape(_fattree, {"k": (4, 2)}, (
        "Fat-tree of even k: k^2/4 core, k pods of k/2 aggregation + k/2 edge switches, "
        "k/2 hosts per edge switch (k=4: 20 switches, 16 hosts).")),
    "spineleaf": _Shape(_spineleaf,
                        {"spines": (2, 1), "leaves": (4, 2), "hosts_per_leaf": (2, 1)}, (
        "Two-tier datacenter fabric: every leaf linked to every spine, hosts on the leaves.")),
    "study001": _Shape(_study001, {}, (
        "Study 001: 6 hosts / 4 switches; core switch s1 with three edge switches s2-s4, "
        "two hosts each (h1,h2 | h3,h4 | h5,h6).")),
    "linear": _Shape(_linear, {"switches": (4, 1), "hosts_per_switch": (1, 1)}, (
        "A chain of switches, hosts_per_switch hosts on each.")),
    "single": _Shape(_single, {"hosts": (4, 2)}, "One switch with all hosts on it."),
    "tree": _Shape(_tree, {"depth": (2, 1), "fanout": (2, 1)}, (
        "A tree of switches depth levels deep, fanout children per switch, fanout hosts on "
        "each bottom switch (Mininet TreeTopo).")),
    "wifi": _Shape(_wifi, {"n": (2, 1), "hosts": (0, 0)}, (
        "One access point ap1 with n wireless stations sta1..sta<n> on its shared medium "
        "(default 2: study 003's wireless case, sta1 - ap1 - sta2) and `hosts` wired hosts "
        "h1.. on it; stations' distance_m / rate_mbit / wifi_loss_pct as in docs/wireless.md."),
        wireless=True),
    "wifi2": _Shape(_wifi2, {"n": (4, 2), "hosts": (0, 0)}, (
        "Two access points ap1 - ap2 joined by a wired link; the first half of the n "
        "stations on ap1, the rest on ap2; `hosts` wired hosts on ap1."), wireless=True),
}

NAMES: tuple[str, ...] = tuple(_CATALOG)
# delay_ms, jitter_ms, loss_pct and linkem set both roles; core_*/edge_* set one (and win; a
# role's linkem keys win over linkem's, key by key).
IMPAIRMENTS = ("delay_ms", "jitter_ms", "loss_pct", "linkem")
LINK_PARAMS = ("core_bw", "edge_bw", *IMPAIRMENTS, *(f"{role}_{key}" for role in ("core", "edge")
                                                      for key in IMPAIRMENTS), "emulator", "mtu")
MTU_RANGE = (68, 65535)  # IPv4's minimum; a veth's maximum
# Wireless shapes only: each a number (every station) or a list (one per station).
RADIO_PARAMS = ("distance_m", "rate_mbit", "wifi_loss_pct")


def describe(name: str) -> str:
    """One sentence on the shape of a catalog topology."""
    return _shape(name).description


def build(name: str, **params: object) -> Topology:
    """The catalog topology ``name`` with its parameters (see ``describe``) and link parameters
    ``core_bw``/``edge_bw`` (Mbit/s, None = unshaped), ``delay_ms``, ``jitter_ms``,
    ``loss_pct`` (every link; ``core_``/``edge_`` prefixed: one role's links),
    ``linkem`` (more dplab-linkem settings, a mapping; ``core_linkem``/``edge_linkem`` add to
    it for one role), ``emulator`` (None, "netem" or "dplab"),
    ``mtu`` (bytes, every link; None = 1500)."""
    shape = _shape(name)
    radio_params = RADIO_PARAMS if shape.wireless else ()
    unknown = sorted(set(params) - set(shape.params) - set(LINK_PARAMS) - set(radio_params))
    if unknown:
        valid = ", ".join([*shape.params, *LINK_PARAMS, *radio_params])
        raise TopologyError(f"topology {name!r}: unknown parameter(s) {', '.join(unknown)}; "
                            f"valid: {valid}")
    sizes = {key: _int_param(name, key, params.get(key, default), minimum)
             for key, (default, minimum) in shape.params.items()}
    radios = _radio_attrs(name, params, sizes.get("n", 0)) if shape.wireless else None
    builder = _Builder(_link_attrs(name, params), radios)
    try:
        pairs = shape.make(builder, **sizes)
    except _TooBig:
        raise TopologyError(f"topology {name!r} with {sizes} has more than {MAX_NODES} "
                            "nodes") from None
    if builder.host_count() < 2:
        raise TopologyError(f"topology {name!r} with {sizes} has fewer than 2 hosts: "
                            "no traffic could flow")
    return Topology(name, builder.graph, pairs)


def _shape(name: str) -> _Shape:
    if name not in _CATALOG:
        raise TopologyError(f"unknown topology {name!r}; valid names: {', '.join(NAMES)}")
    return _CATALOG[name]


def _int_param(name: str, key: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError(f"topology {name!r}: parameter {key} must be a whole number, "
                            f"got {value!r}")
    if value < minimum:
        raise TopologyError(f"topology {name!r}: parameter {key} must be >= {minimum}, "
                            f"got {value}")
    return value


def _link_attrs(name: str, params: dict[str, object]) -> LinkAttrs:
    defaults = LinkAttrs()
    return LinkAttrs(
        core_bw=_bandwidth(name, "core_bw", params.get("core_bw", defaults.core_bw)),
        edge_bw=_bandwidth(name, "edge_bw", params.get("edge_bw", defaults.edge_bw)),
        core=_impairment(name, "core", params),
        edge=_impairment(name, "edge", params),
        emulator=_emulator(name, params.get("emulator")),
        mtu=_mtu(name, params.get("mtu")),
    )


def _radio_attrs(name: str, params: dict[str, object], stations: int) -> RadioAttrs:
    defaults = RadioAttrs()
    bounds = {"distance_m": (0.0, None), "rate_mbit": (0.0, None), "wifi_loss_pct": (0.0, 100.0)}

    def value(key: str, default: object) -> tuple[float | None, ...] | float | None:
        raw = params.get(key, default)
        if isinstance(raw, list | tuple):
            if len(raw) != stations:
                raise TopologyError(f"topology {name!r}: {key} lists {len(raw)} values for "
                                    f"{stations} stations")
            return tuple(None if v is None else _number(name, key, v, *bounds[key])
                         for v in raw)
        return None if raw is None else _number(name, key, raw, *bounds[key])

    attrs = RadioAttrs(value("distance_m", defaults.distance_m),
                       value("rate_mbit", defaults.rate_mbit),
                       value("wifi_loss_pct", defaults.loss_pct))
    rates = attrs.rate_mbit if isinstance(attrs.rate_mbit, tuple) else (attrs.rate_mbit,)
    if any(rate == 0 for rate in rates):
        raise TopologyError(f"topology {name!r}: rate_mbit must be > 0")
    return attrs


def _impairment(name: str, role: str, params: dict[str, object]) -> Impairment:
    def value(key: str, high: float | None) -> float:
        own = f"{role}_{key}"
        chosen = own if own in params else key
        return _number(name, chosen, params.get(chosen, 0.0), 0.0, high)

    return Impairment(delay_ms=value("delay_ms", None), jitter_ms=value("jitter_ms", None),
                      loss_pct=value("loss_pct", 100.0), linkem=_linkem(name, role, params))


def _linkem(name: str, role: str, params: dict[str, object]) -> dict | None:
    """``linkem`` with ``<role>_linkem``'s keys over it (None if neither is set)."""
    merged = None
    for key in ("linkem", f"{role}_linkem"):
        value = params.get(key)
        if value is None:
            continue
        try:
            linkem_settings.check(value)
        except ValueError as exc:
            raise TopologyError(f"topology {name!r}: {key}: {exc}") from None
        merged = {**(merged or {}), **value}  # type: ignore[dict-item]
    return merged


EMULATORS = ("netem", "dplab")


def _emulator(name: str, value: object) -> str | None:
    if value is not None and value not in EMULATORS:
        raise TopologyError(f"topology {name!r}: emulator must be one of {EMULATORS} or None, "
                            f"got {value!r}")
    return value  # type: ignore[return-value]


def _mtu(name: str, value: object) -> int | None:
    if value is None:
        return None
    low, high = MTU_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise TopologyError(f"topology {name!r}: mtu must be a whole number of bytes in "
                            f"{low}..{high}, got {value!r}")
    return value


def _bandwidth(name: str, key: str, value: object) -> float | None:
    if value is None:
        return None
    bw = _number(name, key, value, 0.0, None)
    if bw == 0:
        raise TopologyError(f"topology {name!r}: {key} must be > 0 Mbit/s or None (unshaped)")
    return bw


def _number(name: str, key: str, value: object, low: float, high: float | None) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TopologyError(f"topology {name!r}: {key} must be a number, got {value!r}")
    if value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"between {low} and {high}"
        raise TopologyError(f"topology {name!r}: {key} must be {bounds}, got {value}")
    return float(value)
