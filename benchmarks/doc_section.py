"""Benchmarks write their figures into docs/benchmarks.md, each into its own marked section."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def machine_line() -> str:
    """When and where: the machine is shared and noisy, so figures need their context."""
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    return (f"Measured {now} on {platform.node()} (kernel {platform.release()}, "
            f"{os.cpu_count()} cores; shared machine: read ratios, not absolutes).")


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace section ``name`` of ``doc`` (between its markers) or append it."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    section = f"{start}\n{body.rstrip()}\n{end}"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text)
