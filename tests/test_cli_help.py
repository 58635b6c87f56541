"""The command line as the documentation names it: every option README.md and docs/ write
after a `dplab` (or `./lab`) command exists on that command, every option and argument says
what it does in --help, and `python -m dplab` runs the same command line."""

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dplab import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Code: `inline spans` and the lines of fenced blocks.
CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.DOTALL)
COMMAND = re.compile(r"(\bdplab|\./lab)\s+([^;|#&\n]*)")
OPTION = re.compile(r"^-{1,2}[A-Za-z][\w-]*")
# The lab script's own commands: compare = dplab run scenarios/default.yaml, test = pytest;
# any other `./lab ...` is `dplab ...`.
LAB = {"compare": ["run", "scenarios/default.yaml"], "test": None}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(words, parser) of every command and sub-command."""
    yield path, parser
    for name, sub in subcommands(parser).items():
        yield from commands(sub, (*path, name))


def documented() -> list[tuple[str, list[str]]]:
    """(where, the words of the dplab command) of every dplab or ./lab command written in
    the documentation; the lab script's own commands as the dplab command they run."""
    found = []
    for doc in DOCS:
        for match in CODE.finditer(doc.read_text()):
            for line in (match.group(1) or match.group(2)).splitlines():
                for command in COMMAND.finditer(line):
                    words = [w for w in (w.strip("[]().,") for w in command.group(2).split())
                             if w]
                    if command.group(1) == "./lab" and words and words[0] in LAB:
                        if LAB[words[0]] is None:
                            continue
                        words = [*LAB[words[0]], *words[1:]]
                    found.append((f"{doc.relative_to(ROOT)}: {command.group(0).strip()}",
                                  words))
    return found


def options_of(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the command ``words`` name and what they write after it."""
    parser, rest = cli._parser(), list(words)
    while rest and rest[0] in subcommands(parser):
        parser = subcommands(parser)[rest.pop(0)]
    return parser, rest


def test_every_documented_command_and_option_exists():
    commands_found, wrong = documented(), []
    for where, words in commands_found:
        parser, rest = options_of(words)
        if subcommands(parser) and rest and not rest[0].startswith("<"):
            wrong.append(f"{where}: no command {rest[0]!r}")  # "<command>": a placeholder
        known = {s for action in parser._actions for s in action.option_strings}
        wrong += [f"{where}: no option {m.group(0)}" for w in rest
                  if (m := OPTION.match(w)) and m.group(0) not in known]
    assert len(commands_found) > 20  # the documentation's commands were found at all
    assert not wrong, "what the documentation names that the command line lacks:\n" + \
        "\n".join(wrong)


@pytest.mark.parametrize(("path", "parser"), list(commands(cli._parser())),
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_option_and_argument_says_what_it_does(path, parser):
    silent = [action.dest for action in parser._actions
              if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
              and action.help != argparse.SUPPRESS and not action.help]
    assert not silent, f"dplab {' '.join(path)}: no help for {silent}"
    assert parser.description or not path, f"dplab {' '.join(path)}: --help says nothing"


def test_python_dash_m_dplab_runs_the_command_line():
    out = subprocess.run([sys.executable, "-m", "dplab", "topo", "list"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "multipath" in out.stdout + out.stderr
    wrong = subprocess.run([sys.executable, "-m", "dplab", "no-such-command"],
                           capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "usage: dplab" in wrong.stderr
