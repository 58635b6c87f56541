"""Range-keyed const entries on our switch, overlapping ranges resolved in program order:
our rewrite of p4c's testdata/p4_16_samples/table-entries-range-bmv2 with the packets and
ports p4c's packet test of it expects.

Two adaptations to a veth rig, neither touching what the program sees: p4c's 6-byte packets
are padded to 60 bytes (a veth takes no frame shorter than an Ethernet header) and so are the
expected ones, and they enter on port 1, not 0 (the program never reads ingress_port).
"""

from pathlib import Path

import pytest
from switch_rig import P4C_REWRITES, Rig, compile_p4, ir_folder

SAMPLE = P4C_REWRITES / "table_entries_range.p4"
# (h.r, the port p4c expects it on)
RANGE_CASES = [(0x01, 21), (0x07, 21), (0x0a, 22), (0x0f, 24), (0x10, 23), (0xf0, 23)]


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "p4c_stf")


@pytest.mark.net
def test_table_entries_range_packets(ir_dir: Path) -> None:
    with Rig(n_ports=24) as rig:
        rig.load(compile_p4(SAMPLE, ir_dir))
        for r, port in RANGE_CASES:
            rig.drain()
            frame = bytes([0x15, 0, 0, 0, r, 0xb0]) + bytes(54)
            rig.send(1, frame)
            got = {p: frames for p, frames in rig.capture().items() if frames}
            assert got == {port: [frame]}, f"h.r={r:#x}"
