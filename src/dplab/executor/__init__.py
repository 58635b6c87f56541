"""Where a plan's runs execute: ``local`` (one after another in this process) or ``ray``
(one Ray task per run, at most one run per node). Both call the same measurement function
(``runner.measure_run``) and hand what it measured to the driver, which stores it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from dplab.fidelity import FidelityRecord
from dplab.plan import RunKey, RunPlan
from dplab.planes.base import SeriesPoint
from dplab.store.runstore import RunStore
from dplab.substrate.cpu_idle import IdleRecord
from dplab.workloads.flows import FlowResult

Progress = Callable[[str], None]


@dataclass
class MeasuredRun:
    """Everything ``RunStore.add_run`` stores for one run; picklable, so a Ray task can
    return it to the driver."""

    run_id: str
    plane_label: str
    repetition: int
    status: str
    error: str | None
    started: float
    duration_s: float
    plane_stats: dict[str, float | None]
    results: list[FlowResult]
    cpu_idle: IdleRecord | None  # None: the run never reached a node
    plane_series: list[SeriesPoint]
    plane_info: dict[str, str]  # how the plane forwards; empty: not known
    axes: list[Any]
    fidelity: FidelityRecord | None

    def store_fields(self) -> dict[str, Any]:
        """add_run's keyword arguments (shallow: dataclasses.asdict would copy the results
        into plain dicts)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


# one run measured: key, its point's plan, the folder its pcaps/frames/logs go under, progress
Measure = Callable[[RunKey, RunPlan, Path, Progress], MeasuredRun]


def store_run(store: RunStore, run: MeasuredRun, say: Progress) -> None:
    """Store one measured run in the driver's results folder, then say if it failed."""
    store.add_run(**run.store_fields())
    if run.error:  # after storing: whatever the message holds, the failed run is on disk
        say(f"{run.run_id}: FAILED: {run.error}")
