"""Running a study: each of its scenarios at a profile, into one results folder, then the
lab's report of each scenario and the study's own report beside them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dplab.plan import ExperimentPlan, build_plan
from dplab.spec import Experiment
from dplab.study.catalog import repository_root
from dplab.study.model import Scenario, Study
from dplab.study.profiles import ProfileName, experiment


@dataclass(frozen=True)
class ScenarioPlan:
    scenario: Scenario
    experiment: Experiment
    plan: ExperimentPlan
    results: Path  # where its runs are stored


def default_results(study: Study, profile: ProfileName) -> Path:
    """Profiles apart: resuming a quick run must never pick up full runs, or the reverse."""
    return Path("results") / f"study{study.number}-{profile}"


def plans(study: Study, profile: ProfileName, results: Path,
          root: Path | None = None) -> list[ScenarioPlan]:
    """Every scenario of the study at ``profile``, planned (and so checked) before any runs."""
    root = root or repository_root()
    out = []
    with in_directory(root):
        for scenario in study.scenarios:
            exp = experiment(scenario, root, profile)
            plan = build_plan(exp, f"{scenario.file} ({profile})")
            out.append(ScenarioPlan(scenario, exp, plan, scenario_results(study, scenario,
                                                                          results)))
    return out


def scenario_results(study: Study, scenario: Scenario, results: Path) -> Path:
    """One scenario: the results folder itself; several: a subfolder each."""
    return results if len(study.scenarios) == 1 else results / scenario.name


@contextmanager
def in_directory(root: Path) -> Iterator[None]:
    """Scenario files name P4 programs and entries relative to the repository's root, as
    `dplab run` from that root reads them; results paths are made absolute first."""
    before = Path.cwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(before)


def run(plans_: list[ScenarioPlan], root: Path | None = None,
        progress: Callable[[str], None] | None = None) -> bool:
    """Run every scenario's plan (resuming what is stored); True when every scenario has at
    least one completed run."""
    from dplab.runner import run_plan  # heavy: every plane

    ok = True
    with in_directory(root or repository_root()):
        for item in plans_:
            store = run_plan(item.plan, item.results, progress=progress)
            ok = ok and bool(store.completed_runs())
    return ok
