"""Reports regenerated from stored data alone: terminal tables, PNG plots, report.html, CSV."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.text import Text

from dplab.analysis import PLANE, Analysis, analyse
from dplab.analysis.points import AxesAnalysis, analyse_points
from dplab.report import cpu_idle, fidelity, plane_info, summary
from dplab.report.axis_plots import axis_curves
from dplab.report.colours import PlaneColours, experiment_colours
from dplab.report.counter_series import counter_series_plots
from dplab.report.html import write_html
from dplab.report.plane_series import plane_series_plots
from dplab.report.plots import (
    TIMESERIES_METRICS,
    Group,
    box_plots,
    cdf_plots,
    has_values,
    resource_box_plots,
    timeseries,
)
from dplab.report.tables import NOTES, TableData, axis_tables, comparison_tables, to_rich
from dplab.store import RunStore

# Box plots go to a second process from this many panels on: starting one (a Python that
# imports matplotlib) costs about as much CPU as drawing a few dozen panels.
SECOND_PROCESS_PANELS = 60
REPORT_FILE = "report.html"
PLOTS_DIR = "plots"
CSV_DIR = "csv"


def build(results_dir: Path, baseline: str | None = None) -> Path:
    """Rebuild tables, plots, CSV export and ``report.html`` in ``results_dir``, each plane
    compared with ``baseline`` (default: the experiment's first plane); returns the
    report's path."""
    results_dir = Path(results_dir)
    store = RunStore.open(results_dir)
    analysis = analyse(store, baseline)
    axes = analyse_points(store, baseline)
    plots_dir = results_dir / PLOTS_DIR
    series, flows = store.rows("plane_series"), store.rows("flows")
    runs = store.rows("runs")
    colours = experiment_colours(store.experiment, runs)
    groups = _groups(store.rows("intervals"), flows, series, analysis, axes)
    plane_series = plane_series_plots(series, analysis, plots_dir) + counter_series_plots(
        groups, axes.planes if axes is not None else analysis.planes, plots_dir, colours)
    raw = sorted(results_dir.glob("*.parquet")) + store.export_csv(results_dir / CSV_DIR)
    return write_html(results_dir / REPORT_FILE, store.experiment, analysis,
                      _tables(analysis, axes, fidelity.marked_planes(runs)),
                      _plots(groups, analysis, axes, plots_dir, colours), raw, runs,
                      plane_series,
                      fidelity.run_figures(store.rows("fidelity"), store.rows("plane_stats")),
                      flows, plane_info.describe(store.rows("plane_info")),
                      _summary(analysis, axes, plots_dir, colours))


def _summary(analysis: Analysis, axes: AxesAnalysis | None, plots_dir: Path,
             colours: PlaneColours) -> tuple[list[str], Path | None]:
    found = summary.findings(analysis, axes)
    baseline = axes.baseline if axes is not None else analysis.baseline if analysis.planes \
        else ""
    return (summary.lines(found, baseline),
            summary.figure(found, baseline, plots_dir / "summary.png", colours))


def _plots(groups: list[Group], analysis: Analysis, axes: AxesAnalysis | None,
           plots_dir: Path, colours: PlaneColours) -> list[Path]:
    """The box plots, CDFs and resource use of the planes, a row per group (axis point:
    pooling points would mix them); with axes also each metric against the axes and the
    time series of each point, else the time series of the planes. Every figure draws a
    plane in its colour of ``colours``."""
    with _box_plotter(groups, plots_dir, colours) as boxes:
        resources = resource_box_plots(groups, plots_dir / "resources.png", colours)
        rest = cdf_plots(groups, plots_dir, colours) + ([resources] if resources else [])
        first = axis_curves(axes, plots_dir, colours) \
            + _point_timeseries(groups, plots_dir, colours) if axes is not None \
            else _timeseries(groups, analysis, plots_dir, colours)
        return first + boxes.result() + rest


@contextmanager
def _box_plotter(groups: list[Group], plots_dir: Path,
                 colours: PlaneColours) -> Iterator[Future[list[Path]]]:
    """The box plots, drawn while the caller draws the rest. Drawing is CPU-bound and
    single-threaded, and box plots (a figure per metric, a panel per traffic class and
    group) are about half of a large report's panels: from SECOND_PROCESS_PANELS on they
    are drawn in a second process, given the groups without their rows (box plots read
    only the analysis: the rows would only cost pickling)."""
    panels = sum(1 for g in groups for row in g.analysis.rows
                 if row.traffic != PLANE and has_values(g.analysis, row.traffic, row.metric))
    if panels < SECOND_PROCESS_PANELS:
        done: Future[list[Path]] = Future()
        done.set_result(box_plots(groups, plots_dir, colours))
        yield done
        return
    # spawn: a fresh interpreter, whose CPU time is the caller's children's
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool.submit(box_plots, [replace(g, intervals=[], flows=[], series=[])
                                      for g in groups], plots_dir, colours)


def _groups(intervals: list[dict], flows: list[dict], series: list[dict],
            analysis: Analysis, axes: AxesAnalysis | None) -> list[Group]:
    """The whole experiment as one group, or a group per axis point."""
    if axes is None:
        return [Group("", "", analysis, intervals, flows, series)]

    def mine(rows: list[dict], run_ids: frozenset[str]) -> list[dict]:
        return [r for r in rows if r["run_id"] in run_ids]

    return [Group(p.point.label, p.point.slug, p.analysis, mine(intervals, p.run_ids),
                  mine(flows, p.run_ids), mine(series, p.run_ids)) for p in axes.points]


def _timeseries(groups: list[Group], analysis: Analysis, plots_dir: Path,
                colours: PlaneColours) -> list[Path]:
    """Without axes, the time series of the planes (the one group: every run)."""
    [whole] = groups
    series = [timeseries(whole.intervals, whole.flows, analysis, metric,
                         plots_dir / f"{metric.split('_')[0]}_timeseries.png", colours)
              for metric in TIMESERIES_METRICS]
    return [p for p in series if p]


def _point_timeseries(groups: list[Group], plots_dir: Path,
                      colours: PlaneColours) -> list[Path]:
    """Per axis point the time series drawn without axes, from that point's runs only."""
    paths = []
    for group in groups:
        for metric in TIMESERIES_METRICS:
            path = timeseries(group.intervals, group.flows, group.analysis, metric, plots_dir
                              / f"{metric.split('_')[0]}_timeseries_{group.slug}.png",
                              colours, heading=group.label)
            paths += [path] if path else []
    return paths


def _tables(analysis: Analysis, axes: AxesAnalysis | None,
            marked: frozenset[str] | set[str]) -> list[TableData]:
    """``marked``: the planes with host-bound runs, whose mean cells carry the mark."""
    return axis_tables(axes, marked) if axes is not None \
        else comparison_tables(analysis, marked)


def print_tables(results_dir: Path, console: Console | None = None,
                 baseline: str | None = None) -> None:
    """Print the comparison tables and any failed runs of a stored experiment."""
    console = console or _wide_console()
    store = RunStore.open(Path(results_dir))
    analysis = analyse(store, baseline)
    runs = store.rows("runs")
    tables = _tables(analysis, analyse_points(store, baseline), fidelity.marked_planes(runs))
    console.print(Text(f"CPU idle: {cpu_idle.summary(runs)}", "dim"))
    for line in fidelity.summary_lines(runs):
        console.print(Text(line, "yellow"))
    for plane, text in plane_info.describe(store.rows("plane_info")).items():
        console.print(Text(f"{plane}: {text}", "dim"))
    for table in tables:
        console.print(to_rich(table))
    if tables:
        console.print(NOTES, style="dim")
        if fidelity.marked_planes(runs):
            console.print(fidelity.NOTE, style="dim")
    else:
        console.print("No measured values stored.")
    for run in analysis.failed_runs:
        console.print(Text.assemble(("failed run", "red"),
                                    f" {run['run_id']}: {run['error'] or ''}"))


def _wide_console() -> Console:
    """A terminal keeps its own width; piped output (logs, CI) gets room for every column."""
    console = Console()
    return console if console.is_terminal else Console(width=160)
