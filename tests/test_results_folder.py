"""`dplab run --fresh` deletes only a results folder the lab made, never anything else."""

from __future__ import annotations

import json

import pytest

from dplab import cli
from dplab.store import RunStore
from dplab.store.folder import MARKER

EXPERIMENT = """
name: fresh
topology: {name: single}
planes: [bridge]
workloads: [{kind: icmp, pairs: [[h1, h2]], count: 1}]
"""


def stop_before_running(plan, results, progress=None, ray_address=None):
    """In place of the runner: the run stops (ExperimentError) after --fresh has acted and
    before any network exists, so no matrix runs here."""
    from dplab.runner import ExperimentError

    raise ExperimentError("stopped by the test before any run")


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A working folder holding a user's file, an experiment file and a home folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("dplab.runner.run_plan", stop_before_running)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "exp.yaml").write_text(EXPERIMENT)
    return tmp_path


def fresh_run(results: str) -> int:
    return cli.main(["run", "exp.yaml", "--fresh", "--results", results])


@pytest.mark.parametrize("results", [".", "..", "/", "home", "mine", "link"])
def test_fresh_refuses_what_the_lab_did_not_make(lab, results, capsys):
    (lab / "mine").mkdir()
    (lab / "mine" / "data.csv").write_text("1,2")
    (lab / "link").symlink_to(lab / "mine")
    before = sorted(p.name for p in lab.iterdir())
    assert fresh_run(results) == 2
    assert "--fresh" in capsys.readouterr().err
    assert sorted(p.name for p in lab.iterdir()) == before
    assert (lab / "notes.txt").read_text() == "mine"
    assert (lab / "mine" / "data.csv").read_text() == "1,2"


def test_fresh_discards_a_marked_folder_and_an_old_unmarked_store(lab):
    RunStore(lab / "made").write_experiment({"name": "old"})
    (lab / "made" / "plots").mkdir()
    assert (lab / "made" / MARKER).is_file()
    old = lab / "old"  # a store written before the marker existed
    old.mkdir()
    (old / "experiment.json").write_text(json.dumps({"spec": {"name": "old"}}))
    (old / "runs.parquet").write_bytes(b"")
    (old / "report.html").write_text("")
    for results in ("made", "old"):
        assert fresh_run(results) == 2  # stopped by the test, after --fresh
        assert not (lab / results).exists()
    assert (lab / "notes.txt").read_text() == "mine"


def test_a_store_opened_in_a_foreign_folder_does_not_mark_it(lab):
    RunStore(lab)
    assert not (lab / MARKER).exists()
