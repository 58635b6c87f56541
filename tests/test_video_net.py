"""CDN video over a real network: `single` topology (one switch) on a Linux bridge.

cdn pairs of `single` are (h1, h4) and (h2, h4): two viewers of one server, h4.
"""

import struct

import pytest

from dplab import planes
from dplab.substrate import Network
from dplab.topology import catalog
from dplab.workloads import video, video_content
from dplab.workloads.flows import Flow, run_flows

pytestmark = pytest.mark.net

LIGHT = {"resolution": "640x360", "fps": 25, "bitrate_kbit": 1000}


@pytest.fixture(autouse=True)
def video_cache(tmp_path_factory, monkeypatch):
    """One content cache for the module's tests, apart from the user's."""
    monkeypatch.setenv("DPLAB_VIDEO_CACHE", str(tmp_path_factory.getbasetemp() / "video-cache"))


def bridged(topo):
    plane = planes.create("bridge", {})
    with Network(topo, addressing=plane.addressing) as network:
        plane.start(network)
        plane.wait_ready(timeout=20)
        yield network
        plane.stop()


@pytest.fixture(scope="module")
def net():
    yield from bridged(catalog.build("single"))


@pytest.fixture(scope="module")
def slow_net():
    """h1 - h2 over 0.6 Mbit/s edges, below the 1 Mbit/s video: one network for the module's
    two tests of it (each flow ends with its test, and the shaper's queue drains)."""
    yield from bridged(catalog.build("single", hosts=2, edge_bw=0.6))


def viewers(net, params):
    return [Flow(f"video-{c}-{s}", "video", c, s, params) for c, s in net.topo.pairs["cdn"]]


def png_size(path):
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack("!II", header[16:24])


def test_two_http_viewers_on_an_idle_net_start_within_one_segment_and_never_stall(net):
    params = {"mode": "http", "duration": 4, "segment_s": 2, "frame_at": 3, **LIGHT}
    results = run_flows(net, viewers(net, params))
    content = video_content.ensure(video.validate(params, "test").content)
    for result in results:
        assert result.ok, result.error
        s = result.summary
        assert 0 < s["startup_delay_ms"] < 2000  # within the first segment's time
        assert s["rebuffers"] == 0 and s["rebuffer_time_s"] == 0
        assert s["segments_received"] == 2
        assert s["bytes"] == content.segment_bytes()  # playlist + every segment, exactly
        assert s["throughput_bps"] == pytest.approx(s["bytes"] * 8 / s["transmission_time_s"])
        assert 0 <= s["frame_lag_s"] == pytest.approx(s["startup_delay_ms"] / 1000)
        assert sum(row["bytes"] for row in result.intervals) == s["bytes"]


def test_a_link_below_the_video_bitrate_makes_the_viewer_rebuffer(slow_net, tmp_path):
    params = {"mode": "http", "duration": 4, "segment_s": 1, "frame_at": 3, **LIGHT}
    with video.keep_frames(tmp_path):
        [result] = run_flows(slow_net, [Flow("video-slow", "video", "h1", "h2", params)])
    assert result.ok, result.error
    s = result.summary
    assert s["rebuffers"] >= 1 and s["rebuffer_time_s"] > 0.5
    assert s["throughput_bps"] < 0.6e6 * 1.1  # the shaper's rate (+ its burst)
    assert s["frame_lag_s"] > 0.5  # the viewer is behind what was sent
    assert s["frame_diff_pct"] > 0  # and sees another picture
    assert png_size(tmp_path / "video-slow-received.png") == (640, 360)


def test_rtp_viewers_receive_the_live_stream_and_their_frames_are_kept(net, tmp_path):
    params = {"mode": "rtp", "duration": 4, "frame_at": 2, **LIGHT}
    with video.keep_frames(tmp_path):
        results = run_flows(net, viewers(net, params))
    for result in results:
        assert result.ok, result.error
        s = result.summary
        assert s["packets_received"] > 100 and s["loss_pct"] == 0.0
        # Counted, not zero by law: a veth hands each packet to the backlog of the CPU its
        # sender runs on, so a sender that moves between cores can overtake itself (CI saw
        # 13 of ~500 once). Loss is counted by distinct sequence numbers, so it stays 0.
        assert 0 <= s["out_of_order"] < s["packets_received"] / 4
        assert 3.0 < s["transmission_time_s"] < 5.0  # paced live (-re), not a burst
        assert 0.5e6 < s["throughput_bps"] < 1.5e6  # about the 1 Mbit/s of the content
        assert 0 <= s["jitter_ms"] < 20
        # from the sender's start to the first frame shown after the 200 ms jitter buffer
        assert 200 < s["startup_delay_ms"] < 5000
        assert s["rebuffers"] >= 0 and s["rebuffer_time_s"] >= 0
        assert s["frame_diff_pct"] == 0.0  # the same frame, decoded from what arrived
        for side in ("sent", "received"):
            png = tmp_path / f"{result.flow.flow_id}-{side}.png"
            assert png_size(png) == (640, 360)
            assert len(video_content.decode_rgb(png)) == 640 * 360 * 3


def test_a_live_stream_over_a_link_below_its_bitrate_loses_packets(slow_net):
    params = {"mode": "rtp", "duration": 4, "frame_at": 2, **LIGHT}
    [result] = run_flows(slow_net, [Flow("live-slow", "video", "h1", "h2", params)])
    assert result.ok, result.error
    s = result.summary
    # a live sender does not slow down: the shaper's short queue drops what does not fit
    assert s["loss_pct"] > 10
    assert s["throughput_bps"] < 0.6e6 * 1.1
    assert s["startup_delay_ms"] > 200 and s["rebuffers"] >= 0
