"""report.html opened in headless Chromium: it renders, with its tables and decoded plots."""

import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.image import imread
from test_report_build import SPEC, tcp

from dplab import report
from dplab.store import RunStore
from dplab.workloads.flows import Flow, FlowResult

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="chromium is not installed (scripts/setup.sh installs it)")

# Sets images[i].dataset.size to "<naturalWidth>x<naturalHeight>" once every image decoded,
# so --dump-dom shows whether the browser could decode each embedded PNG.
DECODE_CHECK = """
<script>
window.addEventListener("load", () => {
  for (const img of document.images) img.dataset.size = img.naturalWidth + "x" + img.naturalHeight;
});
</script>
"""


def ping(rtts: list[float]) -> FlowResult:
    intervals = [{"t_start": float(t), "t_end": t + 1.0, "rtt_ms": rtt}
                 for t, rtt in enumerate(rtts)]
    return FlowResult(Flow("icmp-1", "icmp", "h1", "h5", {"count": len(rtts)}), True, None,
                      {"rtt_ms": sum(rtts) / len(rtts), "loss_pct": 0.0}, intervals)


def resources(plane: str, rep: int) -> dict[str, float | None]:
    has_processes = plane != "bridge"
    return {"cpu_user_pct": 20.0 + rep if has_processes else None,
            "cpu_sys_pct": 35.0 - rep if has_processes else None,
            "mem_rss_mb": 80.0 + rep if has_processes else None,
            "host_user_pct": 10.0 + 25 * has_processes + rep,
            "host_sys_pct": 8.0 + rep, "host_softirq_pct": 5.0 + rep}


def store_experiment(path) -> None:
    store = RunStore(path)
    store.write_experiment(SPEC)
    for rep in range(3):
        for plane, mbit, rtt in (("bridge", 90.0, 0.1), ("ovs-reactive", 60.0, 0.5)):
            results = [tcp(1, mbit + rep), tcp(2, mbit - rep),
                       ping([rtt + 0.01 * i for i in range(10)])]
            store.add_run(f"{plane}-r{rep + 1}", plane, rep + 1, "ok", None, 1000.0 + rep, 9.0,
                          resources(plane, rep), results)


def chromium(page, tmp_path, *args: str) -> subprocess.CompletedProcess:
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--window-size=1280,2000", *args, page.as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_report_renders_tables_and_plots_in_chromium(tmp_path):
    store_experiment(tmp_path / "results")
    path = report.build(tmp_path / "results")
    plots = {p.name for p in (tmp_path / "results" / "plots").glob("*.png")}
    assert {"cdf_throughput_bps.png", "cdf_rtt_ms.png", "resources.png"} <= plots
    page = path.read_text()
    assert "mem_rss_mb" in page and "host_softirq_pct" in page

    shot = tmp_path / "shot.png"
    done = chromium(path, tmp_path, f"--screenshot={shot}")
    assert shot.exists(), done.stderr[-2000:]
    assert shot.stat().st_size > 50_000  # a blank or error page compresses to a few KB
    pixels = imread(shot)[:, :, :3]
    assert pixels.shape[:2] == (2000, 1280)
    colours = np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200  # text, table borders and anti-aliased plot lines
    dark = (pixels.mean(axis=2) < 0.5).mean()
    assert 0.005 < dark < 0.5  # some ink on a mostly white page

    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", DECODE_CHECK + "</body>"))
    dom = chromium(probe, tmp_path, "--dump-dom", "--virtual-time-budget=5000").stdout
    assert dom.count("<table") >= 3  # tcp, icmp and plane statistics
    assert "cpu_user_pct" in dom and "ovs-reactive" in dom
    sizes = re.findall(r'data-size="(\d+)x(\d+)"', dom)
    images = re.findall(r"<img ", dom)
    assert len(sizes) == len(images) >= 6, json.dumps(sizes)
    assert all(int(w) > 300 and int(h) > 200 for w, h in sizes)  # every PNG decoded
