"""Reports of stored experiments with axes: box plots, CDFs and resource use get a row per
axis point, and the controller's and the link ends' series are plotted (stored data only)."""

import html
import struct

import pytest

from dplab import report
from dplab.analysis import Analysis
from dplab.planes.base import SeriesPoint
from dplab.report import counter_series
from dplab.report.plots import Group
from dplab.spec.axes import AxisPoint
from dplab.store import RunStore
from dplab.workloads.flows import Flow, FlowResult

PLANES = ("bridge", "ovs")
SIZES = (56, 1000)


def ping(rtt: float) -> FlowResult:
    intervals = [{"t_start": t, "t_end": t + 1.0, "rtt_ms": rtt + t / 100} for t in range(4)]
    return FlowResult(Flow("w0-icmp-h1-h2", "icmp", "h1", "h2", {"count": 4, "size": 56}),
                      True, None, {"rtt_ms": rtt}, intervals)


def series(plane: str, rep: int) -> list[SeriesPoint]:
    """ovs's controller sets up flows in the first second; both planes' h2/eth0 carries
    1 Mbit/s (plus the repetition, in kbit/s), s1/s1-eth1 half of it, lo nothing."""
    points = []
    for t in range(-1, 4):
        if plane == "ovs":
            points += [SeriesPoint(t + 0.01 * rep, "packet_ins_per_s:controller",
                                   10.0 if t == 0 else 0.0),
                       SeriesPoint(t + 0.01 * rep, "cpu_pct:controller", 5.0)]
        for end, bps in (("h2/eth0", 1e6 + rep * 1e3), ("s1/s1-eth1", 5e5), ("h1/lo", 0.0)):
            points += [SeriesPoint(t + 0.01 * rep, f"rx_bps:{end}", bps),
                       SeriesPoint(t + 0.01 * rep, f"tx_bps:{end}", bps)]
    return points


def store_axis_experiment(path, sizes=SIZES, absent=()) -> None:
    """``absent``: (plane, size) points with no runs of that plane."""
    store = RunStore(path)
    store.write_experiment({"name": "tiny", "repetitions": 2,
                            "planes": [{"kind": "bridge"}, {"kind": "ovs", "label": "ovs"}],
                            "axes": {"size": {"of": None, "values": list(sizes)}}})
    for size in sizes:
        for plane in (p for p in PLANES if (p, size) not in absent):
            for rep in (1, 2):
                rtt = (0.1 if plane == "bridge" else 0.3) * size / 56 + rep / 100
                store.add_run(f"{plane}-size={size}-r{rep}", plane, rep, "ok", None, 0.0, 1.0,
                              {"cpu_user_pct": 3.0 + rep if plane == "ovs" else None},
                              [ping(rtt)], plane_series=series(plane, rep),
                              axes=[AxisPoint("size", str(size), float(size))])
        # a failed run's wild values are in no plot (its flows none either: it ran none)
        store.add_run(f"ovs-size={size}-r3", "ovs", 3, "failed", "PlaneError: gone", 0.0,
                      1.0, {}, [], plane_series=[SeriesPoint(1.0, "packet_ins_per_s:controller",
                                                             1e9)],
                      axes=[AxisPoint("size", str(size), float(size))])


def png_height(path) -> int:
    return struct.unpack(">II", path.read_bytes()[16:24])[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Reports of the experiment at both points ("two") and at its first only ("one"):
    (folder, the report page) of each."""
    out = {}
    for name, sizes in (("two", SIZES), ("one", SIZES[:1])):
        folder = tmp_path_factory.mktemp(name)
        store_axis_experiment(folder, sizes)
        out[name] = (folder, report.build(folder).read_text())
    return out


@pytest.mark.parametrize("name", ["box_rtt_ms.png", "cdf_rtt_ms.png", "resources.png",
                                  "controller_series.png", "link_rx.png"])
def test_per_point_plots_get_a_row_per_axis_point(built, name):
    two, one = (png_height(built[n][0] / "plots" / name) for n in ("two", "one"))
    assert two > 1.7 * one  # a second row of panels, for the second point
    assert f'alt="{name[:-4]}"' in built["two"][1]


def test_the_axis_curves_stay_and_the_series_are_explained(built):
    page = built["two"][1]
    assert 'alt="axis_size_rtt_ms"' in page
    assert html.escape(counter_series.NOTE) in page and "<h2>Plane time series</h2>" in page


def group(rows) -> Group:
    analysis = Analysis(planes=list(PLANES), rows=[], results={}, comparisons={},
                        failed_runs=[{"run_id": "ovs-r3"}])
    return Group("size=56", "size=56", analysis, [], [], rows)


def row(run_id: str, t: float, name: str, value: float | None) -> dict:
    return {"run_id": run_id, "plane": run_id.split("-")[0], "t": t, "series": name,
            "value": value}


def test_link_rates_are_the_mean_over_ok_runs_per_sample_interval():
    rows = [row("ovs-r1", 0.98, "rx_bps:h2/eth0", 1e6), row("ovs-r2", 1.03, "rx_bps:h2/eth0", 3e6),
            row("ovs-r1", 1.98, "rx_bps:h2/eth0", 2e6), row("ovs-r2", 2.03, "rx_bps:h2/eth0", None),
            row("ovs-r3", 1.0, "rx_bps:h2/eth0", 1e12),  # a failed run
            row("ovs-r1", 1.0, "tx_bps:h2/eth0", 5e6),  # the peer's rx: not drawn twice
            row("bridge-r1", 1.0, "rx_bps:h2/eth0", 7e6)]
    rates = counter_series._link_rates(group(rows), "ovs")
    assert rates == {"h2/eth0": [(1.0, 2e6), (2.0, 2e6)]}  # unmeasured: no point, not zero


def test_controller_series_leave_out_failed_runs_and_other_subjects():
    rows = [row("ovs-r1", 1.0, "packet_ins_per_s:controller", 4.0),
            row("ovs-r3", 1.0, "packet_ins_per_s:controller", 1e9),
            row("ovs-r1", 1.0, "rate_bps:s3:class1", 1e6)]
    found = counter_series._controller_series(group(rows))
    assert {m: {p: dict(r) for p, r in by.items()} for m, by in found.items()} == {
        "packet_ins_per_s": {"ovs": {"ovs-r1": [(1.0, 4.0)]}}}
