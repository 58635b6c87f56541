"""Compile time of the repository's largest P4 program (by source bytes, the v1model
includes left out): the median CPU time (process_time, what load on a shared machine
disturbs least) and wall time of REPEAT in-process compiles after one warm-up.

To compare two compiler versions, run it with each source tree first on PYTHONPATH, in
turns, and compare the CPU medians:
  PYTHONPATH=src .venv/bin/python benchmarks/p4_compile_time.py [--repeat 20] [--program P]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from dplab.p4.compiler import compile_with_warnings

ROOT = Path(__file__).resolve().parents[1]


def largest_program() -> Path:
    programs = [p for p in ROOT.glob("**/*.p4") if not {".venv", "include"} & set(p.parts)]
    return max(programs, key=lambda p: p.stat().st_size)


def measure(program: Path, repeat: int) -> tuple[float, float]:
    """(median CPU ms, median wall ms) of `repeat` compiles."""
    compile_with_warnings(program)
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        compile_with_warnings(program)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--program", type=Path, default=None)
    args = parser.parse_args()
    program = args.program or largest_program()
    cpu, wall = measure(program, args.repeat)
    print(f"{program.relative_to(ROOT)}: median CPU {cpu:.1f} ms, wall {wall:.1f} ms "
          f"({args.repeat} compiles)")


if __name__ == "__main__":
    main()
