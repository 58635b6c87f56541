"""Study 002's tagging plan and complex pipeline as data, and the planes' checks of their
options `vlan` and `pipeline` (no network)."""

from __future__ import annotations

import pytest

from dplab.planes import PlaneError, create
from dplab.planes.bridge import off_tree_links
from dplab.planes.pipeline import EXTRA_LOOKUPS, ovs_flows, p4_program
from dplab.planes.tagging import plan
from dplab.topology import catalog


def test_the_plan_tags_at_host_ports_and_floods_along_the_tree_only():
    topo = catalog.build("multipath")
    switches = topo.switches()
    cut = off_tree_links(topo.graph.subgraph(switches), switches)
    parts = plan(topo, lambda h: h, cut)
    ports = topo.port_numbers()
    for switch, part in parts.items():
        hosts_here = {ports[switch, h] for h in topo.hosts() if topo.graph.has_edge(switch, h)}
        assert set(part.access) == hosts_here
        assert set(part.routes) == set(topo.hosts())  # every host reachable on the tree
        cut_ports = {ports[switch, n] for n in topo.graph[switch]
                     if frozenset((switch, n)) in cut}
        assert not cut_ports & (set(part.flood) | set(part.routes.values()))
    # A host's own switch sends its frames out of the host's port.
    for host in topo.hosts():
        (switch,) = topo.graph[host]
        assert parts[switch].routes[host] == ports[switch, host]


def test_the_complex_p4_program_applies_every_extra_table(tmp_path):
    source = tmp_path / "prog.p4"
    source.write_text("control I() {\n    // @extra_lookups declarations\n"
                      "    apply {\n        // @extra_lookups apply\n    }\n}\n")
    text = p4_program(source, tmp_path).read_text()
    assert all(f"extra_lookup_{i}.apply();" in text for i in range(EXTRA_LOOKUPS))
    assert "@extra_lookups" not in text
    assert len(ovs_flows()) == EXTRA_LOOKUPS


@pytest.mark.parametrize(("kind", "options", "says"), [
    ("ovs", {"vlan": 100}, "needs 'controller: false'"),
    ("ovs", {"controller": False, "pipeline": "heavy"}, "'pipeline' must be one of"),
    ("ovs", {"controller": False, "vlan": 4095}, "VLAN id 1..4094"),
    ("p4", {"vlan": 0}, "VLAN id 1..4094"),
    ("p4", {"vlan": True}, "VLAN id 1..4094"),
    ("p4", {"vlan": 10, "entries": "x.yaml"}, "leave out option 'entries'"),
    ("bridge", {"vlan": "100"}, "VLAN id 1..4094"),
    ("bridge", {"vlan": 100, "stp": "kernel"}, "BPDUs tagged"),
])
def test_bad_study002_options_are_refused_by_name(kind, options, says):
    with pytest.raises(PlaneError, match=says):
        create(kind, options)


def test_a_complex_p4_pipeline_needs_the_programs_markers(tmp_path):
    program = tmp_path / "plain.p4"
    program.write_text("control I() { apply { } }\n")
    with pytest.raises(PlaneError, match="needs the comment '// @extra_lookups declarations'"):
        create("p4", {"program": str(program), "pipeline": "complex"})
