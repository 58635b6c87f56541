"""An experiment's axes expanded: one checked Experiment (without axes) per combination of
the axes' values, each labelled by its point.

An axis is found by its name and ``of``:

- ``topology: [multipath, grid]``: the topology (catalog names, or topology mappings);
- ``tier: [1, 2]``: the tier;
- ``NAME: {of: topology, values: [...]}``: the topology parameter NAME;
- ``NAME: {of: LABEL-or-INDEX, values: [...]}``: parameter NAME of one workload, or option
  NAME of the plane whose column label is LABEL;
- ``NAME: [...]``: parameter NAME of every workload whose kind has it;
- as a path: ``workloads.1.rate_mbit`` (or ``workloads.LABEL.rate_mbit``),
  ``planes.1.options.mode`` (or ``planes.LABEL.options.mode``), ``topology.params.hosts``.

Each point's experiment goes through the same validation as the file itself, so a value a
field does not accept is an error naming the point and the field.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from dplab.spec.loader import SpecError, describe_errors
from dplab.spec.model import AXIS_TIER, AXIS_TOPOLOGY, Axis, AxisValue, Experiment, value_label


@dataclass(frozen=True)
class AxisPoint:
    """One axis' value at one point of the matrix."""

    axis: str
    label: str  # value_label(value)
    number: float | None  # the value when it is a number (numeric axes get curves)


@dataclass(frozen=True)
class Point:
    """One combination of axis values (no axes: the one empty point)."""

    values: tuple[AxisPoint, ...] = ()

    @property
    def label(self) -> str:
        return ", ".join(f"{v.axis}={v.label}" for v in self.values)

    @property
    def slug(self) -> str:
        """The point in run ids and folder names: rate_mbit=10-topology=grid."""
        return "-".join(f"{v.axis}={_safe(v.label)}" for v in self.values)


TargetKind = Literal["topology", "tier", "topology_param", "workloads", "plane"]


@dataclass(frozen=True)
class Target:
    """Where an axis' values go in the experiment."""

    kind: TargetKind
    param: str  # the parameter, option or topology parameter
    indices: tuple[int, ...] = ()  # workloads, or the plane


def expand(exp: Experiment, source: str = "<experiment>") -> list[tuple[Point, Experiment]]:
    """Every point of the axes (first axis slowest, in file order) with its experiment."""
    if not exp.axes:
        return [(Point(), exp)]
    targets = {name: _target(exp, name, axis, source) for name, axis in exp.axes.items()}
    base = exp.model_dump(exclude={"axes"}, exclude_unset=True)
    points = []
    for combo in itertools.product(*(axis.values for axis in exp.axes.values())):
        data = _copy(base)
        values = []
        for (name, target), value in zip(targets.items(), combo, strict=True):
            _apply(data, exp, target, value)
            values.append(AxisPoint(name, value_label(value), _number(value)))
        point = Point(tuple(values))
        try:
            points.append((point, Experiment.model_validate(data)))
        except ValidationError as exc:
            raise SpecError(describe_errors(f"{source}: at axis point {point.label}",
                                            exc)) from None
    return points


def _target(exp: Experiment, name: str, axis: Axis, source: str) -> Target:
    where = f"{source}: axes.{name}"
    if "." in name:
        name, axis = _path(exp, name, axis, where)
    if name in (AXIS_TOPOLOGY, AXIS_TIER) and axis.of is None:
        return Target(name, name)  # type: ignore[arg-type]  # the name is the kind
    if axis.of == AXIS_TOPOLOGY:
        return Target("topology_param", name)
    if axis.of is None:
        having = tuple(i for i, w in enumerate(exp.workloads) if name in type(w).model_fields)
        if not having:
            raise SpecError(f"{where}: no workload has a parameter {name!r}; say whose it is "
                            "with 'of' (a workload label, a plane label or 'topology')")
        return Target("workloads", name, having)
    columns = [p.column for p in exp.planes]
    labels = [w.label for w in exp.workloads]
    if axis.of in columns and axis.of in labels:
        raise SpecError(f"{where}.of: {axis.of!r} is both a plane and a workload label")
    if axis.of in columns:
        return Target("plane", name, (columns.index(axis.of),))
    try:
        index = exp.workload_index(axis.of, f"{where}.of")
    except ValueError as exc:
        raise SpecError(f"{exc} (nor a plane: {', '.join(columns)})") from None
    workload = exp.workloads[index]
    if name not in type(workload).model_fields:
        raise SpecError(f"{where}: workload {axis.of!r} ({workload.kind}) has no parameter "
                        f"{name!r}")
    return Target("workloads", name, (index,))


def param_name(axis: str) -> str:
    """The parameter an axis varies: its name, or a path's last part."""
    return axis.rsplit(".", 1)[-1]


def _path(exp: Experiment, name: str, axis: Axis, where: str) -> tuple[str, Axis]:
    """``workloads.1.rate_mbit`` is ``rate_mbit: {of: 1}``, ``planes.1.options.mode`` is
    ``mode: {of: <plane 1's label>}``, ``topology.params.hosts`` is ``hosts: {of: topology}``."""
    parts = name.split(".")
    if axis.of is not None:
        raise SpecError(f"{where}: a path names whose parameter it is; drop 'of'")
    if len(parts) == 3 and parts[0] == "workloads":
        ref: str | int = int(parts[1]) if parts[1].isdigit() else parts[1]
        return parts[2], axis.model_copy(update={"of": ref})
    if len(parts) == 4 and parts[0] == "planes" and parts[2] == "options":
        column = parts[1]
        if column.isdigit():
            if int(column) >= len(exp.planes):
                raise SpecError(f"{where}: no plane {column} (there are {len(exp.planes)}, "
                                "counted from 0)")
            column = exp.planes[int(column)].column
        return parts[3], axis.model_copy(update={"of": column})
    if len(parts) == 3 and parts[:2] == ["topology", "params"]:
        return parts[2], axis.model_copy(update={"of": AXIS_TOPOLOGY})
    raise SpecError(f"{where}: a path is workloads.N.PARAM, planes.N.options.OPTION or "
                    "topology.params.PARAM (N: an index or a label)")


def _apply(data: dict[str, Any], exp: Experiment, target: Target, value: AxisValue) -> None:
    if target.kind == "topology":
        data["topology"] = dict(value) if isinstance(value, dict) else {"name": value}
    elif target.kind == "tier":
        data["tier"] = value
    elif target.kind == "topology_param":
        data["topology"]["params"] = {**data["topology"].get("params", {}), target.param: value}
    elif target.kind == "workloads":
        for index in target.indices:
            data["workloads"][index][target.param] = value
    else:
        plane = data["planes"][target.indices[0]]
        # The column stays the plane's own, whatever the option does to its default name.
        plane["label"] = exp.planes[target.indices[0]].column
        plane["options"] = {**plane.get("options", {}), target.param: value}


def _copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_copy(v) for v in data]
    return data


def _number(value: AxisValue) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _safe(label: str) -> str:
    """Run ids name folders (pcap/<run_id>/): only characters a path takes as they are."""
    return re.sub(r"[^A-Za-z0-9.,=+_]", "_", label)
