"""Video metrics against hand-worked values: playout buffer, RTP statistics, summaries."""

import pytest

from dplab.measure import video as vm
from dplab.workloads import video
from dplab.workloads.video_content import Content, ContentSpec
from dplab.workloads.video_player import parse_playlist


def playout(arrivals, duration=2.0):
    p = vm.Playout()
    for t in arrivals:
        p.arrived(t, duration)
    return p


def test_segments_arriving_ahead_of_the_playhead_never_stall():
    p = playout([0.5, 1.0, 4.0, 4.5])  # play ends move 2.5, 4.5, 6.5, 8.5
    assert p.started_at == 0.5
    assert p.rebuffers == 0 and p.rebuffer_s == 0
    assert p.play_end == 8.5
    assert p.buffer_s(4.0) == pytest.approx(2.5)  # 6 s arrived, 3.5 s played


def test_a_late_segment_is_one_stall_from_buffer_empty_to_its_arrival():
    p = playout([0.5, 3.0, 3.5])  # buffer runs dry at 2.5, the 2nd segment comes at 3.0
    assert p.rebuffers == 1 and p.rebuffer_s == pytest.approx(0.5)
    assert p.stalls == [(2.5, 3.0)]
    assert p.play_end == pytest.approx(7.0)
    assert p.position_s(0.2) is None  # not started
    assert p.position_s(2.0) == pytest.approx(1.5)
    assert p.position_s(2.8) == pytest.approx(2.0)  # frozen at the end of segment 0
    assert p.position_s(4.0) == pytest.approx(3.0)  # 3.5 s since start minus 0.5 s stalled
    assert p.position_s(10.0) == pytest.approx(6.0)  # all played
    assert p.buffer_s(2.0) == pytest.approx(0.5)
    assert p.buffer_s(2.8) == pytest.approx(0.0)
    assert p.buffer_s(3.5) == pytest.approx(3.5)  # 6 s arrived, 2.5 s played


def test_rtp_loss_counts_gaps_in_sequence_numbers_across_the_wrap():
    packets = [vm.RtpPacket(1.0 + i / 100, seq, 0, 1000) for i, seq in enumerate([65534, 65535, 1])]
    stats = vm.rtp_stats(packets)
    assert stats.packets_received == 3
    assert stats.loss_pct == pytest.approx(25.0)  # 65534..65537 expected, 0 (=65536) missing
    assert stats.bytes == 3000


def test_rtp_reordering_and_duplicates():
    seqs = [10, 12, 11, 12, 13]
    stats = vm.rtp_stats([vm.RtpPacket(i / 100, s, 0, 100) for i, s in enumerate(seqs)])
    assert stats.packets_received == 4 and stats.loss_pct == 0.0
    assert stats.out_of_order == 1  # 11 after 12; the duplicate 12 is not behind a higher one
    assert stats.bytes == 500


def test_rtp_jitter_is_rfc3550_over_90khz_timestamps_even_when_they_wrap():
    top = 1 << 32
    timestamps = [top - 1800, 1800, 5400]  # 0, 40, 80 ms of media time
    arrivals = [1.000, 1.050, 1.080]  # transits 1.000, 1.010, 1.000 s
    packets = [
        vm.RtpPacket(r, i, t, 100)
        for i, (r, t) in enumerate(zip(arrivals, timestamps, strict=True))
    ]
    jitter = vm.rtp_stats(packets).jitter_ms
    assert jitter == pytest.approx([10 / 16, 10 / 16 + (10 - 10 / 16) / 16])


def test_frames_group_packets_by_timestamp_in_media_order_across_the_wrap():
    top = 1 << 32
    # frame A (2 packets, media 0), then a B-frame-like reorder: C (media 80 ms) before B (40 ms)
    packets = [
        vm.RtpPacket(1.000, 1, top - 1800, 100),
        vm.RtpPacket(1.004, 2, top - 1800, 100),
        vm.RtpPacket(1.050, 3, 5400, 100),
        vm.RtpPacket(1.060, 4, 1800, 100),
    ]
    frames = vm.frame_arrivals(packets)
    assert [media for media, _ in frames] == pytest.approx([0.0, 0.04, 0.08])
    assert [arrived for _, arrived in frames] == [1.004, 1.060, 1.050]


def test_a_live_player_stalls_only_for_frames_later_than_its_jitter_buffer():
    frames = [(0.0, 1.0), (0.04, 1.05), (0.08, 1.30), (0.12, 1.31)]
    calm = vm.live_playout(frames, buffer_s=0.3)  # frames due 1.30, 1.34, 1.38, 1.42
    assert calm.started_at == pytest.approx(1.3)
    assert (calm.rebuffers, calm.rebuffer_s) == (0, 0.0)
    tight = vm.live_playout(frames, buffer_s=0.1)  # due 1.10, 1.14, 1.18 (came 1.30), ...
    assert tight.rebuffers == 1 and tight.rebuffer_s == pytest.approx(0.12)
    # after the stall the clock runs 0.12 s late: the 4th frame is due 1.34, came 1.31
    assert vm.live_playout([], 0.2) is None


def test_byte_bins_cover_every_second_up_to_the_last_arrival():
    rows = vm.byte_bins([(0.2, 100), (0.9, 50), (2.5, 10)])
    assert [(r["t_start"], r["bytes"], r["throughput_bps"]) for r in rows] == [
        (0.0, 150.0, 1200.0),
        (1.0, 0.0, 0.0),
        (2.0, 10.0, 80.0),
    ]
    assert vm.byte_bins([]) == []


def test_frame_difference_in_percent_of_full_scale():
    assert vm.frame_diff_pct(bytes([0, 255]), bytes([255, 255])) == pytest.approx(50.0)
    assert vm.frame_diff_pct(b"\x10\x20", b"\x10\x20") == 0.0
    with pytest.raises(ValueError, match="differ in size"):
        vm.frame_diff_pct(b"\x00", b"\x00\x00")


def test_http_summary_from_a_player_report():
    report = {
        "chunks": [[0.01, 200], [0.3, 1000], [0.6, 1000]],
        "segments": [[0, 2.0, 0.02, 0.3, 1000], [1, 2.0, 0.3, 0.6, 1000]],
        "playlist_bytes": 200,
        "error": None,
    }
    p = playout([0.3, 0.6])
    s = video.http_summary(report, p)
    assert s["bytes"] == 2200 and s["transmission_time_s"] == 0.6
    assert s["throughput_bps"] == pytest.approx(2200 * 8 / 0.6)
    assert s["segment_time_ms"] == pytest.approx(290.0)  # (280 + 300) / 2
    assert s["jitter_ms"] == pytest.approx(20.0)
    assert s["startup_delay_ms"] == pytest.approx(300.0)
    assert s["rebuffers"] == 0 and s["segments_received"] == 2
    assert s["frame_diff_pct"] is None  # not measured here, never 0


def test_nothing_downloaded_leaves_every_metric_unmeasured():
    empty = {"chunks": [], "segments": [], "playlist_bytes": None, "error": "refused"}
    assert set(video.http_summary(empty, vm.Playout()).values()) == {None}


def test_rtp_summary_and_intervals():
    packets = [vm.RtpPacket(5.0 + i * 0.5, i, i * 45000, 1000) for i in range(5)]  # 2 s
    summary, intervals = video.rtp_summary(packets)
    assert summary["bytes"] == 5000 and summary["transmission_time_s"] == 2.0
    assert summary["throughput_bps"] == 20000 and summary["loss_pct"] == 0.0
    assert summary["jitter_ms"] == 0.0  # perfectly paced
    assert [r["packets_received"] for r in intervals] == [2.0, 2.0, 1.0]
    assert intervals[0]["jitter_ms"] == 0.0 and intervals[0]["bytes"] == 2000


def test_playlist_parsing():
    text = (
        "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000000,\nseg000.ts\n#EXTINF:1.5,\nseg001.ts\n"
    )
    assert parse_playlist(text) == [("seg000.ts", 2.0), ("seg001.ts", 1.5)]
    with pytest.raises(ValueError, match="no #EXTINF"):
        parse_playlist("#EXTM3U\nseg000.ts\n")


def test_receiver_sdp_points_the_stream_at_the_local_decoder(tmp_path):
    (tmp_path / "stream.sdp").write_text(
        "v=0\nc=IN IP4 10.0.0.1\nm=video 9 RTP/AVP 96\na=rtpmap:96 H264/90000\n"
    )
    content = Content(ContentSpec(640, 360, 25, 1000, 6.0, 2.0), tmp_path)
    assert content.receiver_sdp(30002).splitlines() == [
        "v=0", "c=IN IP4 127.0.0.1", "m=video 30002 RTP/AVP 96", "a=rtpmap:96 H264/90000"
    ]  # fmt: skip


def test_defaults_and_content_identity():
    p = video.validate({"duration": 6}, "w")
    assert p.mode == "http" and p.frame_at_s == 3.0 and p.timeout_s == 22.0
    assert (p.content.width, p.content.height, p.content.fps) == (1280, 720, 25)
    other = video.validate({"duration": 6, "bitrate_kbit": 1000}, "w")
    assert other.content.key != p.content.key  # another encode, cached apart


@pytest.mark.parametrize(
    ("params", "complaint"),
    [
        ({"mode": "dash"}, "mode must be one of"),
        ({"resolution": "1280x721"}, "even sizes"),
        ({"resolution": 720}, "WIDTHxHEIGHT"),
        ({"duration": 4, "frame_at": 4}, "within the content"),
        ({"fps": 0}, "'fps' must be an integer > 0"),
        ({"colour": "red"}, "unknown parameter"),
        ({"jitter_buffer_ms": -5}, "jitter_buffer_ms must be a number >= 0"),
    ],
)
def test_bad_params_are_refused_naming_the_flow(params, complaint):
    with pytest.raises(ValueError, match=complaint) as caught:
        video.validate(params, "flow 'v1'")
    assert "flow 'v1'" in str(caught.value)


def test_spec_video_workload_defaults_to_the_cdn_pairs_and_refuses_odd_sizes():
    from pydantic import ValidationError

    from dplab.spec.model import VideoWorkload

    w = VideoWorkload(kind="video")
    assert (w.pairs, w.mode, w.resolution, w.frame_at) == ("cdn", "http", "1280x720", None)
    with pytest.raises(ValidationError, match="even"):
        VideoWorkload(kind="video", resolution="1280x719")
    with pytest.raises(ValidationError, match="below duration"):
        VideoWorkload(kind="video", duration=5, frame_at=5)
