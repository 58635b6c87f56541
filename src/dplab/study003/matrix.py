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

def observe_drop(kind: str) -> Cell:
    options = ({"program": str(XDP_DIR / "drop.bpf.c")} if kind == "xdp"
               else {"program": str(P4_DIR / "drop.p4")})
    with _empty_entries() as entries:
        if kind == "p4":
            options["entries"] = str(entries)
        with running(kind, options, "single", False, hosts=2) as (net, plane):
            frame = _marked(Ether(dst=net.host_mac("h2"), src=net.host_mac("h1"))
                            / IP(src=net.host_ip("h1"), dst=net.host_ip("h2")) / UDP())
            before = _drops_counted(kind, plane)
            got = exchange(net, "h1", [frame] * FRAMES, ["h2"], MARKER)
            counted = _drops_counted(kind, plane) - before
    evidence = {"sent": FRAMES, "arrived": len(got["h2"]), "drops_counted": counted}
    return cell(not got["h2"] and counted >= FRAMES, "nothing arrived, every frame counted",
                f"{len(got['h2'])} of {FRAMES} arrived, {counted} drops counted", evidence)


@contextmanager
def _empty_entries() -> Iterator[Path]:
    """drop.p4 has no table: an empty entries file makes the p4 plane static (no
    controller)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "entries.yaml"
        path.write_text("entries: []\n")
        yield path


def _drops_counted(kind: str, plane: Plane) -> int:
    """The XDP program's `drop` counter, or what the P4 switch's program dropped
    (switch/PROTOCOL.md ``stats``: ``pipeline.drops``)."""
    if kind == "xdp":
        return sum(c["drop"] for c in plane.switch_counters().values())
    stats = switch_link.request(str(plane._control("s1")), "stats",  # noqa: SLF001
                                STATS_TIMEOUT_S)
    return int(stats["pipeline"]["drops"])


# --- II pass --------------------------------------------------------------------------------

def observe_pass(kind: str) -> Cell:
    if kind == "p4":
        return Cell(False, P4_NO_PASS)
    options = {"program": str(XDP_DIR / "pass.bpf.c"), "addressing": "l3"}
    with running("xdp", options, "single", True, hosts=2) as (net, plane):
        switch_ns = net.switch_ns("s1")
        before, passed_before = snmp(net, switch_ns, "Ip"), plane.switch_counters()["s1"]
        ping = net.run(net.host_ns("h1"), ["ping", "-c", str(FRAMES), "-i0.05", "-W1", "-q",
                                           net.host_ip("h2")], check=False)
        after, passed_after = snmp(net, switch_ns, "Ip"), plane.switch_counters()["s1"]
    forwarded = after["ForwDatagrams"] - before["ForwDatagrams"]
    passed = passed_after["pass"] - passed_before["pass"]
    evidence = {"pings": FRAMES, "ping_ok": ping.returncode == 0,
                "stack_forwarded": forwarded, "program_passed": passed}
    ok = ping.returncode == 0 and forwarded >= 2 * FRAMES and passed >= 2 * FRAMES
    return cell(ok, "every ping and answer passed to the node's stack, which routed it",
                f"ping ok {ping.returncode == 0}, stack forwarded {forwarded}, program "
                f"passed {passed} (want {2 * FRAMES} each)", evidence)


# --- III echo -------------------------------------------------------------------------------

def observe_echo(kind: str) -> Cell:
    options = ({"program": str(XDP_DIR / "echo.bpf.c"),
                "maps": str(XDP_DIR / "echo_maps.yaml")} if kind == "xdp"
               else {"program": str(P4_DIR / "echo.p4"),
                     "entries": str(P4_DIR / "echo_entries.yaml")})
    with running(kind, options, "single", True, hosts=2) as (net, _):
        echos_before = snmp(net, net.host_ns("h2"), "Icmp")["InEchos"]
        requests = [echo_request(net, seq, bytes(range(seq, seq + 37)))
                    for seq in range(FRAMES)]
        got = exchange(net, "h1", requests, ["h1", "h2"], MARKER)
        echos = snmp(net, net.host_ns("h2"), "Icmp")["InEchos"] - echos_before
    valid = [f for f in got["h1"] if valid_reply(net, Ether(f))]
    evidence = {"requests": FRAMES, "valid_replies": len(valid), "replies": len(got["h1"]),
                "requests_at_target": len(got["h2"]), "target_in_echos": echos}
    ok = len(valid) == FRAMES and not got["h2"] and echos == 0
    return cell(ok, "every request answered by the node, none reached the target",
                f"{len(valid)}/{FRAMES} valid replies, {len(got['h2'])} requests and "
                f"{echos} InEchos at the target", evidence)


def echo_request(net: Network, seq: int, payload: bytes) -> bytes:
    """h1's echo request to h2, every length and checksum filled in."""
    return _marked(Ether(dst=net.host_mac("h2"), src=net.host_mac("h1"))
                   / IP(src=net.host_ip("h1"), dst=net.host_ip("h2"), ttl=64)
                   / ICMP(type=8, id=0x5151, seq=seq), payload)


def valid_reply(net: Network, reply: Ether) -> bool:
    """An echo reply from h2's addresses to h1's whose checksums are what scapy computes."""
    if ICMP not in reply or reply[ICMP].type != 0:
        return False
    fresh = reply.copy()
    del fresh[IP].chksum
    del fresh[ICMP].chksum
    fresh = Ether(bytes(fresh))
    return ((reply.src, reply.dst) == (net.host_mac("h2"), net.host_mac("h1"))
            and (reply[IP].src, reply[IP].dst) == (net.host_ip("h2"), net.host_ip("h1"))
            and reply[IP].chksum == fresh[IP].chksum
            and reply[ICMP].chksum == fresh[ICMP].chksum)


# --- IV L3 forwarding -----------------------------------------------------------------------

ROUTERS = 2  # linear with two switches: h1 - s1 - s2 - h2


def observe_l3(kind: str) -> Cell:
    if kind == "p4":
        options = {"program": str(P4_DIR / "l3_forward.p4"),
                   "entries": str(P4_DIR / "l3_forward_entries.yaml")}
        return _l3_variant("p4", options, lambda _net: P4_S2_MAC)
    variants = {mode: _l3_variant("xdp", {"mode": mode}, _xdp_last_router_mac)
                for mode in ("l3", "l3-fib")}
    evidence = {mode: asdict(c) for mode, c in variants.items()}
    failed = [f"{mode}: {c.reason}" for mode, c in variants.items() if not c.feasible]
    return cell(not failed, "static table (l3) and FIB lookup (l3-fib) both proven",
                "; ".join(failed), evidence)


P4_S2_MAC = "02:00:00:00:fe:02"  # s2's own MAC in p4src/study003/l3_forward_entries.yaml


def _xdp_last_router_mac(net: Network) -> str:
    port = next(name for p, name in net.switch_ports("s2").items()
                if net.neighbour("s2", p) == "h2")
    return interfaces(net.switch_ns("s2"))[port].mac.hex(":")


def _l3_variant(kind: str, options: dict[str, Any],
                last_router_mac: Callable[[Network], str]) -> Cell:
    with running(kind, options, "linear", True, switches=2, hosts_per_switch=1) as (net, _):
        expected_src = last_router_mac(net)
        frame = _marked(Ether(dst=_gateway_mac(net), src=net.host_mac("h1"))
                        / IP(src=net.host_ip("h1"), dst=net.host_ip("h2"), ttl=64)
                        / UDP(sport=4000, dport=4001))
        got = exchange(net, "h1", [frame] * FRAMES, ["h2"], MARKER)
        h2_mac = net.host_mac("h2")
    right = [f for f in got["h2"] if _routed_right(Ether(f), expected_src, h2_mac)]
    evidence = {"sent": FRAMES, "arrived": len(got["h2"]), "right": len(right)}
    return cell(len(right) == FRAMES == len(got["h2"]),
                f"MACs, TTL 64-{ROUTERS} and checksum right at the far host",
                f"{len(right)} of {FRAMES} right ({len(got['h2'])} arrived)", evidence)


def _gateway_mac(net: Network) -> str:
    """The MAC h1's kernel resolved for its way to h2 (the readiness ping made it)."""
    out = net.run(net.host_ns("h1"), ["ip", "-j", "route", "get", net.host_ip("h2")]).stdout
    via = json.loads(out)[0].get("gateway", net.host_ip("h2"))
    neigh = json.loads(net.run(net.host_ns("h1"), ["ip", "-j", "neigh", "show", via]).stdout)
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


def observe_broadcast(kind: str) -> Cell:
    if kind == "p4":
        return _broadcast_variant("p4", {"program": str(P4_DIR / "broadcast.p4"),
                                         "entries": str(P4_DIR / "broadcast_entries.yaml")})
    variants = {name: _broadcast_variant("xdp", {"program": str(XDP_DIR / f"{stem}.bpf.c"),
                                                 "maps": str(XDP_DIR / f"{stem}_maps.yaml")})
                for name, stem in (("devmap", "broadcast"), ("xdp+tc", "broadcast_tc"))}
    evidence = {name: asdict(c) for name, c in variants.items()}
    failed = [f"{name}: {c.reason}" for name, c in variants.items() if not c.feasible]
    return cell(not failed, "devmap broadcast and the XDP + tc clone hybrid both proven",
                "; ".join(failed), evidence)


def _broadcast_variant(kind: str, options: dict[str, Any]) -> Cell:
    copies: dict[str, dict[str, int]] = {}
    with running(kind, options, "single", True, hosts=HOSTS) as (net, plane):
        hosts = net.topo.hosts()
        for sender in hosts:
            frame = _marked(Ether(dst=BROADCAST, src=net.host_mac(sender))
                            / ARP(psrc=net.host_ip(sender), pdst="10.255.255.254"),
                            sender.encode())
            got = exchange(net, sender, [frame], hosts, MARKER + sender.encode())
            copies[sender] = {host: len(frames) for host, frames in got.items()}
        counters = plane.switch_counters()["s1"] if kind == "xdp" else {}
    wrong = {sender: seen for sender, seen in copies.items()
             if any(n != (0 if host == sender else 1) for host, n in seen.items())}
    return cell(not wrong, "one copy at every other host, none back at the sender",
                f"copies per sender {wrong}", {"copies": copies, "counters": counters})


OBSERVERS: dict[str, Callable[[str], Cell]] = {
    "drop": observe_drop, "pass": observe_pass, "echo": observe_echo, "l3": observe_l3,
    "broadcast": observe_broadcast}


def observe(case: str, kind: str) -> Cell:
    """One cell; a run that fails is ✗ with its error (never a ✓)."""
    try:
        return OBSERVERS[case](kind)
    except Exception as exc:  # noqa: BLE001 - any failure is the cell's observation
        return Cell(False, f"run failed: {exc}")


def matrix(cases: tuple[str, ...] = CASES,
           technologies: tuple[str, ...] = TECHNOLOGIES,
           progress: Callable[[str], None] = lambda _m: None) -> dict[str, dict[str, Cell]]:
    out: dict[str, dict[str, Cell]] = {}
    for case in cases:
        for kind in technologies:
            progress(f"{case} in {kind}")
            out.setdefault(case, {})[kind] = observe(case, kind)
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
