"""Experiment files in, typed objects out, with errors that name the file and the field."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from dplab import safe_yaml
from dplab.spec.model import Experiment

# Far above any real experiment file (the repository's largest is a few KB), far below what
# would strain memory: an alias bomb is refused while its node graph is still file-sized.
MAX_FILE_BYTES = 1_000_000
MAX_VALUES = 100_000


class SpecError(ValueError):
    """A bad experiment file; the message names the file, the field and what was expected."""


def load(path: str | Path) -> Experiment:
    path = Path(path)
    try:
        text = safe_yaml.read(path, MAX_FILE_BYTES)
    except safe_yaml.YamlLimitError as exc:
        raise SpecError(str(exc)) from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the experiment file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise SpecError(f"{path}: line {line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}"
                        f" at offset {exc.start}); save the file as UTF-8") from None
    return parse(text, source=str(path))


def parse(text: str, source: str = "<experiment>") -> Experiment:
    try:
        data = safe_yaml.load(text, source, MAX_VALUES)
    except safe_yaml.YamlLimitError as exc:
        raise SpecError(str(exc)) from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" line {where.line + 1}, column {where.column + 1}" if where else ""
        raise SpecError(f"{source}:{at}: not valid YAML: {_problem(exc)}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a mapping of experiment fields at the top level")
    _refuse_non_finite(data, source, [])
    _expand_plane_shorthand(data)
    try:
        return Experiment.model_validate(data)
    except ValidationError as exc:
        raise SpecError(describe_errors(source, exc)) from None


def _expand_plane_shorthand(data: dict) -> None:
    """Accept ``planes: [bridge, ovs]`` for planes without options."""
    planes = data.get("planes")
    if isinstance(planes, list):
        data["planes"] = [{"kind": p} if isinstance(p, str) else p for p in planes]


def _refuse_non_finite(value: Any, source: str, where: list[str]) -> None:
    """YAML's .inf and .nan anywhere, free-form plane options included (the models refuse
    them too, but cannot see inside ``dict[str, Any]``)."""
    if isinstance(value, float) and not math.isfinite(value):
        field = ".".join(where) or "(top level)"
        raise SpecError(f"{source}: {field}: must be a finite number (got {value})")
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            _refuse_non_finite(child, source, [*where, str(key)])


def _problem(exc: yaml.YAMLError) -> str:
    return str(getattr(exc, "problem", None) or exc)


def describe_errors(source: str, exc: ValidationError) -> str:
    """Every problem pydantic found, one line each: the field's path and what it expects."""
    lines = [f"{source}: {exc.error_count()} problem(s) in the experiment file"]
    for err in exc.errors():
        # Discriminated unions add the tag to the path ("workloads.0.tcp.duration"); keep it,
        # it tells the user which workload kind the field was checked against.
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  {field}: {_expected(err)}")
    return "\n".join(lines)


def _expected(err: dict[str, Any]) -> str:
    kind = err["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check the spelling)"
    message = err["msg"].removeprefix("Value error, ")
    got = err.get("input")
    if kind in ("literal_error", "union_tag_invalid") or not isinstance(got, dict | list):
        return f"{message} (got {got!r})"
    return message
