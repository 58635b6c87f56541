"""The study's report: ``study.html`` in the results folder, opening with the paper, the
profile and the substitutions, then the study's tables (ours beside the paper's published
figures, each table's own substitutions under it), and a link to each scenario's full lab
report (summary, every table, plots)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from dplab.analysis import analyse
from dplab.analysis.points import analyse_points
from dplab.report import REPORT_FILE
from dplab.report.html import STYLE
from dplab.report.tables import NOTES, to_html
from dplab.store import RunStore
from dplab.study.model import Published, Scenario, Study
from dplab.study.run import scenario_results
from dplab.study.tables import StudyTable, study_tables
from dplab.study003 import curve_report

STUDY_REPORT = "study.html"
PERFORMANCE_DIR = "performance"  # study 003's curves.json and figures, in the results

PUBLISHED_NOTE = (
    "Columns headed 'published (paper, ...)' are the paper's own figures as printed, "
    "transcribed into {file}: its conditions, not ours, produced them (see the "
    "substitutions). They are shown for reading beside ours; nothing in the lab compares "
    "them with a measurement or aims at them."
)


def tables(study: Study, published: Published, results: Path) -> list[StudyTable]:
    """Every layout table of the study from what each scenario's results folder stores."""
    out = []
    for layout in study.tables:
        scenario = next((s for s in study.scenarios if s.name == layout.scenario),
                        study.scenarios[0])
        folder = scenario_results(study, scenario, results)
        if not (folder / "experiment.json").exists():
            continue  # that scenario has not run yet
        store = RunStore.open(folder)
        out += study_tables(layout, published, analyse(store), analyse_points(store))
    return out


def write(study: Study, published: Published, results: Path, profile: str,
          feasibility: dict[str, dict[str, Any]] | None = None,
          curves: dict[str, Any] | None = None) -> Path:
    """Write ``study.html`` (the scenarios' own reports are built by dplab.report);
    ``feasibility``: study 003's matrix cells (dplab.study003.matrix), a section of its own;
    ``curves``: study 003's stored performance curves (dplab.study003.curves), drawn into
    a section of their own (figures in ``performance/`` beside the report)."""
    path = results / STUDY_REPORT
    built = tables(study, published, results)
    links = "".join(
        f'<li><a href="{_esc(_report_link(study, s, results))}">{_esc(s.name)}</a>: '
        f"{_esc(s.file)}</li>" for s in study.scenarios)
    sections = [
        f"<h1>Study {study.number}: {_esc(study.title)}</h1>",
        f"<p>{_esc(study.paper)}</p>",
        f"<p>Profile: <b>{_esc(profile)}</b>. Full lab reports (summary, every table, plots):"
        f"</p><ul>{links}</ul>",
        "<h2>Planes</h2>" + _list(f"ours {ours} ↔ the paper's {theirs}"
                                  for ours, theirs in study.planes.items()),
        "<h2>Substitutions</h2>" + _list(study.substitutions),
        "<h2>Tables</h2>",
        f'<p class="note">{_esc(PUBLISHED_NOTE.format(file=_published_file(study)))} '
        f"{_esc(published.note)}</p>",
        f'<p class="note">{_esc(NOTES)}</p>',
        "".join(_table(t) for t in built) or "<p>No stored runs yet.</p>",
        _feasibility(feasibility) if feasibility else "",
        curve_report.html_section(curves, results / PERFORMANCE_DIR) if curves else "",
    ]
    document = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Study "
                f"{study.number}</title><style>{STYLE}</style></head><body>"
                f"{''.join(sections)}</body></html>")
    path.write_text(document, encoding="utf-8")
    return path


def _feasibility(cells: dict[str, dict[str, Any]]) -> str:
    """The matrix as the runs' packets decided it: ✓, or ✗ with what was seen instead."""
    kinds = list(next(iter(cells.values())))
    head = "".join(f"<th>{_esc(k.upper())}</th>" for k in kinds)
    rows = "".join(f"<tr><td>{_esc(case)}</td>"
                   + "".join(f"<td>{_esc(row[k].text())}</td>" for k in kinds) + "</tr>"
                   for case, row in cells.items())
    return ("<h2>Feasibility matrix (from the packets of this run's tests)</h2>"
            f"<table><tr><th>use case</th>{head}</tr>{rows}</table>"
            '<p class="note">Every cell is decided by what a real run observed: packets '
            "received or not, the programs' counters, the target's SNMP counters "
            "(feasibility/matrix.json has each cell's evidence).</p>")


def _table(table: StudyTable) -> str:
    notes = _list(table.substitutions, "note") if table.substitutions else ""
    return to_html(table.table) + notes


def _published_file(study: Study) -> str:
    return f"studies/{study.number}/published.yaml"


def _report_link(study: Study, scenario: Scenario, results: Path) -> str:
    return (scenario_results(study, scenario, results) / REPORT_FILE).relative_to(
        results).as_posix()


def _list(items, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<ul{cls}>" + "".join(f"<li>{_esc(i)}</li>" for i in items) + "</ul>"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)
