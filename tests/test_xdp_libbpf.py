"""The libbpf binding on real kernel objects (no network): loading, map names with the run
prefix, map reads and writes, per-CPU values, and the errors a caller sees."""

from __future__ import annotations

import struct

import pytest

from dplab.planes import PlaneError, create
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.xdp import programs
from dplab.xdp.libbpf import BpfObject, LibbpfError, possible_cpus
from dplab.xdp.programs import ProgramMissing, XdpProgram, object_path


@pytest.fixture
def l2_object():
    obj = BpfObject(object_path("l2_switch"), map_prefix="dl0000s12")
    yield obj
    obj.close()


def test_maps_carry_the_prefix_cut_to_the_kernels_15_characters(l2_object):
    assert l2_object.map("macs").name == "dl0000s12_macs"
    assert l2_object.map("counters").name == "dl0000s12_count"
    assert l2_object.program_fd("xdp_l2") > 0


def test_map_writes_reads_deletes_and_lists(l2_object):
    macs = l2_object.map("macs")
    mac = bytes.fromhex("020000000007")
    assert macs.lookup(mac) is None
    macs.update(mac, struct.pack("<I", 42))
    assert macs.lookup(mac) == struct.pack("<I", 42)
    assert list(macs.iter_keys()) == [mac]
    macs.delete(mac)
    assert list(macs.iter_keys()) == []


def test_per_cpu_values_come_one_per_possible_cpu(l2_object):
    values = l2_object.map("counters").lookup_per_cpu(struct.pack("<I", 0))
    assert len(values) == possible_cpus() and set(values) == {bytes(8)}


def test_errors_name_the_map_the_object_and_what_is_wrong(l2_object):
    with pytest.raises(LibbpfError, match="macs.*key of 4 bytes, the map's are 6"):
        l2_object.map("macs").lookup(b"1234")
    with pytest.raises(LibbpfError, match="no map 'routes'.*'macs'"):
        l2_object.map("routes")
    with pytest.raises(LibbpfError, match="no program 'xdp_l3'"):
        l2_object.program_fd("xdp_l3")
    l2_object.close()
    with pytest.raises(LibbpfError, match="closed"):
        l2_object.map("macs")


@pytest.mark.net
def test_a_missing_build_is_named_with_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.setattr(programs, "BUILD_DIR", tmp_path)
    with pytest.raises(ProgramMissing, match="l2_switch.o is not built: scripts/setup.sh"):
        XdpProgram("l2_switch", "xdp_l2")
    plane = create("xdp", {"mode": "l2"})
    with Network(catalog.build("single", hosts=2)) as net, \
            pytest.raises(PlaneError, match=r"pass\.o is not built"):
        plane.start(net)
    assert plane.host_program is None and plane.switch_programs == {}
