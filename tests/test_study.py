"""Studies (dplab.study): every study's files load and check, its scenarios plan at every
profile, a profile keeps every axis point, and one study runs end to end (smoke profile,
seconds long) into a report that sets the paper's published figures beside ours."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dplab import cli
from dplab.study import catalog, run
from dplab.study.model import Profile, Scenario, StudyError, load_study
from dplab.study.profiles import experiment

NUMBERS = catalog.numbers()
QUICK_BUDGET_S = 15 * 60  # a quick profile must fit in 15 minutes on 2 cores
REF = re.compile(r"^(Table|Fig\.|Figs\.|Section) ")


def test_every_study_of_the_seeds_is_in_the_repository():
    assert NUMBERS == ["000", "001", "002", "003", "004"]


@pytest.mark.parametrize("number", NUMBERS)
def test_published_entries_name_their_table_or_figure_and_conditions(number):
    study, published = catalog.find(number)
    assert published.entries
    for entry in published.entries:
        assert REF.match(entry.ref), entry.ref
        assert entry.conditions.strip()
        for value in entry.values:
            assert value.values and value.paper_metric.strip()
    laid_out = {ref for table in study.tables for ref in table.published}
    assert laid_out <= {e.ref for e in published.entries}


@pytest.mark.parametrize("number", NUMBERS)
def test_quick_profile_keeps_every_axis_point_and_fits_its_budget(number, tmp_path):
    study, _published = catalog.find(number)
    full = run.plans(study, "full", tmp_path)
    quick = run.plans(study, "quick", tmp_path)
    for f, q in zip(full, quick, strict=True):
        assert [p.point for p in q.plan.points] == [p.point for p in f.plan.points]
        planes = len(q.experiment.planes)
        assert len(q.plan.runs) == len(q.plan.points) * planes * q.experiment.repetitions
        assert len(f.plan.runs) == len(f.plan.points) * planes * f.experiment.repetitions
        assert q.plan.estimate_s() <= f.plan.estimate_s()
    assert sum(q.plan.estimate_s() for q in quick) < QUICK_BUDGET_S


def test_smoke_profile_is_seconds_long(tmp_path):
    """One axis point, one repetition, traffic of a second or so per run (study 002 has ten
    planes in each of two scenarios: its smoke is still the longest)."""
    for number in NUMBERS:
        study, _published = catalog.find(number)
        for item in run.plans(study, "smoke", tmp_path):
            assert len(item.plan.points) == 1 and item.experiment.repetitions == 1
            assert item.plan.estimate_s() / len(item.plan.runs) < 10


def test_profile_naming_a_missing_workload_or_axis_is_an_error(tmp_path):
    scenario = Scenario(name="x", file="scenarios/study001.yaml",
                        quick=Profile(workloads={"nope": {"duration": 1}}))
    with pytest.raises(StudyError, match=r"workloads\.nope: no workload"):
        experiment(scenario, catalog.repository_root(), "quick")
    scenario = Scenario(name="x", file="scenarios/study001.yaml",
                        quick=Profile(axes={"window": [1]}))
    with pytest.raises(StudyError, match=r"axes\.window: the scenario has no such axis"):
        experiment(scenario, catalog.repository_root(), "quick")


def test_a_layout_naming_a_traffic_class_the_scenario_lacks_is_an_error(tmp_path):
    folder = tmp_path / "001"
    folder.mkdir()
    source = catalog.studies_dir() / "001"
    (folder / "published.yaml").write_text((source / "published.yaml").read_text())
    text = (source / "study.yaml").read_text().replace("traffic: tcp", "traffic: tpc", 1)
    (folder / "study.yaml").write_text(text)
    study, _published = load_study(folder)
    with pytest.raises(StudyError, match=r"tables\.0\.traffic: .*no traffic class 'tpc'"):
        run.plans(study, "quick", tmp_path)


def test_a_layout_naming_a_missing_published_entry_is_an_error(tmp_path):
    folder = tmp_path / "004"
    folder.mkdir()
    source = catalog.studies_dir() / "004"
    (folder / "study.yaml").write_text((source / "study.yaml").read_text())
    (folder / "published.yaml").write_text(
        (source / "published.yaml").read_text().replace('ref: "Table 2"', 'ref: "Table 9"'))
    with pytest.raises(StudyError, match=r"tables\.0\.published: no entry 'Table 2'"):
        load_study(folder)


@pytest.mark.net
def test_study_run_smoke_writes_our_table_beside_the_published_one(tmp_path):
    """One axis point of study 001, both planes, 1 s of TCP and UDP: the study report has
    our measured table and the paper's column, labelled as the paper's."""
    results = tmp_path / "study001"
    assert cli.main(["study", "run", "001", "--smoke", "--results", str(results)]) == 0
    page = (results / "study.html").read_text()
    assert "TCP, clients h2..h6 → h1 for 15 s" in page
    assert "published (paper, Figs. 11-12 (TCP)): Conventional" in page
    assert "22.3 Mbit/s (TCP Average Bandwidth, lowest 1 s interval)" in page
    measured = re.search(r"<td>throughput \(Mbit/s\)</td><td>([\d.]+) \(n=1\)</td>", page)
    assert measured and float(measured.group(1)) > 0
    assert "Our os-ken reactive controller" in page  # the substitutions are stated
    report = (results / "report.html").read_text()
    assert report.index("<h2>Summary</h2>") < report.index("<h2>Comparison tables</h2>")
    assert Path(results / "plots" / "summary.png").exists()


def test_study_003_puts_its_feasibility_matrix_in_the_study_report(tmp_path):
    """Study 003's run derives the matrix from its packet tests (dplab.study003.matrix, run
    for real in tests/test_study003_xdp.py); the report shows each cell as decided."""
    from dplab.study import report as study_report
    from dplab.study003.matrix import Cell

    study, published = catalog.find("003")
    assert study.feasibility_matrix
    cells = {"echo": {"p4": Cell(True, "every request answered"),
                      "xdp": Cell(False, "5 requests and 5 InEchos at the target")}}
    page = study_report.write(study, published, tmp_path, "quick", cells).read_text()
    assert "Feasibility matrix" in page
    assert "<td>✓</td>" in page and "✗ 5 requests and 5 InEchos at the target" in page
    plain = study_report.write(study, published, tmp_path, "quick").read_text()
    assert "Feasibility matrix" not in plain
