"""Parsers on real iperf 2.1.8 and iputils ping outputs captured in tests/data."""

from pathlib import Path

import pytest

from dplab.measure.iperf_report import (
    IperfParseError,
    connect_time_ms,
    iperf_complaints,
    parse_iperf,
)
from dplab.measure.ping_report import PingParseError, parse_ping

DATA = Path(__file__).parent / "data"


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_tcp_receiver_report():
    report = parse_iperf(text("iperf/tcp_2s_server.txt"))
    assert [(r.t_start, r.t_end) for r in report.intervals] == [(0.0, 1.0), (1.0, 2.0)]
    assert report.intervals[0].bytes == 950665276
    assert report.final.bytes == 2041315388
    assert report.final.t_end == pytest.approx(2.0022)
    assert report.final.bps == pytest.approx(8156358886)
    assert report.final.bps == pytest.approx(report.final.bytes * 8 / 2.0022, rel=1e-4)
    assert sum(r.bytes for r in report.intervals) <= report.final.bytes
    assert report.final.jitter_ms is None and report.final.lost is None


def test_tcp_connect_time_from_sender():
    assert connect_time_ms(text("iperf/tcp_2s_client.txt")) == pytest.approx(0.55)
    assert connect_time_ms(text("iperf/tcp_unreachable_client.txt")) is None


def test_tcp_transfer_by_bytes_has_exact_final_size():
    report = parse_iperf(text("iperf/tcp_bytes_window_server.txt"))
    assert report.final.bytes == 20_000_000
    assert report.intervals[-1].t_end == pytest.approx(1.5959)


def test_udp_receiver_report_without_loss():
    report = parse_iperf(text("iperf/udp_10m_server.txt"))
    final = report.final
    assert (final.lost, final.total) == (0, 1704)
    assert final.jitter_ms == pytest.approx(0.001)
    assert (final.latency_avg_ms, final.latency_min_ms, final.latency_max_ms) == (
        0.008, 0.002, 0.743,
    )
    assert final.out_of_order == 0
    assert [r.total for r in report.intervals] == [852, 850]


def test_udp_receiver_report_with_loss_and_trailing_warning():
    report = parse_iperf(text("iperf/udp_loss_server.txt"))
    assert (report.final.lost, report.final.total) == (4188, 6254)
    assert report.final.bytes == 2479200
    assert report.final.bytes == (6254 - 4188) * 1200  # received datagrams x size
    assert report.intervals[1].jitter_ms == pytest.approx(0.060)


def test_out_of_order_lines_attach_to_their_interval():
    # iperf's report_outoforder line format, printed only when the count is above zero
    lines = text("iperf/udp_10m_server.txt").splitlines()
    lines.insert(8, "[  1] 0.0000-1.0000 sec  3 datagrams received out-of-order")
    lines.append("[  1] 0.0000-2.0018 sec  3 datagrams received out-of-order")
    report = parse_iperf("\n".join(lines))
    assert [r.out_of_order for r in report.intervals] == [3, 0]
    assert report.final.out_of_order == 3


def test_receiver_without_traffic_is_an_error_naming_the_cause():
    with pytest.raises(IperfParseError, match="server h3: no final summary"):
        parse_iperf(text("iperf/tcp_unreachable_server.txt"), "server h3")
    assert "No route to host" in iperf_complaints(text("iperf/tcp_unreachable_client.txt"))


def test_truncated_and_garbled_iperf_output_is_rejected():
    cut = "\n".join(text("iperf/tcp_2s_server.txt").splitlines()[:-1])  # killed before final
    with pytest.raises(IperfParseError, match="no final summary"):
        parse_iperf(cut)
    with pytest.raises(IperfParseError, match="output empty"):
        parse_iperf("")
    with pytest.raises(IperfParseError):
        parse_iperf("[  1] 0.0-1.0 sec  1.2 GBytes  9.9 Gbits/sec\n")  # not -f b


def test_ping_all_answered():
    report = parse_ping(text("ping/ping_ok.txt"))
    assert (report.packets_sent, report.packets_received) == (10, 10)
    assert [r.seq for r in report.replies] == list(range(1, 11))
    rtts = [r.rtt_ms for r in report.replies]
    # ping's own summary: rtt min/avg/max = 0.045/0.063/0.181 ms
    assert (min(rtts), max(rtts)) == (0.045, 0.181)
    assert sum(rtts) / len(rtts) == pytest.approx(0.063, abs=0.0005)
    first = report.replies[0]
    assert first.recv_ts == pytest.approx(1795240142.537043)
    assert first.send_ts == pytest.approx(1795240142.537043 - 0.181e-3)


def test_ping_partial_loss_and_misses():
    report = parse_ping(text("ping/ping_partial_loss.txt"))
    assert (report.packets_sent, report.packets_received) == (60, 53)
    assert len(report.replies) == 53


def test_ping_nothing_answered():
    report = parse_ping(text("ping/ping_unreachable.txt"))
    assert (report.packets_sent, report.packets_received, report.replies) == (3, 0, [])


def test_ping_garbled_is_rejected():
    with pytest.raises(PingParseError, match="h1: no 'packets transmitted' line: ping: oops"):
        parse_ping("ping: oops\n", "h1")
    with pytest.raises(PingParseError, match="output empty"):
        parse_ping("")
