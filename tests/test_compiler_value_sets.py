"""The compiler on parser value sets (P4_16 "Parser Value Sets"; P4Runtime 9.7 and its
P4Info `value_sets`) and on entry priorities (P4_16 1.2.4 "Entry priorities": `priority =`,
`largest_priority_wins`, `priority_delta`): the IR and P4Info of accepted programs, and the
exact location of each error in bad ones."""

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from test_p4_compiler import compile_error
from test_p4_compiler import compiled as compiled_file

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "data" / "p4" / "value_sets.p4"
EXACT, TERNARY = p4info_pb2.MatchField.EXACT, p4info_pb2.MatchField.TERNARY
CLASSIFY_ENTRIES = PROGRAM.read_text().split("entries = {")[1].split("}")[0]


def compiled(text: str, tmp_path: Path) -> tuple[dict, p4info_pb2.P4Info]:
    path = tmp_path / "prog.p4"
    path.write_text(text)
    return compiled_file(path, tmp_path / "out")


def with_entries(entries: str, props: str = "priority_delta = 10;") -> str:
    """The program with table `classify`'s properties and entries replaced."""
    text = PROGRAM.read_text().replace("priority_delta = 10;", props)
    return text.replace(CLASSIFY_ENTRIES, entries)


def priorities(text: str, tmp_path: Path) -> list[int]:
    ir, _ = compiled(text, tmp_path)
    table = next(t for t in ir["tables"] if t["name"] == "I.classify")
    return [e["priority"] for e in table["const_entries"]]


def test_value_sets_in_ir_and_p4info(tmp_path: Path) -> None:
    ir, info = compiled(PROGRAM.read_text(), tmp_path)
    sets = {v["name"]: v for v in ir["value_sets"]}
    assert sets["P.allowed_types"]["size"] == 4
    assert sets["P.allowed_types"]["fields"] == [{"id": 1, "name": "", "w": 16,
                                                  "match": "exact"}]
    assert [(f["name"], f["w"], f["match"]) for f in sets["P.pairs_of.tagged"]["fields"]] == [
        ("etype", 16, "exact"), ("kind", 8, "ternary")]
    states = {s["name"]: s for s in ir["parser"]["states"]}
    index = [v["name"] for v in ir["value_sets"]].index("P.pairs_of.tagged")
    assert states["P.pairs_of.start"]["transition"]["cases"][0]["sets"] == [
        {"kind": "value_set", "set": index}]
    by_name = {v.preamble.name: v for v in info.value_sets}
    tagged = by_name["P.pairs_of.tagged"]
    assert tagged.preamble.id >> 24 == 0x03
    assert tagged.preamble.id == sets["P.pairs_of.tagged"]["id"]
    assert tagged.size == 2
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in tagged.match] == [
        (1, "etype", 16, EXACT), (2, "kind", 8, TERNARY)]
    assert [(m.bitwidth, m.match_type) for m in by_name["P.allowed_types"].match] == [
        (16, EXACT)]


def test_explicit_priorities_and_the_ones_derived_from_them(tmp_path: Path) -> None:
    # priority_delta 10: the entry without one gets 50 - 10
    assert priorities(PROGRAM.read_text(), tmp_path) == [50, 40, 45]


def test_default_numbering_follows_priority_delta(tmp_path: Path) -> None:
    entries = """
            (48w1 &&& 48w1, 8w1) : to(2);
            (48w2 &&& 48w2, 8w1) : to(3);
            (_, 8w1) : drop();
    """
    assert priorities(with_entries(entries), tmp_path) == [21, 11, 1]
    assert priorities(with_entries(entries, ""), tmp_path) == [3, 2, 1]


def test_smallest_priority_wins_is_turned_into_p4runtime_order(tmp_path: Path) -> None:
    """The spec's own example (P4_16 1.2.4, Entry priorities): 10, 20, 30, 40, 40, 50 in
    the source where the smallest wins; P4Runtime's larger-wins order reverses them."""
    entries = """
            const priority=10: (0x01, 0x11 &&& 0xF) : to(1);
                               (0x02, 0x81) : to(2);
                               (0x03, 0x10 &&& 0xF0) : to(3);
            const              (0x04, 0x21 &&& 0x2F) : to(4);
                  priority=40: (0x04, 0x01 &&& 0x2F) : to(5);
                               (0x06, _) : to(6);
    """
    swapped = PROGRAM.read_text().replace("key = { hdr.eth.dst: ternary; hdr.tag.kind: exact; }",
                                          "key = { hdr.tag.kind: exact; hdr.eth.etype: "
                                          "ternary; }")
    props = "largest_priority_wins = false; priority_delta = 10;"
    text = swapped.replace("priority_delta = 10;", props).replace(CLASSIFY_ENTRIES, entries)
    assert priorities(text, tmp_path) == [41, 31, 21, 11, 11, 1]
    no_explicit = text.replace("priority=10:", "").replace("priority=40:", "")
    assert priorities(no_explicit, tmp_path) == [51, 41, 31, 21, 11, 1]


def locate(text: str, marker: str) -> tuple[int, int]:
    """(line, column) of the one place ``marker`` starts in ``text``."""
    assert text.count(marker) == 1, marker
    before = text[:text.index(marker)]
    return before.count("\n") + 1, len(before) - before.rfind("\n")


BAD = [
    # (old text, new text, where the error is, reason)
    ("priority = 50:", "priority = 0:", "0:", "integer constant >= 1"),
    ("priority = 50: (48w0x02", "(48w0x02", "(48w0x02", "first entry must give"),
    ("priority = 45:", "priority = meta.allowed:", "meta.allowed:", "integer constant"),
    ("priority_delta = 10;", "priority_delta = 0;", "0;", "positive integer"),
    ("priority_delta = 10;", "largest_priority_wins = 8w7;", "8w7", "true or false"),
    ("priority = 50:", "priority = 1:", "(_, 8w1)", "works out to -9"),
    ("key = { hdr.eth.dst: ternary;", "key = { hdr.eth.dst: exact;", "50:",
     "no ternary, range or optional key"),
    ("        entries = {", "        const entries = {", "50:", "'const entries'"),
    ("value_set<bit<16>>(4)", "value_set<bit<16>>(0)", "0) allowed", "positive constant"),
    ("value_set<bit<16>>(4)", "value_set<bit<8>>(4)", "allowed_types: mark",
     "select keys are (bit<16>)"),
    ("@match(ternary)", "@match(fuzzy)", "fuzzy", "@match(fuzzy) is not one of"),
    ("allowed_types: mark;", "(allowed_types, _): mark;", "allowed_types, _",
     "whole keyset"),
    ("value_set<pair_t>(2)", "value_set<headers_t>(2)", "eth; tag_t",
     "must be bit<W>"),
]


@pytest.mark.parametrize(("old", "new", "marker", "reason"), BAD)
def test_bad_uses_give_exact_locations(tmp_path: Path, old: str, new: str, marker: str,
                                       reason: str) -> None:
    text = PROGRAM.read_text()
    assert text.count(old) == 1, old
    text = text.replace(old, new)
    error = compile_error(text, tmp_path)
    assert reason in error.reason
    assert (error.line, error.col) == locate(text, marker)
    assert error.file == str(tmp_path / "bad.p4")


def test_a_sub_parser_applied_twice_has_one_value_set(tmp_path: Path) -> None:
    call = "        pairs_of.apply(pkt, hdr.eth.etype, hdr.tag.kind, meta);\n"
    ir, info = compiled(PROGRAM.read_text().replace(call, call * 2), tmp_path)
    assert [v["name"] for v in ir["value_sets"]] == ["P.allowed_types", "P.pairs_of.tagged"]
    selects = [s["transition"]["cases"][0]["sets"] for s in ir["parser"]["states"]
               if s["name"] in ("P.pairs_of.start", "P.pairs_of$2.start")]
    assert selects == [[{"kind": "value_set", "set": 1}]] * 2
    assert [v.preamble.name for v in info.value_sets] == ["P.allowed_types",
                                                          "P.pairs_of.tagged"]
