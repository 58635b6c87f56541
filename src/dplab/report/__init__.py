"""Reports regenerated from stored data alone: terminal tables, PNG plots, report.html, CSV."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from dplab.analysis import analyse
from dplab.report import cpu_idle
from dplab.report.html import write_html
from dplab.report.plane_series import plane_series_plots
from dplab.report.plots import (
    TIMESERIES_METRICS,
    box_plots,
    cdf_plots,
    resource_box_plots,
    timeseries,
)
from dplab.report.tables import NOTES, comparison_tables, to_rich
from dplab.store import RunStore

REPORT_FILE = "report.html"
PLOTS_DIR = "plots"
CSV_DIR = "csv"


def build(results_dir: Path) -> Path:
    """Rebuild tables, plots, CSV export and ``report.html`` in ``results_dir``; returns the
    report's path."""
    results_dir = Path(results_dir)
    store = RunStore.open(results_dir)
    analysis = analyse(store)
    plots_dir = results_dir / PLOTS_DIR
    intervals, flows = store.rows("intervals"), store.rows("flows")
    series = [timeseries(intervals, flows, analysis, metric,
                         plots_dir / f"{metric.split('_')[0]}_timeseries.png")
              for metric in TIMESERIES_METRICS]
    resources = resource_box_plots(analysis, plots_dir / "resources.png")
    plots = [p for p in series if p] + box_plots(analysis, plots_dir) \
        + cdf_plots(intervals, flows, analysis, plots_dir) + ([resources] if resources else [])
    plane_series = plane_series_plots(store.rows("plane_series"), analysis, plots_dir)
    raw = sorted(results_dir.glob("*.parquet")) + store.export_csv(results_dir / CSV_DIR)
    return write_html(results_dir / REPORT_FILE, store.experiment, analysis,
                      comparison_tables(analysis), plots, raw, store.rows("runs"),
                      plane_series)


def print_tables(results_dir: Path, console: Console | None = None) -> None:
    """Print the comparison tables and any failed runs of a stored experiment."""
    console = console or _wide_console()
    store = RunStore.open(Path(results_dir))
    analysis = analyse(store)
    tables = comparison_tables(analysis)
    console.print(Text(f"CPU idle: {cpu_idle.summary(store.rows('runs'))}", "dim"))
    for table in tables:
        console.print(to_rich(table))
    if tables:
        console.print(NOTES, style="dim")
    else:
        console.print("No measured values stored.")
    for run in analysis.failed_runs:
        console.print(Text.assemble(("failed run", "red"),
                                    f" {run['run_id']}: {run['error'] or ''}"))


def _wide_console() -> Console:
    """A terminal keeps its own width; piped output (logs, CI) gets room for every column."""
    console = Console()
    return console if console.is_terminal else Console(width=160)
