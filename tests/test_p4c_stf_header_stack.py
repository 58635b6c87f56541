"""push_front, pop_front, setValid and setInvalid on a 5-deep header stack, on our switch:
our rewrite of p4c's testdata/p4_16_samples/header-stack-ops-bmv2
(tests/p4/p4c_rewrites/header_stack_ops.p4) with the packets p4c's packet test of it sends
and the ones it expects for a switch that follows the P4_16 spec (its "v3" lines).

Each packet is h1 (type 1, three operation bytes, the valid-bits byte, next type), then
h2 entries (type 2, f1, f2, next type) and an h3 (type 3, data). One adaptation to a veth
rig: sent frames are padded to 60 bytes with zeros, which the program leaves as payload:
the expected frame is p4c's with the same zeros after its headers.
"""

from pathlib import Path

import pytest
from switch_rig import P4C_REWRITES, Rig, compile_p4, from_hex, ir_folder, padded

SAMPLE = P4C_REWRITES / "header_stack_ops.p4"
FIVE_H2 = "02123402 02567802 029abc02 02def102 02234503 03fe"

# (what it tests, frame sent, frame expected back on the same port); spaces are for reading
CASES = [
    ("three no-ops", "010000000002 02dead03 03be", "010000000102 02dead03 03be"),
    ("push 1, nothing filled", "011100000002 02dead03 03be", "011100000202 02dead03 03be"),
    ("push 1, fill h2[0]", "011130000002 02dead03 03be",
     "011130000302 02a00a09 02dead03 03be"),
    ("fill h2[2], a hole at h2[1]", "013200000002 02dead03 03be",
     "013200000502 02dead03 02a22a09 03be"),
    ("fill h2[2], push 1", "013211000002 02dead03 03be",
     "013211000a02 02dead03 02a22a09 03be"),
    ("no h2 in, fill h2[0], pop 1", "013021000003 03be", "013021000003 03be"),
    ("five h2 through", "010000000002 " + FIVE_H2, "010000001f02 " + FIVE_H2),
    ("five h2, push 1, fill h2[0]", "011130000002 " + FIVE_H2,
     "011130001f02 02a00a09 02123402 02567802 029abc02 02def102 03fe"),
    ("five h2, push 4", "011400000002 " + FIVE_H2, "011400001002 02123402 03fe"),
    ("five h2, push 5", "011500000002 " + FIVE_H2, "011500000002 03fe"),
    ("five h2, pop 1", "012100000002 " + FIVE_H2,
     "012100000f02 02567802 029abc02 02def102 02234503 03fe"),
    ("five h2, pop 4", "012400000002 " + FIVE_H2, "012400000102 02234503 03fe"),
    ("five h2, pop 5", "012500000002 " + FIVE_H2, "012500000002 03fe"),
    ("three h2, fill h2[3], push 1", "013311000002 02123402 02567802 02234503 03fe",
     "013311001e02 02123402 02567802 02234503 02a33a09 03fe"),
    ("three h2, fill h2[3], pop 1", "013321000002 02123402 02567802 02234503 03fe",
     "013321000702 02567802 02234503 02a33a09 03fe"),
]


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "p4c_header_stack")


@pytest.mark.net
def test_header_stack_ops_packets(ir_dir: Path) -> None:
    got, expected = {}, {}
    with Rig(n_ports=1) as rig:
        rig.load(compile_p4(SAMPLE, ir_dir))
        for name, sent, wanted in CASES:
            rig.drain()
            frame = padded(from_hex(sent))
            rig.send(1, frame)
            got[name] = [f.hex() for f in rig.capture().get(1, [])]
            padding = frame[len(from_hex(sent)):]  # payload the program leaves as it is
            expected[name] = [(from_hex(wanted) + padding).hex()]
    assert got == expected
