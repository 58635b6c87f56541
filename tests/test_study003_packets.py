"""Study 003's P4 use cases on our switch, with crafted frames: each program runs on a rig
switch programmed over P4Runtime from its own entries file (tests/study003_rig.py).

- drop: nothing comes out of any port, counter `dropped` counts every frame per port;
- echo: an echo request comes back out of its port as a valid reply (addresses swapped,
  type 0, both checksums right by scapy's own recomputation, also for payloads whose reply
  checksum is 0), everything else crosses to the other port byte for byte;
- l3_forward (as s1 of the linear pair): TTL, MACs, checksum, the longest prefix chosen,
  expiring TTLs dropped and counted, ARP by its target;
- broadcast: one copy on every other port and none on the ingress port; unicast to one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, UDP, IPOption_RR
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw
from study003_rig import programmed_rig
from switch_rig import exchange, ir_folder

H1_MAC, H2_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
H1_IP, H2_IP = "10.0.1.1", "10.0.2.1"
S1_MAC, S2_MAC = "02:00:00:00:fe:01", "02:00:00:00:fe:02"
BROADCAST = "ff:ff:ff:ff:ff:ff"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return ir_folder(tmp_path_factory, "study003")


def echo_request(payload: bytes, icmp_type: int = 8, code: int = 0, **ip_fields) -> Ether:
    """h1's echo request to h2 (``ip_fields`` change its IPv4 header), built: every length
    and checksum filled in."""
    ip = IP(src=H1_IP, dst=H2_IP, ttl=64, id=77, **ip_fields)
    return Ether(bytes(Ether(dst=H2_MAC, src=H1_MAC) / ip
                       / ICMP(type=icmp_type, code=code, id=0x1234, seq=1) / Raw(payload)))


def with_reply_checksum_zero(payload: bytes) -> bytes:
    """``payload`` with its last two bytes chosen so that the echo reply's correct ICMP
    checksum is 0x0000 (the ones'-complement sum of the reply is then 0xffff)."""
    body = payload[:-2] + b"\0\0"
    reply = bytes(ICMP(type=0, code=0, id=0x1234, seq=1) / Raw(body))
    return payload[:-2] + ICMP(reply).chksum.to_bytes(2, "big")


def recomputed(frame: Ether) -> Ether:
    """The frame as scapy builds it with both checksums computed afresh."""
    fresh = frame.copy()
    del fresh[IP].chksum
    del fresh[ICMP].chksum
    return Ether(bytes(fresh))


@pytest.mark.net
def test_drop_sends_nothing_and_counts_every_frame(out):
    frames = {1: [bytes(Ether(dst=H2_MAC, src=H1_MAC) / IP(src=H1_IP, dst=H2_IP) / UDP()
                        / Raw(bytes(40)))] * 3,
              2: [bytes(Ether(dst=BROADCAST, src=H2_MAC) / ARP(pdst=H1_IP)
                        / Raw(bytes(18)))] * 2}
    with programmed_rig("drop", out, n_ports=2) as (rig, counter):
        got = {p: [] for p in (1, 2)}
        for port, sent in frames.items():
            for p, received in exchange(rig, port, sent).items():
                got[p] += received
        assert got == {1: [], 2: []}
        assert counter("dropped", 1) == (3, 3 * len(frames[1][0]))
        assert counter("dropped", 2) == (2, 2 * len(frames[2][0]))
        assert counter("dropped", 3) == (0, 0)


PAYLOADS = {
    "pattern": bytes(range(56)),
    "zeros": bytes(56),
    "odd length": b"\xab" * 37,
    "reply checksum 0": with_reply_checksum_zero(bytes(range(200, 256)) + bytes(8)),
    "all ones": b"\xff" * 64,
}


@pytest.mark.net
def test_echo_request_is_answered_by_the_switch(out):
    with programmed_rig("echo", out, n_ports=2) as (rig, counter):
        for name, payload in PAYLOADS.items():
            request = echo_request(payload)
            got = exchange(rig, 1, [bytes(request)])
            assert got[2] == [], f"{name}: the request went on to h2"
            assert len(got[1]) == 1, f"{name}: {got}"
            reply = Ether(got[1][0])
            assert (reply.dst, reply.src) == (H1_MAC, H2_MAC), name
            assert (reply[IP].src, reply[IP].dst, reply[IP].ttl) == (H2_IP, H1_IP, 64), name
            assert (reply[IP].id, reply[IP].len) == (77, request[IP].len), name
            assert (reply[ICMP].type, reply[ICMP].code) == (0, 0), name
            assert (reply[ICMP].id, reply[ICMP].seq) == (0x1234, 1), name
            assert bytes(reply[ICMP].payload)[:len(payload)] == payload, name
            fresh = recomputed(reply)
            assert reply[IP].chksum == fresh[IP].chksum, name
            assert reply[ICMP].chksum == fresh[ICMP].chksum, name
        assert counter("echo_replies", 1) == (len(PAYLOADS), 0)
        assert counter("echo_replies", 2) == (0, 0)
    assert ICMP(bytes(ICMP(type=0, id=0x1234, seq=1) / Raw(
        PAYLOADS["reply checksum 0"]))).chksum == 0  # the case is what its name says


def not_for_the_switch() -> dict[str, Ether]:
    """Frames the echo node must forward as they are: no echo request it may answer."""
    payload = bytes(range(56))
    return {
        "udp": Ether(dst=H2_MAC, src=H1_MAC) / IP(src=H1_IP, dst=H2_IP) / UDP(dport=9)
        / Raw(bytes(30)),
        "arp request": Ether(dst=BROADCAST, src=H1_MAC) / ARP(psrc=H1_IP, pdst=H2_IP)
        / Raw(bytes(18)),
        "echo reply": echo_request(payload, icmp_type=0),
        "echo request with IP options": echo_request(
            payload, options=[IPOption_RR(routers=["0.0.0.0"])]),
        "first fragment of an echo request": echo_request(payload, flags="MF"),
        "icmp type 8 code 1": echo_request(payload, code=1),
    }


@pytest.mark.net
def test_echo_node_forwards_everything_else_unchanged(out):
    with programmed_rig("echo", out, n_ports=2) as (rig, counter):
        for name, frame in not_for_the_switch().items():
            sent = bytes(frame)
            for port, other in ((1, 2), (2, 1)):
                got = exchange(rig, port, [sent])
                assert got == {port: [], other: [sent]}, f"{name} into port {port}"
        assert counter("echo_replies", 1) == (0, 0)


def ipv4(dst: str, ttl: int = 64, dst_mac: str = H2_MAC) -> Ether:
    return (Ether(dst=dst_mac, src=H1_MAC) / IP(src=H1_IP, dst=dst, ttl=ttl, id=9)
            / UDP(sport=1000, dport=2000) / Raw(b"l3 payload" * 4))


@pytest.mark.net
def test_l3_forward_routes_by_longest_prefix(out):
    # s1 of the linear pair: 10.0.1.0/24 -> h1 on port 1, 10.0.0.0/16 -> s2 on port 2.
    cases = [  # (in port, destination, out port, next-hop MAC)
        (1, H2_IP, 2, S2_MAC),
        (1, "10.0.9.9", 2, S2_MAC),
        (2, H1_IP, 1, H1_MAC),
        (2, "10.0.1.77", 1, H1_MAC),
    ]
    with programmed_rig("l3_forward", out, n_ports=2) as (rig, _):
        for in_port, dst, out_port, next_hop in cases:
            sent = ipv4(dst, ttl=64)
            got = exchange(rig, in_port, [bytes(sent)])
            assert got[in_port] == [] and len(got[out_port]) == 1, (dst, got)
            routed = Ether(got[out_port][0])
            assert (routed.dst, routed.src) == (next_hop, S1_MAC), dst
            assert routed[IP].ttl == 63, dst
            fresh = routed.copy()
            del fresh[IP].chksum
            assert routed[IP].chksum == IP(bytes(fresh[IP])).chksum, dst
            expected = sent.copy()
            expected[IP].ttl = 63
            assert bytes(routed[IP])[12:] == bytes(expected[IP])[12:], dst  # rest untouched
        no_route = exchange(rig, 1, [bytes(ipv4("10.1.0.1"))])
        assert no_route == {1: [], 2: []}


@pytest.mark.net
def test_l3_forward_drops_expiring_ttl_and_forwards_arp_by_target(out):
    with programmed_rig("l3_forward", out, n_ports=2) as (rig, counter):
        assert exchange(rig, 1, [bytes(ipv4(H2_IP, ttl=1)), bytes(ipv4(H2_IP, ttl=0))]) == {
            1: [], 2: []}
        assert counter("ttl_expired", 1) == (2, 0)
        last_hop = exchange(rig, 1, [bytes(ipv4(H2_IP, ttl=2))])
        assert [Ether(f)[IP].ttl for f in last_hop[2]] == [1]
        request = bytes(Ether(dst=BROADCAST, src=H1_MAC) / ARP(
            op=1, hwsrc=H1_MAC, psrc=H1_IP, pdst=H2_IP) / Raw(bytes(18)))
        reply = bytes(Ether(dst=H1_MAC, src=H2_MAC) / ARP(
            op=2, hwsrc=H2_MAC, psrc=H2_IP, hwdst=H1_MAC, pdst=H1_IP) / Raw(bytes(18)))
        assert exchange(rig, 1, [request]) == {1: [], 2: [request]}
        assert exchange(rig, 2, [reply]) == {1: [reply], 2: []}
        unknown = bytes(Ether(dst=BROADCAST, src=H1_MAC) / ARP(pdst="10.0.3.1")
                        / Raw(bytes(18)))
        assert exchange(rig, 1, [unknown]) == {1: [], 2: []}


def host_mac(i: int) -> str:
    return f"02:00:00:00:00:{i:02x}"


@pytest.mark.net
def test_broadcast_reaches_every_other_port_once(out):
    with programmed_rig("broadcast", out, n_ports=4) as (rig, _):
        for in_port in range(1, 5):
            arp = bytes(Ether(dst=BROADCAST, src=host_mac(in_port)) / ARP(
                psrc=f"10.0.{in_port}.1", pdst="10.0.9.1") / Raw(bytes(18)))
            got = exchange(rig, in_port, [arp])
            assert got == {p: [] if p == in_port else [arp] for p in range(1, 5)}, in_port


@pytest.mark.net
def test_broadcast_program_forwards_unicast_to_one_port(out):
    with programmed_rig("broadcast", out, n_ports=4) as (rig, _):
        to_h3 = bytes(Ether(dst=host_mac(3), src=host_mac(1)) / IP(src=H1_IP, dst="10.0.3.1")
                      / UDP() / Raw(bytes(30)))
        assert exchange(rig, 1, [to_h3]) == {1: [], 2: [], 3: [to_h3], 4: []}
        unknown = bytes(Ether(dst="02:00:00:00:00:99", src=host_mac(1)) / Raw(bytes(46)))
        assert exchange(rig, 1, [unknown]) == {p: [] for p in range(1, 5)}
