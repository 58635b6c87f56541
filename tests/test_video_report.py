"""The report's video frames section: sent vs received per plane, from frames/<run_id>/."""

from dplab.analysis.compare import Analysis
from dplab.report import html

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16  # content is not decoded, only embedded


def frames(root, run_id, flow, sides=("sent", "received")):
    folder = root / "frames" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    for side in sides:
        (folder / f"{flow}-{side}.png").write_bytes(PNG)


def test_each_plane_shows_its_first_repetition_side_by_side(tmp_path):
    frames(tmp_path, "ovs-r2", "w1-video-h1-h8")
    frames(tmp_path, "ovs-r1", "w1-video-h1-h8", sides=("sent",))
    frames(tmp_path, "ovs-reactive-r1", "w1-video-h2-h8")  # another plane, not "ovs"
    runs = [{"run_id": run_id, "plane": plane, "repetition": int(run_id[-1])}
            for run_id, plane in (("ovs-r2", "ovs"), ("ovs-r1", "ovs"),
                                  ("ovs-reactive-r1", "ovs-reactive"))]
    section = html._video_frames(tmp_path, Analysis(["ovs"], [], {}, {}), runs)
    assert "<h3>ovs (ovs-r1)</h3>" in section
    assert "w1-video-h1-h8" in section and "w1-video-h2-h8" not in section
    assert section.count("<img") == 1 and "missing" in section  # r1 lacks the viewer's frame


def test_no_frames_no_section(tmp_path):
    runs = [{"run_id": "bridge-r1", "plane": "bridge", "repetition": 1}]
    assert html._video_frames(tmp_path, Analysis(["bridge"], [], {}, {}), runs) == ""
