"""Study 003's performance curves, P4 and XDP side by side: echo latency, CPU and memory vs
offered load, and lines of code (what is measured and how: dplab.study003.curves).

usage: python benchmarks/study003_curves.py [--rates 0,1,10,50,100,200] [--seconds 3]
       [--repetitions 1] [--out results/study003-curves] [--write]

Stores every repetition's values in ``--out``/curves.json and draws the study's figures
(Figs. 5, 6, 7, 10: dplab.study003.curve_report) beside it; prints the tables (mean ± 95 %
CI from 2 repetitions on). `--write` replaces the section of docs/studies/003-xdp.md. The
same measurement runs inside `dplab study run 003` (its performance profile in
studies/003/study.yaml) into that study's report. Run as root from the repository's root,
with the lab built.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from doc_section import machine_line, write_section  # beside this script

from dplab.study003 import curve_report, curves

DOC = Path(__file__).resolve().parents[1] / "docs" / "studies" / "003-xdp.md"


def report(data: dict, command: str) -> str:
    return "\n\n".join([
        "## Performance curves (benchmarks/study003_curves.py)",
        f"`{command}`. {machine_line()} Load: {os.getloadavg()[0]:.1f} (1 min) at the end.",
        curve_report.markdown(data)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0,1,10,50,100,200", help="kpps, comma-separated")
    parser.add_argument("--seconds", type=float, default=3.0, help="load time per point")
    parser.add_argument("--repetitions", type=int, default=1,
                        help="runs per point (2 or more: mean ± 95 %% CI)")
    parser.add_argument("--out", type=Path, default=Path("results/study003-curves"),
                        help="folder for curves.json and the figures")
    parser.add_argument("--write", action="store_true", help="update docs/studies/003-xdp.md")
    args = parser.parse_args()
    rates = [float(rate) for rate in args.rates.split(",")]
    if any(rate < 0 for rate in rates) or args.seconds <= 0 or args.repetitions < 1:
        parser.error("rates must be >= 0 kpps, --seconds > 0 and --repetitions >= 1")
    data = curves.measure(rates, args.seconds, args.repetitions,
                          progress=lambda message: print(f"  {message}", file=sys.stderr))
    print(f"stored {curves.write(data, args.out)}", file=sys.stderr)
    for path in curve_report.figures(data, args.out):
        print(f"figure {path}", file=sys.stderr)
    command = "python benchmarks/study003_curves.py " + " ".join(sys.argv[1:])
    text = report(data, command.strip())
    print(text)
    if args.write:
        write_section("study003-curves", text, DOC)


if __name__ == "__main__":
    main()
