"""Fuzzing the P4 switch with malformed frames through real veth ports (tests/switch_rig.py).

Every prefix of valid IPv4/TCP/UDP/IPv6/ARP/VLAN frames, wrong IPv4 header lengths and
total lengths, random options, random bytes and super-packets with random virtio-net
headers go in, a valid control frame after every few of them; with the L3 program and with
the parser-heavy MRI program (IPv4 options, a header stack parsed in a loop). The switch
must stay up, forward every control frame, and its counters must add up.
"""

from __future__ import annotations

import errno
import random
import socket
import struct
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, in_netns, ipv4_checksum, mac, udp_frame

pytestmark = pytest.mark.net

SRC_MAC = "02:00:00:00:01:01"
DST_MAC = "02:00:00:00:00:aa"
CONTROL_EVERY = 25   # bad frames between two control frames
SOL_PACKET, PACKET_VNET_HDR = 263, 15
PROGRAMS = {
    "l3": (rig_mod.ROOT / "benchmarks" / "switch_l3.p4", "L3Ingress.ipv4_lpm",
           "L3Ingress.ipv4_forward", ["0x020000000002", "0x2"]),
    "mri": (rig_mod.ROOT / "tests" / "p4" / "field" / "mri.p4", "MyIngress.ipv4_lpm",
            "MyIngress.ipv4_forward", ["0x020000000002", "0x2"]),
}


def ipv4(proto: int, payload: bytes, ihl: int = 5, total: int | None = None,
         options: bytes = b"") -> bytes:
    """An IPv4 packet 10.0.1.1 -> 10.0.2.5 with a correct checksum over what is given."""
    length = 20 + len(options) + len(payload) if total is None else total
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, length & 0xFFFF, 1, 0, 64, proto, 0,
                         socket.inet_aton("10.0.1.1"), socket.inet_aton("10.0.2.5")) + options
    header = header[:10] + struct.pack("!H", ipv4_checksum(header + b"\0" * (len(header) % 2)))\
        + header[12:]
    return header + payload


def ether(ethertype: int, payload: bytes) -> bytes:
    return mac(DST_MAC) + mac(SRC_MAC) + struct.pack("!H", ethertype) + payload


def valid_frames() -> list[bytes]:
    tcp = struct.pack("!HHIIBBHHH", 1234, 80, 1, 0, 0x50, 0x02, 8192, 0, 0) + b"t" * 20
    udp = struct.pack("!HHHH", 1234, 5678, 28, 0) + b"u" * 20
    ipv6 = struct.pack("!IHBB16s16s", 0x60000000, len(udp), 17, 64, b"\xfd" * 16, b"\xfe" * 16)
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac(SRC_MAC),
                      socket.inet_aton("10.0.1.1"), bytes(6), socket.inet_aton("10.0.2.5"))
    return [ether(0x0800, ipv4(6, tcp)), ether(0x0800, ipv4(17, udp)),
            ether(0x86DD, ipv6 + udp), ether(0x0806, arp),
            ether(0x8100, struct.pack("!HH", 5, 0x0800) + ipv4(17, udp))]


def malformed_frames(rng: random.Random) -> list[bytes]:
    frames = [f[:n] for f in valid_frames() for n in range(1, len(f))]
    udp = struct.pack("!HHHH", 1234, 5678, 28, 0) + b"u" * 20
    for ihl in range(16):
        frames.append(ether(0x0800, ipv4(17, udp, ihl=ihl)))
    for total in (0, 1, 19, 20, 21, 47, 49, 1500, 65535):
        frames.append(ether(0x0800, ipv4(17, udp, total=total)))
    for _ in range(60):
        words = rng.randint(1, 10)
        options = bytes(rng.getrandbits(8) for _ in range(4 * words))
        frames.append(ether(0x0800, ipv4(rng.choice([6, 17]), udp, 5 + words, None, options)))
        cut = rng.randint(14, 14 + 20 + 4 * words)
        frames.append(frames[-1][:cut])
    for _ in range(200):
        frames.append(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))))
    return frames


def control_frame(number: int) -> bytes:
    """A valid UDP frame to 10.0.2.5, numbered in its last two bytes."""
    frame = udp_frame(DST_MAC, SRC_MAC, "10.0.1.1", "10.0.2.5", size=100)
    return frame[:-2] + struct.pack("!H", number)


def send_counted(rig: Rig, frame: bytes) -> bool:
    """Sends the frame; False if the kernel refused it (a frame shorter than the Ethernet
    header may not leave a packet socket), so that it never reached the switch."""
    try:
        rig.send(1, frame)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        return False
    return True


def send_super_packets(rig: Rig, rng: random.Random, count: int) -> int:
    """Frames with random virtio-net headers (GSO types, sizes, checksum positions); returns
    how many the kernel let through to the switch."""
    base = valid_frames()[0] + bytes(3000)
    sent = 0
    with in_netns(rig.host_ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
        s.bind((rig.host_if(1), 0))
        try:
            for _ in range(count):
                vnet = struct.pack("<BBHHHH", rng.choice([0, 1, 2, 3]),
                                   rng.choice([0, 1, 3, 4, 5, 0x80, 0x81, 0x84, 6]),
                                   rng.randint(0, 80), rng.choice([0, 1, 8, 500, 1400, 65535]),
                                   rng.randint(0, 120), rng.randint(0, 40))
                try:
                    s.send(vnet + base[:rng.randint(14, len(base))])
                    sent += 1
                except OSError as exc:   # headers the kernel refuses never reach the switch
                    if exc.errno not in (errno.EINVAL, errno.ENOMEM, errno.EMSGSIZE):
                        raise
        finally:
            s.close()
    return sent


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, Path]:
    out = rig_mod.ir_folder(tmp_path_factory, "fuzz_ir")
    return {name: rig_mod.compile_p4(spec[0], out) for name, spec in PROGRAMS.items()}


def totals(stats: dict) -> dict[str, int]:
    ports = stats["ports"]
    return {"rx": sum(p["rx_packets"] for p in ports),
            "tx": sum(p["tx_packets"] for p in ports),
            "port_drops": sum(p["drops"] for p in ports),
            "reasons": sum(sum(p["drop_reasons"].values()) for p in ports),
            "pipeline": stats["pipeline"]["packets"],
            "pipeline_drops": sum(v for k, v in stats["pipeline"].items() if k.endswith("drops")),
            "packet_in": stats["cpu"]["packet_in"]}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_malformed_frames_leave_forwarding_and_counters_intact(compiled, program: str) -> None:
    _, table, action, args = PROGRAMS[program]
    rng = random.Random(2026)
    bad = malformed_frames(rng)
    rng.shuffle(bad)
    with Rig(n_ports=3) as rig:
        rig.load(compiled[program])
        rig.client.call("table_add", table=table,
                        match=[{"kind": "lpm", "v": "0x0a000200", "plen": 24}],
                        action={"action": action, "args": args})
        into_switch = controls = 0
        for i, frame in enumerate(bad):
            into_switch += send_counted(rig, frame)
            if i % CONTROL_EVERY == 0:
                rig.send(1, control_frame(controls))
                controls += 1
                into_switch += 1
        into_switch += send_super_packets(rig, rng, 200)
        got = rig.capture(wait=1.0)
        stats = rig.client.call("stats")
        assert rig.switch_alive()
    numbers = {struct.unpack("!H", f[98:100])[0] for f in got[2]
               if len(f) == 100 and f[42:98] == bytes(56)}
    assert numbers == set(range(controls))
    t = totals(stats)
    # Every frame the kernel passed on was read; a super-packet counts as its segments.
    assert t["rx"] >= into_switch
    assert t["port_drops"] == t["reasons"]
    # What entered the pipeline left it: sent, dropped by the program, or dropped at a port.
    assert t["pipeline"] == t["tx"] + t["pipeline_drops"] + t["packet_in"] + t["port_drops"]
