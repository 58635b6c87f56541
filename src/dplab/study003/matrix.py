"""Study 003's feasibility matrix (its Table 2) from what was observed: every use case runs in
P4 (our switch, p4src/study003/) and XDP (the xdp plane, xdp/study003/ and its l3 modes) on
the study's wired topology, frames go in from the hosts and a cell is ✓ only when the
packets and counters prove the case:

- drop: nothing arrives at the other host and the program counted at least every frame sent;
- pass: the node's own stack received (and routed) the traffic: its ``Ip: ForwDatagrams``
  grew by every ping and its answer, all answered;
- echo: every request answered by a valid reply (addresses swapped, both checksums right)
  while the target host received none and its ``Icmp: InEchos`` stayed 0;
- l3: every ping reached the far host with its MAC as destination, the last router's MAC as
  source, TTL less the two routers and a right IPv4 checksum (XDP: the static table and the
  FIB lookup both);
- broadcast: a broadcast frame from each host reached every other host once and never came
  back to its sender (XDP: devmap broadcast and the XDP + tc ``bpf_clone_redirect`` hybrid
  both).

Otherwise ✗ with what was seen. P4 "pass" is ✗ without a run: a P4 pipeline has no kernel
stack behind it to hand a packet to (docs/studies/003-p4.md, case II).

The wireless columns run the same cases on an access point (docs/wireless.md): the stations
sta1, sta2 (sta1..sta4 for broadcast) share its one wlan port through the medium emulator,
L3 forwarding crosses two access points, and the programs' entries files are the
``*_wireless`` ones. There a broadcast is proven by one copy at every other station; the
sender hearing its own frame back from the AP is the shared medium (as on 802.11), not
counted against it. XDP's wireless broadcast is the study's: XDP_TX back out of the wlan
port (xdp/study003/broadcast_wireless.bpf.c), no copy made.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from dplab import planes
from dplab.p4runtime import switch_link
from dplab.planes.base import Plane
from dplab.study003.frames import exchange, snmp
from dplab.substrate.network import Network
from dplab.topology import catalog
from dplab.xdp.netns import interfaces

ROOT = Path(__file__).resolve().parents[3]
P4_DIR, XDP_DIR = ROOT / "p4src" / "study003", ROOT / "xdp" / "study003"
TECHNOLOGIES = ("p4", "xdp")
WIRELESS = "wireless"
# The matrix's columns: a technology, wired, or with "-wireless" on an access point.
COLUMNS = ("xdp", f"xdp-{WIRELESS}", "p4", f"p4-{WIRELESS}")
CASES = ("drop", "pass", "echo", "l3", "broadcast")
TITLES = {"drop": "I drop", "pass": "II pass", "echo": "III echo server",
          "l3": "IV L3 forwarding", "broadcast": "V broadcast"}
P4_NO_PASS = ("no P4 equivalent: a P4 pipeline has no kernel stack behind it to hand a "
              "packet to (docs/studies/003-p4.md, case II)")
READY_S = 30.0
FRAMES = 5  # crafted frames per check
MARKER = b"dplab-study003-matrix"
BROADCAST = "ff:ff:ff:ff:ff:ff"
STATS_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Setting:
    """Where a column's cases run: the topologies and the names of their nodes."""

    name: str
    three_nodes: tuple[str, dict[str, Any]]  # sender, switch, target
    two_routers: tuple[str, dict[str, Any]]  # sender, router, router, target
    four_hosts: tuple[str, dict[str, Any]]  # four hosts on one switch
    sender: str
    target: str
    switch: str
    last_router: str
    files: str  # what the entries files' names end with (before .yaml)
    own_copy_allowed: bool  # a broadcast's sender may hear its own frame back


WIRED = Setting("wired", ("single", {"hosts": 2}),
                ("linear", {"switches": 2, "hosts_per_switch": 1}), ("single", {"hosts": 4}),
                "h1", "h2", "s1", "s2", "", False)
AIR = Setting(WIRELESS, ("wifi", {"n": 2}), ("wifi2", {"n": 2}), ("wifi", {"n": 4}),
              "sta1", "sta2", "ap1", "ap2", "_wireless", True)


def setting(column: str) -> tuple[str, Setting]:
    """"xdp-wireless" -> ("xdp", AIR)."""
    kind, _, where = column.partition("-")
    if kind not in TECHNOLOGIES or where not in ("", WIRELESS):
        raise ValueError(f"matrix column {column!r} is not one of {', '.join(COLUMNS)}")
    return kind, AIR if where else WIRED


@dataclass
class Cell:
    feasible: bool
    reason: str  # what proved it, or what was seen instead
    evidence: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return "✓" if self.feasible else f"✗ {self.reason}"


def cell(ok: bool, proof: str, failure: str, evidence: dict[str, Any]) -> Cell:
    return Cell(ok, proof if ok else failure, evidence)


@contextmanager
def running(kind: str, options: dict[str, Any], topology: str, ready: bool,
            **params: object) -> Iterator[tuple[Network, Plane]]:
    """Plane ``kind`` on catalog topology ``topology``; ``ready``: after its readiness ping."""
    plane = planes.create(kind, options)
    # The study's veths have no rate: unshaped links (a user's XDP program refuses shaped
    # switch ports, whose qdiscs its redirects would skip), the same for both technologies.
    params = {"edge_bw": None, "core_bw": None, **params}
    with Network(catalog.build(topology, **params), addressing=plane.addressing,
                 shared_switch_ns=plane.shared_switch_ns) as net:
        try:
            plane.start(net)
            if ready:
                plane.wait_ready(READY_S)
            yield net, plane
        finally:
            plane.stop()


def _marked(ether: Ether, payload: bytes = b"") -> bytes:
    return bytes(ether / Raw(MARKER + payload))


# --- I drop ---------------------------------------------------------------------------------

def observe_drop(kind: str, where: Setting = WIRED) -> Cell:
    options = ({"program": str(XDP_DIR / "drop.bpf.c")} if kind == "xdp"
               else {"program": str(P4_DIR / "drop.p4")})
    src, dst = where.sender, where.target
    with _empty_entries() as entries:
        if kind == "p4":
            options["entries"] = str(entries)
        topology, params = where.three_nodes
        with running(kind, options, topology, False, **params) as (net, plane):
            frame = _marked(Ether(dst=net.host_mac(dst), src=net.host_mac(src))
                            / IP(src=net.host_ip(src), dst=net.host_ip(dst)) / UDP())
            before = _drops_counted(kind, plane, where.switch)
            got = exchange(net, src, [frame] * FRAMES, [dst], MARKER)
            counted = _drops_counted(kind, plane, where.switch) - before
    evidence = {"sent": FRAMES, "arrived": len(got[dst]), "drops_counted": counted}
    return cell(not got[dst] and counted >= FRAMES, "nothing arrived, every frame counted",
                f"{len(got[dst])} of {FRAMES} arrived, {counted} drops counted", evidence)


@contextmanager
def _empty_entries() -> Iterator[Path]:
    """drop.p4 has no table: an empty entries file makes the p4 plane static (no
    controller)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "entries.yaml"
        path.write_text("entries: []\n")
        yield path


def _drops_counted(kind: str, plane: Plane, switch: str) -> int:
    """The XDP program's `drop` counter, or what the P4 switch's program dropped
    (switch/PROTOCOL.md ``stats``: ``pipeline.drops``)."""
    if kind == "xdp":
        return sum(c["drop"] for c in plane.switch_counters().values())
    stats = switch_link.request(str(plane._control(switch)), "stats",  # noqa: SLF001
                                STATS_TIMEOUT_S)
    return int(stats["pipeline"]["drops"])


# --- II pass --------------------------------------------------------------------------------

def observe_pass(kind: str, where: Setting = WIRED) -> Cell:
    if kind == "p4":
        return Cell(False, P4_NO_PASS)
    options = {"program": str(XDP_DIR / "pass.bpf.c"), "addressing": "l3"}
    topology, params = where.three_nodes
    with running("xdp", options, topology, True, **params) as (net, plane):
        switch_ns = net.switch_ns(where.switch)
        before = snmp(net, switch_ns, "Ip")
        passed_before = plane.switch_counters()[where.switch]
        ping = net.run(net.host_ns(where.sender), ["ping", "-c", str(FRAMES), "-i0.05", "-W1",
                                                   "-q", net.host_ip(where.target)],
                       check=False)
        after, passed_after = snmp(net, switch_ns, "Ip"), plane.switch_counters()[where.switch]
    forwarded = after["ForwDatagrams"] - before["ForwDatagrams"]
    passed = passed_after["pass"] - passed_before["pass"]
    evidence = {"pings": FRAMES, "ping_ok": ping.returncode == 0,
                "stack_forwarded": forwarded, "program_passed": passed}
    ok = ping.returncode == 0 and forwarded >= 2 * FRAMES and passed >= 2 * FRAMES
    return cell(ok, "every ping and answer passed to the node's stack, which routed it",
                f"ping ok {ping.returncode == 0}, stack forwarded {forwarded}, program "
                f"passed {passed} (want {2 * FRAMES} each)", evidence)


# --- III echo -------------------------------------------------------------------------------

def observe_echo(kind: str, where: Setting = WIRED) -> Cell:
    options = ({"program": str(XDP_DIR / "echo.bpf.c"),
                "maps": str(XDP_DIR / f"echo{where.files}_maps.yaml")} if kind == "xdp"
               else {"program": str(P4_DIR / "echo.p4"),
                     "entries": str(P4_DIR / f"echo{where.files}_entries.yaml")})
    src, dst = where.sender, where.target
    topology, params = where.three_nodes
    with running(kind, options, topology, True, **params) as (net, _):
        echos_before = snmp(net, net.host_ns(dst), "Icmp")["InEchos"]
        requests = [echo_request(net, seq, bytes(range(seq, seq + 37)), src, dst)
                    for seq in range(FRAMES)]
        got = exchange(net, src, requests, [src, dst], MARKER)
        echos = snmp(net, net.host_ns(dst), "Icmp")["InEchos"] - echos_before
    valid = [f for f in got[src] if valid_reply(net, Ether(f), src, dst)]
    evidence = {"requests": FRAMES, "valid_replies": len(valid), "replies": len(got[src]),
                "requests_at_target": len(got[dst]), "target_in_echos": echos}
    ok = len(valid) == FRAMES and not got[dst] and echos == 0
    return cell(ok, "every request answered by the node, none reached the target",
                f"{len(valid)}/{FRAMES} valid replies, {len(got[dst])} requests and "
                f"{echos} InEchos at the target", evidence)


def echo_request(net: Network, seq: int, payload: bytes, src: str = "h1",
                 dst: str = "h2") -> bytes:
    """``src``'s echo request to ``dst``, every length and checksum filled in."""
    return _marked(Ether(dst=net.host_mac(dst), src=net.host_mac(src))
                   / IP(src=net.host_ip(src), dst=net.host_ip(dst), ttl=64)
                   / ICMP(type=8, id=0x5151, seq=seq), payload)


def valid_reply(net: Network, reply: Ether, src: str = "h1", dst: str = "h2") -> bool:
    """An echo reply from ``dst``'s addresses to ``src``'s whose checksums are what scapy
    computes."""
    if ICMP not in reply or reply[ICMP].type != 0:
        return False
    fresh = reply.copy()
    del fresh[IP].chksum
    del fresh[ICMP].chksum
    fresh = Ether(bytes(fresh))
    return ((reply.src, reply.dst) == (net.host_mac(dst), net.host_mac(src))
            and (reply[IP].src, reply[IP].dst) == (net.host_ip(dst), net.host_ip(src))
            and reply[IP].chksum == fresh[IP].chksum
            and reply[ICMP].chksum == fresh[ICMP].chksum)


# --- IV L3 forwarding -----------------------------------------------------------------------

ROUTERS = 2  # linear with two switches: h1 - s1 - s2 - h2 (wireless: sta1 ~ ap1 - ap2 ~ sta2)


def observe_l3(kind: str, where: Setting = WIRED) -> Cell:
    if kind == "p4":
        options = {"program": str(P4_DIR / "l3_forward.p4"),
                   "entries": str(P4_DIR / f"l3_forward{where.files}_entries.yaml")}
        return _l3_variant("p4", options, lambda _net: P4_S2_MAC, where)
    variants = {mode: _l3_variant("xdp", {"mode": mode}, _xdp_last_router_mac(where), where)
                for mode in ("l3", "l3-fib")}
    evidence = {mode: asdict(c) for mode, c in variants.items()}
    failed = [f"{mode}: {c.reason}" for mode, c in variants.items() if not c.feasible]
    return cell(not failed, "static table (l3) and FIB lookup (l3-fib) both proven",
                "; ".join(failed), evidence)


# The last router's own MAC in p4src/study003/l3_forward{,_wireless}_entries.yaml
P4_S2_MAC = "02:00:00:00:fe:02"


def _xdp_last_router_mac(where: Setting) -> Callable[[Network], str]:
    def mac(net: Network) -> str:
        port = net.switch_ports(where.last_router)[net.port_towards(where.last_router,
                                                                    where.target)]
        return interfaces(net.switch_ns(where.last_router))[port].mac.hex(":")
    return mac


def _l3_variant(kind: str, options: dict[str, Any],
                last_router_mac: Callable[[Network], str], where: Setting) -> Cell:
    src, dst = where.sender, where.target
    topology, params = where.two_routers
    with running(kind, options, topology, True, **params) as (net, _):
        expected_src = last_router_mac(net)
        frame = _marked(Ether(dst=_gateway_mac(net, src, dst), src=net.host_mac(src))
                        / IP(src=net.host_ip(src), dst=net.host_ip(dst), ttl=64)
                        / UDP(sport=4000, dport=4001))
        got = exchange(net, src, [frame] * FRAMES, [dst], MARKER)
        dst_mac = net.host_mac(dst)
    right = [f for f in got[dst] if _routed_right(Ether(f), expected_src, dst_mac)]
    evidence = {"sent": FRAMES, "arrived": len(got[dst]), "right": len(right)}
    return cell(len(right) == FRAMES == len(got[dst]),
                f"MACs, TTL 64-{ROUTERS} and checksum right at the far host",
                f"{len(right)} of {FRAMES} right ({len(got[dst])} arrived)", evidence)


def _gateway_mac(net: Network, src: str, dst: str) -> str:
    """The MAC ``src``'s kernel resolved for its way to ``dst`` (the readiness ping made
    it)."""
    out = net.run(net.host_ns(src), ["ip", "-j", "route", "get", net.host_ip(dst)]).stdout
    via = json.loads(out)[0].get("gateway", net.host_ip(dst))
    neigh = json.loads(net.run(net.host_ns(src), ["ip", "-j", "neigh", "show", via]).stdout)
    return str(neigh[0]["lladdr"])


def _routed_right(frame: Ether, src_mac: str, dst_mac: str) -> bool:
    if IP not in frame:
        return False
    fresh = frame.copy()
    del fresh[IP].chksum
    return ((frame.src, frame.dst) == (src_mac, dst_mac) and frame[IP].ttl == 64 - ROUTERS
            and frame[IP].chksum == Ether(bytes(fresh))[IP].chksum)


# --- V broadcast ----------------------------------------------------------------------------

HOSTS = 4


def observe_broadcast(kind: str, where: Setting = WIRED) -> Cell:
    if kind == "p4":
        return _broadcast_variant("p4", {
            "program": str(P4_DIR / "broadcast.p4"),
            "entries": str(P4_DIR / f"broadcast{where.files}_entries.yaml")}, where)
    stems = ((("XDP_TX", "broadcast_wireless"),) if where is AIR else
             (("devmap", "broadcast"), ("xdp+tc", "broadcast_tc")))
    variants = {name: _broadcast_variant("xdp", {"program": str(XDP_DIR / f"{stem}.bpf.c"),
                                                 "maps": str(XDP_DIR / f"{stem}_maps.yaml")},
                                         where)
                for name, stem in stems}
    evidence = {name: asdict(c) for name, c in variants.items()}
    failed = [f"{name}: {c.reason}" for name, c in variants.items() if not c.feasible]
    proof = (f"{' and '.join(variants)} proven" if where is AIR else
             "devmap broadcast and the XDP + tc clone hybrid both proven")
    return cell(not failed, proof, "; ".join(failed), evidence)


def _broadcast_variant(kind: str, options: dict[str, Any], where: Setting) -> Cell:
    copies: dict[str, dict[str, int]] = {}
    topology, params = where.four_hosts
    with running(kind, options, topology, True, **params) as (net, plane):
        hosts = net.topo.hosts()
        for sender in hosts:
            frame = _marked(Ether(dst=BROADCAST, src=net.host_mac(sender))
                            / ARP(psrc=net.host_ip(sender), pdst="10.255.255.254"),
                            sender.encode())
            got = exchange(net, sender, [frame], hosts, MARKER + sender.encode())
            copies[sender] = {host: len(frames) for host, frames in got.items()}
        counters = plane.switch_counters()[where.switch] if kind == "xdp" else {}
    own = (0, 1) if where.own_copy_allowed else (0,)
    wrong = {sender: seen for sender, seen in copies.items()
             if any(n not in (own if host == sender else (1,)) for host, n in seen.items())}
    proof = ("one copy at every other station (the medium may echo the sender's own)"
             if where.own_copy_allowed else "one copy at every other host, none back at the sender")
    return cell(not wrong, proof, f"copies per sender {wrong}",
                {"copies": copies, "counters": counters})


OBSERVERS: dict[str, Callable[[str, Setting], Cell]] = {
    "drop": observe_drop, "pass": observe_pass, "echo": observe_echo, "l3": observe_l3,
    "broadcast": observe_broadcast}


def observe(case: str, column: str) -> Cell:
    """One cell of ``column`` (COLUMNS: "xdp", "p4-wireless", ...); a run that fails is ✗
    with its error (never a ✓)."""
    kind, where = setting(column)
    try:
        return OBSERVERS[case](kind, where)
    except Exception as exc:  # noqa: BLE001 - any failure is the cell's observation
        return Cell(False, f"run failed: {exc}")


def matrix(cases: tuple[str, ...] = CASES, columns: tuple[str, ...] = COLUMNS,
           progress: Callable[[str], None] = lambda _m: None) -> dict[str, dict[str, Cell]]:
    out: dict[str, dict[str, Cell]] = {}
    for case in cases:
        for column in columns:
            progress(f"{case} in {column}")
            out.setdefault(case, {})[column] = observe(case, column)
    return out


def markdown(cells: dict[str, dict[str, Cell]]) -> str:
    kinds = list(next(iter(cells.values())))
    lines = [f"| use case | {' | '.join(k.upper() for k in kinds)} |",
             f"|---|{'---|' * len(kinds)}"]
    for case, row in cells.items():
        lines.append(f"| {TITLES[case]} | {' | '.join(row[k].text() for k in kinds)} |")
    return "\n".join(lines) + "\n"


def write(cells: dict[str, dict[str, Cell]], folder: Path) -> tuple[Path, Path]:
    """matrix.md (the table) and matrix.json (every cell with its evidence) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    table, data = folder / "matrix.md", folder / "matrix.json"
    table.write_text(markdown(cells))
    data.write_text(json.dumps({case: {k: asdict(c) for k, c in row.items()}
                                for case, row in cells.items()}, indent=2) + "\n")
    return table, data
