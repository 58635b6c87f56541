from pathlib import Path

import pytest

from dplab.spec import SpecError, load, parse

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
name: t
topology: {name: linear, params: {switches: 2}}
planes: [bridge, {kind: ovs, options: {mode: proactive}}]
workloads:
  - {kind: tcp, duration: 2}
  - {kind: udp, bytes: 1000000, rate_mbit: 5}
  - {kind: icmp, pairs: [[h1, h2]], count: 3}
repetitions: 3
"""


def test_good_file_parses_with_defaults_and_shorthand():
    exp = parse(GOOD)
    assert [p.column for p in exp.planes] == ["bridge", "ovs-proactive"]
    assert exp.workloads[0].pairs == "tcp"
    assert exp.workloads[2].pairs == [("h1", "h2")]
    assert exp.repetitions == 3 and exp.tier == 1


def test_shipped_scenarios_are_valid():
    for path in (ROOT / "scenarios").glob("*.yaml"):
        load(path)


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        (GOOD.replace("repetitions: 3", "repetitions: 0"), "repetitions", "greater than or equal"),
        (GOOD.replace("kind: tcp, duration: 2", "kind: tcp"), "workloads.0.tcp", "exactly one"),
        (GOOD.replace("bridge", "bridgee"), "planes.0.kind", "'bridgee'"),
        (GOOD.replace("count: 3", "cuont: 3"), "workloads.2.icmp.cuont", "unknown field"),
        (GOOD.replace("name: t\n", ""), "name", "missing"),
        (GOOD.replace("{name: linear, params: {switches: 2}}", "{}"), "topology", "exactly one"),
        (GOOD.replace("kind: udp", "kind: sctp"), "workloads.1", "sctp"),
    ],
)
def test_bad_files_name_the_field_and_the_expectation(text, field, expected):
    with pytest.raises(SpecError) as err:
        parse(text, source="exp.yaml")
    message = str(err.value)
    assert message.startswith("exp.yaml:")
    assert field in message
    assert expected in message


def test_yaml_syntax_error_names_line():
    with pytest.raises(SpecError, match=r"exp.yaml: line 3, column 1: not valid YAML"):
        parse("name: t\nplanes: [bridge\n", source="exp.yaml")


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        load(tmp_path / "nope.yaml")


def test_duplicate_plane_labels_rejected():
    with pytest.raises(SpecError, match="unique"):
        parse(GOOD.replace("{kind: ovs, options: {mode: proactive}}", "bridge"))
