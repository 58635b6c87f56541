"""Three of the p4lang/tutorials exercises (tests/p4/field/) on the real switch, doing what
their exercise says: basic forwards by longest prefix once entries are installed, calc answers
arithmetic on the port it was asked on, source_routing follows the hops a frame carries.
The other nine are in tests/test_field_programs_more.py."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, exchange, mac, udp_frame

pytestmark = pytest.mark.net

FIELD = Path(__file__).resolve().parent / "p4" / "field"
HOST_MAC = "02:00:00:00:01:01"
SWITCH_MAC = "02:00:00:00:00:aa"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, Path]:
    out = rig_mod.ir_folder(tmp_path_factory, "field_ir")
    return {name: rig_mod.compile_p4(FIELD / f"{name}.p4", out)
            for name in ("basic", "calc", "source_routing")}


def test_basic_forwards_by_longest_prefix(compiled):
    with Rig(n_ports=3) as rig:
        rig.load(compiled["basic"])
        for prefix, plen, dst_mac, port in (("0x0a000200", 24, "0x020000000002", "0x2"),
                                            ("0x0a000280", 25, "0x020000000003", "0x3")):
            rig.client.call("table_add", table="MyIngress.ipv4_lpm",
                            match=[{"kind": "lpm", "v": prefix, "plen": plen}],
                            action={"action": "MyIngress.ipv4_forward",
                                    "args": [dst_mac, port]})
        to_24 = udp_frame(SWITCH_MAC, HOST_MAC, "10.0.1.1", "10.0.2.5", size=100, ttl=64)
        to_25 = udp_frame(SWITCH_MAC, HOST_MAC, "10.0.1.1", "10.0.2.200", ttl=9)
        unrouted = udp_frame(SWITCH_MAC, HOST_MAC, "10.0.1.1", "10.0.9.9")
        got = exchange(rig, 1, [to_24, to_25, unrouted])
        assert got[1] == [] and len(got[2]) == 1 and len(got[3]) == 1
        for out, sent, dst, ttl in ((got[2][0], to_24, "02:00:00:00:00:02", 63),
                                    (got[3][0], to_25, "02:00:00:00:00:03", 8)):
            assert out[:6] == mac(dst) and out[6:12] == mac(SWITCH_MAC)
            assert out[22] == ttl
            assert rig_mod.ipv4_checksum(out[14:34]) == 0
            assert out[34:] == sent[34:]
        assert rig.client.call("stats")["pipeline"]["drops"] == 1   # default_action drop


def calc_frame(op: str, a: int, b: int, magic: bytes = b"P4\x01") -> bytes:
    frame = mac(SWITCH_MAC) + mac(HOST_MAC) + b"\x12\x34"
    frame += magic + op.encode() + struct.pack("!III", a, b, 0)
    return frame + bytes(60 - len(frame))


def test_calc_answers_arithmetic_on_the_asking_port(compiled):
    questions = [("+", 7, 5, 12), ("-", 5, 7, (5 - 7) % 2**32), ("&", 0xF0F0, 0xFF00, 0xF000),
                 ("|", 0xF0, 0x0F, 0xFF), ("^", 0xFF, 0x0F, 0xF0)]
    with Rig(n_ports=2) as rig:
        rig.load(compiled["calc"])
        sent = [calc_frame(op, a, b) for op, a, b, _ in questions]
        dropped = [calc_frame("*", 2, 3), calc_frame("+", 2, 3, magic=b"Q4\x01")]
        got = exchange(rig, 1, sent + dropped)
        assert got[2] == []
        assert len(got[1]) == len(questions)
        answers = {}
        for out in got[1]:
            assert out[:6] == mac(HOST_MAC) and out[6:12] == mac(SWITCH_MAC)   # MACs swapped
            answers[(chr(out[17]), *struct.unpack("!II", out[18:26]))] = \
                struct.unpack("!I", out[26:30])[0]
        assert answers == {(op, a, b): res for op, a, b, res in questions}


def source_routed(hops: list[int], ttl: int = 64) -> bytes:
    """A frame of type 0x1234 carrying `hops` (egress ports, bos on the last) before IPv4."""
    stack = b"".join(struct.pack("!H", (int(i == len(hops) - 1) << 15) | port)
                     for i, port in enumerate(hops))
    ip = udp_frame(SWITCH_MAC, HOST_MAC, "10.0.1.1", "10.0.2.2", ttl=ttl)[14:]
    return mac(SWITCH_MAC) + mac(HOST_MAC) + b"\x12\x34" + stack + ip


def test_source_routing_follows_the_hops(compiled):
    with Rig(n_ports=3) as rig:
        rig.load(compiled["source_routing"])
        three_hops = source_routed([2, 3, 1])
        last_hop = source_routed([3], ttl=20)
        got = exchange(rig, 1, [three_hops, last_hop, udp_frame(SWITCH_MAC, HOST_MAC,
                                                                  "10.0.1.1", "10.0.2.2")])
        assert got[1] == [] and len(got[2]) == 1 and len(got[3]) == 1
        # first hop popped; the rest of the route and the IPv4 packet follow, the TTL one
        # lower (the program decrements it at every hop; it leaves the checksum alone)
        forwarded, rest = got[2][0], bytearray(three_hops[16:])
        rest[4 + 8] -= 1
        assert forwarded[12:14] == b"\x12\x34" and forwarded[14:] == rest
        # the bottom hop restores IPv4 and the TTL drops by one
        out = got[3][0]
        assert out[12:14] == b"\x08\x00"
        assert out[14 + 8] == 19 and out[14 + 9:] == last_hop[16 + 9:]
