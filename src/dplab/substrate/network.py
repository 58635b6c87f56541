"""Build a Topology as real namespaces, veth pairs and TBF shaping, fast, and remove it again.

Bring-up is batched: one ``ip -batch`` creates every namespace and every veth pair (each
end directly inside its namespace, so nothing ever appears in the host's namespace), then
one thread of this process sets links up, addresses, TBF shaping and routes over rtnetlink
in each namespace in turn (``rtnl``): no process per namespace. Only netem shaping (delay,
loss) still runs ``tc -n NS -batch``, one per namespace that has it. Teardown kills what
runs in our namespaces and deletes them in one ``ip -batch`` (deleting a namespace deletes
its interfaces).

A link that asks for delay, jitter or loss where the kernel has no netem (or that chooses
``emulator: dplab``) goes through the link emulator (``linkem``): the link becomes
a-end ↔ ``ea`` [its own namespace, ``dplab-linkem``] ``eb`` ↔ b-end, and a rate stays TBF on
the ends.

A wireless access point (docs/wireless.md) has one wlan port for all its stations: its veth
and each station's eth0 end in the medium's namespace, where ``dplab-wmedium`` (``wmedium``)
shares the airtime between them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from dplab.substrate import linkem, registry, wmedium
from dplab.substrate.registry import NETNS_DIR, RECORD_DIR, RunRecord, SubstrateError
from dplab.substrate.rtnl import MAX_TBF_MBIT, NsPlan, configure
from dplab.substrate.sysctl import set_sysctls
from dplab.topology import linkem_settings
from dplab.topology.model import HOST, Topology

ADDRESSINGS = ("l2", "l3")
EMULATORS = (None, "netem", "dplab")
HOST_IF = "eth0"
MTU = 1500  # a link's default; a topology edge's ``mtu`` sets both ends of its veth pair
MIN_MTU, MAX_MTU = 68, 65535  # IPv4's minimum; veth's maximum
# Queue of TBF, as the time the queue needs to drain at the link rate.
TBF_LATENCY_MS = 20
NO_IPV6 = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}

_capability_cache: dict[str, bool] = {}


@dataclass(frozen=True)
class LinkEnd:
    node: str
    ifname: str


@dataclass(frozen=True)
class Link:
    a: LinkEnd
    b: LinkEnd
    bw_mbit: float | None
    delay_ms: float = 0.0
    loss_pct: float = 0.0
    mtu: int = MTU
    jitter_ms: float = 0.0
    # Who emulates delay/jitter/loss: None (netem where the kernel has it, else dplab),
    # "netem" or "dplab" (the user-space link emulator).
    emulator: str | None = None
    # More dplab-linkem settings for both directions (its config's direction keys: loss
    # models, jitter distribution, rate and queue...); they need emulator dplab.
    linkem: dict | None = None

    @property
    def impaired(self) -> bool:
        return self.delay_ms > 0 or self.loss_pct > 0 or self.jitter_ms > 0 or bool(self.linkem)

    @property
    def label(self) -> str:
        return f"{self.a.node}–{self.b.node}"


class Network:
    """A running emulation of ``topo``; see docs/architecture.md (substrate) for the contract."""

    def __init__(self, topo: Topology, prefix: str | None = None, addressing: str = "l2",
                 shared_switch_ns: bool = False, shared_host_ns: bool = False) -> None:
        if addressing not in ADDRESSINGS:
            raise SubstrateError(f"addressing must be one of {ADDRESSINGS}, not {addressing!r}")
        if prefix is not None and not registry.PREFIX_RE.match(prefix):
            raise SubstrateError(f"prefix must be dl + 4 hex digits (dl3fa2), not {prefix!r}")
        self.topo = topo
        self.addressing = addressing
        self.shared_switch_ns = shared_switch_ns
        self.shared_host_ns = shared_host_ns
        self._wanted_prefix = prefix
        self._record: RunRecord | None = None
        self._children: list[subprocess.Popen] = []
        self._emulators: list[linkem.Emulator] = []
        # What each link emulator said when down() stopped it (seed, counters per direction).
        self.emulator_reports: list[dict] = []
        self._media: list[wmedium.Running] = []
        # What each medium emulator counted (per radio), kept by down() when it stopped it.
        self.medium_reports: list[dict] = []
        self._ports = topo.port_numbers()
        # node -> port -> neighbour; an AP's wlan port: its first station
        self._by_port: dict[str, dict[int, str]] = {}
        for (node, nbr), port in self._ports.items():
            self._by_port.setdefault(node, {}).setdefault(port, nbr)
        self.links = self._plan_links()
        self.media = self._plan_media()
        self._check_emulator_names()

    # ----- names and addresses -------------------------------------------------------------

    @property
    def prefix(self) -> str:
        if self._record is None:
            raise SubstrateError("the network has no prefix before up()")
        return self._record.prefix

    @property
    def run_dir(self) -> Path:
        """A directory of this run for daemons' files (sockets, logs); removed by down()."""
        return RECORD_DIR / self.prefix

    def host_ns(self, host: str) -> str:
        return f"{self.prefix}-hosts" if self.shared_host_ns else f"{self.prefix}-{host}"

    def switch_ns(self, switch: str) -> str:
        return f"{self.prefix}-sw" if self.shared_switch_ns else f"{self.prefix}-{switch}"

    def host_ip(self, host: str) -> str:
        i = self._index(host)
        return f"10.{i // 256}.{i % 256}.1"

    def host_gateway(self, host: str) -> str:
        """In l3 addressing: the address of the switch port facing ``host``."""
        i = self._index(host)
        return f"10.{i // 256}.{i % 256}.254"

    def host_prefixlen(self) -> int:
        return 8 if self.addressing == "l2" else 24

    def host_mac(self, host: str) -> str:
        i = self._index(host)
        return f"02:00:00:00:{i // 256:02x}:{i % 256:02x}"

    def switch_ports(self, switch: str) -> dict[int, str]:
        return {port: f"{switch}-eth{port}" for port in sorted(self._by_port.get(switch, {}))}

    def port_towards(self, node: str, neighbour: str) -> int:
        """The port number of ``node`` facing ``neighbour`` (an AP's wlan port for every one
        of its stations)."""
        try:
            return self._ports[(node, neighbour)]
        except KeyError:
            raise SubstrateError(f"{node} has no port towards {neighbour}") from None

    def neighbour(self, switch: str, port: int) -> str:
        try:
            return self._by_port[switch][port]
        except KeyError:
            raise SubstrateError(f"switch {switch} has no port {port}") from None

    def medium_ns(self, ap: str) -> str:
        return f"{self.prefix}-{_medium_name(ap)}"

    def wlan_port(self, ap: str) -> int | None:
        """The port number of access point ``ap``'s wlan port (None: not an AP)."""
        stations = self.topo.stations(ap)
        return self._ports[(ap, stations[0])] if stations else None

    def namespaces(self) -> list[str]:
        switch_ns = {self.switch_ns(s) for s in self.topo.switches()}
        host_ns = dict.fromkeys(self.host_ns(h) for h in self.topo.hosts())
        return list(host_ns) + sorted(switch_ns)

    def _index(self, host: str) -> int:
        i = self.topo.host_index(host)
        if not 1 <= i < 254 * 256:
            raise SubstrateError(f"host {host}: index {i} is outside 1..65023 (10.254/16 is ours)")
        return i

    def _ifname(self, node: str, nbr: str) -> str:
        if self.topo.graph.nodes[node].get("kind") == HOST:
            return HOST_IF
        return f"{node}-eth{self._ports[(node, nbr)]}"

    def _plan_links(self) -> list[Link]:
        if self.shared_host_ns:
            if self.topo.graph.number_of_edges():
                raise SubstrateError("hosts sharing one namespace talk over lo; their "
                                     "topology must have no links")
            return []
        for host in self.topo.hosts():
            degree = self.topo.graph.degree(host)
            if degree != 1:
                raise SubstrateError(f"host {host} has {degree} links; a host needs exactly one")
        links = []
        for u, v, attrs in sorted(self.topo.graph.edges(data=True)):
            if attrs.get("wireless"):
                continue  # on the medium: _plan_media
            self._check_link_attrs(u, v, attrs)
            links.append(Link(LinkEnd(u, self._ifname(u, v)), LinkEnd(v, self._ifname(v, u)),
                              attrs.get("bw_mbit"), attrs.get("delay_ms") or 0.0,
                              attrs.get("loss_pct") or 0.0, attrs.get("mtu") or MTU,
                              jitter_ms=attrs.get("jitter_ms") or 0.0,
                              emulator=attrs.get("emulator"), linkem=attrs.get("linkem")))
        return links

    def _plan_media(self) -> list[wmedium.Medium]:
        media = []
        for ap in self.topo.access_points():
            radios = []
            for station in self.topo.stations(ap):
                attrs = self.topo.graph.edges[ap, station]
                if self.topo.graph.nodes[station].get("kind") != HOST:
                    raise SubstrateError(f"wireless link {station}–{ap}: {station} is not a host")
                rate, loss = attrs.get("rate_mbit"), attrs.get("loss_pct") or 0.0
                if not (isinstance(rate, int | float) and rate > 0 and 0 <= loss <= 100):
                    raise SubstrateError(f"wireless link {station}–{ap}: rate_mbit must be > 0 "
                                         f"and loss_pct in 0..100, not {rate!r}, {loss!r}")
                radios.append(wmedium.Radio(station, wmedium.station_ifname(station),
                                            float(rate), float(loss)))
            media.append(wmedium.Medium(ap, self._ifname(ap, radios[0].station), tuple(radios)))
        return media

    def _check_link_attrs(self, u: str, v: str, attrs: dict) -> None:
        bw = attrs.get("bw_mbit")
        if bw is not None and not bw > 0:
            raise SubstrateError(f"link {u}–{v}: bw_mbit must be > 0 or None, not {bw!r}")
        for key in ("delay_ms", "loss_pct", "jitter_ms"):
            if (attrs.get(key) or 0) < 0:
                raise SubstrateError(f"link {u}–{v}: {key} must be >= 0, not {attrs[key]!r}")
        if (attrs.get("loss_pct") or 0) > 100:
            raise SubstrateError(f"link {u}–{v}: loss_pct must be <= 100, "
                                 f"not {attrs['loss_pct']!r}")
        if attrs.get("emulator") not in EMULATORS:
            raise SubstrateError(f"link {u}–{v}: emulator must be one of {EMULATORS}, "
                                 f"not {attrs['emulator']!r}")
        if attrs.get("linkem") is not None:
            try:
                linkem_settings.check(attrs["linkem"])
            except ValueError as exc:
                raise SubstrateError(f"link {u}–{v}: linkem: {exc}") from None
            if attrs.get("emulator") != "dplab":
                raise SubstrateError(f"link {u}–{v}: linkem settings need emulator dplab, "
                                     f"not {attrs.get('emulator')!r}")
        mtu = attrs.get("mtu")
        if mtu is not None and not (isinstance(mtu, int) and MIN_MTU <= mtu <= MAX_MTU):
            raise SubstrateError(f"link {u}–{v}: mtu must be an integer in {MIN_MTU}..{MAX_MTU} "
                                 f"(bytes of IP packet), not {mtu!r}")

    def node_ns(self, node: str) -> str:
        """The namespace of a host or switch."""
        if self.topo.graph.nodes[node].get("kind") == HOST:
            return self.host_ns(node)
        return self.switch_ns(node)

    # ----- capabilities ----------------------------------------------------------------------

    def capabilities(self) -> dict[str, bool]:
        """What this kernel offers: ``netem`` (delay/loss emulation), ``tbf``."""
        if "netem" not in _capability_cache:
            _capability_cache["netem"] = self._probe_netem()
        return {"netem": _capability_cache["netem"], "tbf": True}

    def _probe_netem(self) -> bool:
        """Try a netem qdisc on a throwaway veth inside a throwaway namespace of this run."""
        record = self._record or registry.new_run()
        probe = f"{record.prefix}-probe"
        record.add_namespaces([probe])
        try:
            _ip_batch(["ip"], [f"netns add {probe}",
                               f"link add pa netns {probe} type veth peer name pb netns {probe}"])
            result = subprocess.run(["tc", "-n", probe, "qdisc", "add", "dev", "pa", "root",
                                     "netem", "delay", "1ms"], capture_output=True, check=False)
            return result.returncode == 0
        finally:
            registry.delete_netns([probe])
            record.namespaces.remove(probe)
            record.save()
            if record is not self._record:
                record.path.unlink(missing_ok=True)

    def check_supported(self) -> None:
        """Refuse, before anything is built, links this kernel cannot emulate (and wireless
        media without their emulator)."""
        if self.media:
            wmedium.check_binary()
        impaired = [link for link in self.links if link.impaired]
        if not impaired:
            return
        netem = self.capabilities()["netem"]
        for link in impaired:
            if link.emulator == "netem" and not netem:
                raise SubstrateError(f"link {link.label} asks for emulator netem but this "
                                     "kernel has no netem (sch_netem); use emulator dplab")
        if self.emulated_links():
            linkem.check_binary()

    def emulated_links(self) -> list[Link]:
        """The links the user-space link emulator carries: those asking for delay, jitter or
        loss that choose it, or that do not choose and find no netem in this kernel."""
        impaired = [link for link in self.links if link.impaired]
        netem = bool(impaired) and self.capabilities()["netem"]
        return [link for link in impaired
                if link.emulator == "dplab" or (link.emulator is None and not netem)]

    def emulator_ns(self, link: Link) -> str:
        return f"{self.prefix}-{_emulator_name(self.links.index(link))}"

    def _check_emulator_names(self) -> None:
        """A node's namespace is <prefix>-<node>: a node named like an emulator's namespace
        (linkem0, map1) would share it, and the emulator's interfaces would land beside the
        node's. Every link is counted, emulated or not, so the answer does not depend on
        whether this kernel has netem."""
        taken = {_emulator_name(i): f"the link emulator of {link.label}"
                 for i, link in enumerate(self.links)}
        taken |= {_medium_name(m.ap): f"the wireless medium of {m.ap}" for m in self.media}
        for node in self.topo.graph.nodes:
            if node in taken:
                raise SubstrateError(f"node {node}: its namespace (<prefix>-{node}) is the one of "
                                     f"{taken[node]}; give the node another name")

    # ----- bring-up ---------------------------------------------------------------------------

    def __enter__(self) -> Network:
        self.up()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.down()

    def up(self) -> None:
        if self._record is not None:
            raise SubstrateError(f"network {self.prefix} is already up")
        self.check_supported()
        self._record = self._claim_record()
        try:
            self._build()
        except BaseException:
            self.down()
            raise

    def _claim_record(self) -> RunRecord:
        """A fresh prefix, or the wanted one if it is free or already recorded by this process."""
        if self._wanted_prefix is None:
            return registry.new_run()
        existing = RunRecord.load(RECORD_DIR / f"{self._wanted_prefix}.json")
        if existing is not None and (existing.owner_pid, existing.owner_start) == _self_identity():
            return existing
        if existing is not None or registry.netns_with_prefix(self._wanted_prefix):
            raise SubstrateError(f"prefix {self._wanted_prefix} is in use by another run")
        RECORD_DIR.mkdir(parents=True, exist_ok=True)
        record = RunRecord(self._wanted_prefix, *_self_identity())
        record.save()
        return record

    def _build(self) -> None:
        record = self._record
        assert record is not None
        emulated = self.emulated_links()
        names = (self.namespaces() + [self.emulator_ns(link) for link in emulated]
                 + [self.medium_ns(m.ap) for m in self.media])
        record.add_namespaces(names)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        record.add_path(self.run_dir)
        _ip_batch(["ip"], [f"netns add {n}" for n in names])
        set_sysctls({n: NO_IPV6 for n in names})
        _ip_batch(["ip"], [line for link in self.links
                           for line in self._veth_commands(link, link in emulated)]
                  + [line for medium in self.media for line in self._medium_veths(medium)])
        plans, tc_jobs = self._per_namespace_plans(emulated)
        configure(plans)
        _run_concurrently(tc_jobs)
        self._emulators = linkem.start(self, emulated)
        self._media = wmedium.start(self, self.media)

    def _medium_veths(self, medium: wmedium.Medium) -> list[str]:
        """The AP's wlan port and each station's eth0, up at once; their peers in the
        medium's namespace come up in its batch (see _veth_commands on the race)."""
        m_ns = self.medium_ns(medium.ap)
        lines = [f"link add name {medium.ap_port} netns {self.switch_ns(medium.ap)} up mtu {MTU} "
                 f"type veth peer name {wmedium.AP_IF} netns {m_ns} mtu {MTU}"]
        for radio in medium.radios:
            lines.append(f"link add name {HOST_IF} netns {self.host_ns(radio.station)} up"
                         f"{self._mac_opt(radio.station)} mtu {MTU} type veth peer name "
                         f"{radio.ifname} netns {m_ns} mtu {MTU}")
        return lines

    def _veth_commands(self, link: Link, emulated: bool) -> list[str]:
        """Create the pair with end ``a`` already up. Bringing both ends up at the same time
        from two namespaces races in veth_open (neither sees the other up, no carrier), so end
        ``b`` is brought up later, in its namespace's batch, where it finds ``a`` up. An
        emulated link is two pairs: a-end ↔ ``ea`` and ``eb`` ↔ b-end, ``ea``/``eb`` in the
        emulator's namespace (``eb`` up at once, ``ea`` in that namespace's batch)."""
        a_ns, b_ns = self.node_ns(link.a.node), self.node_ns(link.b.node)
        a_mac, b_mac = self._mac_opt(link.a.node), self._mac_opt(link.b.node)
        if not emulated:
            return [f"link add name {link.a.ifname} netns {a_ns} up{a_mac} mtu {link.mtu} "
                    f"type veth peer name {link.b.ifname} netns {b_ns}{b_mac} mtu {link.mtu}"]
        e_ns = self.emulator_ns(link)
        return [f"link add name {link.a.ifname} netns {a_ns} up{a_mac} mtu {link.mtu} "
                f"type veth peer name {linkem.A_IF} netns {e_ns} mtu {link.mtu}",
                f"link add name {linkem.B_IF} netns {e_ns} up mtu {link.mtu} "
                f"type veth peer name {link.b.ifname} netns {b_ns}{b_mac} mtu {link.mtu}"]

    def _mac_opt(self, node: str) -> str:
        if self.topo.graph.nodes[node].get("kind") == HOST:
            return f" address {self.host_mac(node)}"
        return ""

    def _per_namespace_plans(self, emulated: list[Link]
                             ) -> tuple[dict[str, NsPlan], list[tuple[list[str], list[str]]]]:
        """Over rtnetlink from this process: links up, addresses, TBF, routes; ``tc`` jobs
        only for shaping rtnl does not encode (netem delay/loss, TBF above 32-bit rates).
        On an emulated link the emulator does delay/jitter/loss; the ends keep the rate."""
        plans = {n: NsPlan(up=["lo"]) for n in self.namespaces()}
        for link in emulated:
            plans[self.emulator_ns(link)] = NsPlan(up=["lo", linkem.A_IF])
        for medium in self.media:
            plans[self.medium_ns(medium.ap)] = NsPlan(up=["lo", *medium.ifnames()])
            ap_end = LinkEnd(medium.ap, medium.ap_port)
            for radio in medium.radios:
                sta_end = LinkEnd(radio.station, HOST_IF)
                plans[self.host_ns(radio.station)].addrs += self._end_addrs(sta_end, ap_end)
                plans[self.switch_ns(medium.ap)].addrs += self._end_addrs(ap_end, sta_end)
        tc_lines: dict[str, list[str]] = {}
        for link in self.links:
            if link in emulated:
                link = replace(link, delay_ms=0.0, loss_pct=0.0, jitter_ms=0.0, linkem=None)
            for end, other in ((link.a, link.b), (link.b, link.a)):
                plan = plans[self.node_ns(end.node)]
                plan.addrs += self._end_addrs(end, other)
                if _tbf_only(link):
                    plan.tbf.append((end.ifname, link.bw_mbit,
                                     tbf_burst(link.bw_mbit, link.mtu), TBF_LATENCY_MS))
                elif lines := shaping_lines(end.ifname, link):
                    tc_lines.setdefault(self.node_ns(end.node), []).extend(lines)
            plans[self.node_ns(link.b.node)].up.append(link.b.ifname)
        if self.shared_host_ns:  # no links: every host's address on the one lo
            plans[self.host_ns(self.topo.hosts()[0])].addrs += [
                ("lo", self.host_ip(h), 32) for h in self.topo.hosts()]
        elif self.addressing == "l3":
            for host in self.topo.hosts():
                plans[self.host_ns(host)].routes.append(("0.0.0.0", 0, self.host_gateway(host)))
        return plans, [(["tc", "-n", ns, "-batch", "-"], ls) for ns, ls in tc_lines.items()]

    def _end_addrs(self, end: LinkEnd, other: LinkEnd) -> list[tuple[str, str, int]]:
        """Addresses: a host's own; in l3, the gateway on the switch port facing a host."""
        if self.topo.graph.nodes[end.node].get("kind") == HOST:
            return [(end.ifname, self.host_ip(end.node), self.host_prefixlen())]
        if self.addressing == "l3" and self.topo.graph.nodes[other.node].get("kind") == HOST:
            return [(end.ifname, self.host_gateway(other.node), 24)]
        return []

    # ----- helpers for planes and workloads --------------------------------------------------

    def ip_batch(self, lines_per_ns: dict[str, list[str]]) -> None:
        """Run ``ip`` commands (batch syntax) in several of our namespaces, concurrently."""
        self._check_ours(lines_per_ns)
        _run_concurrently([(["ip", "-n", ns, "-batch", "-"], lines)
                           for ns, lines in lines_per_ns.items() if lines])

    def configure(self, plans: dict[str, NsPlan]) -> None:
        """Bridges, links, addresses, routes in several of our namespaces, over rtnetlink from
        this process (no process per namespace: what large networks need); see rtnl.NsPlan."""
        self._check_ours(plans)
        configure(plans)

    def sysctl(self, values_per_ns: dict[str, dict[str, str]]) -> None:
        """Set sysctls (``net.ipv4.ip_forward`` style keys) in several of our namespaces."""
        self._check_ours(values_per_ns)
        set_sysctls(values_per_ns)

    def popen(self, ns: str, argv: list[str], own_sysfs: bool = True,
              **kwargs) -> subprocess.Popen:
        """Start ``argv`` inside namespace ``ns``; the process is recorded and killed by down().

        ``own_sysfs`` False enters only the network namespace (``nsenter --net``), for
        daemons that read nothing under /sys: ``ip netns exec`` gives each process a mount
        namespace of its own with the namespace's /sys, and making it copies every mount of
        the host, among them /run/netns's one per namespace (thousands in a large network),
        and tearing it down when the process ends unmounts them all again."""
        proc = self._spawn(ns, argv, own_sysfs, **kwargs)
        self._children.append(proc)
        assert self._record is not None
        self._record.add_process(proc.pid)
        return proc

    def run(self, ns: str, argv: list[str], timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
        """Run ``argv`` in ``ns`` to completion; SubstrateError with its stderr if it fails.

        Not written to the record: while it runs it sits in our namespace, where teardown
        finds and kills it anyway."""
        proc = self._spawn(ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise SubstrateError(f"{' '.join(argv)} in {ns} took longer than {timeout} s") from None
        if check and proc.returncode != 0:
            raise SubstrateError(f"{' '.join(argv)} in {ns} failed ({proc.returncode}): "
                                 f"{err.strip()}")
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def _spawn(self, ns: str, argv: list[str], own_sysfs: bool = True,
               **kwargs) -> subprocess.Popen:
        self._check_ours({ns: None})
        enter = (["ip", "netns", "exec", ns] if own_sysfs
                 else ["nsenter", f"--net={NETNS_DIR / ns}"])
        return subprocess.Popen([*enter, *argv], **kwargs)

    def _check_ours(self, namespaces: dict) -> None:
        if self._record is None:
            raise SubstrateError("the network is not up")
        mine = set(self._record.namespaces)
        for ns in namespaces:
            if ns not in mine:
                raise SubstrateError(f"namespace {ns!r} does not belong to run {self.prefix}")

    # ----- teardown ---------------------------------------------------------------------------

    def down(self) -> None:
        """Kill our processes, delete our namespaces and run directory. Safe to call twice."""
        if self._record is None:
            return
        with registry.signals_deferred():
            self.emulator_reports = linkem.stop(self._emulators)
            self._emulators = []
            self.medium_reports = wmedium.stop(self._media)
            self._media = []
            registry.teardown(self._record)
            for child in self._children:
                with contextlib.suppress(ChildProcessError):
                    child.poll()
            self._children.clear()
            self._record = None


def _self_identity() -> tuple[int, int | None]:
    return os.getpid(), registry.process_start_time(os.getpid())


def shaping_lines(ifname: str, link: Link) -> list[str]:
    """tc batch lines for one end of a link: netem for delay/jitter/loss (each direction gets
    the link's, as in Mininet) with TBF below it for the rate, or TBF alone."""
    if not link.impaired:
        return [] if link.bw_mbit is None else [_tbf_line(ifname, link.bw_mbit, link.mtu)]
    netem = f"qdisc add dev {ifname} root handle 1: netem delay {link.delay_ms}ms"
    netem += f" {link.jitter_ms}ms" if link.jitter_ms > 0 else ""
    netem += f" loss {link.loss_pct}%" if link.loss_pct > 0 else ""
    if link.bw_mbit is None:
        return [netem]
    tbf = _tbf_line(ifname, link.bw_mbit, link.mtu)
    return [netem, tbf.replace(" root ", " parent 1:1 handle 10: ")]


def _tbf_line(ifname: str, bw_mbit: float, mtu: int) -> str:
    return (f"qdisc add dev {ifname} root tbf rate {bw_mbit}mbit "
            f"burst {tbf_burst(bw_mbit, mtu)} latency {TBF_LATENCY_MS}ms")


def tbf_burst(bw_mbit: float, mtu: int = MTU) -> int:
    """TBF burst of ~1 ms at the rate (at least 10 full frames) so TCP reaches the rate."""
    return max(int(bw_mbit * 1e6 / 8 / 1000), 10 * (mtu + 14))


def _tbf_only(link: Link) -> bool:
    return link.bw_mbit is not None and link.bw_mbit <= MAX_TBF_MBIT and not link.impaired


def _ip_batch(cmd: list[str], lines: list[str]) -> None:
    _run_concurrently([([*cmd, "-batch", "-"], lines)])


def _run_concurrently(jobs: list[tuple[list[str], list[str]]]) -> None:
    """Start every ``(argv, batch lines)`` job at once, then wait for all; report failures."""
    procs = []
    for argv, lines in jobs:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        procs.append((argv, lines, proc))
    for _, lines, proc in procs:  # feed all first, so they all work at the same time
        assert proc.stdin is not None
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.close()
    errors = []
    for argv, lines, proc in procs:
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.wait()
        if proc.returncode != 0:
            errors.append(f"`{' '.join(argv)}` failed: {err.strip()} (batch: {lines[:3]}...)")
    if errors:
        raise SubstrateError("; ".join(errors))


def _emulator_name(number: int) -> str:
    """The namespace of link number ``number``'s emulator, after the run's prefix."""
    return f"linkem{number}"


def _medium_name(ap: str) -> str:
    """The namespace of access point ``ap``'s medium, after the run's prefix."""
    return f"m{ap}"
