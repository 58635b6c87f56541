"""The p4lang/tutorials exercise solutions (our rewrites in tests/p4/field/) compile, their
P4Info matches p4c's, and the constructs they brought in give exact errors when misused.

Expected P4Info values are p4c's own output for those programs, as found in the code corpus:
  advanced_tunnel.p4 (exercises/p4runtime): a p4c-generated P4Info quoted whole in a Scala
    P4Runtime client's comment (tables, actions, action_refs, counters below);
  basic.p4: p4runtime-shell printing the p4c P4Info of the basic exercise (ipv4_lpm and its
    action_refs, same ids as above).
"""

from pathlib import Path

import pytest
from test_p4_compiler import compile_error, compiled

FIELD = Path(__file__).resolve().parent / "p4" / "field"
PROGRAMS = sorted(p.stem for p in FIELD.glob("*.p4"))

# p4c's ids: name -> id, for advanced_tunnel.p4
P4C_TABLES = {"MyIngress.ipv4_lpm": 37375156, "MyIngress.myTunnel_exact": 35862311}
P4C_ACTIONS = {"NoAction": 21257015, "MyIngress.drop": 25652968,
               "MyIngress.ipv4_forward": 28792405, "MyIngress.myTunnel_ingress": 24181246,
               "MyIngress.myTunnel_forward": 27454791, "MyIngress.myTunnel_egress": 33029817}
P4C_ACTION_REFS = {"MyIngress.ipv4_lpm": [28792405, 24181246, 25652968, 21257015],
                   "MyIngress.myTunnel_exact": [27454791, 33029817, 25652968]}
P4C_COUNTERS = {"MyIngress.ingressTunnelCounter": (315557958, 65536),
                "MyIngress.egressTunnelCounter": (312374841, 65536)}


def test_all_tutorial_solutions_are_here() -> None:
    assert PROGRAMS == ["advanced_tunnel", "basic", "basic_tunnel", "calc", "ecn", "firewall",
                        "link_monitor", "load_balance", "mri", "multicast", "qos",
                        "source_routing"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_each_solution_compiles(name: str, tmp_path: Path) -> None:
    ir, info = compiled(FIELD / f"{name}.p4", tmp_path)
    assert ir["parser"]["states"] and info.pkg_info.arch == "v1model"


def test_advanced_tunnel_p4info_is_p4cs(tmp_path: Path) -> None:
    _, info = compiled(FIELD / "advanced_tunnel.p4", tmp_path)
    assert {t.preamble.name: t.preamble.id for t in info.tables} == P4C_TABLES
    assert {a.preamble.name: a.preamble.id for a in info.actions} == P4C_ACTIONS
    assert {t.preamble.name: [r.id for r in t.action_refs] for t in info.tables} == \
        P4C_ACTION_REFS
    assert {c.preamble.name: (c.preamble.id, c.size) for c in info.counters} == P4C_COUNTERS
    assert all(c.spec.unit == c.spec.BOTH for c in info.counters)
    lpm, tunnel = info.tables
    assert [(m.id, m.name, m.bitwidth) for m in lpm.match_fields] == \
        [(1, "hdr.ipv4.dstAddr", 32)]
    assert [(m.id, m.name, m.bitwidth) for m in tunnel.match_fields] == \
        [(1, "hdr.myTunnel.dst_id", 16)]
    assert lpm.size == tunnel.size == 1024
    egress = next(a for a in info.actions if a.preamble.alias == "myTunnel_egress")
    assert [(p.id, p.name, p.bitwidth) for p in egress.params] == \
        [(1, "dstAddr", 48), (2, "port", 9)]


def test_basic_p4info_is_p4cs(tmp_path: Path) -> None:
    _, info = compiled(FIELD / "basic.p4", tmp_path)
    (table,) = info.tables
    assert (table.preamble.id, table.preamble.alias) == (37375156, "ipv4_lpm")
    assert [r.id for r in table.action_refs] == [28792405, 25652968, 21257015]


def test_calc_peeks_each_field_with_lookahead(tmp_path: Path) -> None:
    ir, _ = compiled(FIELD / "calc.p4", tmp_path)
    keys = ir["parser"]["states"][1]["transition"]["keys"]
    # p, four, ver: the first three bytes after the Ethernet header
    assert [(k["a"]["w"], k["hi"], k["lo"]) for k in keys] == [(8, 7, 0), (16, 7, 0),
                                                                (24, 7, 0)]


def test_stack_last_reads_the_newest_element(tmp_path: Path) -> None:
    """source_routing selects on hdr.srcRoutes.last.bos: the highest valid element's bos."""
    ir, _ = compiled(FIELD / "source_routing.p4", tmp_path)
    stack = ir["stacks"][0]
    key = ir["parser"]["states"][2]["transition"]["keys"][0]
    chain = []
    while key["op"] == "cond":
        chain.append((key["c"]["inst"], key["a"]["inst"]))
        key = key["b"]
    assert chain == [(i, i) for i in reversed(stack["instances"][1:])]
    assert (key["op"], key["inst"], key["field"]) == ("field", stack["instances"][0], 0)


PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header wide_t { bit<120> pad; bit<16> x; }
struct headers { h_t h; h_t[2] s; }
struct metadata { }
parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        hdr.h = packet.lookahead<h_t>();
        transition select(PARSER_KEY) { default: accept; }
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { INGRESS }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
GOOD = {"PARSER_KEY": "hdr.s.last.a", "INGRESS": "mark_to_drop(sm);"}
# Errors point at the offending member's '.', as the compiler's other member errors do.
BAD = [
    ({"INGRESS": "if (hdr.s.last.a == 1) { mark_to_drop(sm); }"}, 15, 22,
     "header stack '.last' is only allowed in a parser"),
    ({"PARSER_KEY": "packet.lookahead<h_t>().c"}, 10, 50, "header h_t has no field 'c'"),
    ({"PARSER_KEY": "packet.lookahead<wide_t>().x"}, 10, 53,
     "field 'x' ends 136 bits into the packet"),
    ({"PARSER_KEY": "hdr.s.last.c"}, 10, 37, "header h_t has no field 'c'"),
]


def program(**parts: str) -> str:
    text = PROGRAM
    for key, value in {**GOOD, **parts}.items():
        text = text.replace(key, value)
    return text


def test_the_probe_program_compiles(tmp_path: Path) -> None:
    path = tmp_path / "good.p4"
    path.write_text(program())
    ir, _ = compiled(path, tmp_path / "out")
    start = ir["parser"]["states"][0]["body"]
    h = [i["name"] for i in ir["instances"]].index("hdr.h")
    assert start[0] == {"kind": "set_valid", "inst": h}
    assert [s["dst"] for s in start[1:]] == [{"inst": h, "field": 0}, {"inst": h, "field": 1}]
    assert [s["src"]["a"]["w"] for s in start[1:]] == [8, 16]   # h.a, h.b peeked


@pytest.mark.parametrize(("parts", "line", "col", "reason"), BAD)
def test_misused_field_constructs_give_exact_locations(tmp_path: Path, parts: dict, line: int,
                                                       col: int, reason: str) -> None:
    error = compile_error(program(**parts), tmp_path)
    assert (error.line, error.col) == (line, col)
    assert reason in error.reason
