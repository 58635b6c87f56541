"""One self-contained ``report.html``: metadata, every table, every plot (embedded), failures."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from dplab.analysis import Analysis
from dplab.analysis.metrics import metric_sort_key
from dplab.report import (
    axis_plots,
    counter_series,
    cpu_idle,
    fidelity,
    plane_info,
    plane_series,
)
from dplab.report import summary as report_summary
from dplab.report.plots import TIMESERIES_METRICS
from dplab.report.tables import NOTES, TableData, metric_label, to_html
from dplab.spec.model import value_label

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 75em; color: #222; }
table { border-collapse: collapse; margin: 1em 0 2em; }
caption { text-align: left; font-weight: bold; padding: .3em 0; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f2f2f2; }
td.ns { color: #777; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dt { font-weight: bold; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0 1.5em; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
.note { color: #555; font-size: .9em; }
.host-bound { background: #fff4d6; border: 1px solid #e0b84a; padding: .5em 1em; }
img.frame { width: 24em; margin: 0; }
"""

PLOTS_NOTE = (
    "cdf_*: distribution of per-interval values (every 1 s interval of every flow of the ok "
    "runs). resources: sampled every 0.5 s during traffic; cpu_user/sys_pct and mem_rss_mb "
    "are the plane's own processes in its switch namespaces (% of one core; peak RSS MiB), "
    "missing for planes without user-space processes (bridge, router); host_*_pct are the "
    "whole machine (% of all cores, including anything else running), where the kernel "
    "data path shows up as softirq."
)


def write_html(path: Path, experiment: dict[str, Any], analysis: Analysis,
               tables: list[TableData], plots: list[Path], raw_files: list[Path],
               runs: list[dict[str, Any]], series_plots: list[Path] | None = None,
               fidelity_figures: dict[str, str] | None = None,
               flows: list[dict[str, Any]] | None = None,
               how_planes_ran: dict[str, str] | None = None,
               summary: tuple[list[str], Path | None] | None = None) -> Path:
    """Write the report; plots are embedded as base64 so the file stands alone, raw data
    files are linked relative to the report. ``runs``: the store's runs table;
    ``series_plots``: the planes' time series (a section only when there are any);
    ``fidelity_figures``: run_id -> its fidelity figures (``report.fidelity``); ``flows``:
    the store's flows table (its recorded paths, a section only when there are any);
    ``how_planes_ran``: plane label -> its configuration (``report.plane_info``);
    ``summary``: its lines and figure (report.summary), first after the title and any
    host-bound warning."""
    spec = experiment.get("spec", {})
    title = f"dplab report: {spec.get('name', path.parent.name)}"
    sections = [
        f"<h1>{_esc(title)}</h1>",
        f"<p>{_esc(spec.get('description', ''))}</p>",
        _host_bound(runs),
        _summary(summary),
        _metadata(experiment, analysis, runs),
        _how_planes_ran(how_planes_ran or {}),
        "<h2>Comparison tables</h2>",
        f'<p class="note">{_esc(NOTES)}</p>',
        "".join(to_html(t) for t in tables) or "<p>No measured values stored.</p>",
        f'<p class="note">{_esc(fidelity.NOTE)}</p>' if fidelity.marked_planes(runs) else "",
        "<h2>Plots</h2>",
        f'<p class="note">{_esc(_plots_note(plots))}</p>',
        _plots_by_metric(plots, [row.metric for row in analysis.rows]),
        _plane_series(series_plots or []),
        _flow_paths(flows or [], runs),
        _video_frames(path.parent, analysis, runs),
        _failed_runs(analysis),
        _failed_flows(analysis),
        _runs(runs, fidelity_figures or {}),
        _raw_data(path.parent, raw_files),
        "<h2>Experiment file (as validated)</h2>",
        f"<details><summary>spec</summary><pre>{_esc(json.dumps(spec, indent=2))}</pre>"
        "</details>",
    ]
    document = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{_esc(title)}"
                f"</title><style>{STYLE}</style></head><body>{''.join(sections)}</body></html>")
    path.write_text(document, encoding="utf-8")
    return path


def _summary(summary: tuple[list[str], Path | None] | None) -> str:
    if summary is None:
        return ""
    lines, figure = summary
    items = "".join(f"<li>{_esc(line)}</li>" for line in lines)
    return ("<h2>Summary</h2>" + f'<p class="note">{_esc(report_summary.NOTE)}</p>'
            + (f"<ul>{items}</ul>" if items else "<p>No plane to compare with the baseline."
                                                 "</p>")
            + (embedded_image(figure) if figure else ""))


def _plots_by_metric(plots: list[Path], metrics: list[str]) -> str:
    """The plots under a heading per metric (the table's metric order), the rest last."""
    if not plots:
        return "<p>Nothing to plot.</p>"
    groups: dict[str, list[Path]] = {}
    for plot in plots:
        groups.setdefault(_plot_metric(plot.stem, metrics), []).append(plot)
    order = sorted(groups, key=lambda m: (m == OTHER_PLOTS, metric_sort_key(m)))
    return "".join(f"<h3>{_esc(metric_label(m) if m != OTHER_PLOTS else m)}</h3>"
                   + "".join(embedded_image(p) for p in groups[m]) for m in order)


OTHER_PLOTS = "other"


def _plot_metric(stem: str, metrics: list[str]) -> str:
    """The metric a plot shows, from its file name (box_<m>, cdf_<m>, axis_<axis>_<m>,
    <first word of m>_timeseries[_<point>])."""
    for metric in TIMESERIES_METRICS:  # named by the metric's first word only
        if stem.startswith(f"{metric.split('_')[0]}_timeseries"):
            return metric
    for metric in sorted(set(metrics), key=len, reverse=True):
        if stem.endswith(metric):
            return metric
    return OTHER_PLOTS


def _plots_note(plots: list[Path]) -> str:
    """With axes, what the axis plots are, then what every report's plots are."""
    axes = any(p.name.startswith("axis_") for p in plots)
    return f"{axis_plots.NOTE} {PLOTS_NOTE}" if axes else PLOTS_NOTE


def _metadata(experiment: dict[str, Any], analysis: Analysis,
              runs: list[dict[str, Any]]) -> str:
    spec = experiment.get("spec", {})
    failed = len(analysis.failed_runs)
    items = {
        "planes": ", ".join(analysis.planes) + (f" (baseline: {analysis.baseline})"
                                                 if analysis.planes else ""),
        "axes": "; ".join(
            f"{name}: {', '.join(value_label(v) for v in (axis or {}).get('values', []))}"
            for name, axis in (spec.get("axes") or {}).items()) or "none",
        "repetitions": spec.get("repetitions", "?"),
        "failed runs": failed,
        "CPU idle": cpu_idle.summary(runs),
        "host": experiment.get("host", "?"),
        "kernel": experiment.get("kernel", "?"),
        "started": experiment.get("created", "?"),
        "last updated": experiment.get("updated", "?"),
        "dplab version": experiment.get("dplab_version", "?"),
    }
    rows = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(str(v))}</dd>" for k, v in items.items())
    return f"<h2>Experiment</h2><dl>{rows}</dl>"


def _how_planes_ran(described: dict[str, str]) -> str:
    if not described:
        return ""
    rows = "".join(f"<dt>{_esc(plane)}</dt><dd>{_esc(text)}</dd>"
                   for plane, text in described.items())
    return (f'<h2>How each plane ran</h2><p class="note">{_esc(plane_info.NOTE)}</p>'
            f"<dl>{rows}</dl>")


def embedded_image(path: Path) -> str:
    """A PNG as an <img> inside the page (base64), so the report stands alone."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{_esc(path.stem)}" src="data:image/png;base64,{data}">' \
           f"<figcaption>{_esc(path.name)}</figcaption></figure>"


COUNTER_PLOTS = ("controller_series", "link_rx")  # report.counter_series' file names


def _plane_series(plots: list[Path]) -> str:
    """The planes' own series (plane_series_*) and the counters sampled through the runs
    (report.counter_series), each note when its plots are there."""
    if not plots:
        return ""
    notes = [note for prefix, note in (("plane_series_", plane_series.NOTE),
                                       (COUNTER_PLOTS, counter_series.NOTE))
             if any(p.name.startswith(prefix) for p in plots)]
    return ("<h2>Plane time series</h2>"
            + "".join(f'<p class="note">{_esc(note)}</p>' for note in notes)
            + "".join(embedded_image(p) for p in plots))



FRAMES_NOTE = (
    "The frame each video viewer showed at the workload's frame_at seconds (right) next to "
    "the frame sent at that moment (left); first stored repetition of each plane. rtp: "
    "decoded by the viewer's ffmpeg from what arrived; http: the content at the viewer's "
    "playout position (behind by startup delay and stalls). frame_diff_pct in the tables "
    "measures the difference."
)


def _video_frames(report_dir: Path, analysis: Analysis, stored: list[dict[str, Any]]) -> str:
    """Sent vs received frame per video flow, from frames/<run_id>/<flow>-sent|received.png."""
    sections = []
    for plane in analysis.planes:
        runs = [report_dir / "frames" / r["run_id"]
                for r in sorted(stored, key=lambda r: r["repetition"])
                if r["plane"] == plane and (report_dir / "frames" / r["run_id"]).is_dir()]
        if not runs:
            continue
        rows = "".join(
            f"<tr><td>{_esc(sent.name.removesuffix('-sent.png'))}</td>"
            f"<td>{_frame(sent)}</td><td>{_frame(sent.with_name(sent.name[:-8] + 'received.png'))}"
            "</td></tr>"
            for sent in sorted(runs[0].glob("*-sent.png"))
        )
        sections.append(f"<h3>{_esc(plane)} ({_esc(runs[0].name)})</h3>"
                        + _table(("flow", "sent", "viewer saw"), rows))
    if not sections:
        return ""
    return "<h2>Video frames</h2>" + f'<p class="note">{_esc(FRAMES_NOTE)}</p>' + "".join(sections)


def _frame(png: Path) -> str:
    if not png.exists():
        return "missing"
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return f'<img class="frame" alt="{_esc(png.stem)}" src="data:image/png;base64,{data}">'


def _failed_runs(analysis: Analysis) -> str:
    if not analysis.failed_runs:
        return "<h2>Failed runs</h2><p>None.</p>"
    rows = "".join(
        f"<tr><td>{_esc(r['run_id'])}</td><td>{_esc(r['plane'])}</td>"
        f"<td>{r['repetition']}</td><td>{_esc(r['error'] or '')}</td></tr>"
        for r in analysis.failed_runs
    )
    return ("<h2>Failed runs</h2><p class=\"note\">Left out of every figure above.</p>"
            + _table(("run", "plane", "repetition", "error"), rows))


def _host_bound(runs: list[dict[str, Any]]) -> str:
    """The warning at the top: which runs measured the host rather than the plane."""
    lines = fidelity.summary_lines(runs)
    if not lines:
        return ""
    items = "".join(f"<li>{_esc(line.strip())}</li>" for line in lines[1:])
    return f'<div class="host-bound"><p>{_esc(lines[0])}</p><ul>{items}</ul></div>'


def _runs(runs: list[dict[str, Any]], figures: dict[str, str]) -> str:
    """Every stored run with its status, time, the idle behaviour it ran under and whether
    the host limited it (with what the fidelity monitor measured)."""
    rows = "".join(
        f"<tr><td>{_esc(r['run_id'])}</td><td>{_esc(r['status'])}</td>"
        f"<td>{r['duration_s']:.1f}</td><td>{_esc(r.get('cpu_idle') or cpu_idle.NOT_RECORDED)}"
        f"</td><td>{_esc(cpu_idle.target_text(r.get('cpu_wakeup_target_us')))}</td>"
        f"<td>{_esc(cpu_idle.share_text(r.get('cpu_idle_polled_share')))}</td>"
        f"<td>{_esc(fidelity.verdict_text(r))}</td>"
        f"<td>{_esc(figures.get(r['run_id'], '—'))}</td></tr>"
        for r in runs
    )
    return ("<h2>Runs</h2><details><summary>every stored run</summary>"
            + _table(("run", "status", "duration (s)", "CPU idle", "wake-up latency target",
                      "idle time spent polling", "host-bound", "fidelity figures"), rows)
            + "</details>")


def _flow_paths(flows: list[dict[str, Any]], runs: list[dict[str, Any]]) -> str:
    """Per plane and flow, each path its ok runs recorded and in how many of them."""
    ok = {r["run_id"] for r in runs if r["status"] == "ok"}
    counted: dict[tuple[str, str, str, str], int] = {}
    for f in flows:
        if f["run_id"] in ok and f.get("path"):
            key = (f["plane"], f["flow_id"], f"{f['src']} → {f['dst']}", f["path"])
            counted[key] = counted.get(key, 0) + 1
    if not counted:
        return ""
    rows = "".join(
        f"<tr><td>{_esc(plane)}</td><td>{_esc(flow)}</td><td>{_esc(hosts)}</td>"
        f"<td>{_esc(' → '.join(path.split()))}</td><td>{n}</td></tr>"
        for (plane, flow, hosts, path), n in sorted(counted.items()))
    return ("<h2>Flow paths</h2><p class=\"note\">The switches each flow's packets crossed, "
            "as the plane's rules counted them (planes that cannot tell are not listed), and "
            "in how many ok runs.</p>" + _table(("plane", "flow", "hosts", "path", "runs"), rows))


def _failed_flows(analysis: Analysis) -> str:
    if not analysis.failed_flows:
        return ""
    rows = "".join(
        f"<tr><td>{_esc(f['run_id'])}</td><td>{_esc(f['flow_id'])}</td>"
        f"<td>{_esc(f['src'])} → {_esc(f['dst'])}</td><td>{_esc(f['error'] or '')}</td></tr>"
        for f in analysis.failed_flows
    )
    return ("<h2>Failed flows in ok runs</h2><p class=\"note\">Their values are counted as "
            "missing.</p>" + _table(("run", "flow", "hosts", "error"), rows))


def _table(headers: tuple[str, ...], rows_html: str) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows_html}</tbody></table>"


def _raw_data(report_dir: Path, files: list[Path]) -> str:
    links = "".join(
        f'<li><a href="{_esc(p.relative_to(report_dir).as_posix())}">'
        f"{_esc(p.relative_to(report_dir).as_posix())}</a></li>"
        for p in files
    )
    return f"<h2>Raw data</h2><ul>{links}</ul>"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)
