"""A study's scenario at one profile: ``full`` is the file as written (the study's own
parameters); ``quick`` and ``smoke`` apply the study's Profile to it before it is checked,
so a profile goes through exactly the validation and plan of the file itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml

from dplab import safe_yaml, spec
from dplab.spec import Experiment
from dplab.spec.loader import MAX_FILE_BYTES, MAX_VALUES
from dplab.study.model import Profile, Scenario, StudyError

ProfileName = Literal["full", "quick", "smoke"]
PROFILES: tuple[ProfileName, ...] = ("full", "quick", "smoke")


def experiment(scenario: Scenario, root: Path, profile: ProfileName) -> Experiment:
    """The scenario's experiment at ``profile`` (paths in it stay relative to ``root``)."""
    path = root / scenario.file
    full = spec.load(path)  # the file itself first: its errors name its own lines
    if profile == "full":
        return full
    data = safe_yaml.load(safe_yaml.read(path, MAX_FILE_BYTES), str(path), MAX_VALUES)
    changes: Profile = getattr(scenario, profile)
    where = f"{path} ({profile} profile of the study)"
    _apply(data, changes, where)
    return spec.parse(yaml.safe_dump(data, sort_keys=False), source=where)


def _apply(data: dict[str, Any], changes: Profile, where: str) -> None:
    if changes.repetitions is not None:
        data["repetitions"] = changes.repetitions
    workloads = data.get("workloads") or []
    for ref, fields in changes.workloads.items():
        workloads[_workload_index(workloads, ref, where)].update(fields)
    axes = data.get("axes") or {}
    for name, values in changes.axes.items():
        if name not in axes:
            raise StudyError(f"{where}: axes.{name}: the scenario has no such axis "
                             f"(it has: {', '.join(axes) or 'none'})")
        axis = axes[name]
        axes[name] = {**axis, "values": values} if isinstance(axis, dict) else values


def _workload_index(workloads: list[dict[str, Any]], ref: str, where: str) -> int:
    labels = [w.get("label") for w in workloads]
    if ref in labels:
        return labels.index(ref)
    if ref.isdigit() and int(ref) < len(workloads):
        return int(ref)
    raise StudyError(f"{where}: workloads.{ref}: no workload with that label or index "
                     f"(labels: {', '.join(str(lb) for lb in labels if lb) or 'none'})")
