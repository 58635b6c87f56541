"""Hostile or mistaken input is refused before anything runs, with the file and field named."""

from __future__ import annotations

import subprocess
import sys
import time

from dplab import cli, spec

# Nine levels of nine aliases: 9**9 (387 million) strings once expanded, in plane options
# (free-form mappings the experiment's model cannot check).
ALIAS_BOMB = """
name: bomb
topology: {name: single}
planes:
  - kind: bridge
    options:
      stp:
        a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
        f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
        h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
        i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
workloads: [{kind: icmp, pairs: [[h1, h2]]}]
"""

# Prints its peak RSS growth (MiB) over `dplab validate` of the file given.
MEASURE = """
import resource, sys
from dplab import cli
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = cli.main(["validate", sys.argv[1]])
print(code, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def test_an_alias_bomb_is_refused_by_validate_quickly_in_bounded_memory(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True,
                          text=True, timeout=60, check=False)
    elapsed = time.monotonic() - started
    code, grown_mib = done.stdout.split()
    assert code == "2"
    assert f"{path}: the document expands to more than" in done.stderr.replace("\n", "")
    assert float(grown_mib) < 100
    assert elapsed < 30  # the bomb took minutes and gigabytes before it was refused


def test_infinite_and_nan_numbers_are_refused_with_the_field(tmp_path, capsys):
    base = ("name: x\ntopology: {name: single}\nplanes: [bridge]\n"
            "workloads: [{kind: tcp, pairs: [[h1, h2]], duration: %s}]\n")
    for value in (".inf", "-.inf", ".nan"):
        path = tmp_path / "exp.yaml"
        path.write_text(base % value)
        assert cli.main(["validate", str(path)]) == 2
        assert "workloads.0.duration: must be a finite number" in capsys.readouterr().err
    assert spec.parse(base % "1.5").workloads[0].duration == 1.5


def test_a_mininet_file_is_announced_as_code_before_it_runs(tmp_path, capsys):
    topo = tmp_path / "evil_topo.py"
    topo.write_text("raise SystemExit('stopped here')\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"name: m\ntopology: {{mininet: {topo}}}\nplanes: [bridge]\n"
                   "workloads: [{kind: icmp, pairs: [[h1, h2]]}]\n")
    for argv in (["validate", str(exp)], ["topo", "show", str(topo)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.replace("\n", "")
        warning = err.index(f"warning: {topo} is Python code")
        assert warning < err.index("stopped here")
