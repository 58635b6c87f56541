"""A video experiment through the runner keeps each run's frames and the report shows them."""

from __future__ import annotations

import pytest
from matplotlib.image import imread

from dplab import report
from dplab.runner import run_matrix
from dplab.spec import parse

EXPERIMENT = """
name: video-runner
topology: {name: single, params: {hosts: 2}}
planes: [bridge]
workloads:
  - {kind: video, pairs: [[h1, h2]], mode: rtp, duration: 3, resolution: 320x180,
     bitrate_kbit: 300, frame_at: 1.5}
"""


@pytest.mark.net
def test_run_keeps_sent_and_received_frames_and_the_report_shows_them(tmp_path):
    store = run_matrix(parse(EXPERIMENT), tmp_path)
    [run] = store.rows("runs")
    assert run["status"] == "ok", run["error"]
    frames = tmp_path / "frames" / "bridge-r1"
    names = sorted(p.name for p in frames.glob("*.png"))
    assert names == ["w0-video-h1-h2-received.png", "w0-video-h1-h2-sent.png"]
    for name in names:
        assert imread(frames / name).shape[:2] == (180, 320)  # decodes, right size
    html = report.build(tmp_path).read_text()
    assert "Video frames" in html
