"""One colour per plane for every figure of a report. Each figure used to take matplotlib's
next colour for each plane it drew, so a plane missing at one axis point (or in one panel)
shifted the colours of every plane after it; the map is made once, from the experiment's
plane list, and every figure looks its planes up in it."""

from __future__ import annotations

from typing import Any

from matplotlib import colormaps
from matplotlib.colors import to_hex

from dplab.analysis.compare import ordered_planes, spec_plane_order

# Colours per plane; matplotlib's default cycle (tab10) while it lasts, tab20 beyond ten
# planes (beyond twenty, colours repeat: the legends still name each line).
SMALL, LARGE = colormaps["tab10"], colormaps["tab20"]

PlaneColours = dict[str, str]  # plane label -> colour ("#rrggbb")


def plane_colours(planes: list[str]) -> PlaneColours:
    """Each plane's colour by its place in ``planes``."""
    palette = SMALL if len(planes) <= SMALL.N else LARGE
    return {plane: to_hex(palette(i % palette.N)) for i, plane in enumerate(planes)}


def experiment_colours(experiment: dict[str, Any], runs: list[dict[str, Any]]) -> PlaneColours:
    """The colours of a stored experiment's planes: in the experiment file's order (then any
    stored plane it does not list), whatever the baseline, so that ``dplab report
    --baseline`` keeps each plane's colour."""
    return plane_colours(ordered_planes(runs, spec_plane_order(experiment), None))
