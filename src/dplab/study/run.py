"""Running a study: each of its scenarios at a profile, into one results folder, then the
lab's report of each scenario and the study's own report beside them."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dplab.analysis.compare import PLANE
from dplab.analysis.traffic import traffic_labels
from dplab.plan import ExperimentPlan, build_plan
from dplab.spec import Experiment
from dplab.spec.axes import param_name
from dplab.spec.model import value_label
from dplab.study.catalog import repository_root
from dplab.study.model import STUDY_FILE, Scenario, Study, StudyError
from dplab.study.profiles import ProfileName, experiment


@dataclass(frozen=True)
class ScenarioPlan:
    scenario: Scenario
    experiment: Experiment
    plan: ExperimentPlan
    results: Path  # where its runs are stored
    axis_values: dict[str, set[str]]  # the full scenario's axes (a profile may keep fewer)


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
            full = experiment(scenario, root, "full").axes
            values = {name: {value_label(v) for v in axis.values} for name, axis in full.items()}
            out.append(ScenarioPlan(scenario, exp, plan,
                                    scenario_results(study, scenario, results), values))
    check_layout(study, out)
    return out


def check_layout(study: Study, plans_: list[ScenarioPlan]) -> None:
    """Each table names a traffic class its scenario's flows make and an axis value one of
    its points has: a misspelled one would leave the table silently empty."""
    by_name = {item.scenario.name: item for item in plans_}
    for index, layout in enumerate(study.tables):
        where = f"{study.folder / STUDY_FILE}: tables.{index}"
        item = by_name.get(layout.scenario or study.scenarios[0].name)
        if item is None:
            raise StudyError(f"{where}.scenario: no scenario {layout.scenario!r}")
        # PLANE: the plane's own statistics, which every run has
        classes = traffic_classes(item.plan) | {PLANE}
        if layout.traffic not in classes:
            raise StudyError(f"{where}.traffic: {item.scenario.file} makes no traffic class "
                             f"{layout.traffic!r} (it makes: {', '.join(sorted(classes))})")
        for axis, value in layout.where.items():
            labels = item.axis_values.get(axis)
            if labels is None:
                raise StudyError(f"{where}.where.{axis}: {item.scenario.file} has no such axis")
            if value not in labels:
                raise StudyError(f"{where}.where.{axis}: {value!r} is not one of its values "
                                 f"({', '.join(sorted(labels))})")


def traffic_classes(plan: ExperimentPlan) -> set[str]:
    """The traffic classes the report will name, from the planned flows as the store keeps
    them (axis parameters left out, as the analysis does)."""
    axes = frozenset(param_name(a) for a in plan.experiment.axes)
    rows = [{"run_id": p.point.slug, "flow_id": f.flow_id, "kind": f.kind,
             "params": json.dumps(f.params, sort_keys=True, default=str)}
            for p in plan.points for phase in p.run.phases for f in phase]
    return set(traffic_labels(rows, axes).values())


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
