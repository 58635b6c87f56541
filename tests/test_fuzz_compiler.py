"""Fuzzing the P4 compiler: bad input only ever gives P4Error with file:line:col and a reason.

Seeded mutants (tests/p4_mutants.py) of every program in the repository, garbage, deep
nesting and broken includes; scripts/fuzz_p4_compiler.py runs the same mutations longer.
"""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from p4_mutants import ROOT, deep_nesting, garbage, in_ingress, mutants, repository_programs

from dplab.p4 import P4Error
from dplab.p4.cli import compile_command
from dplab.p4.limits import MAX_NESTING

MUTANTS_PER_PROGRAM = 6
# Per input, in CPU seconds of this process (a hang spins; a loaded machine only stretches
# the wall clock, which must not fail a test): a hang is a failure.
ANSWER_WITHIN_CPU_S = 10


class NoAnswer(Exception):
    pass


def _no_answer(_signum: int, _frame: object) -> None:
    raise NoAnswer


def outcome(source: str, tmp_path: Path, label: str = "") -> P4Error | Path:
    """The compiler's P4Error for `source`, or the IR file it wrote; anything else fails."""
    path = tmp_path / "input.p4"
    path.write_text(source, encoding="utf-8", errors="surrogateescape")
    previous = signal.signal(signal.SIGPROF, _no_answer)
    signal.setitimer(signal.ITIMER_PROF, ANSWER_WITHIN_CPU_S)
    try:
        return compile_command(path, tmp_path / "out")["ir"]
    except P4Error as exc:
        assert exc.file and exc.line >= 1 and exc.col >= 1 and exc.reason, str(exc)
        return exc
    except NoAnswer:
        pytest.fail(f"{label}: no answer within {ANSWER_WITHIN_CPU_S} CPU s for:\n{source[:2000]}")
    except Exception as exc:  # noqa: BLE001 - any other exception is the failure sought
        pytest.fail(f"{label}: {type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def all_mutants() -> Iterator[tuple[str, str]]:
    for program in repository_programs():
        for i, text in enumerate(mutants(program.read_text(), 11, MUTANTS_PER_PROGRAM)):
            yield f"{program.relative_to(ROOT)}#{i}", text


def test_mutants_of_every_repository_program_give_located_errors(tmp_path: Path) -> None:
    accepted = refused = 0
    for name, source in all_mutants():
        result = outcome(source, tmp_path, name)
        if isinstance(result, P4Error):
            refused += 1
        else:
            accepted += 1
    # Most mutants are wrong; some (a swapped name, a duplicated ';') are still programs.
    assert refused > accepted > 0
    assert refused + accepted == MUTANTS_PER_PROGRAM * len(repository_programs())


def test_garbage_empty_and_blank_files_give_located_errors(tmp_path: Path) -> None:
    for source in [*garbage(5, 20), "", "\n\n \n", "\x00" * 100]:
        assert isinstance(outcome(source, tmp_path), P4Error)


# Where the nesting bound stops each program of deep_nesting(10 000) in dst_mac_fwd.p4
# (line 126 is the first line of its ingress apply block): regressions of RecursionError.
DEEP_ERRORS = {
    "parentheses": (126, 143), "open_parentheses": (126, 143), "unary": (126, 143),
    "binary": (126, 466), "casts": (126, 829), "slices": (126, 563), "braces": (126, 112),
    "if_else": (126, 8202), "nested_if": (126, 2112), "conditional": (126, 4295),
    "type_args": (1, 609), "unclosed": (126, 112),
}


@pytest.mark.parametrize("kind", sorted(DEEP_ERRORS))
def test_deep_nesting_is_refused_at_the_level_too_deep(tmp_path: Path, kind: str) -> None:
    error = outcome(deep_nesting(10_000)[kind], tmp_path)
    assert isinstance(error, P4Error)
    assert (error.line, error.col) == DEEP_ERRORS[kind]
    assert error.reason == f"nested more than {MAX_NESTING} levels deep"


@pytest.mark.parametrize("kind", ["parentheses", "unary", "binary", "casts", "slices",
                                  "braces", "if_else", "conditional"])
def test_nesting_below_the_bound_compiles_through_every_pass(tmp_path: Path, kind: str) -> None:
    assert isinstance(outcome(deep_nesting(40)[kind], tmp_path), Path)


def test_missing_and_recursive_includes(tmp_path: Path) -> None:
    (tmp_path / "self.p4").write_text('\n#include "self.p4"\n')
    error = outcome('#include <v1model.p4>\n#include "self.p4"\n', tmp_path)
    assert isinstance(error, P4Error)
    assert (Path(error.file).name, error.line, error.col) == ("self.p4", 2, 1)
    assert error.reason == "#include nests too deeply"
    error = outcome('#include <core.p4>\n#include "nothere.p4"\n', tmp_path)
    assert isinstance(error, P4Error)
    assert (error.line, error.col, error.reason) == (2, 1, "included file nothere.p4 not found")


def test_the_compile_command_reports_bad_input_without_a_traceback(tmp_path: Path) -> None:
    cases = {"binary.p4": b"\x00\xff\xfe\x80 garbage",
             "deep.p4": deep_nesting(10_000)["unary"].encode()}
    dplab = Path(sys.executable).parent / "dplab"
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        done = subprocess.run([str(dplab), "p4", "compile", name, "-o", "out"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"error: {name}:"), done.stderr
        assert "Traceback" not in done.stderr


PORT = "standard_metadata.egress_spec"
# Statements (at line 126, column 12 of dst_mac_fwd.p4) and declarations (line 126, column 5)
# that crashed the compiler (found by scripts/fuzz_p4_compiler.py), or that it accepted
# although the switch cannot load them, with where and why it refuses them now.
FOUND = {
    "negative shift": (f"{PORT} = 9w1 << -1;", False, 51,
                       "a shift amount must not be negative (-1)"),
    "huge shift": (f"{PORT} = (bit<9>)(1 << 99999999999);", False, 55,
                   "the integer would be wider than 4096 bits"),
    "huge register": ("register<bit<8>>(4294967295) r;", True, 22,
                      "register size 4294967295 is outside 0..16777216"),
    "huge meter": ("meter(99999999, MeterType.bytes) m;", True, 11,
                   "meter size 99999999 is outside 0..16777216"),
    "table size": ("table t { actions = { NoAction; } size = -99999999999999999999; }", True,
                   46, "table size -99999999999999999999 is outside 0..16777216"),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_crashes_found_by_fuzzing_are_located_errors(tmp_path: Path, case: str) -> None:
    text, declaration, col, reason = FOUND[case]
    error = outcome(in_ingress(text, declaration=declaration), tmp_path, case)
    assert isinstance(error, P4Error)
    assert (error.line, error.col, error.reason) == (126, col, reason)


def test_shifting_a_constant_by_more_than_its_width_gives_zero(tmp_path: Path) -> None:
    ir = outcome(in_ingress(f"{PORT} = 9w1 << 99999999999999999999;"), tmp_path)
    assert isinstance(ir, Path)
    ingress = json.loads(ir.read_text())["controls"]["ingress"]
    assert ingress["body"][0]["src"] == {"op": "const", "w": 9, "v": "0x0"}


@pytest.mark.parametrize("size", [0, 100_000_000])   # 0: an IndexError, 1e8: a hang
def test_a_header_stack_outside_the_bounds_is_refused(tmp_path: Path, size: int) -> None:
    text = (ROOT / "tests" / "p4" / "dst_mac_fwd.p4").read_text()
    error = outcome(text.replace("struct headers_t {",
                                 "header h_t { bit<8> f; }\nstruct headers_t {\n"
                                 f"    h_t[{size}] big;"), tmp_path)
    assert isinstance(error, P4Error)
    assert error.reason == "a header stack's size must be in 1..1024"
    assert (error.line, error.col) == (53, 5)


def test_a_stack_operation_without_its_count_is_a_located_error(tmp_path: Path) -> None:
    """features.p4 mutant #111 of seed 3: `pop_front()` once raised IndexError."""
    text = (ROOT / "tests" / "data" / "p4" / "features.p4").read_text()
    error = outcome(text.replace("hdr.mpls.pop_front(1);", "hdr.mpls.pop_front();"), tmp_path)
    assert isinstance(error, P4Error)
    assert (error.line, error.col) == (115, 21)
    assert error.reason == "expected at least 1 argument(s), found 0"
