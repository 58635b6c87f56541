"""The p4 plane with a user's own program and entries file (static: no controller): real
switches on the `single` topology carry ping and TCP along the written entries; bad
entries files are refused naming the file, the entry and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from net_checks import leftovers, ping_failures, tcp_received
from p4runtime_rig import compile_with_info

from dplab.p4runtime.entries import EntriesError, load
from dplab.planes import PlaneError, create
from dplab.substrate.network import Network
from dplab.topology import catalog

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "p4" / "port_fwd.p4"
ENTRIES = HERE / "p4" / "port_fwd_entries.yaml"
RT_FEATURES = HERE / "p4" / "rt_features.p4"


@pytest.fixture(scope="module")
def rt_info(tmp_path_factory):
    return compile_with_info(RT_FEATURES, tmp_path_factory.mktemp("p4"))[1]


def write(tmp_path: Path, text: str, name: str = "entries.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_readable_entries_become_table_entries(tmp_path, rt_info):
    path = write(tmp_path, """
- {table: fwd_lpm, match: {hdr.ipv4.dst_addr: 10.0.2.0/24}, action: forward, params: {port: 2}}
- table: acl
  match: {hdr.ipv4.src_addr: "10.1.0.0 &&& 255.255.0.0", hdr.ipv4.ttl: "60..70"}
  action: set_port
  params: {port: 0x3}
  priority: 10
  switches: [s2]
- {table: fwd_lpm, default: true, action: multicast, params: {group: 7}}
""")
    lpm, acl, default = load(path, rt_info)
    assert lpm.switches is None and acl.switches == ["s2"] and default.is_default
    match = lpm.entity.table_entry.match[0].lpm
    assert (match.value, match.prefix_len) == (bytes([10, 0, 2, 0]), 24)
    ternary, rng = acl.entity.table_entry.match
    assert (ternary.ternary.value, ternary.ternary.mask) == (bytes([10, 1, 0, 0]),
                                                             bytes([255, 255, 0, 0]))
    assert (rng.range.low, rng.range.high) == (bytes([60]), bytes([70]))
    assert acl.entity.table_entry.priority == 10
    assert default.entity.table_entry.action.action.params[0].value == bytes([7])


@pytest.mark.parametrize(("text", "problem"), [
    ("- {table: nope, action: drop}", "entry 0: table 'nope' is not in the program"),
    ("- {table: fwd_lpm, match: {hdr.ipv4.dst_addr: 10.0.0.0/8}, action: forward,"
     " params: {port: 512}}", "entry 0: param port: 512 does not fit in 9 bits"),
    ("- {table: fwd_lpm, match: {hdr.ipv4.dst_addr: 10.0.0.0/8}, action: drop}\n"
     "- {table: fwd_lpm, match: {dst: 10.0.0.0/8}, action: drop}",
     "entry 1: table RtIngress.fwd_lpm has no key 'dst'"),
    ("- {table: fwd_lpm, match: {hdr.ipv4.dst_addr: 10.0.0.1/8}, action: drop}",
     "entry 0: key hdr.ipv4.dst_addr: the value has bits set beyond /8"),
    ("- {table: fwd_lpm, match: {hdr.ipv4.dst_addr: 10.0.0.0/8}, action: set_port,"
     " params: {port: 1}}", "entry 0: action RtIngress.set_port is not an action of table"),
    ("- {table: fwd_lpm, match: {hdr.ipv4.dst_addr: 10.0.0.0/8}, action: forward}",
     "entry 0: action RtIngress.forward takes parameters ['port'], got []"),
    ("- {table: acl, match: {hdr.ipv4.ttl: 5}, action: police}",
     "entry 0: table RtIngress.acl has ternary/range/optional keys: the entry needs"),
    ("- {table: acl, match: {hdr.ipv4.src_addr: 10.0.0.300}, action: police, priority: 1}",
     "entry 0: key hdr.ipv4.src_addr: '10.0.0.300' is not an IPv4 address"),
    ("- {table: fwd_lpm, action: drop, colour: red}", "entry 0: unknown key 'colour'"),
    ("entries: {table: fwd_lpm}", "expected a list of entries"),
    ("- [unclosed", "cannot read entries"),
])
def test_bad_entries_name_file_entry_and_problem(tmp_path, rt_info, text, problem):
    path = write(tmp_path, text)
    with pytest.raises(EntriesError) as bad:
        load(path, rt_info)
    assert str(bad.value).startswith(f"{path}: ")
    assert problem in str(bad.value)


@pytest.mark.net
def test_user_program_with_static_entries_carries_ping_and_tcp(tmp_path):
    bad = write(tmp_path, "- {table: port_fwd, match: {standard_metadata.ingress_port: 1},"
                          " action: forward, params: {port: 2}, switches: [s9]}")
    twice = write(tmp_path, "- {table: port_fwd, match: {standard_metadata.ingress_port: 1},"
                            " action: forward, params: {port: 2}}\n" * 2, "twice.yaml")
    wrong_plane = create("p4", {"program": str(PROGRAM), "entries": str(bad)})
    refused_plane = create("p4", {"program": str(PROGRAM), "entries": str(twice)})
    plane = create("p4", {"program": str(PROGRAM), "entries": str(ENTRIES)})
    with Network(catalog.build("single", hosts=2), addressing="l2") as net:
        prefix, run_dir = net.prefix, net.run_dir
        with pytest.raises(PlaneError, match=rf"{bad}: entry 0: no switch 's9'"):
            wrong_plane.start(net)
        wrong_plane.stop()
        # the switch's server refuses the second insert of the same key
        with pytest.raises(PlaneError, match=rf"option 'entries': {twice}: entry 1: the "
                                             "switch refused it: ALREADY_EXISTS"):
            refused_plane.start(net)
        refused_plane.stop()
        try:
            plane.start(net)
            plane.wait_ready(20)
            assert ping_failures(net) == []
            received, bits_per_s = tcp_received(net, "h1", "h2")
            stats = plane.stats()
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []
    assert received > 1_000_000 and bits_per_s > 1_000_000
    assert stats["entries_written"] == 3
    assert stats["packet_ins"] is None  # no controller ran: nothing to count
    assert stats["ready_s"] > 0


def test_missing_entries_file_is_refused(tmp_path):
    with pytest.raises(PlaneError, match=r"option 'entries': no file .*nowhere.yaml"):
        create("p4", {"program": str(PROGRAM), "entries": str(tmp_path / "nowhere.yaml")})
