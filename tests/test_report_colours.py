"""A plane keeps one colour in every figure of a report (report.colours), also at an axis
point where another plane has no runs, and in the figures a second process draws: read
back from the PNGs the report wrote."""

import pytest
from matplotlib.colors import to_rgb
from PIL import Image
from test_report_axis_plots import PLANES, store_axis_experiment

from dplab import report
from dplab.report.colours import plane_colours
from dplab.report.plots import BOX_ALPHA

COLOURS = plane_colours(list(PLANES))  # the experiment lists bridge, then ovs


@pytest.fixture(scope="module")
def plots(tmp_path_factory):
    """A report whose second axis point (size=1000) has no bridge runs: ovs is the only
    plane there, and was drawn in the colour the experiment gives bridge. Its box plots are
    drawn in a second process, as a large report's are."""
    folder = tmp_path_factory.mktemp("colours")
    store_axis_experiment(folder, absent={("bridge", 1000)})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "SECOND_PROCESS_PANELS", 0)
        report.build(folder)
    return folder / "plots"


def rows(path) -> list[set[tuple[int, int, int]]]:
    """The colours of the upper (first point) and lower (second point) row of panels."""
    image = Image.open(path).convert("RGB")
    width, height = image.size
    return [{colour for _count, colour in image.crop((0, top, width, top + height // 2))
             .getcolors(width * height)} for top in (0, height // 2)]


def rgb(colour: str, alpha: float = 1.0) -> tuple[int, int, int]:
    """The pixel of ``colour`` drawn with ``alpha`` over the white background."""
    return tuple(round(255 * (1 - alpha) + 255 * c * alpha) for c in to_rgb(colour))


def shows(found: set[tuple[int, int, int]], pixel: tuple[int, int, int]) -> bool:
    return any(max(abs(a - b) for a, b in zip(p, pixel, strict=True)) <= 2 for p in found)


@pytest.mark.parametrize(("name", "alpha"), [("cdf_rtt_ms.png", 1.0),
                                             ("box_rtt_ms.png", BOX_ALPHA)])
def test_a_plane_keeps_its_colour_where_another_is_missing(plots, name, alpha):
    both, alone = rows(plots / name)
    bridge, ovs = rgb(COLOURS["bridge"], alpha), rgb(COLOURS["ovs"], alpha)
    assert shows(alone, ovs) and not shows(alone, bridge)
    assert shows(both, ovs) and shows(both, bridge)

