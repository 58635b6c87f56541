"""A report built from a synthetic stored experiment: tables, plots and failures all present."""

import re

from rich.console import Console

from dplab import report
from dplab.planes.base import SeriesPoint
from dplab.store import RunStore
from dplab.workloads.flows import Flow, FlowResult

SPEC = {
    "name": "synthetic",
    "description": "made-up numbers for a report test",
    "repetitions": 3,
    "planes": [{"kind": "bridge", "label": None, "options": {}},
               {"kind": "ovs", "label": "ovs-reactive", "options": {"mode": "reactive"}}],
}


def tcp(index: int, mbit: float) -> FlowResult:
    intervals = [{"t_start": 100.0 + t, "t_end": 101.0 + t, "throughput_bps": mbit * 1e6}
                 for t in range(5)]
    return FlowResult(Flow(f"tcp-{index}", "tcp", f"h{index}", f"h{index + 4}",
                           {"duration": 5}),
                      True, None, {"throughput_bps": mbit * 1e6, "syn_delay_ms": None},
                      intervals)


def ping(rtt: float | None, ok: bool = True) -> FlowResult:
    return FlowResult(Flow("icmp-1", "icmp", "h1", "h5", {"count": 5}), ok,
                      None if ok else "no reply from h5", {"rtt_ms": rtt, "loss_pct": 0.0}, [])


INFO = {"bridge": {"forwarding": "Linux kernel (bridge)"},
        "ovs-reactive": {"datapath": "userspace (netdev)", "ports": "netdev-tso"}}


def store_experiment(path):
    store = RunStore(path)
    store.write_experiment(SPEC)
    numbers = {"bridge": ([90.0, 92.0, 91.0], [0.10, 0.12, 0.11]),
               "ovs-reactive": ([60.0, 64.0, 62.0], [0.50, 0.60, 0.55])}
    for rep in range(3):
        for plane, (mbit, rtt) in numbers.items():
            ok_ping = not (plane == "ovs-reactive" and rep == 1)
            results = [tcp(1, mbit[rep] / 2), tcp(2, mbit[rep] / 2),
                       ping(rtt[rep] if ok_ping else None, ok_ping)]
            if plane == "ovs-reactive":  # the switches the plane's rules counted
                results[2].path = ["s1", "s3"]
            store.add_run(f"{plane}-r{rep + 1}", plane, rep + 1, "ok", None, 1000.0 + rep, 9.0,
                          {"packet_ins": 40.0 if plane != "bridge" else None}, results,
                          plane_info=INFO[plane])
    store.add_run("ovs-reactive-r4", "ovs-reactive", 4, "failed",
                  "PlaneError: <controller> did not connect", 2000.0, 1.0, {}, [])


def test_report_has_tables_plots_and_failures(tmp_path):
    store_experiment(tmp_path)
    path = report.build(tmp_path)

    assert path == tmp_path / "report.html"
    page = path.read_text()
    assert "tcp traffic" in page and "icmp traffic" in page and "plane statistics" in page
    # bridge: per-run mean over its two flows 45, 46, 45.5 Mbit/s -> 45.5 ± t(0.975,2)·0.5/√3
    # = 1.24; ovs-reactive (31, 32, 31) is 31.9 % worse, clearly significant
    assert "45.50 ± 1.24 (n=3)" in page
    assert re.search(r"-31\.9 % \(worse, p=[0-9.e-]+\)", page)
    assert "ovs-reactive vs bridge" in page
    assert "How each plane ran" in page
    assert "<dt>ovs-reactive</dt><dd>datapath: userspace (netdev); ports: netdev-tso</dd>" in page
    assert "ovs-reactive (failed runs: 1)" in page
    assert "(n=2, 1 missing)" in page  # ovs rtt: one failed flow
    assert "PlaneError: &lt;controller&gt; did not connect" in page
    assert "no reply from h5" in page
    assert "Flow paths" in page and "<td>s1 → s3</td><td>3</td>" in page  # its 3 ok runs
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) >= 3
    assert not (tmp_path / "plots" / "box_syn_delay_ms.png").exists()  # never measured
    for name in ("throughput_timeseries.png", "box_throughput_bps.png", "box_rtt_ms.png"):
        png = tmp_path / "plots" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert (tmp_path / "csv" / "summaries.csv").stat().st_size > 0
    assert 'href="csv/summaries.csv"' in page


def test_print_tables_shows_planes_and_improvement(tmp_path):
    store_experiment(tmp_path)
    console = Console(record=True, width=160)
    report.print_tables(tmp_path, console)
    text = console.export_text()
    assert "throughput (Mbit/s)" in text and "bridge" in text and "ovs-reactive" in text
    assert "-31.9 % (worse" in text
    assert "bridge: forwarding: Linux kernel (bridge)" in text
    assert "failed run ovs-reactive-r4: PlaneError: <controller> did not connect" in text


def test_report_of_an_experiment_with_only_failed_runs(tmp_path):
    store = RunStore(tmp_path)
    store.write_experiment(SPEC)
    store.add_run("bridge-r1", "bridge", 1, "failed", "netns busy", 0.0, 0.1, {}, [])
    page = report.build(tmp_path).read_text()
    assert "No measured values stored." in page and "netns busy" in page


QOS_SPEC = {"name": "qos", "repetitions": 2,
            "planes": [{"kind": "p4", "label": "static", "options": {}},
                       {"kind": "p4", "label": "dmbrl", "options": {}}]}


def store_qos_experiment(path, with_series: bool) -> None:
    """Two planes, two runs each; dmbrl's runs carry a loop's time series (two switches,
    rate and load of class 1 every 0.5 s, and its interval, which is not a bit rate)."""
    store = RunStore(path)
    store.write_experiment(QOS_SPEC)
    for rep in (1, 2):
        for plane, mbit in (("static", 3.0), ("dmbrl", 4.0 + rep / 10)):
            series = [SeriesPoint(t / 2, f"{metric}:{switch}:class1", value)
                      for t in range(-1, 10) for switch in ("s3", "s4")
                      for metric, value in (("used_bps", 1e6 + t * 1e5),
                                            ("rate_bps", 1.2e6), ("interval_s", 0.5))]
            store.add_run(f"{plane}-r{rep}", plane, rep, "ok", None, 1000.0, 9.0,
                          {"qos_turns": 22.0 if plane == "dmbrl" else None},
                          [tcp(1, mbit)],
                          plane_series=series if with_series and plane == "dmbrl" else None)


def test_runs_with_plane_series_get_a_plot_per_plane_and_the_tables_stay(tmp_path):
    store_qos_experiment(tmp_path / "with", with_series=True)
    store_qos_experiment(tmp_path / "without", with_series=False)
    page = report.build(tmp_path / "with").read_text()
    plain = report.build(tmp_path / "without").read_text()

    png = tmp_path / "with" / "plots" / "plane_series_dmbrl.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert not (tmp_path / "with" / "plots" / "plane_series_static.png").exists()
    assert "<h2>Plane time series</h2>" in page and 'alt="plane_series_dmbrl"' in page
    assert "Plane time series" not in plain
    images = re.compile(r'src="data:image/png;base64,')
    assert len(images.findall(page)) == len(images.findall(plain)) + 1
    csv_rows = (tmp_path / "with" / "csv" / "plane_series.csv").read_text().splitlines()
    assert len(csv_rows) == 1 + 2 * 11 * 2 * 3  # header + runs x turns x switches x metrics
    assert 'href="csv/plane_series.csv"' in page
    tables = []
    for results in ("with", "without"):
        console = Console(record=True, width=160)
        report.print_tables(tmp_path / results, console)
        tables.append(console.export_text())
    assert tables[0] == tables[1] and "dmbrl" in tables[0]
