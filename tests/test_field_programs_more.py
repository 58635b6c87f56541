"""The other nine p4lang/tutorials exercises (tests/p4/field/) on the real switch, each with
the table entries its tutorial installs (exercises/<name>/pod-topo/s1-runtime.json, or the
exercise's controller where it has one; written here as our own entries, the switch being
the tutorial's s1) and exact checks of what comes out.

One rig of four ports serves the module: `load_pipeline` replaces the program and all its
state (entries, registers, counters, groups) for each test. Where a program reads the
queue (ecn, mri), a burst is sent while the test holds the switch (PROTOCOL.md `hold`), so
the data plane takes it in one round: the n-th frame of the round then found n frames ahead
of it in its egress port's queue (`enq_qdepth`/`deq_qdepth`, PROTOCOL.md "Queues")."""

from __future__ import annotations

import socket
import struct
import time
import zlib
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, ipv4_checksum, mac

pytestmark = pytest.mark.net

FIELD = Path(__file__).resolve().parent / "p4" / "field"
PROGRAMS = ("basic_tunnel", "advanced_tunnel", "ecn", "firewall", "link_monitor",
            "load_balance", "mri", "multicast", "qos")
HOST_MAC = "08:00:00:00:01:11"   # h1, behind port 1, as in the tutorials' topologies
SWITCH_MAC = "08:00:00:00:01:00"
# The tutorials' pod-topo s1 routes: host address, next-hop MAC, port.
POD_ROUTES = (("10.0.1.1", "08:00:00:00:01:11", 1), ("10.0.2.2", "08:00:00:00:02:22", 2),
              ("10.0.3.3", "08:00:00:00:03:00", 3), ("10.0.4.4", "08:00:00:00:04:00", 4))
TCP, UDP, ICMP = 6, 17, 1
SYN, ACK = 0x02, 0x10
HOLD_SETTLE_S = 0.1  # for the frames sent during a hold to reach the switch's receive ring


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, Path]:
    out = rig_mod.ir_folder(tmp_path_factory, "field_more_ir")
    return {name: rig_mod.compile_p4(FIELD / f"{name}.p4", out) for name in PROGRAMS}


@pytest.fixture(scope="module")
def rig(compiled):
    with Rig(n_ports=4) as shared:
        yield shared


# ---- frames -------------------------------------------------------------------------------

def ip_bytes(text: str) -> bytes:
    return socket.inet_aton(text)


def ipv4(src: str, dst: str, proto: int, payload: bytes, tos: int = 0, ttl: int = 64,
         options: bytes = b"") -> bytes:
    """An IPv4 packet with a correct header checksum (over the options too)."""
    ihl = 5 + len(options) // 4
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, ihl * 4 + len(payload), 1, 0,
                         ttl, proto, 0, ip_bytes(src), ip_bytes(dst)) + options
    return header[:10] + struct.pack("!H", ipv4_checksum(header)) + header[12:] + payload


def tcp(src: str, dst: str, sport: int, dport: int, flags: int) -> bytes:
    """A TCP header (no payload) with its checksum over the pseudo-header."""
    seg = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags, 1024, 0, 0)
    pseudo = ip_bytes(src) + ip_bytes(dst) + struct.pack("!BBH", 0, TCP, len(seg))
    return seg[:16] + struct.pack("!H", ipv4_checksum(pseudo + seg)) + seg[18:]


def ether(dst: str, src: str, ethertype: int, body: bytes) -> bytes:
    frame = mac(dst) + mac(src) + struct.pack("!H", ethertype) + body
    return frame + bytes(max(0, 60 - len(frame)))


def ip_frame(src: str, dst: str, proto: int = UDP, tos: int = 0, ttl: int = 64,
             size: int = 60) -> bytes:
    payload = bytes(max(8, size - 34))
    return ether(SWITCH_MAC, HOST_MAC, 0x0800, ipv4(src, dst, proto, payload, tos, ttl))


def tcp_frame(src: str, dst: str, sport: int, dport: int, flags: int,
              src_mac: str = HOST_MAC) -> bytes:
    return ether(SWITCH_MAC, src_mac, 0x0800, ipv4(src, dst, TCP, tcp(src, dst, sport, dport,
                                                                      flags)))


def routed(sent: bytes, next_hop: str) -> bytes:
    """What ipv4_forward makes of `sent` (an Ethernet/IPv4 frame without options): the
    switch's MAC (the frame's destination) as source, `next_hop` as destination, TTL one
    lower, the header checksum recomputed."""
    header = bytearray(sent[14:34])
    header[8] -= 1
    header[10:12] = b"\0\0"
    header[10:12] = struct.pack("!H", ipv4_checksum(bytes(header)))
    return mac(next_hop) + sent[0:6] + sent[12:14] + bytes(header) + sent[34:]


def crc16(data: bytes) -> int:
    """CRC-16/ARC (BMv2's crc16): polynomial 0x8005 reflected, initial value 0."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


# ---- switch -------------------------------------------------------------------------------

def mac_arg(text: str) -> str:
    return "0x" + text.replace(":", "")


def ip_arg(text: str) -> str:
    return "0x" + ip_bytes(text).hex()


def add(rig: Rig, table: str, match: list[dict], action: str, *args: str) -> None:
    rig.client.call("table_add", table=table, match=match,
                    action={"action": action, "args": list(args)})


def route(rig: Rig, routes=POD_ROUTES, table: str = "MyIngress.ipv4_lpm") -> None:
    """The pod-topo s1's ipv4_lpm entries: each host's /32 to ipv4_forward(MAC, port)."""
    for host, next_hop, port in routes:
        add(rig, table, [{"kind": "lpm", "v": ip_arg(host), "plen": 32}],
            "MyIngress.ipv4_forward", mac_arg(next_hop), hex(port))


def exchange(rig: Rig, sends: list[tuple[int, bytes]]) -> dict[int, list[bytes]]:
    rig.drain()
    for port, frame in sends:
        rig.send(port, frame)
    return rig.capture()


def held_burst(rig: Rig, port: int, frames: list[bytes]) -> dict[int, list[bytes]]:
    """Sends `frames` while holding the switch, so its data plane takes them in one round."""
    rig.drain()
    rig.client.call("hold")
    try:
        for frame in frames:
            rig.send(port, frame)
        time.sleep(HOLD_SETTLE_S)
    finally:
        rig.client.call("release")
    return rig.capture()


def register(rig: Rig, name: str, index: int | None = None) -> list[int]:
    fields = {} if index is None else {"index": index}
    cells = rig.client.call("register_read", register=name, **fields)["cells"]
    return [int(cell["value"], 16) for cell in cells]


def counter(rig: Rig, name: str, index: int) -> tuple[int, int]:
    cell = rig.client.call("counter_read", counter=name, index=index)["cells"][0]
    return cell["packets"], cell["bytes"]


def only(got: dict[int, list[bytes]], port: int, count: int = 1) -> list[bytes]:
    """The frames out of `port`, asserting that exactly `count` came out, and none elsewhere."""
    assert {p: len(f) for p, f in got.items() if f} == ({port: count} if count else {})
    return got[port]


# ---- the programs -------------------------------------------------------------------------

def tunnelled(dst_id: int, inner: bytes, proto: int = 0x0800) -> bytes:
    """An Ethernet frame of type 0x1212 whose myTunnel header (proto_id, dst_id) carries
    `inner` (an Ethernet frame's payload)."""
    return ether(SWITCH_MAC, HOST_MAC, 0x1212, struct.pack("!HH", proto, dst_id) + inner)


def test_basic_tunnel_forwards_by_dst_id_and_routes_plain_ipv4(rig, compiled):
    """basic_tunnel's s1-runtime.json: ipv4_lpm as basic's, myTunnel_exact dst_id n to port n.
    A tunnelled packet leaves by its dst_id's port untouched (the program changes nothing
    in it, whatever its IPv4 destination); plain IPv4 is routed; an unknown dst_id dropped."""
    rig.load(compiled["basic_tunnel"])
    route(rig)
    for dst_id in (1, 2, 3):
        add(rig, "MyIngress.myTunnel_exact", [{"kind": "exact", "v": hex(dst_id)}],
            "MyIngress.myTunnel_forward", hex(dst_id))
    inner = ipv4("10.0.1.1", "10.0.3.3", UDP, bytes(26))
    to_2 = tunnelled(2, inner)
    plain = ip_frame("10.0.1.1", "10.0.3.3", ttl=7)
    got = exchange(rig, [(1, to_2), (1, plain), (1, tunnelled(9, inner))])
    assert {p: len(f) for p, f in got.items() if f} == {2: 1, 3: 1}
    assert got[2] == [to_2]
    assert got[3] == [routed(plain, "08:00:00:00:03:00")]
    assert rig.client.call("stats")["pipeline"]["drops"] == 1


def test_advanced_tunnel_adds_and_removes_the_tunnel_and_counts(rig, compiled):
    """advanced_tunnel's entries as the p4runtime exercise's mycontroller.py writes them for
    tunnel 100 (h1 to h2), the ingress and the egress switch's in one: 10.0.2.2/32 to
    myTunnel_ingress(100), dst_id 100 to myTunnel_forward(2); dst_id 200 (the tunnel back)
    to myTunnel_egress(h1's MAC, 1). Its counters count (by dst_id) packets and the bytes
    the packet had when it came in (v1model's packet_length). myTunnel_egress indexes its
    counter by dst_id after setInvalid(): BMv2 keeps an invalidated header's fields, and so
    does the switch, so the tunnel back is counted under 200 as on BMv2."""
    rig.load(compiled["advanced_tunnel"])
    add(rig, "MyIngress.ipv4_lpm", [{"kind": "lpm", "v": ip_arg("10.0.2.2"), "plen": 32}],
        "MyIngress.myTunnel_ingress", hex(100))
    add(rig, "MyIngress.myTunnel_exact", [{"kind": "exact", "v": hex(100)}],
        "MyIngress.myTunnel_forward", hex(2))
    add(rig, "MyIngress.myTunnel_exact", [{"kind": "exact", "v": hex(200)}],
        "MyIngress.myTunnel_egress", mac_arg(HOST_MAC), hex(1))
    plain = ip_frame("10.0.1.1", "10.0.2.2", size=80)
    back = ether(SWITCH_MAC, "08:00:00:00:02:22", 0x1212,
                 struct.pack("!HH", 0x0800, 200) + ipv4("10.0.2.2", "10.0.1.1", UDP, bytes(30)))
    got = exchange(rig, [(1, plain), (2, back)])
    assert {p: len(f) for p, f in got.items() if f} == {1: 1, 2: 1}
    # into the tunnel: the header goes between Ethernet (now of type 0x1212) and IPv4
    assert got[2] == [plain[:12] + b"\x12\x12" + struct.pack("!HH", 0x0800, 100) + plain[14:]]
    # out of it: the header removed, the EtherType restored, h1's MAC the destination
    assert got[1] == [mac(HOST_MAC) + back[6:12] + b"\x08\x00" + back[18:]]
    assert counter(rig, "MyIngress.ingressTunnelCounter", 100) == (1, len(plain))
    assert counter(rig, "MyIngress.egressTunnelCounter", 200) == (1, len(back))


def ecn_of(frame: bytes) -> int:
    return frame[15] & 3


def test_ecn_marks_ect_packets_once_the_queue_is_ten_deep(rig, compiled):
    """ecn's s1-runtime.json routes as basic's; ECN_THRESHOLD is 10. Frames sent one by one
    meet an empty queue (enq_qdepth 0): none is marked. Sixteen sent in one round into the
    same port find 0..15 frames ahead of them: from the eleventh on, the ECN-capable ones
    (ECT(0) 2, ECT(1) 1) are marked 3 (congestion experienced); Not-ECT (0) and those
    marked already stay as they are."""
    rig.load(compiled["ecn"])
    route(rig)
    codes = [2, 1, 0, 3] * 4
    frames = [ip_frame("10.0.1.1", "10.0.2.2", tos=(8 << 2) | ecn) for ecn in codes]
    one_by_one = []
    for frame in frames[:4]:
        one_by_one += exchange(rig, [(1, frame)])[2]
    assert one_by_one == [routed(f, "08:00:00:00:02:22") for f in frames[:4]]
    out = only(held_burst(rig, 1, frames), 2, len(frames))
    marked = [3 if k >= 10 and ecn in (1, 2) else ecn for k, ecn in enumerate(codes)]
    assert [ecn_of(f) for f in out] == marked
    for frame, sent in zip(out, frames, strict=True):
        assert frame[15] >> 2 == 8   # the DSCP stays
        assert ipv4_checksum(frame[14:34]) == 0
        assert frame[16:22] == sent[16:22] and frame[22] == sent[22] - 1
        assert frame[23:24] + frame[26:] == sent[23:24] + sent[26:]


FIREWALL_SIDES = {(1, 3): 0, (1, 4): 0, (2, 3): 0, (2, 4): 0,
                  (3, 1): 1, (3, 2): 1, (4, 1): 1, (4, 2): 1}


def bloom_positions(src: str, dst: str, sport: int, dport: int) -> tuple[int, int]:
    """Where firewall's compute_hashes puts a connection (inside address and port first):
    crc16 and crc32 of (addr1, addr2, port1, port2, protocol), modulo the 4096 cells."""
    key = ip_bytes(src) + ip_bytes(dst) + struct.pack("!HHB", sport, dport, TCP)
    return crc16(key) % 4096, zlib.crc32(key) % 4096


def test_firewall_lets_in_only_replies_to_connections_opened_from_inside(rig, compiled):
    """firewall's pod-topo s1-runtime.json: the four hosts' routes, and check_ports marking
    ports 1, 2 inside and 3, 4 outside (direction 0 going out, 1 coming in). An outgoing
    SYN sets one bit in each bloom filter, at the crc16/crc32 positions of its connection;
    the reply comes in, and so does later traffic of that connection; a packet from outside
    of any other connection is dropped, as is a reply to an outgoing packet that was no
    SYN; traffic between two inside hosts is not checked."""
    rig.load(compiled["firewall"])
    route(rig)
    for (ingress, egress), direction in FIREWALL_SIDES.items():
        add(rig, "MyIngress.check_ports", [{"kind": "exact", "v": hex(ingress)},
                                           {"kind": "exact", "v": hex(egress)}],
            "MyIngress.set_direction", hex(direction))
    outside_mac = "08:00:00:00:03:00"
    unsolicited = tcp_frame("10.0.3.3", "10.0.1.1", 80, 5000, SYN, outside_mac)
    assert only(exchange(rig, [(3, unsolicited)]), 1, 0) == []
    syn = tcp_frame("10.0.1.1", "10.0.3.3", 5000, 80, SYN)
    assert only(exchange(rig, [(1, syn)]), 3) == [routed(syn, outside_mac)]
    pos_one, pos_two = bloom_positions("10.0.1.1", "10.0.3.3", 5000, 80)
    bits_one = register(rig, "MyIngress.bloom_filter_1")
    bits_two = register(rig, "MyIngress.bloom_filter_2")
    assert [i for i, bit in enumerate(bits_one) if bit] == [pos_one]
    assert [i for i, bit in enumerate(bits_two) if bit] == [pos_two]
    reply = tcp_frame("10.0.3.3", "10.0.1.1", 80, 5000, SYN | ACK, outside_mac)
    later = tcp_frame("10.0.3.3", "10.0.1.1", 80, 5000, ACK, outside_mac)
    other_port = tcp_frame("10.0.3.3", "10.0.1.1", 80, 5001, SYN | ACK, outside_mac)
    assert only(exchange(rig, [(3, reply), (3, later), (3, other_port)]), 1, 2) == \
        [routed(reply, HOST_MAC), routed(later, HOST_MAC)]
    no_syn = tcp_frame("10.0.1.1", "10.0.4.4", 5002, 443, ACK)
    assert only(exchange(rig, [(1, no_syn)]), 4) == [routed(no_syn, "08:00:00:00:04:00")]
    answer = tcp_frame("10.0.4.4", "10.0.1.1", 443, 5002, ACK, "08:00:00:00:04:00")
    inside = tcp_frame("10.0.2.2", "10.0.1.1", 22, 6000, ACK, "08:00:00:00:02:22")
    assert only(exchange(rig, [(4, answer), (2, inside)]), 1) == [routed(inside, HOST_MAC)]


def probe(hop_cnt: int, data: bytes, fwd_ports: list[int]) -> bytes:
    """A link_monitor probe (EtherType 0x812): hop count, the hops' records, then the
    egress port of every hop."""
    return ether("ff:ff:ff:ff:ff:ff", HOST_MAC, 0x812,
                 bytes([hop_cnt]) + data + bytes(fwd_ports))


def probe_record(record: bytes) -> dict[str, int]:
    first, port, byte_cnt = struct.unpack("!BBI", record[:6])
    return {"bos": first >> 7, "swid": first & 0x7F, "port": port, "byte_cnt": byte_cnt,
            "last_time": int.from_bytes(record[6:12], "big"),
            "cur_time": int.from_bytes(record[12:18], "big")}


def test_link_monitor_probes_report_the_bytes_sent_since_the_last_probe(rig, compiled):
    """link_monitor's s1-runtime.json: basic's routes and swid's default action set_swid(1).
    Egress counts every packet's length (v1model packet_length: the bytes it came in with)
    per port; a probe leaving by that port reports the count including itself, resets it,
    and reports the previous probe's egress time and its own (microseconds since the switch
    started). The probe's first hop record goes in front, bos set (its first hop)."""
    rig.load(compiled["link_monitor"])
    route(rig)
    rig.client.call("table_set_default", table="MyEgress.swid",
                    action={"action": "MyEgress.set_swid", "args": ["0x1"]})
    traffic = [ip_frame("10.0.1.1", "10.0.2.2", size=size) for size in (100, 200, 60)]
    first = probe(0, b"", [2, 1])
    got = exchange(rig, [(1, frame) for frame in traffic] + [(1, first)])
    out = only(got, 2, 4)
    assert out[:3] == [routed(f, "08:00:00:00:02:22") for f in traffic]
    # hop count 1, the new record, then the forwarding list (the rest of what came in)
    assert out[3][:15] == first[:14] + b"\x01" and out[3][33:] == first[15:]
    report = probe_record(out[3][15:33])
    assert report == {"bos": 1, "swid": 1, "port": 2, "byte_cnt": 360 + len(first),
                      "last_time": 0, "cur_time": report["cur_time"]}
    assert report["cur_time"] > 0
    assert register(rig, "MyEgress.byte_cnt_reg", 2) == [0]
    second = probe(0, b"", [2])
    got = exchange(rig, [(1, traffic[0]), (1, second)])
    again = probe_record(only(got, 2, 2)[1][15:33])
    assert again["byte_cnt"] == 100 + len(second)
    assert again["last_time"] == report["cur_time"] <= again["cur_time"]
    assert register(rig, "MyEgress.last_time_reg", 2) == [again["cur_time"]]
    # a probe at its second hop: the parser reads the first hop's record up to its bos
    # and both forwarding ports (hop_cnt + 1), leaving by the last one read
    earlier = struct.pack("!BBI", 0x80 | 5, 3, 999) + (7).to_bytes(6, "big") * 2
    transit = probe(1, earlier, [3, 2])
    out = only(exchange(rig, [(3, transit)]), 2)[0]
    assert out[14] == 2 and out[33:51] == earlier and out[51:] == transit[33:]
    assert probe_record(out[15:33])["bos"] == 0 and probe_record(out[15:33])["port"] == 2


def test_load_balance_spreads_flows_over_both_next_hops_by_their_crc16(rig, compiled):
    """load_balance's s1-runtime.json (as in p4lang/tutorials' copies): ecmp_group's default
    action drop, 10.0.0.1/32 to set_ecmp_select(0, 2); ecmp_select 0 to
    set_nhop(08:00:00:00:01:02, 10.0.2.2, 2) and 1 to set_nhop(08:00:00:00:01:03, 10.0.3.3,
    3); egress rewrites the source MAC by port (00:00:00:01:02:00, ..03:00). Each flow's
    next hop is crc16(src, dst, protocol, sport, dport) mod 2 (v1model hash: base + hash
    mod count), the same for every packet of it. The default drop does not stop a packet
    to another address (see the stray below)."""
    rig.load(compiled["load_balance"])
    rig.client.call("table_set_default", table="MyIngress.ecmp_group",
                    action={"action": "MyIngress.drop", "args": []})
    add(rig, "MyIngress.ecmp_group", [{"kind": "lpm", "v": ip_arg("10.0.0.1"), "plen": 32}],
        "MyIngress.set_ecmp_select", "0x0", "0x2")
    hops = {0: ("08:00:00:00:01:02", "10.0.2.2", 2), 1: ("08:00:00:00:01:03", "10.0.3.3", 3)}
    for select, (dmac, nhop_ip, port) in hops.items():
        add(rig, "MyIngress.ecmp_nhop", [{"kind": "exact", "v": hex(select)}],
            "MyIngress.set_nhop", mac_arg(dmac), ip_arg(nhop_ip), hex(port))
        add(rig, "MyEgress.send_frame", [{"kind": "exact", "v": hex(port)}],
            "MyEgress.rewrite_mac", mac_arg(f"00:00:00:01:0{port}:00"))
    sports = range(40000, 40016)
    flows = [tcp_frame("10.0.1.1", "10.0.0.1", sport, 1234, ACK) for sport in sports]
    stray = tcp_frame("10.0.1.1", "10.0.9.9", 40000, 1234, ACK)
    got = exchange(rig, [(1, frame) for frame in flows + [stray] + flows])

    def routed(sent: bytes, select: int) -> tuple[int, bytes]:
        dmac, nhop_ip, port = hops[select]
        header = bytearray(sent[14:34])
        header[8] -= 1
        header[16:20] = ip_bytes(nhop_ip)
        header[10:12] = b"\0\0"
        header[10:12] = struct.pack("!H", ipv4_checksum(bytes(header)))
        return port, (mac(dmac) + mac(f"00:00:00:01:0{port}:00") + sent[12:14]
                      + bytes(header) + sent[34:])

    expected: dict[int, list[bytes]] = {1: [], 2: [], 3: [], 4: []}
    for sport, sent in zip(sports, flows, strict=True):
        key = ip_bytes("10.0.1.1") + ip_bytes("10.0.0.1") + struct.pack("!BHH", TCP, sport,
                                                                        1234)
        port, out = routed(sent, crc16(key) % 2)
        expected[port].append(out)
    assert expected[2] and expected[3]   # these flows do take both next hops
    # the stray misses ecmp_group: drop marks it, but ecmp_nhop still applies (ecmp_select
    # 0) and set_nhop's egress_spec overrides the mark, as in v1model: it leaves by hop 0
    stray_port, stray_out = routed(stray, 0)
    expected_got = {port: frames + frames for port, frames in expected.items()}
    expected_got[stray_port] = (expected[stray_port] + [stray_out] + expected[stray_port])
    assert got == expected_got


def mri_frame(traces: list[tuple[int, int]], size: int = 80) -> bytes:
    """A UDP packet with the MRI IPv4 option (copy 0, class 2, number 31): its length,
    the count, then (swid, qdepth) of each switch so far."""
    body = struct.pack("!H", len(traces)) + b"".join(struct.pack("!II", *t) for t in traces)
    option = struct.pack("!BB", (2 << 5) | 31, 2 + len(body)) + body
    return ether(SWITCH_MAC, HOST_MAC, 0x0800,
                 ipv4("10.0.1.1", "10.0.2.2", UDP, bytes(size - 34 - len(option)),
                      options=option))


def mri_traces(frame: bytes) -> list[tuple[int, int]]:
    ihl = frame[14] & 0xF
    option = frame[34:14 + ihl * 4]
    assert option[0] == (2 << 5) | 31 and option[1] == len(option)
    count = struct.unpack("!H", option[2:4])[0]
    assert len(option) == 4 + 8 * count
    return [struct.unpack("!II", option[4 + 8 * i:12 + 8 * i]) for i in range(count)]


def test_mri_appends_the_switch_id_and_the_queue_depth(rig, compiled):
    """mri's s1-runtime.json: basic's routes and swtrace's default action add_swtrace(1).
    Each packet with the option leaves with (1, deq_qdepth) in front of the traces it
    carried, the option 8 bytes longer (IHL + 2, total length + 8, checksum over the
    program's fields: the base header). A packet alone finds its queue empty: 0; a burst
    of twelve in one round into one port finds 0..11 packets ahead of each."""
    rig.load(compiled["mri"])
    route(rig)
    rig.client.call("table_set_default", table="MyEgress.swtrace",
                    action={"action": "MyEgress.add_swtrace", "args": ["0x1"]})
    empty, carried = mri_frame([]), mri_frame([(2, 5), (3, 7)], size=100)
    out = only(exchange(rig, [(1, empty)]), 2) + only(exchange(rig, [(1, carried)]), 2)
    for frame, sent, traces in ((out[0], empty, [(1, 0)]),
                                (out[1], carried, [(1, 0), (2, 5), (3, 7)])):
        assert mri_traces(frame) == traces
        assert frame[14] == sent[14] + 2 and len(frame) == len(sent) + 8
        assert struct.unpack("!H", frame[16:18])[0] == len(frame) - 14
        assert frame[22] == sent[22] - 1 and ipv4_checksum(frame[14:34]) == 0
        assert frame[:6] == mac("08:00:00:00:02:22") and frame[6:12] == mac(SWITCH_MAC)
        assert frame[-(len(sent) - 14 - (sent[14] & 0xF) * 4):] == \
            sent[14 + (sent[14] & 0xF) * 4:]
    burst = only(held_burst(rig, 1, [empty] * 12), 2, 12)
    assert [mri_traces(frame) for frame in burst] == [[(1, depth)] for depth in range(12)]


def test_multicast_replicates_unknown_destinations_to_the_other_ports(rig, compiled):
    """multicast's s1-runtime.json: mac_lookup of each host's MAC to mac_forward(its port),
    multicast group 1 of ports 1..4; the table's default action multicast. A frame to an
    unknown MAC goes out, unchanged, on every port of the group but the one it came in by
    (egress drops that copy); a known MAC is forwarded to its port alone."""
    rig.load(compiled["multicast"])
    for port in range(1, 5):
        host_mac = f"08:00:00:00:0{port}:{port}{port}"
        add(rig, "MyIngress.mac_lookup", [{"kind": "exact", "v": mac_arg(host_mac)}],
            "MyIngress.mac_forward", hex(port))
    rig.client.call("mcast_group_set", group=1,
                    replicas=[{"port": port, "rid": 1} for port in range(1, 5)])
    flooded = ether("ff:ff:ff:ff:ff:ff", HOST_MAC, 0x0800, ipv4("10.0.1.1", "10.0.1.255",
                                                                UDP, bytes(30)))
    assert exchange(rig, [(1, flooded)]) == {1: [], 2: [flooded], 3: [flooded], 4: [flooded]}
    assert exchange(rig, [(3, flooded)]) == {1: [flooded], 2: [flooded], 3: [], 4: [flooded]}
    known = ether("08:00:00:00:03:33", HOST_MAC, 0x0800, ipv4("10.0.1.1", "10.0.3.3", UDP,
                                                              bytes(30)))
    assert only(exchange(rig, [(1, known)]), 3) == [known]


def test_qos_marks_udp_expedited_and_tcp_voice_admit(rig, compiled):
    """qos's s1-runtime.json routes as basic's. UDP leaves with DSCP 46 (expedited
    forwarding), TCP with 44 (voice admit), both keeping their ECN bits; other protocols
    (ICMP) keep the DSCP they came with. The checksum covers the new marks."""
    rig.load(compiled["qos"])
    route(rig)
    udp = ip_frame("10.0.1.1", "10.0.2.2", UDP, tos=(10 << 2) | 1)
    tcp_seg = tcp_frame("10.0.1.1", "10.0.2.2", 5000, 80, SYN)
    icmp = ip_frame("10.0.1.1", "10.0.2.2", ICMP, tos=(18 << 2) | 2)
    out = only(exchange(rig, [(1, udp), (1, tcp_seg), (1, icmp)]), 2, 3)
    for frame, sent, tos in ((out[0], udp, (46 << 2) | 1), (out[1], tcp_seg, 44 << 2),
                             (out[2], icmp, (18 << 2) | 2)):
        marked = bytearray(sent)
        marked[15] = tos
        assert frame == routed(bytes(marked), "08:00:00:00:02:22")
