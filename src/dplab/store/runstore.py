"""Persistent store of one experiment's runs: Parquet tables plus ``experiment.json``.

Tables (long format, one row per value; ``value`` is null when not measured):

- ``runs``: run_id, plane, repetition, status ("ok" | "failed"), error, started, duration_s,
  cpu_idle (the experiment's setting), cpu_wakeup_target_us (PM QoS target read during the
  run), cpu_idle_polled_share (share of the run's idle CPU time spent polling; null when
  not measurable or stored before these columns existed), host_bound (the host, not the
  plane, limited the run; null: not monitored), host_bound_reasons ("; "-separated)
- ``flows``: run keys + flow_id, kind, src, dst, ok, error, params (JSON), path (the
  switches the flow's src -> dst packets crossed, in order, space-separated, as the plane's
  rules counted them; null where the plane cannot tell)
- ``summaries``: run keys + flow_id, kind, src, dst, metric, value
- ``intervals``: run keys + flow_id, kind, src, dst, t_start, t_end, metric, value
- ``plane_stats``: run keys + stat, value
- ``run_axes``: run keys + axis, value (as written in run ids and tables), number (the
  value when it is a number, else null): the axis point a run measured; a run of an
  experiment without axes has no rows here
- ``fidelity``: run keys + measure, subject, value: what ``dplab.fidelity`` measured
  during the run's traffic (cpu_busy_pct per core, cpu_saturated_share, each paced
  sender's requested and achieved rate, each shaped link end's capacity, overflow time and
  carried rate, drops per kind in total and per interface that dropped any)
- ``plane_series``: run keys + t (s since the run's traffic began; negative: before it),
  series (``<metric>:<subject>``, e.g. ``rate_bps:s3:class1``, see the plane), value:
  what a plane recorded over time (the p4 plane's QoS loop: one row per metric per turn)
- ``plane_info``: run keys + key, value (text): how the plane ran (e.g. OVS's datapath and
  port type, the P4 switch's transmit mode; ``dplab.planes.base.Plane.info``)

Every table is rewritten after each run, atomically (temp file + rename), and ``runs`` is
written last: a run appears in ``runs`` only once all its rows are on disk, so a crash at
any point loses nothing already stored, and a half-written run is simply run again (adding
a run_id that is already stored replaces its rows).

Stores written before a table or column existed still open: a missing table file loads as
an empty table (``plane_series``, ``run_axes``, ``plane_info``), a missing column
(ADDED_COLUMNS) as nulls; the next run stored writes both in the current shape.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from dplab.store import folder
from dplab.store.rows import (
    AxisPointLike,
    CpuIdleLike,
    FidelityLike,
    FlowResultLike,
    SeriesPointLike,
    StoreError,
    cpu_idle_columns,
    fidelity_columns,
    fidelity_rows,
    flow_row,
    interval_rows,
    plane_info_rows,
    plane_series_rows,
    plane_stat_rows,
    run_axis_rows,
    summary_rows,
)

EXPERIMENT_FILE = "experiment.json"
STATUSES = ("ok", "failed")

_RUN_KEYS = [("run_id", pa.string()), ("plane", pa.string()), ("repetition", pa.int64())]
_FLOW_KEYS = [("flow_id", pa.string()), ("kind", pa.string()), ("src", pa.string()),
              ("dst", pa.string())]
_VALUE = [("metric", pa.string()), ("value", pa.float64())]

# Under which idle behaviour a run was measured (dplab.substrate.cpu_idle.IdleRecord).
_CPU_IDLE = [("cpu_idle", pa.string()), ("cpu_wakeup_target_us", pa.float64()),
             ("cpu_idle_polled_share", pa.float64())]
# Whether the emulating host limited the run (dplab.fidelity.FidelityRecord).
_FIDELITY = [("host_bound", pa.bool_()), ("host_bound_reasons", pa.string())]

SCHEMAS: dict[str, pa.Schema] = {
    "runs": pa.schema(_RUN_KEYS + [("status", pa.string()), ("error", pa.string()),
                                   ("started", pa.float64()), ("duration_s", pa.float64())]
                      + _CPU_IDLE + _FIDELITY),
    "flows": pa.schema(_RUN_KEYS + _FLOW_KEYS + [("ok", pa.bool_()), ("error", pa.string()),
                                                 ("params", pa.string()),
                                                 ("path", pa.string())]),
    "summaries": pa.schema(_RUN_KEYS + _FLOW_KEYS + _VALUE),
    "intervals": pa.schema(_RUN_KEYS + _FLOW_KEYS + [("t_start", pa.float64()),
                                                     ("t_end", pa.float64())] + _VALUE),
    "plane_stats": pa.schema(_RUN_KEYS + [("stat", pa.string()), ("value", pa.float64())]),
    "plane_series": pa.schema(_RUN_KEYS + [("t", pa.float64()), ("series", pa.string()),
                                           ("value", pa.float64())]),
    "run_axes": pa.schema(_RUN_KEYS + [("axis", pa.string()), ("value", pa.string()),
                                       ("number", pa.float64())]),
    "fidelity": pa.schema(_RUN_KEYS + [("measure", pa.string()), ("subject", pa.string()),
                                       ("value", pa.float64())]),
    "plane_info": pa.schema(_RUN_KEYS + [("key", pa.string()), ("value", pa.string())]),
}
# Columns added later: a table stored without them loads with nulls there. (Tables added
# later, like plane_series, need nothing here: a missing file loads as an empty table.)
ADDED_COLUMNS = {"runs": {name for name, _ in _CPU_IDLE + _FIDELITY}, "flows": {"path"}}
# "runs" last: it marks a run as stored only after its other rows are on disk.
WRITE_ORDER = ("flows", "summaries", "intervals", "plane_stats", "plane_series", "run_axes",
               "fidelity", "plane_info", "runs")


class RunStore:
    """The stored runs of one experiment in ``results_dir``.

    Constructing a store on a directory that already holds tables loads them, so a runner
    that restarts can ask ``completed_runs()`` and skip what is done. A store opened for
    writing makes the directory and marks it as the lab's when it holds nothing foreign
    (``dplab.store.folder``): only a marked directory may be discarded by ``--fresh``.
    """

    def __init__(self, results_dir: Path, *, writing: bool = True) -> None:
        self.results_dir = Path(results_dir)
        if writing:
            try:
                folder.claim(self.results_dir)
            except OSError as exc:
                raise StoreError(f"{self.results_dir}: cannot make the results folder: "
                                 f"{exc.strerror}") from None
        self._tables = {name: self._load(name) for name in SCHEMAS}
        self._experiment = self._load_experiment()

    @classmethod
    def open(cls, results_dir: Path) -> RunStore:
        """Open an existing experiment's results for reading (e.g. to regenerate a report)."""
        path = Path(results_dir)
        if not (path / EXPERIMENT_FILE).is_file() and not (path / "runs.parquet").is_file():
            raise StoreError(f"{path}: no stored experiment here "
                             f"(neither {EXPERIMENT_FILE} nor runs.parquet exists)")
        return cls(path, writing=False)

    # -- experiment metadata -------------------------------------------------------------

    @property
    def experiment(self) -> dict[str, Any]:
        """experiment.json as a dict: spec, host, kernel, created, dplab_version."""
        return dict(self._experiment)

    def write_experiment(self, spec: dict[str, Any]) -> None:
        """Record the experiment's spec and where/when it runs.

        Resuming into a directory that holds a *different* experiment is refused, because
        mixing the runs of two experiments would make every comparison wrong.
        """
        spec_json = json.loads(json.dumps(spec, default=str))
        stored = self._experiment.get("spec")
        if stored is not None and stored != spec_json:
            raise StoreError(f"{self.results_dir}: holds the results of a different experiment; "
                             "use a new results directory")
        self._experiment = {
            "spec": spec_json,
            "host": platform.node(),
            "kernel": platform.release(),
            "created": self._experiment.get("created", _now_iso()),
            "updated": _now_iso(),
            "dplab_version": _dplab_version(),
        }
        text = json.dumps(self._experiment, indent=2, sort_keys=True)
        _atomic_write(self.results_dir / EXPERIMENT_FILE, lambda tmp: tmp.write_text(text))

    # -- runs ----------------------------------------------------------------------------

    def add_run(
        self,
        run_id: str,
        plane_label: str,
        repetition: int,
        status: str,
        error: str | None,
        started: float,
        duration_s: float,
        plane_stats: dict[str, float | None],
        results: list[FlowResultLike],
        cpu_idle: CpuIdleLike | None = None,
        plane_series: list[SeriesPointLike] | None = None,
        axes: list[AxisPointLike] | None = None,
        fidelity: FidelityLike | None = None,
        plane_info: dict[str, str] | None = None,
    ) -> None:
        """Store one run and write every table to disk before returning; ``cpu_idle`` says
        under which idle behaviour it ran (None: not recorded), ``plane_series`` what the
        plane recorded over time (None or empty: nothing), ``axes`` the run's axis point,
        ``fidelity`` whether the host limited it (None: not monitored), ``plane_info`` how
        the plane ran (None or empty: not known)."""
        if status not in STATUSES:
            raise StoreError(f"run {run_id!r}: status must be one of {STATUSES}, got {status!r}")
        if status == "failed" and not error:
            raise StoreError(f"run {run_id!r}: a failed run needs an error message")
        keys = {"run_id": run_id, "plane": plane_label, "repetition": int(repetition)}
        new_rows = {
            "runs": [{**keys, "status": status, "error": error,
                      "started": float(started), "duration_s": float(duration_s),
                      **cpu_idle_columns(run_id, cpu_idle), **fidelity_columns(fidelity)}],
            "flows": [flow_row(keys, r) for r in results],
            "summaries": [row for r in results for row in summary_rows(keys, r)],
            "intervals": [row for r in results for row in interval_rows(keys, r)],
            "plane_stats": plane_stat_rows(keys, plane_stats),
            "plane_series": plane_series_rows(keys, plane_series or []),
            "run_axes": run_axis_rows(keys, axes or []),
            "fidelity": fidelity_rows(keys, fidelity),
            "plane_info": plane_info_rows(keys, plane_info or {}),
        }
        # Convert everything first: bad input must leave the stored tables untouched.
        added = {name: pa.Table.from_pylist(rows, schema=SCHEMAS[name])
                 for name, rows in new_rows.items()}
        for name, table in added.items():
            kept = self._tables[name].filter(pc.field("run_id") != run_id)
            self._tables[name] = pa.concat_tables([kept, table])
        self._write_all()

    def completed_runs(self) -> set[str]:
        """run_ids stored with status "ok": a resuming runner skips these."""
        return {row["run_id"] for row in self.rows("runs") if row["status"] == "ok"}

    # -- reading -------------------------------------------------------------------------

    def rows(self, table: str) -> list[dict[str, Any]]:
        """A copy of one table's rows as dicts (None where a value is null)."""
        if table not in SCHEMAS:
            raise StoreError(f"unknown table {table!r}; tables are {sorted(SCHEMAS)}")
        return self._tables[table].to_pylist()

    def export_csv(self, out_dir: Path) -> list[Path]:
        """Write every table as ``<table>.csv`` into ``out_dir``; empty cells mean null."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for name in SCHEMAS:
            path = out / f"{name}.csv"
            table = self._tables[name]
            _atomic_write(path, lambda tmp, t=table: pacsv.write_csv(t, tmp))
            paths.append(path)
        return paths

    # -- files ---------------------------------------------------------------------------

    def _write_all(self) -> None:
        for name in WRITE_ORDER:
            table = self._tables[name]
            path = self.results_dir / f"{name}.parquet"
            _atomic_write(path, lambda tmp, t=table: pq.write_table(t, tmp))

    def _load(self, name: str) -> pa.Table:
        path = self.results_dir / f"{name}.parquet"
        if not path.is_file():
            return SCHEMAS[name].empty_table()
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"{path}: cannot read stored table: {exc}") from exc
        for column in sorted(ADDED_COLUMNS.get(name, set()) - set(table.column_names)):
            table = table.append_column(column, pa.nulls(len(table),
                                                         SCHEMAS[name].field(column).type))
        missing = set(SCHEMAS[name].names) - set(table.column_names)
        if missing:
            raise StoreError(f"{path}: stored table lacks columns {sorted(missing)}")
        try:
            return table.select(SCHEMAS[name].names).cast(SCHEMAS[name])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise StoreError(f"{path}: stored columns have unexpected types: {exc}") from exc

    def _load_experiment(self) -> dict[str, Any]:
        path = self.results_dir / EXPERIMENT_FILE
        if not path.is_file():
            return {}
        try:
            return json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise StoreError(f"{path}: cannot read experiment metadata: {exc}") from exc


def _atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Write via ``write(tmp_path)`` then rename over ``path``: readers never see half a file.
    A folder that cannot be written (read-only, full) is a StoreError; the file as it was
    before stays."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"{path}: cannot write: {exc.strerror or exc}; what was stored "
                         "before is kept") from None


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _dplab_version() -> str:
    try:
        return metadata.version("dplab")
    except metadata.PackageNotFoundError:
        return "unknown"
