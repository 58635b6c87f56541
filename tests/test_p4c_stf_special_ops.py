"""Resubmit, recirculate, I2E and E2E clones and multicast on our switch: our rewrite of
p4c's testdata/p4_16_samples/v1model-special-ops-bmv2 (tests/p4/p4c_rewrites/special_ops.p4)
with the table entries, mirroring sessions, multicast group and packets of p4c's packet test
of it, each packet compared whole with the one p4c expects.

Entries, sessions and the group go through the switch's control channel. One adaptation to
our rig: our ports start at 1, so every port p of p4c's test (packets, expectations, `intf`
action data, mirroring and multicast ports) is p + 1 here.
"""

from pathlib import Path

import pytest
from switch_rig import P4C_REWRITES, Rig, compile_p4, ir_folder

SAMPLE = P4C_REWRITES / "special_ops.p4"
SHIFT = 1  # p4c's port p is our port p + SHIFT

# (table, [match items], action, [args]) in p4c's test's order; `intf` already shifted
ENTRIES = [
    ("ingress.ipv4_da_lpm", [("lpm", 0x0A010065)], "ingress.do_resubmit", [0x0A010001]),
    ("ingress.mac_da", [0xE50B], "ingress.set_bd_dmac_intf", [9, 0x0213570BE5FF, 2 + SHIFT]),
    ("egress.send_frame", [9], "egress.rewrite_mac", [0x001122334455]),
    ("ingress.ipv4_da_lpm", [("lpm", 0x0A0100C9)], "ingress.set_l2ptr", [0xCAFE]),
    ("ingress.mac_da", [0xCAFE], "ingress.set_bd_dmac_intf", [14, 0x021357FECAFF, 3 + SHIFT]),
    ("egress.send_frame", [14], "egress.do_recirculate", [0x0A010002]),
    ("ingress.mac_da", [0xEC1C], "ingress.set_bd_dmac_intf", [9, 0x0213571CECFF, 2 + SHIFT]),
    ("ingress.ipv4_da_lpm", [("lpm", 0x0A030037)], "ingress.do_clone_i2e", [0xD00D]),
    ("ingress.mac_da", [0xD00D], "ingress.set_bd_dmac_intf", [9, 0x0213570DD0FF, 1 + SHIFT]),
    ("ingress.ipv4_da_lpm", [("lpm", 0x0A2F0101)], "ingress.set_l2ptr", [0xBEEF]),
    ("ingress.mac_da", [0xBEEF], "ingress.set_bd_dmac_intf", [26, 0x021357EFBEFF, 0 + SHIFT]),
    ("egress.send_frame", [26], "egress.do_clone_e2e", [0x001122335544]),
    ("ingress.ipv4_da_lpm", [("lpm", 0xE1010203)], "ingress.set_mcast_grp", [1113]),
    ("egress.get_multicast_copy_out_bd", [1113, 400], "egress.set_out_bd", [10]),
    ("egress.send_frame", [10], "egress.rewrite_mac", [0x001122330A55]),
    ("egress.get_multicast_copy_out_bd", [1113, 401], "egress.set_out_bd", [11]),
    ("egress.send_frame", [11], "egress.rewrite_mac", [0x001122330B55]),
    ("egress.get_multicast_copy_out_bd", [1113, 402], "egress.set_out_bd", [12]),
    ("egress.send_frame", [12], "egress.rewrite_mac", [0x001122330C55]),
]
CLONE_SESSIONS = {5: 4 + SHIFT, 11: 5 + SHIFT}      # mirroring_add session port
MCAST_1113 = [(6 + SHIFT, 400), (7 + SHIFT, 401), (8 + SHIFT, 402)]  # (port, rid)

# p4c's test's packets (all enter on its port 0) and what it expects, port -> frames.
IN = "525400123502080027f87bea08004500001c000100004011"
UDP = "16a100500008"
CASES = {
    "resubmit": (IN + "645c0a00020f0a010065" + UDP + "d278", {
        2: ["0213570be5ff0011223344550800" "4500001c000100003f11e56c0afc81020a010065" + UDP
            + "d278"]}),
    "recirculate": (IN + "63f80a00020f0a0100c9" + UDP + "d214", {
        2: ["0213571cecff0011223344550800" "4500001c000100003e1111a40ac756630a010002" + UDP
            + "d214"]}),
    "i2e_clone": (IN + "64880a00020f0a030037" + UDP + "d2a4", {
        1: ["0213570dd0ff0011223344550800" "4500001c000100003f1165880a00020f0a030037" + UDP
            + "d2a4"],
        4: ["012e012e5a5a5a5a" + IN + "64880a00020f0a030037" + UDP + "d2a4"]}),
    "e2e_clone": (IN + "63920a00020f0a2f0101" + UDP + "d1ae", {
        0: ["021357efbeff0011223355440800" "4500001c000100003f1164920a00020f0a2f0101" + UDP
            + "d1ae"],
        5: ["0e2e0e2e5a5a5a5a" "021357efbeff0011223355440800"
            "4500001c000100003f1164920a00020f0a2f0101" + UDP + "d1ae"]}),
    "multicast": (IN + "8bbd0a00020fe1010203" + UDP + "f9d9", {
        p: [f"525400123502001122330{c}550800" "4500001c0001000040118bbd0a00020fe1010203"
            + UDP + "f9d9"] for p, c in ((6, "a"), (7, "b"), (8, "c"))}),
}


PAD = bytes(18)


def padded(hex_frame: str) -> bytes:
    """veth carries frames of at least 60 bytes; p4c's test's are 42, so the sent one gets 18
    zero bytes after its UDP header. The program never parses them: they stay payload, after
    the headers of every copy (a clone's 8-byte switch_to_cpu header included)."""
    return bytes.fromhex(hex_frame) + PAD


def match_item(key: object) -> dict:
    if isinstance(key, tuple):
        return {"kind": "lpm", "v": hex(key[1]), "plen": 32}
    return {"kind": "exact", "v": hex(key)}


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "p4c_special_ops")


@pytest.mark.net
@pytest.mark.parametrize("case", list(CASES))
def test_special_ops_packets(case: str, ir_dir: Path) -> None:
    with Rig(n_ports=9 + SHIFT) as rig:
        rig.load(compile_p4(SAMPLE, ir_dir))
        for table, keys, action, args in ENTRIES:
            rig.client.call("table_add", table=table, match=[match_item(k) for k in keys],
                            action={"action": action, "args": [hex(a) for a in args]})
        for session, port in CLONE_SESSIONS.items():
            rig.client.call("clone_session_set", session=session,
                            replicas=[{"port": port, "rid": 0}])
        rig.client.call("mcast_group_set", group=1113,
                        replicas=[{"port": p, "rid": r} for p, r in MCAST_1113])
        frame, expected = CASES[case]
        rig.drain()
        rig.send(0 + SHIFT, padded(frame))
        got = {p: [f.hex() for f in frames] for p, frames in rig.capture().items() if frames}
        assert got == {p + SHIFT: [padded(f).hex() for f in frames]
                       for p, frames in expected.items()}
