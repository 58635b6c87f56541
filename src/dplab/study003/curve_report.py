"""Study 003's performance part from stored data alone (curves.json, dplab.study003.curves):
the tables (markdown for docs, HTML for the study report) and the study's figures as PNGs:

- Fig. 5: echo RTT min, p50, p99 and max of the pings (and the share of the load answered)
  against the offered 64 B load (its mean), a line per technology, the metric's 95 % CI as
  error bars (the offered load's own CI is in the tables); axes fit the means, long bars
  run out of the panel;
- Fig. 6: memory per switch, the P4 switch process's RSS against the kernel's accounting of
  the XDP switch's BPF programs and maps;
- Fig. 7: each core's user, system and softirq time against the offered load while
  forwarding, the P4 switch processes' own CPU and the time the kernel spent in the XDP
  programs;
- Fig. 10: lines of code per use case in both technologies.

A cell is the mean of the repetitions that measured it ± its 95 % CI half-width (Student t);
failed repetitions and unmeasured values are left out, never counted as zero. The idle point
(rate 0) offers no load, so it is drawn at 0 kpps offered. A point where the sender fell
short of the set rate (curves.host_limited, from the stored set and offered rates) is
limited by the host, not the plane: the tables say so in a column of its own and the
figures ring it.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dplab.analysis.stats import Description, describe
from dplab.report.html import embedded_image
from dplab.report.plots import save_png
from dplab.study003.curves import HOST_LIMIT_MARGIN, host_limited

Columns = tuple[tuple[str, str], ...]
MEMORY = ("memory_kib", "memory KiB per switch")
HOST_LIMITED = ("host_limited", "host-limited")
ECHO_COLUMNS: Columns = (
    ("kpps", "set kpps"), ("offered_kpps", "offered kpps"), HOST_LIMITED,
    ("answered_pct", "load answered %"), ("rtt_min_ms", "RTT min ms"),
    ("rtt_p50_ms", "RTT p50 ms"), ("rtt_p99_ms", "RTT p99 ms"), ("rtt_max_ms", "RTT max ms"),
    ("ping_loss_pct", "ping loss %"), MEMORY)
RTT = (("rtt_min_ms", "min"), ("rtt_p50_ms", "p50"), ("rtt_p99_ms", "p99"),
       ("rtt_max_ms", "max"))
CPU_FIELDS = (("user", "usr"), ("system", "sys"), ("softirq", "si"))
ECHO_NOTE = ("Echo latency of 10 ms pings under a load of 64 B echo requests (the load's own "
             "replies counted at h1):")
FORWARD_NOTE = (
    "CPU and memory while forwarding 64 B UDP frames h1 -> h2 through two routers (CPU % over "
    "the sender's lifetime; per core the whole machine's, the sender and everything else "
    "included). The P4 switch CPU is not work alone: a switch spins through gaps between "
    "packets up to a limit instead of sleeping (switch/src/dataplane/arrivals.rs), so from "
    "about 10 kpps on it holds most of a core whatever the rate; dplab-pktblast also spins "
    "between frames on the sender's core. XDP runs in the receiving veth's NAPI poll: its "
    "work is softirq; the XDP programs' CPU is the time the kernel spent inside the "
    "switches' programs (its BPF run-time statistics), without the redirect and transmit "
    "they ask for:")
LOC_NOTE = "Lines of code (non-blank, non-comment) of each use case's program:"
CELLS_NOTE = (
    "Cells: the mean over the repetitions ± its 95 % CI half-width (Student t); '-' = not "
    "measured (a kernel plane has no switch process nor memory of its own). Memory per "
    "switch: the P4 switch process's RSS, the XDP switch's BPF programs and maps as the "
    "kernel accounts them (memlock). Host-limited: yes when the sender offered less than "
    f"{100 * (1 - HOST_LIMIT_MARGIN):.0f} % of the set rate in a repetition: the sender "
    "shares the cores with the switches, so the host, not the plane, set that point's load "
    "(ringed in the figures); '-' at the idle point.")
MEANS = "means"  # the gid of a curve's line through its means (not its error bars)
HOST_RING = "host-limited (sender short of the set rate)"  # legend entry of the rings
FIGURES = ("fig5_echo_latency.png", "fig6_memory.png", "fig7_cpu.png", "fig10_loc.png")

# setup label -> one dict per rate: "kpps" (the set rate), "failed" (repetitions that
# failed), "host_limited" (point_host_limited) and every metric as a Description over the
# repetitions that measured it
Described = dict[str, list[dict[str, Any]]]


def described(curve: dict[str, dict[str, Any]]) -> Described:
    out: Described = {}
    for label, setup in curve.items():
        rows = []
        for point in setup["points"]:
            ok = [run for run in point["runs"] if "error" not in run]
            names = dict.fromkeys(name for run in ok for name in run if name != HOST_LIMITED[0])
            rows.append({"kpps": point["kpps"], "failed": len(point["runs"]) - len(ok),
                         HOST_LIMITED[0]: point_host_limited(point["kpps"], ok),
                         **{name: describe([r[name] for r in ok if r.get(name) is not None])
                            for name in names}})
        out[label] = rows
    return out


def point_host_limited(kpps: float, runs: list[dict[str, Any]]) -> bool | None:
    """Whether any repetition's sender fell short of the set rate (curves.host_limited),
    judged from the stored set and offered rates; None when no repetition tells (the idle
    point, no offered rate measured)."""
    verdicts = [v for run in runs if (v := host_limited(kpps, run.get("offered_kpps")))
                is not None]
    return any(verdicts) if verdicts else None


def forward_columns(data: dict[str, Any]) -> Columns:
    """The forwarding table's columns, a usr/sys/si triple per core the run measured."""
    keys = {key for setup in data["forward"].values() for point in setup["points"]
            for run in point["runs"] for key in run}
    cores = sorted({m.group(1) for key in keys if (m := re.fullmatch(r"(cpu\d+)_user", key))},
                   key=lambda core: int(core[3:]))
    return (("kpps", "set kpps"), ("offered_kpps", "offered kpps"), HOST_LIMITED,
            ("forwarded_kpps", "forwarded kpps"),
            ("switch_cpu_pct", "switch process CPU % (2 switches)"),
            ("program_cpu_pct", "XDP programs' CPU % (2 switches)"),
            *((f"{core}_{name}", f"{core} {short} %") for core in cores
              for name, short in CPU_FIELDS), MEMORY)


def table_rows(rows: Described, columns: Columns) -> list[list[str]]:
    return [[label, *(cell(point.get(key)) for key, _ in columns)]
            for label, points in rows.items() for point in points]


def cell(value: float | bool | Description | None) -> str:
    """A number, or a mean with its 95 % CI half-width when repetitions give one; yes or no
    for a verdict (host-limited); '-' when nothing was measured."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Description):
        if value.mean is None:
            return "-"
        text = _number(value.mean)
        return text if value.ci95 is None else f"{text} ± {_number(value.ci95)}"
    return "-" if value is None else _number(value)


def _number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def loc_rows(data: dict[str, Any]) -> list[list[str]]:
    return [[row["case"], row["p4_program"] or "- (no P4 program)",
             "-" if row["p4_lines"] is None else str(row["p4_lines"]), row["xdp_program"],
             f"{row['xdp_lines']} (+{row['xdp_header_lines']})"] for row in data["loc"]]


LOC_HEAD = ["use case", "P4 program", "P4 lines", "XDP program", "XDP lines (+ lab headers)"]


def failures(data: dict[str, Any]) -> list[str]:
    """Every setup that never came up and every failed repetition, with its error."""
    out = []
    for part in ("echo", "forward"):
        for label, setup in data[part].items():
            if setup["error"]:
                out.append(f"{label}: {setup['error']}")
            out += [f"{label} at {point['kpps']:g} kpps: {run['error']}"
                    for point in setup["points"] for run in point["runs"] if "error" in run]
    return out


def markdown(data: dict[str, Any]) -> str:
    """The three tables with their notes, as docs/studies/003-xdp.md shows them."""
    parts = [CELLS_NOTE, ECHO_NOTE,
             _markdown_table(["plane", *(t for _, t in ECHO_COLUMNS)],
                             table_rows(described(data["echo"]), ECHO_COLUMNS)),
             FORWARD_NOTE]
    columns = forward_columns(data)
    parts += [_markdown_table(["plane", *(t for _, t in columns)],
                              table_rows(described(data["forward"]), columns)),
              LOC_NOTE, _markdown_table(LOC_HEAD, loc_rows(data))]
    failed = failures(data)
    if failed:
        parts.append("Failed (left out of every cell): " + "; ".join(failed))
    return "\n\n".join(parts)


def _markdown_table(head: Sequence[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])


def html_section(data: dict[str, Any], out_dir: Path) -> str:
    """The study report's performance section: settings, the figures (embedded) and the
    tables they were drawn from."""
    s, m = data["settings"], data["machine"]
    rates = ", ".join(f"{r:g}" for r in s["rates_kpps"])
    intro = (f"{s['frame_bytes']} B frames at {rates} kpps, {s['seconds']:g} s per point, "
             f"{s['repetitions']} repetition(s), on {m['host']} (kernel {m['kernel']}, "
             f"{m['cores']} cores; load {m['load_1min_end']:.1f} at the end). The sender "
             "shares the cores with the switches: read the offered rate beside each figure.")
    columns = forward_columns(data)
    failed = failures(data)
    return "".join([
        "<h2>Performance: P4 and XDP side by side (Figs. 5, 6, 7, 10)</h2>",
        f'<p class="note">{_esc(intro)} {_esc(CELLS_NOTE)}</p>',
        "".join(embedded_image(p) for p in figures(data, out_dir)),
        f"<p>{_esc(ECHO_NOTE)}</p>",
        _html_table(["plane", *(t for _, t in ECHO_COLUMNS)],
                    table_rows(described(data["echo"]), ECHO_COLUMNS)),
        f"<p>{_esc(FORWARD_NOTE)}</p>",
        _html_table(["plane", *(t for _, t in columns)],
                    table_rows(described(data["forward"]), columns)),
        f"<p>{_esc(LOC_NOTE)}</p>", _html_table(LOC_HEAD, loc_rows(data)),
        (f'<p class="note">Failed (left out of every cell and figure): '
         f"{_esc('; '.join(failed))}</p>" if failed else ""),
    ])


def _html_table(head: Sequence[str], rows: list[list[str]]) -> str:
    top = "".join(f"<th>{_esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{top}</tr>{body}</table>"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def figures(data: dict[str, Any], out_dir: Path) -> list[Path]:
    """Figs. 5, 6, 7 and 10 as PNGs in ``out_dir`` (the names of FIGURES)."""
    echo, forward = described(data["echo"]), described(data["forward"])
    return [latency_figure(echo, out_dir / FIGURES[0]),
            memory_figure({**echo, **forward}, out_dir / FIGURES[1]),
            cpu_figure(forward, forward_columns(data), out_dir / FIGURES[2]),
            loc_figure(data["loc"], out_dir / FIGURES[3])]


def _offered(point: dict[str, Any]) -> Description | None:
    """x of a point: the offered load as measured; the idle point offers none at all."""
    if point["kpps"] == 0:
        return Description(1, 0.0, None, 0.0)
    offered = point.get("offered_kpps")
    return offered if offered is not None and offered.mean is not None else None


def _line(ax: Axes, points: list[dict[str, Any]], metric: str, label: str,
          color: str) -> bool:
    """One setup's metric against the offered load (its mean), the metric's 95 % CI as
    error bars (a setup keeps its ``color`` in every panel); False when no point measured
    it."""
    drawn = []
    for point in points:
        x, y = _offered(point), point.get(metric)
        if x is not None and y is not None and y.mean is not None:
            drawn.append((x, y, bool(point.get(HOST_LIMITED[0]))))
    if not drawn:
        return False
    # In the order of the load actually offered: a sender that fell short of a higher set
    # rate must not draw the line back over itself.
    drawn.sort(key=lambda xy: xy[0].mean)
    # The offered load's own CI is in the tables: as bars too, a sender's wide spread would
    # cross every curve. No CI (one repetition): no bar, not a claim of zero spread.
    bars = ax.errorbar([x.mean for x, _, _ in drawn], [y.mean for _, y, _ in drawn],
                       yerr=[y.ci95 or 0.0 for _, y, _ in drawn], marker="o", capsize=3,
                       label=label, color=color)
    bars.lines[0].set_gid(MEANS)
    _ring_host_limited(ax, [(x, y) for x, y, limited in drawn if limited])
    return True


def _ring_host_limited(ax: Axes, points: list[tuple[Description, Description]]) -> None:
    """A ring around each point the host limited, one legend entry per panel."""
    if not points:
        return
    labelled = HOST_RING in ax.get_legend_handles_labels()[1]
    ax.scatter([x.mean for x, _ in points], [y.mean for _, y in points], s=160,
               facecolors="none", edgecolors="red", linewidths=1.5, zorder=3,
               label=None if labelled else HOST_RING)


def latency_figure(echo: Described, path: Path) -> Path:
    fig = Figure(figsize=(12, 7))
    axes = fig.subplots(2, 3)
    panels = [*((key, f"ping RTT {name} (ms)") for key, name in RTT),
              ("answered_pct", "load answered (%)"), ("ping_loss_pct", "ping loss (%)")]
    for ax, (metric, title) in zip(axes.flat, panels, strict=False):
        drawn = [_line(ax, points, metric, label, f"C{i}")
                 for i, (label, points) in enumerate(echo.items())]
        if metric.startswith("rtt") and any(drawn):
            ax.set_yscale("log")  # P4's ms against XDP's tens of µs: one linear axis hides one
        _decorate(ax, title, "offered load (kpps of 64 B)")
    axes.flat[-1].set_visible(False)
    fig.suptitle("Fig. 5: echo server latency under load (mean ± 95 % CI)")
    return save_png(fig, path)


def cpu_figure(forward: Described, columns: Columns, path: Path) -> Path:
    cores = list(dict.fromkeys(key.rsplit("_", 1)[0] for key, _ in columns
                               if re.fullmatch(r"cpu\d+_\w+", key)))
    fig = Figure(figsize=(12, 3.2 * (len(cores) + 1)))
    axes = fig.subplots(len(cores) + 1, 3, squeeze=False)
    for row, core in enumerate(cores):
        for col, (name, _short) in enumerate(CPU_FIELDS):
            ax = axes[row, col]
            for i, (label, points) in enumerate(forward.items()):
                _line(ax, points, f"{core}_{name}", label, f"C{i}")
            _decorate(ax, f"{core} {name} (% of the core)", "offered load (kpps of 64 B)",
                      ytop=100)
    last = axes[len(cores)]
    for i, (label, points) in enumerate(forward.items()):
        _line(last[0], points, "switch_cpu_pct", label, f"C{i}")
        _line(last[1], points, "program_cpu_pct", label, f"C{i}")
        _line(last[2], points, "forwarded_kpps", label, f"C{i}")
    _decorate(last[0], "P4 switch processes' CPU (% of one core)",
              "offered load (kpps of 64 B)")
    _decorate(last[1], "XDP programs' run time (% of one core)", "offered load (kpps of 64 B)")
    _decorate(last[2], "forwarded (kpps)", "offered load (kpps of 64 B)")
    fig.suptitle("Fig. 7: CPU while forwarding through two routers (whole machine per core)")
    return save_png(fig, path)


def memory_figure(setups: Described, path: Path) -> Path:
    """One bar per setup with memory of its own: its mean over every point and repetition."""
    labels, means, errors = [], [], []
    for label, points in setups.items():
        values = [d.mean for p in points if (d := p.get("memory_kib")) and d.mean is not None]
        if values:
            whole = describe(values)
            labels.append(label)
            means.append(whole.mean)
            errors.append(whole.ci95 or 0.0)
    fig = Figure(figsize=(9, 1 + 0.6 * max(len(labels), 1)))
    ax = fig.subplots()
    if labels:
        ax.barh(labels, means, xerr=errors, capsize=3)
        ax.set_xscale("log")  # MiB of process against KiB of maps
        for y, value in enumerate(means):
            ax.annotate(f"{value:,.0f} KiB" if value >= 10 else f"{value:.2g} KiB",
                        (value, y), xytext=(4, 0), textcoords="offset points", va="center")
    ax.set_xlabel("KiB per switch (P4: switch process RSS; XDP: BPF programs + maps)")
    ax.set_title("Fig. 6: memory per switch")
    ax.grid(alpha=0.3, axis="x")
    return save_png(fig, path)


def loc_figure(loc: list[dict[str, Any]], path: Path) -> Path:
    fig = Figure(figsize=(10, 4.5))
    ax = fig.subplots()
    positions = range(len(loc))
    width = 0.38
    # No P4 program: no bar (NaN draws nothing) and a label saying so, never a zero.
    p4 = [math.nan if row["p4_lines"] is None else row["p4_lines"] for row in loc]
    ax.bar([x - width / 2 for x in positions], p4, width, label="P4")
    own = [row["xdp_lines"] for row in loc]
    ax.bar([x + width / 2 for x in positions], own, width, label="XDP (C)")
    ax.bar([x + width / 2 for x in positions], [row["xdp_header_lines"] for row in loc],
           width, bottom=own, label="XDP: lab headers it includes", color="C1", alpha=0.4,
           hatch="//")
    for x, row in zip(positions, loc, strict=True):
        if row["p4_lines"] is None:
            ax.annotate("no P4\nprogram", (x - width / 2, 0), xytext=(0, 2),
                        textcoords="offset points", ha="center", fontsize="x-small")
    ax.set_xticks(list(positions), [row["case"] for row in loc], rotation=20, ha="right",
                  fontsize="small")
    ax.set_ylabel("lines of code (non-blank, non-comment)")
    ax.set_title("Fig. 10: lines of code per use case")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3, axis="y")
    return save_png(fig, path)


def _decorate(ax: Axes, title: str, xlabel: str, ytop: float | None = None) -> None:
    """Title, labels, legend, and limits that fit the means: with few repetitions a 95 % CI
    can be many times the mean, and axes fitted to the bars would squash every curve
    (the bars run on out of the panel instead). ``ytop``: a fixed top (100 for a core)."""
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)
    if not ax.get_legend_handles_labels()[0]:
        ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center", color="0.4")
        return
    ax.legend(fontsize="x-small")
    means = [line for line in ax.lines if line.get_gid() == MEANS]
    xs = [float(x) for line in means for x in line.get_xdata()]
    ys = [float(y) for line in means for y in line.get_ydata()]
    ax.set_xlim(0, max(xs) * 1.1 or 1.0)  # the offered load: never below 0
    if ax.get_yscale() == "log":
        positive = [y for y in ys if y > 0]
        if positive:
            ax.set_ylim(min(positive) / 2, max(positive) * 2)
    else:
        ax.set_ylim(min(0.0, *ys), ytop if ytop is not None else max(ys) * 1.2 or 1.0)
