"""Three small p4c testdata programs on our switch, with the packets p4c's packet tests of
them send and expect (our rewrites in tests/p4/p4c_rewrites/):

- select_ranges.p4 (issue-2123-2-bmv2): a parser select with ranges and single values,
  overlapping, the first listed case winning;
- issue655.p4 (issue655-bmv2): a csum16 verified on the way in, recomputed on the way out;
- saturated.p4 (saturated-bmv2): |+| and |-| on bit<8> and int<16>, in and out on port 0.

Sent frames are padded to 60 bytes with zeros (a veth's minimum); the programs leave them as
payload, so the expected frames carry the same zeros.
"""

from pathlib import Path

import pytest
from switch_rig import P4C_REWRITES, Rig, compile_p4, ir_folder, padded

# etherType -> the first byte p4c expects: 0xe0 with bit 0..4 set for the h0..h4 parsed
SELECT_CASES = {
    0x07FF: 0xE0, 0x0800: 0xE1, 0x0806: 0xE1, 0x0807: 0xE0, 0x0808: 0xE2, 0x0809: 0xE0,
    0xFFF0: 0xE0, 0xFFF1: 0xE4, 0xFFFE: 0xE4, 0xFFFF: 0xE0, 0x08FE: 0xE0, 0x08FF: 0xF0,
    0x0900: 0xE8, 0x0901: 0xF0, 0x0902: 0xE0,
}

# (d, c) in -> (d, c) out: d + 1 with its csum16 (~d), whether c came in right or not
CHECKSUM_CASES = [((0x0000, 0x0000), (0x0001, 0xFFFE)), ((0x0001, 0xFFFE), (0x0002, 0xFFFD))]


# saturated-bmv2.stf's frames (op, u8 a, b, result, s16 a, b, result): sent -> expected
SATURATED_CASES = [(bytes.fromhex(sent), bytes.fromhex(want)) for sent, want in [
    ("01010100" "000000000000", "01010102" "000000000000"),   # 1 + 1
    ("02020100" "000000000000", "02020101" "000000000000"),   # 2 - 1
    ("01fe0200" "000000000000", "01fe02ff" "000000000000"),   # 254 + 2: 255
    ("02080aaa" "000000000000", "02080a00" "000000000000"),   # 8 - 10: 0
    ("03000000" "000a000a0000", "03000000" "000a000a0014"),   # 10 + 10
    ("03000000" "7ffe000a0000", "03000000" "7ffe000a7fff"),   # 32766 + 10: 32767
    ("04000000" "000a00140000", "04000000" "000a0014fff6"),   # 10 - 20: -10
    ("04000000" "8002000a0000", "04000000" "8002000a8000"),   # -32766 - 10: -32768
    ("03000000" "0001fff60000", "03000000" "0001fff6fff7"),   # 1 + -10: -9
    ("04000000" "0001fff60000", "04000000" "0001fff6000b"),   # 1 - -10: 11
]]


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "p4c_small")


@pytest.mark.net
def test_select_ranges_packets(ir_dir: Path) -> None:
    got, expected = {}, {}
    with Rig(n_ports=3) as rig:
        rig.load(compile_p4(P4C_REWRITES / "select_ranges.p4", ir_dir))
        for ether_type, first in SELECT_CASES.items():
            type_and_byte = ether_type.to_bytes(2, "big") + b"\x00"
            rig.drain()
            rig.send(1, padded(b"\xff" * 12 + type_and_byte))
            got[ether_type] = {p: f for p, f in rig.capture().items() if f}
            expected[ether_type] = {3: [padded(bytes([first]) + b"\xff" * 11 + type_and_byte)]}
    assert got == expected


@pytest.mark.net
def test_issue655_checksum_packets(ir_dir: Path) -> None:
    with Rig(n_ports=1) as rig:
        rig.load(compile_p4(P4C_REWRITES / "issue655.p4", ir_dir))
        for (d, c), (d_out, c_out) in CHECKSUM_CASES:
            rig.drain()
            rig.send(1, padded(d.to_bytes(2, "big") + c.to_bytes(2, "big")))
            assert rig.capture().get(1) == [
                padded(d_out.to_bytes(2, "big") + c_out.to_bytes(2, "big"))], f"d={d:#x}"


@pytest.mark.net
def test_saturated_arithmetic_packets(ir_dir: Path) -> None:
    got = []
    with Rig(n_ports=1, first_port=0) as rig:
        rig.load(compile_p4(P4C_REWRITES / "saturated.p4", ir_dir))
        for sent, _ in SATURATED_CASES:
            rig.drain()
            rig.send(0, padded(sent))
            got.append(rig.capture().get(0))
    assert got == [[padded(want)] for _, want in SATURATED_CASES]
