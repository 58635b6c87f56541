"""The `dplab` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

# Text from outside (errors, file and plane names, tools' output) goes in as rich Text,
# never as a markup string: "[/x]" in a label or tc's usage text must print as written.
# log_path=False: a progress line says when and what happened, not which source line said it.
console = Console(stderr=True, log_path=False)
if not console.is_terminal:  # logs and CI: one message per line, never wrapped
    console = Console(stderr=True, width=200, log_path=False)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from dplab.substrate.registry import cleanup_on_signals

    previous = cleanup_on_signals()
    try:
        result = args.handler(args)
    except KeyboardInterrupt:
        _finish_interrupted("interrupted")
        return 130
    except SystemExit as exc:
        if exc.code not in (0, None):
            _finish_interrupted("terminated")
        raise
    except _user_errors() as exc:
        _restore(previous)
        console.print(Text.assemble(("error:", "red"), f" {exc}"))
        return 2
    # Called in a longer-lived process (a test, a notebook), main leaves that process's own
    # handlers in place: a SIGTERM to a child it forks later must not raise SystemExit there.
    _restore(previous)
    return result


def _restore(handlers: dict) -> None:
    import signal

    for signum, handler in handlers.items():
        if handler is not None:  # None: installed outside Python, cannot be put back
            signal.signal(signum, handler)


def _finish_interrupted(how: str) -> None:
    """Finish any teardown the interruption cut short, then say what is true afterwards.
    From here on stop signals are ignored: the process is on its way out, and one landing in
    the interpreter's shutdown (which restores default handlers) would only kill it with
    its exit status lost."""
    import signal

    from dplab.substrate.registry import STOP_SIGNALS, teardown_own

    left = teardown_own()
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if not left:
        console.print(Text(f"{how}: everything this run made has been removed", "yellow"))
        return
    console.print(Text(f"{how}: left behind: {', '.join(left)}; `dplab cleanup` removes it",
                       "red"))


def _user_errors() -> tuple[type[Exception], ...]:
    from dplab.fidelity.calibrate import CalibrationError
    from dplab.p4.errors import P4Error
    from dplab.runner import ExperimentError
    from dplab.spec import SpecError
    from dplab.store import StoreError
    from dplab.study.model import StudyError
    from dplab.topology.catalog import TopologyError

    return (SpecError, ExperimentError, TopologyError, P4Error, StoreError, CalibrationError,
            StudyError)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dplab", description="A data-plane lab: run an experiment file's data planes on "
        "an emulated network with real traffic, and report measured comparisons.",
        epilog="`dplab COMMAND --help` for each command; README.md for experiment files.")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run an experiment file's matrix, print its tables and "
                         "write its report (stored runs are kept: a second run resumes)")
    run.add_argument("experiment", type=Path, help="the experiment file (YAML)")
    run.add_argument("--results", type=Path, metavar="DIR", help="results folder "
                     "(default: the file's results field, else results/<name>)")
    run.add_argument("--fresh", action="store_true", help="delete the results folder (only "
                     "one dplab made) and start over")
    run.add_argument("--ray", metavar="ADDRESS", default=None,
                     help="run on the Ray cluster at ADDRESS (host:port, or 'auto'), one run "
                     "per node offering the resource dplab_slot")
    run.set_defaults(handler=_cmd_run)

    check = sub.add_parser("validate", help="check an experiment file and show the plan "
                           "`run` would run (runs, flows, estimated time), running nothing")
    check.add_argument("experiment", type=Path, help="the experiment file (YAML)")
    check.set_defaults(handler=_cmd_validate)

    calibrate = sub.add_parser("calibrate", help="measure what this machine can emulate "
                               "faithfully; `validate` warns from it")
    calibrate.add_argument("--planes", nargs="+", default=None, metavar="KIND",
                           help="planes to measure (default: bridge ovs p4; router and xdp "
                           "on request)")
    calibrate.add_argument("--short", action="store_true",
                           help="a quick, coarse pass (a two-rate ladder)")
    calibrate.add_argument("-o", "--output", type=Path,
                           help="file (default: per machine, see docs/architecture.md)")
    calibrate.set_defaults(handler=_cmd_calibrate)

    report = sub.add_parser("report", help="rebuild tables and report from stored results, "
                            "running nothing")
    report.add_argument("results", type=Path, help="a results folder `run` wrote")
    report.add_argument("--baseline", metavar="PLANE",
                        help="the plane the others are compared with (default: the first)")
    report.set_defaults(handler=_cmd_report)

    topo = sub.add_parser("topo", help="topologies").add_subparsers(required=True,
                                                                    metavar="ACTION")
    show = topo.add_parser("show", help="draw a topology to PNG or SVG")
    show.add_argument("name", help="catalog name, GraphML/GML file, topohub:KEY or "
                      "Mininet FILE.py[:NAME]")
    show.add_argument("-o", "--output", help="output .png or .svg (default "
                      "results/topologies/NAME.png)")
    show.set_defaults(handler=_cmd_topo_show)
    export = topo.add_parser("export", help="write a topology as a containerlab file")
    export.add_argument("name", help="as for 'show'")
    export.add_argument("-o", "--output", help="output file (default "
                        "results/topologies/NAME.clab.yml)")
    export.set_defaults(handler=_cmd_topo_export)
    listing = topo.add_parser("list", help="list the catalog")
    listing.add_argument("--topohub", action="store_true", help="list topohub's graphs")
    listing.set_defaults(handler=_cmd_topo_list)

    p4 = sub.add_parser("p4", help="P4 programs").add_subparsers(required=True, metavar="ACTION")
    p4c = p4.add_parser("compile", help="compile a P4_16 v1model program to IR + P4Info")
    p4c.add_argument("program", type=Path, help="the P4_16 source file")
    p4c.add_argument("-o", "--output", type=Path, default=Path("build/p4"), metavar="DIR",
                     help="folder for PROGRAM.ir.json, .p4info.txtpb and .p4info.bin "
                     "(default build/p4)")
    p4c.set_defaults(handler=_cmd_p4_compile)

    _study_parser(sub)
    study3 = sub.add_parser("study003", help="study 003: P4 vs XDP").add_subparsers(
        required=True, metavar="ACTION")
    feasible = study3.add_parser("matrix", help="run the five use cases in P4 and XDP and "
                                 "print the feasibility matrix their packets prove")
    feasible.add_argument("--out", type=Path, default=Path("results/study003"),
                          help="folder for matrix.md and matrix.json")
    feasible.set_defaults(handler=_cmd_study003_matrix)

    clean = sub.add_parser("cleanup", help="remove what crashed or killed runs left behind "
                           "(their temp and video-cache staging folders too)")
    clean.set_defaults(handler=_cmd_cleanup)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Each command's --help opens with what it does: the line its parent lists it with
    (argparse shows that line only in the parent's list)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                sub.description = sub.description or listed.get(name)
                _describe(sub)


def _study_parser(sub) -> None:
    study = sub.add_parser("study", help="the studies the lab reproduces").add_subparsers(
        required=True, metavar="ACTION")
    listing = study.add_parser("list", help="each study, its runs and estimated time")
    listing.set_defaults(handler=_cmd_study_list)
    run = study.add_parser("run", help="run a study's scenarios and write its report")
    run.add_argument("number", help="the study's number, e.g. 001")
    profile = run.add_mutually_exclusive_group()
    profile.add_argument("--quick", action="store_const", dest="profile", const="quick",
                         help="every axis point, shorter traffic and fewer repetitions")
    # Seconds long, one point: what the test suite runs; not a profile to read results from.
    profile.add_argument("--smoke", action="store_const", dest="profile", const="smoke",
                         help=argparse.SUPPRESS)
    run.add_argument("--results", type=Path, metavar="DIR",
                     help="results folder (default results/study<NNN>-<profile>)")
    run.add_argument("--dry-run", action="store_true",
                     help="print the plan and its estimated time, run nothing")
    run.set_defaults(handler=_cmd_study_run, profile="full")


def _cmd_study_list(_args: argparse.Namespace) -> int:
    from dplab.study import catalog, run

    for number in catalog.numbers():
        study, _published = catalog.find(number)
        console.print(Text(f"{number}  {study.title}", "bold"))
        for profile in ("full", "quick"):
            plans = run.plans(study, profile, Path("results"))
            runs = sum(len(p.plan.runs) for p in plans)
            seconds = sum(p.plan.estimate_s() for p in plans)
            console.print(Text(f"     {profile:5}: {runs} runs in {len(plans)} scenario(s), "
                               f"estimated {_minutes(seconds)}"))
            curves = study.performance.get(profile)
            if curves is not None:
                console.print(Text(f"            + performance curves: {_curves_size(curves)} "
                                   "(not in the estimate)"))
    return 0


def _curves_size(profile) -> str:
    """A study.model.CurvesProfile in words."""
    return (f"{len(profile.rates_kpps)} rates × {profile.repetitions} repetition(s) × "
            f"{profile.seconds:g} s on each echo and forwarding set-up")


def _minutes(seconds: float) -> str:
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def _cmd_study_run(args: argparse.Namespace) -> int:
    from dplab.study import catalog, run

    study, published = catalog.find(args.number)
    results = (args.results or run.default_results(study, args.profile)).resolve()
    plans = run.plans(study, args.profile, results)
    console.print(Text.assemble((f"study {study.number}", "bold"), f" ({args.profile}) → "
                                f"{results}"))
    for item in plans:
        console.print(Text(f"{item.scenario.name} ({item.scenario.file}) → {item.results}",
                           "bold"))
        _print_plan(item.plan)
    performance = study.performance.get(args.profile)
    if performance is not None:
        from dplab.study.report import PERFORMANCE_DIR

        console.print(Text(f"performance curves → {results / PERFORMANCE_DIR}", "bold"))
        console.print(Text(f"  {_curves_size(performance)}"))
    if args.dry_run:
        return 0
    from dplab import report
    from dplab.study import report as study_report

    with console.status("starting") as status:
        ok = run.run(plans, progress=lambda msg: _progress(status, msg))
    for item in plans:
        console.print(Text(f"report: {report.build(item.results)}"))
    for table in study_report.tables(study, published, results):
        console.print(report.tables.to_rich(table.table))
        for note in table.substitutions:
            console.print(Text(f"  substitution: {note}", "dim"))
    cells = _feasibility(results / "feasibility") if study.feasibility_matrix else None
    curves = _performance(performance, results / study_report.PERFORMANCE_DIR)
    path = study_report.write(study, published, results, args.profile, cells, curves)
    console.print(Text(f"study report: {path}"))
    return 0 if ok else 1


def _performance(profile, out: Path):
    """Study 003's performance curves at ``profile`` (a study.model.CurvesProfile; None: the
    profile has none), measured into ``out`` or, resuming, read back from it."""
    if profile is None:
        return None
    from dplab.study003 import curves

    with console.status("performance curves") as status:
        data, measured = curves.stored_or_measured(
            out, profile.rates_kpps, profile.seconds, profile.repetitions,
            progress=lambda msg: _progress(status, msg))
    console.print(Text(f"performance curves {'stored in' if measured else 'resumed from'} "
                       f"{out / curves.CURVES_FILE}"))
    from dplab.study003.curve_report import failures

    for line in failures(data):
        console.print(Text(f"  failed (left out): {line}", "red"))
    return data


def _cmd_run(args: argparse.Namespace) -> int:
    exp, plan = _plan(args.experiment)
    results = args.results or Path(exp.results or Path("results") / exp.name)
    if args.fresh:
        from dplab.store import folder

        folder.discard(results)
    from dplab import report  # heavy (plotting, every plane): only once the run goes ahead
    from dplab.runner import run_plan

    console.print(Text.assemble((exp.name, "bold"), f" → {results}"))
    _print_plan(plan)
    with console.status("starting") as status:
        store = run_plan(plan, results, progress=lambda msg: _progress(status, msg),
                         ray_address=args.ray)
    report.print_tables(results)
    path = report.build(results)
    console.print(Text(f"report: {path}"))
    return 0 if store.completed_runs() else 1


def _plan(path: Path):
    """The experiment file read and its plan built: the same for `validate` and `run`."""
    from dplab import spec
    from dplab.plan import build_plan

    exp = spec.load(path)
    _warn_if_code(exp)
    return exp, build_plan(exp, str(path))


def _print_plan(plan) -> None:
    for line in plan.summary():
        console.print(Text(line))


def _progress(status, message: str) -> None:
    console.log(Text(message))
    status.update(Text(message))


def _cmd_validate(args: argparse.Namespace) -> int:
    _exp, plan = _plan(args.experiment)
    console.print(Text(f"{args.experiment}: valid"))
    _print_plan(plan)
    _fidelity_warnings(plan)
    return 0


def _fidelity_warnings(plan) -> None:
    """What this machine's calibration says it cannot emulate faithfully, per axis point."""
    from dplab.fidelity import calibrate, feasibility

    path = calibrate.calibration_path()
    calibration = calibrate.load(path)
    if calibration is None:
        console.print(Text(f"no calibration of this machine ({path}): `dplab calibrate` "
                           "measures what it can emulate faithfully", "dim"))
        return
    for point in plan.points:
        where = f"{point.point.label}: " if point.point.values else ""
        for line in feasibility.warnings(point.run.phases, point.run.topo.graph,
                                         [p.kind for p in point.planes], calibration,
                                         str(path)):
            console.print(Text.assemble(("warning:", "yellow"), f" {where}{line}"))


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from dplab.fidelity import calibrate

    figures = calibrate.measure(args.planes or calibrate.PLANES, short=args.short,
                                progress=console.log)
    path = calibrate.save(figures, args.output)
    timer = figures["timer_wakeup_us"]
    print(f"timer wake-up late by p50 {timer['p50']:.0f} µs, p99 {timer['p99']:.0f} µs, "
          f"max {timer['max']:.0f} µs")
    blast = figures["pktblast_max_pps"]
    print(f"pktblast sends at most {blast:,.0f} pps (64 B)" if blast is not None
          else "pktblast's ceiling: not measured (it is measured on the bridge plane)")
    for kind, plane in figures["planes"].items():
        if plane.get("error"):
            print(f"{kind}: {calibrate.faithful_text(plane)}")
        else:
            print(f"{kind}: forwards {calibrate.faithful_text(plane)} faithfully "
                  "(64 B, 1 switch)")
    print(f"calibration: {path}")
    return 0


def _warn_if_code(exp) -> None:
    """A Mininet topology file is a program run as root: say so before it runs (the plan
    builds every topology, those of a topology axis too)."""
    from dplab.topology.from_mininet import code_warning

    axis = exp.axes.get("topology")
    values = axis.values if axis is not None and axis.of is None else []
    files = [exp.topology.mininet] + [v.get("mininet") for v in values if isinstance(v, dict)]
    for path in dict.fromkeys(f for f in files if f is not None):
        console.print(Text(code_warning(path), "yellow"))


def _cmd_report(args: argparse.Namespace) -> int:
    from dplab import report

    report.print_tables(args.results, baseline=args.baseline)
    console.print(Text(f"report: {report.build(args.results, baseline=args.baseline)}"))
    return 0


def _cmd_topo_show(args: argparse.Namespace) -> int:
    from dplab.topology.cli import show

    show(args.name, args.output)
    return 0


def _cmd_topo_export(args: argparse.Namespace) -> int:
    from dplab.topology.cli import export

    export(args.name, args.output)
    return 0


def _cmd_topo_list(args: argparse.Namespace) -> int:
    from dplab.topology import catalog, from_topohub
    from dplab.topology.cli import import_sources

    if args.topohub:
        print("\n".join(from_topohub.graph_keys()))
        return 0
    for name in catalog.NAMES:
        print(f"{name:10} {catalog.describe(name)}")
    print("imported:\n" + "\n".join(f"  {line}" for line in import_sources()))
    return 0


def _cmd_p4_compile(args: argparse.Namespace) -> int:
    from dplab.p4.cli import compile_command

    for path in compile_command(args.program, args.output).values():
        print(path)
    return 0


def _cmd_study003_matrix(args: argparse.Namespace) -> int:
    _feasibility(args.out)
    return 0


def _feasibility(out: Path):
    """Study 003's feasibility matrix from observed packets, printed and written to ``out``
    (matrix.md, matrix.json); its cells."""
    from dplab.study003 import matrix

    cells = matrix.matrix(progress=lambda m: console.log(Text(m)))
    console.print(Text(matrix.markdown(cells)))
    for path in matrix.write(cells, out):
        console.print(Text(f"wrote {path}"))
    return cells


def _cmd_cleanup(_args: argparse.Namespace) -> int:
    from dplab import cleanup

    removed = cleanup.reclaim()
    for line in removed:
        console.print(Text(f"removed {line}"))
    if not removed:
        console.print("nothing to clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
