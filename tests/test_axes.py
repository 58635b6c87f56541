"""Experiment axes and phases: expansion, planning, run order, the one plan `validate` and
`run` share, reports pivoted on the axes, and one tiny real run over an axis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from dplab import cli, report
from dplab.plan import ExperimentError, build_plan, order_runs
from dplab.spec import SpecError, expand, load, parse
from dplab.spec.axes import AxisPoint
from dplab.store import RunStore, StoreError
from dplab.workloads.flows import Flow, FlowResult

AXES = """
name: axes
topology: {name: single, params: {hosts: 2}}
planes: [bridge, {kind: ovs, options: {mode: reactive}}]
workloads:
  - {kind: udp, label: load, pairs: [[h1, h2]], duration: 2, rate_mbit: 10}
  - {kind: icmp, label: probe, pairs: [[h2, h1]], count: 5, interval: 0.1}
  - {kind: tcp, pairs: [[h1, h2]], duration: 1}
axes:
  rate_mbit: {of: load, values: [10, 100, 1000]}
  topology: [single, {name: linear, params: {switches: 2, hosts_per_switch: 1}}]
phases: [[load, probe], [2]]
repetitions: 2
"""


def test_axes_expand_to_every_combination_with_the_values_applied():
    points = expand(parse(AXES), "exp.yaml")
    assert [p.label for p, _ in points] == [
        f"rate_mbit={r}, topology={t}" for r in (10, 100, 1000)
        for t in ("single", "linear(hosts_per_switch=1,switches=2)")]
    point, exp = points[5]
    assert point.values[0] == AxisPoint("rate_mbit", "1000", 1000.0)
    assert point.values[1].number is None
    assert exp.workloads[0].rate_mbit == 1000 and exp.workloads[2].kind == "tcp"
    assert exp.topology.name == "linear" and exp.topology.params["switches"] == 2
    assert not exp.axes


def test_an_axis_without_of_varies_every_workload_that_has_the_parameter():
    exp = parse(AXES.replace("rate_mbit: {of: load, values: [10, 100, 1000]}",
                             "duration: [1, 3]"))
    durations = [(x.workloads[0].duration, x.workloads[2].duration) for _, x in expand(exp)]
    assert durations == [(1, 1), (1, 1), (3, 3), (3, 3)]


def test_a_plane_option_axis_keeps_the_plane_column():
    exp = parse(AXES.replace("topology: [single,", "mode: {of: ovs-reactive, values: "
                             "[reactive, proactive]}\n  t2: {of: topology, values: [2, 3]}\n"
                             "  x: [1]\n  topology: [single,").replace("  x: [1]\n", ""))
    points = expand(exp)
    assert {tuple(p.column for p in x.planes) for _, x in points} == {("bridge", "ovs-reactive")}
    assert {x.planes[1].options["mode"] for _, x in points} == {"reactive", "proactive"}


def test_axes_can_be_written_as_paths():
    exp = parse(AXES.replace("rate_mbit: {of: load, values: [10, 100, 1000]}",
                             "workloads.0.rate_mbit: [10, 20]\n"
                             "  planes.1.options.mode: [proactive]\n"
                             "  topology.params.hosts: [3]")
                .replace("  topology: [single, {name: linear, params: {switches: 2, "
                         "hosts_per_switch: 1}}]\n", ""))
    points = expand(exp)
    assert [x.workloads[0].rate_mbit for _, x in points] == [10, 20]
    assert {(x.planes[1].column, x.planes[1].options["mode"], x.topology.params["hosts"])
            for _, x in points} == {("ovs-reactive", "proactive", 3)}
    assert points[0][0].slug == ("workloads.0.rate_mbit=10-planes.1.options.mode=proactive-"
                                 "topology.params.hosts=3")
    with pytest.raises(SpecError, match="a path is workloads.N.PARAM"):
        expand(parse(AXES.replace("rate_mbit: {of: load,", "load.rate_mbit: {")))


@pytest.mark.parametrize(("change", "message"), [
    (("values: [10, 100, 1000]", "values: [10, -5]"),
     r"exp.yaml: at axis point rate_mbit=-5, topology=single: 1 problem.*\n"
     r"  workloads.0.udp.rate_mbit: Input should be greater than 0"),
    (("{of: load,", "{of: lod,"), r"exp.yaml: axes.rate_mbit.of: no workload labelled 'lod'"),
    (("{of: load,", "{of: probe,"), r"workload 'probe' \(icmp\) has no parameter 'rate_mbit'"),
    (("rate_mbit: {of: load,", "window2: {"), r"axes.window2: no workload has a parameter"),
    (("rate_mbit: {of: load,", "rate-mbit: {of: load,"), r"axes.rate-mbit.\[key\]: String"),
    (("[10, 100, 1000]", "[10, 10.0]"), r"axes.rate_mbit.values: .*repeated: 10"),
])
def test_bad_axes_name_the_axis_or_the_point_and_field(change, message):
    with pytest.raises(SpecError, match=message):
        expand(parse(AXES.replace(*change), "exp.yaml"), "exp.yaml")


def test_phases_group_workloads_by_label_or_index():
    plan = build_plan(parse(AXES), "exp.yaml")
    phases = plan.points[0].run.phases
    assert [[f.kind for f in phase] for phase in phases] == [["udp", "icmp"], ["tcp"]]
    assert "label" not in phases[0][0].params  # the workload modules get their parameters only


@pytest.mark.parametrize(("change", "message"), [
    (("phases: [[load, probe], [2]]", "phases: [[load, probe]]"), r"not listed: \[2\]"),
    (("phases: [[load, probe], [2]]", "phases: [[load, probe], [2, 0]]"),
     r"listed twice: \[0\]"),
    (("repetitions: 2", "repetitions: 2\ntier: 2"), "either 'phases' or 'tier'"),
])
def test_bad_phases_are_refused(change, message):
    with pytest.raises(SpecError, match=message):
        parse(AXES.replace(*change))


def test_runs_interleave_planes_and_points_and_alternate_direction():
    plan = build_plan(parse(AXES), "exp.yaml")
    ids = [k.run_id for k in plan.runs]
    assert len(ids) == len(set(ids)) == 3 * 2 * 2 * 2
    first = ids[:12]
    assert first[:2] == ["bridge-rate_mbit=10-topology=single-r1",
                         "ovs-reactive-rate_mbit=10-topology=single-r1"]
    assert [i.replace("-r2", "") for i in ids[12:]] == [i.replace("-r1", "") for i in first][::-1]
    no_axes = parse(AXES.split("axes:")[0] + "repetitions: 1\n")
    assert [k.run_id for k in build_plan(no_axes).runs] == ["bridge-r1", "ovs-reactive-r1"]
    assert order_runs([], 3) == []


def test_validate_and_run_use_one_plan(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "exp.yaml"
    spec.write_text(AXES)
    assert cli.main(["validate", str(spec)]) == 0
    validated = capsys.readouterr().err
    expected = build_plan(load(spec), str(spec))
    assert expected.summary()[0] in validated and "estimated wall time" in validated
    assert "phase 1: udp h1→h2, icmp h2→h1" in validated

    class Ran(Exception):
        pass

    def fake_run_plan(plan, results, progress=None, ray_address=None):
        assert plan.summary() == expected.summary()
        assert [k.run_id for k in plan.runs] == [k.run_id for k in expected.runs]
        progress("bridge-r1: building single")
        raise Ran

    monkeypatch.setattr("dplab.runner.run_plan", fake_run_plan)
    with pytest.raises(Ran):
        cli.main(["run", str(spec), "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert expected.summary()[0] in err
    progress_line = next(line for line in err.splitlines() if "building single" in line)
    assert ".py:" not in progress_line  # no source location in progress lines


def test_a_bad_plane_option_fails_validation_naming_the_field(tmp_path, capsys):
    spec = tmp_path / "exp.yaml"
    spec.write_text(AXES.replace("options: {mode: reactive}", "options: {mdoe: reactive}"))
    assert cli.main(["validate", str(spec)]) == 2
    assert f"{spec}: planes.1.options.mdoe: plane 'ovs': unknown option 'mdoe'" \
        in capsys.readouterr().err.replace("\n", "")
    spec.write_text(AXES.replace("options: {mode: reactive}", "options: {mode: fast}"))
    with pytest.raises(ExperimentError, match=r"planes.1.options.mode: .*'fast'"):
        build_plan(load(spec), str(spec))


def test_a_file_that_is_not_utf8_is_named(tmp_path, capsys):
    spec = tmp_path / "latin1.yaml"
    spec.write_bytes(AXES.replace("axes:\n", "axes:  # caf\xe9\n").encode("latin-1"))
    line = AXES.splitlines().index("axes:") + 1
    assert cli.main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert f"{spec}: line {line}: not UTF-8 text (byte 0xe9" in err
    assert "Traceback" not in err


def test_a_results_folder_that_cannot_be_written_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot make the results folder"):
        RunStore(blocker / "results")
    spec = tmp_path / "exp.yaml"
    spec.write_text(AXES)
    assert cli.main(["run", str(spec), "--results", str(blocker / "results")]) == 2
    assert "cannot make the results folder" in capsys.readouterr().err


def _ping(run_id: str, rtt: float) -> FlowResult:
    intervals = [{"t_start": t, "t_end": t + 1.0, "jitter_ms": rtt / 10} for t in range(3)]
    return FlowResult(Flow("w0-icmp-h1-h2", "icmp", "h1", "h2", {"count": 4, "size": 56}),
                      True, None, {"rtt_ms": rtt, "packets_received": 4.0}, intervals)


def _axis_store(path: Path) -> None:
    """Two planes, a numeric axis 'size' at two points, three repetitions; ovs's RTT is
    about 3x bridge's at size 1000 and about the same at 56."""
    store = RunStore(path)
    store.write_experiment({"name": "tiny", "repetitions": 3,
                            "planes": [{"kind": "bridge"}, {"kind": "ovs", "label": "ovs"}],
                            "axes": {"size": {"of": None, "values": [56, 1000]}}})
    rtts = {("bridge", 56): [0.10, 0.11, 0.12], ("ovs", 56): [0.11, 0.12, 0.10],
            ("bridge", 1000): [0.20, 0.21, 0.22], ("ovs", 1000): [0.60, 0.66, 0.63]}
    for (plane, size), values in rtts.items():
        for rep, rtt in enumerate(values, start=1):
            run_id = f"{plane}-size={size}-r{rep}"
            store.add_run(run_id, plane, rep, "ok", None, 0.0, 1.0, {}, [_ping(run_id, rtt)],
                          axes=[AxisPoint("size", str(size), float(size))])


def test_report_pivots_on_the_axis_and_baseline_is_chosen_without_a_run(tmp_path, capsys):
    _axis_store(tmp_path)
    console = Console(record=True, width=200)
    report.print_tables(tmp_path, console)
    text = console.export_text()
    assert "icmp traffic: rtt_ms" in text and "ovs vs bridge" in text
    row_1000 = next(line for line in text.splitlines() if re.match(r"│ 1000 ", line))
    assert "0.21 ± 0.0248 (n=3)" in row_1000 and "3× (worse, p=" in row_1000
    row_56 = next(line for line in text.splitlines() if re.match(r"│ 56 ", line))
    assert "n.s." in row_56

    assert cli.main(["report", str(tmp_path), "--baseline", "ovs"]) == 0
    page = (tmp_path / "report.html").read_text()
    assert "bridge vs ovs" in page and "-66.7 % (better, p=" in page
    for name in ("axis_size_rtt_ms.png", "jitter_timeseries_size=56.png",
                 "jitter_timeseries_size=1000.png"):  # each point's own time series too
        png = tmp_path / "plots" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert cli.main(["report", str(tmp_path), "--baseline", "p4"]) == 2
    assert "baseline plane 'p4' has no stored runs" in capsys.readouterr().err


@pytest.mark.net
def test_a_tiny_axis_runs_for_real_and_is_stored_with_its_labels(tmp_path):
    from dplab.runner import run_matrix

    exp = parse("""
name: tiny-axis
topology: {name: single, params: {hosts: 2}}
planes: [bridge]
workloads: [{kind: icmp, pairs: [[h1, h2]], interval: 0.05}]
axes: {count: [2, 4]}
""")
    store = run_matrix(exp, tmp_path)
    runs = {r["run_id"]: r["status"] for r in store.rows("runs")}
    assert runs == {"bridge-count=2-r1": "ok", "bridge-count=4-r1": "ok"}
    axes = {(r["run_id"], r["axis"], r["value"], r["number"]) for r in store.rows("run_axes")}
    assert axes == {("bridge-count=2-r1", "count", "2", 2.0),
                    ("bridge-count=4-r1", "count", "4", 4.0)}
    received = {r["run_id"]: r["value"] for r in store.rows("summaries")
                if r["metric"] == "packets_received"}
    assert received == {"bridge-count=2-r1": 2, "bridge-count=4-r1": 4}
    again = run_matrix(exp, tmp_path, progress=(said := []).append)
    assert said == ["bridge-count=2-r1: already stored, skipped",
                    "bridge-count=4-r1: already stored, skipped"]
    assert again.completed_runs() == set(runs)


ROOT = Path(__file__).resolve().parents[1]


def test_every_shipped_scenario_builds_its_plan(monkeypatch):
    monkeypatch.chdir(ROOT)  # p4 programs and entries are named from the repository's root
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        plan = build_plan(load(path), str(path))
        assert plan.runs and plan.estimate_s() > 0, path
    study = build_plan(load(ROOT / "scenarios" / "study001.yaml"))
    assert [p.point.label for p in study.points] == [f"rate_mbit={r}" for r in (10, 100, 1000)]
    assert [w.rate_mbit for w in (p.experiment.workloads[1] for p in study.points)] == \
        [10, 100, 1000]


def test_topo_export_writes_a_containerlab_file(tmp_path):
    import yaml

    out = tmp_path / "lab.clab.yml"
    assert cli.main(["topo", "export", "study001", "-o", str(out)]) == 0
    lab = yaml.safe_load(out.read_text())
    assert lab["name"] == "study001" and len(lab["topology"]["nodes"]) == 10
    assert len(lab["topology"]["links"]) == 9


@pytest.mark.net
def test_study001_one_axis_point_runs(tmp_path):
    """Study 001's scenario at one point of its axis, shortened to seconds, on the bridge."""
    from dplab.runner import run_matrix
    from dplab.spec import Experiment

    data = load(ROOT / "scenarios" / "study001.yaml").model_dump(exclude_unset=True)
    data |= {"planes": [{"kind": "bridge"}], "repetitions": 1,
             "axes": {"rate_mbit": {"of": "udp", "values": [100]}}}
    for workload in data["workloads"]:
        workload["duration"] = 1
    store = run_matrix(Experiment.model_validate(data), tmp_path)
    assert [(r["run_id"], r["status"]) for r in store.rows("runs")] == \
        [("bridge-rate_mbit=100-r1", "ok")]
    udp = {r["metric"]: r["value"] for r in store.rows("summaries") if r["kind"] == "udp"}
    assert udp["throughput_bps"] > 10e6  # offered 100 Mbit/s over 100 Mbit/s edge links
    tcp_flows = {r["src"] for r in store.rows("flows") if r["kind"] == "tcp" and r["ok"]}
    assert tcp_flows == {"h2", "h3", "h4", "h5", "h6"}


def test_experiments_without_axes_store_the_spec_as_before():
    """experiment.json of a folder made before axes must compare equal, or it won't resume."""
    from dplab.runner import stored_spec

    plain = stored_spec(parse(AXES.split("axes:")[0].replace(", label: load", "")
                              .replace(", label: probe", "") + "tier: 2\n"))
    assert "axes" not in plain and "phases" not in plain
    assert all("label" not in w for w in plain["workloads"])
    assert set(stored_spec(parse(AXES))) >= {"axes", "phases"}


def test_a_named_axis_gets_a_plot_with_its_values_in_order(tmp_path):
    store = RunStore(tmp_path)
    store.write_experiment({"name": "topo", "planes": [{"kind": "bridge"}],
                            "axes": {"topology": {"values": ["single", "linear"]}}})
    for name, rtt in (("linear", 0.3), ("single", 0.1)):
        store.add_run(f"bridge-topology={name}-r1", "bridge", 1, "ok", None, 0.0, 1.0, {},
                      [_ping(name, rtt)], axes=[AxisPoint("topology", name, None)])
    report.build(tmp_path)
    assert (tmp_path / "plots" / "axis_topology_rtt_ms.png").stat().st_size > 5000
    console = Console(record=True, width=200)
    report.print_tables(tmp_path, console)
    rows = [line.split()[1] for line in console.export_text().splitlines()
            if line.startswith("│ single") or line.startswith("│ linear")]
    assert rows[:2] == ["single", "linear"]  # the file's order, not the runs'
