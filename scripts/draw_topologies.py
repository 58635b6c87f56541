#!/usr/bin/env python3
"""Redraws docs/topologies/<name>.png for every catalog topology (used by docs/topologies.md)."""

from pathlib import Path

from dplab.topology import catalog
from dplab.topology.draw import draw

OUT = Path(__file__).resolve().parents[1] / "docs" / "topologies"


def main() -> None:
    for name in catalog.NAMES:
        print(draw(catalog.build(name), OUT / f"{name}.png"))


if __name__ == "__main__":
    main()
