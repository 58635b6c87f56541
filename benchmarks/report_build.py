"""Time of `dplab report`'s work (report.build: tables, plots, CSV, report.html) on stored
results, e.g. study 000's quick profile (`dplab study run 000 --quick`): the CPU time (this
process's and its children's, where a large report draws its box plots; what load on a
shared machine disturbs least) and wall time of each build, on a copy of the stored tables
so that the results folder is left as it is.

To compare two report versions, run it with each source tree first on PYTHONPATH, in turns:
  PYTHONPATH=src .venv/bin/python benchmarks/report_build.py RESULTS_DIR [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from dplab import report

# What report.build reads; the rest of a results folder (plots, csv, frames, pcaps) it
# writes or does not need.
STORED = ("*.parquet", "experiment.json", ".dplab-results")


def measure(results: Path) -> tuple[float, float, int]:
    """(CPU s, wall s, plots written) of one build on a fresh copy of ``results``."""
    with tempfile.TemporaryDirectory(prefix="dplab-report-bench-") as tmp:
        copy = Path(tmp)
        for pattern in STORED:
            for path in results.glob(pattern):
                shutil.copy2(path, copy / path.name)
        cpu, wall = _cpu(), time.perf_counter()
        report.build(copy)
        return (_cpu() - cpu, time.perf_counter() - wall,
                len(list((copy / report.PLOTS_DIR).glob("*.png"))))


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="a results folder `dplab run` wrote")
    parser.add_argument("--repeat", type=int, default=1, help="builds, one after another")
    args = parser.parse_args()
    for _ in range(args.repeat):
        cpu, wall, plots = measure(args.results)
        print(f"report.build: CPU {cpu:.1f} s, wall {wall:.1f} s, {plots} plots "
              f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
