"""ternary2-bmv2 on our switch (our rewrite tests/p4/p4c_rewrites/ternary2.p4), with the
entries and packets of p4c's packet test of it. Its setbyte action is bound to another field
in each table; the control channel names it by P4 name, and each table runs its own binding.

Adaptations to a veth rig, none touching what the program sees: p4c's port p is our port
p + 1 (setb1's port argument included); frames are padded to 60 bytes with zeros, which the
program leaves as payload. p4c's priorities are kept (the higher one wins where they
overlap, as p4c's test expects); p4c's priority 0 is 1 here (ours start at 1).
"""

from pathlib import Path

import pytest
from switch_rig import P4C_REWRITES, Rig, compile_p4, from_hex, ir_folder, padded

SAMPLE = P4C_REWRITES / "ternary2.p4"


def ternary(value: int, mask: int) -> dict:
    return {"kind": "ternary", "v": hex(value), "m": hex(mask)}


# (table, value, mask, priority, action, args), in p4c's test's order, ports shifted
TEST1_ENTRIES = [
    ("test1", 0x0101, 0xFFFF, 1, "setb1", [2 + 1, 0x7F]),
    ("test1", 0x0202, 0xFFFF, 503, "setb1", [3 + 1, 0x07]),
]
CHAIN_ENTRIES = [
    ("ex1", 0x2500, 0xFF00, 100, "act1", [0x25]),
    ("tbl1", 0x02020000, 0xFFFF0000, 100, "setbyte", [0x26]),
    ("ex1", 0x2525, 0xFFFF, 110, "act2", [0x27]),
    ("tbl2", 0x02020000, 0xFFFF0000, 100, "setbyte", [0x28]),
]
# (entries added before, [(in port, frame, out port, expected frame)]): data f1 f2 h1 b1 b2,
# then extra h b1 b2 while b2's top bit is set, then payload
ROUNDS = [
    (TEST1_ENTRIES, [
        (1, "00000101 00000202 0303 55 66 7777 88 00", 3,
         "00000101 00000202 0303 7f 66 7777 88 00"),
        (3, "00000202 00000303 0404 55 66 7777 88 00", 4,
         "00000202 00000303 0404 07 66 7777 88 00"),
    ]),
    (CHAIN_ENTRIES, [
        # ex1 runs act1, so tbl1 runs: its setbyte writes data.b2
        (1, "01010101 02020202 0303 55 66 2500 ff 7f 01020304", 3,
         "01010101 02020202 0303 7f 26 2500 25 7f 01020304"),
        # ex1 runs act2, so tbl2 runs: its setbyte writes extra[1].b1
        (1, "01010101 02020202 0303 55 66 2525 ff ff 3333 ff 7f 01020304", 3,
         "01010101 02020202 0303 7f 66 2525 27 ff 3333 28 7f 01020304"),
    ]),
]


def frame(spaced_hex: str) -> bytes:
    return padded(from_hex(spaced_hex))


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "p4c_ternary2")


@pytest.mark.net
def test_ternary2_packets(ir_dir: Path) -> None:
    got, expected = [], []
    with Rig(n_ports=4) as rig:
        rig.load(compile_p4(SAMPLE, ir_dir))
        for entries, packets in ROUNDS:
            for table, value, mask, priority, action, args in entries:
                rig.client.call("table_add", table=f"ingress.{table}",
                                match=[ternary(value, mask)], priority=priority,
                                action={"action": f"ingress.{action}",
                                        "args": [hex(a) for a in args]})
            for port, sent, out_port, out in packets:
                rig.drain()
                rig.send(port, frame(sent))
                got.append({p: f for p, f in rig.capture().items() if f})
                expected.append({out_port: [frame(out)]})
    assert got == expected
