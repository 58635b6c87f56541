"""What a study is, as the repository writes it down: ``studies/NNN/study.yaml`` (the
scenario, its profiles, the report's layout, the substitutions) and
``studies/NNN/published.yaml`` (the paper's own figures, transcribed).

The published figures are the paper's, shown beside ours for the reader; nothing compares
them with a measurement, checks a run against them or tunes anything toward them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dplab import safe_yaml
from dplab.spec.loader import describe_errors

STUDY_FILE = "study.yaml"
PUBLISHED_FILE = "published.yaml"
MAX_FILE_BYTES = 1_000_000
MAX_VALUES = 100_000


class StudyError(ValueError):
    """A bad study folder; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Profile(_Strict):
    """Changes to the scenario for a shorter run. Every field is optional; a workload is named
    by its label or index, an axis by its name (its values are replaced)."""

    repetitions: Annotated[int, Field(ge=1)] | None = None
    workloads: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="workload label or index -> fields replaced")
    axes: dict[str, list[Any]] = Field(
        default_factory=dict, description="axis name -> the values kept")


class TableLayout(_Strict):
    """One table of the study's report: one traffic class, its metrics as rows, one table per
    axis point that matches ``where``, the paper's figures of ``published`` beside ours."""

    title: str
    rows: Literal["metrics", "axis"] = Field(
        "metrics", description="metrics: a row per metric, a table per axis point (the "
        "paper's per-case tables); axis: a row per value of 'axis', a table per metric")
    axis: str | None = Field(None, description="rows: axis -- the axis whose values are rows")
    scenario: str | None = Field(None, description="whose results (a scenario name); "
                                 "default: the study's first scenario")
    traffic: str = Field(description="our traffic class (the workload kind, e.g. tcp)")
    metrics: Annotated[list[str], Field(min_length=1)]
    where: dict[str, str] = Field(
        default_factory=dict, description="axis -> value label; default: every point")
    published: list[str] = Field(
        default_factory=list, description="refs of published.yaml entries shown beside ours")
    substitutions: list[str] = Field(
        default_factory=list, description="what differs from the paper for this table")

    @model_validator(mode="after")
    def _axis_rows(self) -> TableLayout:
        if (self.rows == "axis") != (self.axis is not None):
            raise ValueError("'axis' names the axis whose values are rows: give it with "
                             "rows: axis, and only then")
        return self


class Scenario(_Strict):
    """One scenario file of the study; a study with several (use cases run apart) stores
    each in its own results subfolder."""

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")]
    file: str = Field(description="the scenario file, relative to the repository's root")
    quick: Profile = Field(default_factory=Profile)
    smoke: Profile = Field(default_factory=Profile, description="seconds long: for tests")


class CurvesProfile(_Strict):
    """Study 003's performance part at one profile (dplab.study003.curves): the offered
    rates of 64 B frames, the load time of each point and the repetitions of each."""

    rates_kpps: Annotated[list[Annotated[float, Field(ge=0, le=10_000)]],
                          Field(min_length=1)]
    seconds: Annotated[float, Field(gt=0, le=60)]
    repetitions: Annotated[int, Field(ge=1, le=30)]


class Study(_Strict):
    number: Annotated[str, Field(pattern=r"^\d{3}$")]
    title: str
    paper: str = Field(description="the paper, as a reader would look it up")
    scenarios: Annotated[list[Scenario], Field(min_length=1)]
    planes: dict[str, str] = Field(
        default_factory=dict, description="our plane column -> the paper's name for it")
    substitutions: list[str] = Field(
        default_factory=list, description="what the lab runs instead of the paper's set-up")
    tables: list[TableLayout] = Field(default_factory=list)
    feasibility_matrix: bool = Field(
        False, description="the run also derives study 003's feasibility matrix from its own "
        "packet tests of every use case (dplab.study003.matrix) into the study report")
    performance: dict[Literal["full", "quick", "smoke"], CurvesProfile] = Field(
        default_factory=dict, description="profile -> study 003's performance curves "
        "(echo latency, CPU, memory against the offered load) at that profile, into the "
        "study report; a profile not named runs none")
    folder: Path = Path()  # set by load(): where the study's files are

    @model_validator(mode="after")
    def _unique_scenarios(self) -> Study:
        names = [s.name for s in self.scenarios]
        if len(set(names)) != len(names):
            raise ValueError(f"scenario names must be unique, got {names}")
        return self


class PublishedValue(_Strict):
    metric: str = Field(description="our metric the figure is set beside")
    paper_metric: str = Field(description="the paper's row or axis name")
    unit: str
    stat: str = Field("mean", description="what the paper's number is (mean, lowest, ...)")
    at: str | None = Field(None, description="the axis value (as our tables label it) the "
                           "figure was printed for, in tables with a row per axis value")
    values: dict[str, float | str] = Field(
        description="the paper's plane (or column) name -> its printed value")


class PublishedEntry(_Strict):
    ref: str = Field(description="table or figure number, e.g. 'Table 2a' or 'Fig. 11'")
    conditions: str = Field(description="the paper's conditions for these numbers")
    traffic: str
    values: Annotated[list[PublishedValue], Field(min_length=1)]


class Published(_Strict):
    paper: str
    note: str = Field(description="how the numbers were transcribed")
    entries: list[PublishedEntry]

    def entry(self, ref: str) -> PublishedEntry:
        return next(e for e in self.entries if e.ref == ref)


def load_study(folder: Path) -> tuple[Study, Published]:
    """Both files of one study folder, checked against each other."""
    study = _read(folder / STUDY_FILE, Study)
    study = study.model_copy(update={"folder": folder})
    published = _read(folder / PUBLISHED_FILE, Published)
    refs = {e.ref for e in published.entries}
    for index, table in enumerate(study.tables):
        for ref in table.published:
            if ref not in refs:
                raise StudyError(f"{folder / STUDY_FILE}: tables.{index}.published: no entry "
                                 f"{ref!r} in {PUBLISHED_FILE} (it has: {', '.join(sorted(refs))})")
    return study, published


def _read(path: Path, model: type[BaseModel]) -> Any:
    try:
        data = safe_yaml.load(safe_yaml.read(path, MAX_FILE_BYTES), str(path), MAX_VALUES)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, safe_yaml.YamlLimitError) as exc:
        raise StudyError(f"{path}: cannot read: {exc}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise StudyError(describe_errors(str(path), exc)) from None
