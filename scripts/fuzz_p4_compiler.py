"""Fuzz the P4 compiler: mutants of every repository program, garbage, deep nesting.

    python scripts/fuzz_p4_compiler.py --per-program 300 --seed 1 [--out /tmp/fuzz-p4]

Prints every input that escaped with anything but P4Error (or took longer than the
timeout), writes it under --out, and ends with a summary line. Exit status 1 if any.
"""

import argparse
import collections
import signal
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from p4_mutants import deep_nesting, garbage, mutants, repository_programs  # noqa: E402

from dplab.p4 import P4Error  # noqa: E402
from dplab.p4.compiler import compile_program  # noqa: E402
from dplab.p4.p4info import build_p4info  # noqa: E402


class Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise Timeout


def check(source: str, path: Path, timeout_s: float) -> str | None:
    """None if the compiler accepted `source` or refused it with P4Error, else the problem."""
    path.write_text(source, encoding="utf-8", errors="surrogateescape")
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        build_p4info(compile_program(path))
    except P4Error as exc:
        if exc.line < 1 or exc.col < 1 or not exc.reason:
            return f"P4Error without a location or reason: {exc}"
    except Timeout:
        return f"no answer within {timeout_s} s"
    except Exception:  # noqa: BLE001 - finding these is the point
        return traceback.format_exc(limit=-3)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return None


def inputs(per_program: int, seed: int) -> list[tuple[str, str]]:
    cases = []
    for program in repository_programs():
        text = program.read_text()
        cases += [(f"{program.name}#{i}", m) for i, m in
                  enumerate(mutants(text, seed, per_program))]
    cases += [(f"garbage#{i}", g) for i, g in enumerate(garbage(seed, 50))]
    cases += [(f"deep-{k}", v) for k, v in deep_nesting(10_000).items()]
    cases += [("empty", ""), ("blank", "\n\n  \n")]
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-program", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/fuzz-p4"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _alarm)
    work = args.out / "input.p4"
    problems: collections.Counter[str] = collections.Counter()
    cases = inputs(args.per_program, args.seed)
    started = time.monotonic()
    for name, source in cases:
        problem = check(source, work, args.timeout)
        if problem is None:
            continue
        key = problem.strip().splitlines()[-1]
        problems[key] += 1
        if problems[key] == 1:
            (args.out / f"{name.replace('/', '_')}.p4").write_text(
                source, encoding="utf-8", errors="surrogateescape")
            print(f"--- {name}\n{problem}", flush=True)
    print(f"{len(cases)} inputs in {time.monotonic() - started:.0f} s, "
          f"{sum(problems.values())} problems of {len(problems)} kinds")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
