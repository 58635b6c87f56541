"""The local executor: the plan's pending runs one after another in this process."""

from __future__ import annotations

from pathlib import Path

from dplab.executor import Measure, Progress, store_run
from dplab.plan import ExperimentPlan, RunKey
from dplab.store.runstore import RunStore


def run(plan: ExperimentPlan, keys: list[RunKey], measure: Measure, store: RunStore,
        say: Progress) -> None:
    """Measure each run in ``keys`` in order, each stored before the next one starts."""
    results_dir = Path(store.results_dir)
    for key in keys:
        store_run(store, measure(key, plan.point_plan(key.point).run, results_dir, say), say)
