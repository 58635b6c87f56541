"""Workload modules on captured outputs: metrics, intervals, argv and parameter checks."""

import math
from pathlib import Path

import pytest

from dplab.measure.iperf_report import IperfParseError
from dplab.workloads import iperf, ping
from dplab.workloads.flows import Flow, run_flows
from dplab.workloads.tcp_window import Seen, connections, namespace_windows

DATA = Path(__file__).parent / "data"


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_tcp_metrics_come_from_receiver_and_connect_time_from_sender():
    params = iperf.validate("tcp", {"duration": 2}, "t")
    m = iperf.measure(params, text("iperf/tcp_2s_client.txt"), text("iperf/tcp_2s_server.txt"), "t")
    assert m.summary == {
        "throughput_bps": 8156358886.0,
        "bytes": 2041315388.0,
        "transmission_time_s": pytest.approx(2.0022),
        "syn_delay_ms": None,  # filled in by flows from the SYN capture
        "connect_ms": 0.55,
        # the sender's kernel: Rtry total, MSS 1448, sRTT at the ends of 0-1 s and 1-2 s
        "retransmits": 2111.0,
        "tcp_loss_pct": pytest.approx(100 * 2111 / (2111 + math.ceil(2041315388 / 1448))),
        "srtt_ms": pytest.approx((0.154 + 0.103) / 2),
        # no window asked: autotuning sized it; no flow ran, so no window was sampled
        "window_asked_bytes": None, "window_granted_bytes": None, "window_clamped": None,
        "window_by_sysctl": None, "window_used_bytes": None,
        "window_advertised_max_bytes": None,
    }
    assert [row["bytes"] for row in m.intervals] == [950665276.0, 1090650112.0]
    assert [row["retransmits"] for row in m.intervals] == [1868.0, 243.0]
    assert m.intervals[1]["t_start"] == 1.0 and m.error is None


def test_udp_metrics_with_loss():
    params = iperf.validate("udp", {"duration": 2, "rate_mbit": 30, "size": 1200}, "u")
    m = iperf.measure(
        params, text("iperf/udp_loss_client.txt"), text("iperf/udp_loss_server.txt"), "u"
    )
    s = m.summary
    assert s["loss_pct"] == pytest.approx(100 * 4188 / 6254)
    assert (s["packets_sent"], s["packets_received"]) == (6254.0, 2066.0)
    assert s["jitter_ms"] == pytest.approx(0.195)
    assert s["owd_ms"] == pytest.approx(34.783)
    assert s["out_of_order"] == 0.0
    assert s["throughput_bps"] == pytest.approx(9739273)
    assert s["throughput_pps"] == pytest.approx(2066 / 2.0365)
    assert m.intervals[0]["loss_pct"] == pytest.approx(100 * 1990 / 3012)
    assert m.intervals[0]["packets_received"] == 3012 - 1990


def test_failed_receiver_error_quotes_the_sender():
    params = iperf.validate("tcp", {"duration": 1}, "t")
    with pytest.raises(IperfParseError, match="No route to host"):
        iperf.measure(
            params,
            text("iperf/tcp_unreachable_client.txt"),
            text("iperf/tcp_unreachable_server.txt"),
            "t",
        )


def test_ping_metrics_and_one_second_bins():
    params = ping.validate({"count": 10, "interval": 0.05, "size": 100}, "p")
    m = ping.measure(params, text("ping/ping_ok.txt"), "p")
    s = m.summary
    assert (s["packets_sent"], s["packets_received"], s["loss_pct"]) == (10.0, 10.0, 0.0)
    assert (s["rtt_min_ms"], s["rtt_max_ms"]) == (0.045, 0.181)
    assert s["rtt_ms"] == pytest.approx(0.063, abs=0.0005)  # ping's own avg
    assert s["rtt_p50_ms"] <= s["rtt_p99_ms"] <= s["rtt_max_ms"]
    assert s["jitter_ms"] > 0
    assert len(m.intervals) == 1 and m.intervals[0]["packets_received"] == 10


def test_ping_loss_is_counted_per_bin():
    params = ping.validate({"count": 60, "interval": 0.02}, "p")
    m = ping.measure(params, text("ping/ping_partial_loss.txt"), "p")
    assert m.summary["loss_pct"] == pytest.approx(100 * 7 / 60)
    assert sum(row["packets_sent"] for row in m.intervals) == 60
    assert sum(row["packets_received"] for row in m.intervals) == 53
    assert [row["t_start"] for row in m.intervals] == [0.0, 1.0]


def test_ping_without_replies_keeps_the_measured_loss_and_flags_it():
    params = ping.validate({"count": 3, "interval": 0.2}, "p")
    m = ping.measure(params, text("ping/ping_unreachable.txt"), "p")
    assert m.error == "p: no echo reply received"
    assert m.summary["loss_pct"] == 100.0
    assert m.summary["rtt_ms"] is None and m.summary["jitter_ms"] is None
    assert m.intervals == []


def test_iperf_argv():
    udp = iperf.validate("udp", {"bytes": 1_000_000, "rate_mbit": 10, "size": 1000}, "u")
    client = iperf.client_argv(udp, "10.0.0.2", 5003)
    assert client[:3] == ["iperf", "-c", "10.0.0.2"]
    for flag, value in [("-n", "1000000"), ("-b", "10000000"), ("-l", "1000"), ("-p", "5003")]:
        assert client[client.index(flag) + 1] == value
    assert "--trip-times" in client and "-u" in client
    assert udp.timeout_s == pytest.approx(0.8 * 1.1 + 5)
    server = iperf.server_argv(udp, 5003)
    assert server[2:4] == ["-P", "1"] and server[server.index("-l") + 1] == "1000"
    tcp = iperf.validate("tcp", {"duration": 3, "window": 65536}, "t")
    assert iperf.server_argv(tcp, 5001)[-2:] == ["-w", "65536"]
    assert "-t" in iperf.client_argv(tcp, "10.0.0.2", 5001) and tcp.timeout_s == pytest.approx(8.3)


@pytest.mark.parametrize(
    ("kind", "params", "message"),
    [
        ("tcp", {"duration": 1, "bytes": 5}, "exactly one of 'duration' .* or 'bytes'"),
        ("tcp", {"size": 100}, r"unknown parameter\(s\) \['size'\]"),
        ("udp", {"duration": 1, "rate_mbit": -1}, "'rate_mbit': Input should be greater than 0"),
        ("icmp", {"interval": 0.001}, "'interval': Input should be greater than or equal to "
         "0.002"),
        ("icmp", {"count": 2.5}, "'count': Input should be a valid integer"),
        ("icmp", {"size": 70000}, "'size': Input should be less than or equal to 65507"),
        ("sctp", {}, "kind must be one of"),
    ],
)
def test_bad_parameters_fail_before_anything_starts(kind, params, message):
    flow = Flow("f1", kind, "h1", "h2", params)
    with pytest.raises(ValueError, match=f"flow 'f1'.*{message}"):
        run_flows(object(), [flow])  # the network is never touched


def test_window_granted_is_half_the_socket_buffer_iperf_prints():
    clamped = "TCP window size: 8388608 Byte (WARNING: requested 10000000 Byte)\n"
    granted = "TCP window size: 1.91 MByte\n"
    assert iperf.window_metrics(10_000_000, clamped, clamped, Seen(offered=6_000_000)) == {
        "window_asked_bytes": 10_000_000.0, "window_granted_bytes": 4194304.0,
        "window_clamped": 1.0, "window_by_sysctl": 0.0, "window_used_bytes": 6_000_000.0,
        "window_advertised_max_bytes": None}
    used = iperf.window_metrics(1_000_000, granted, "", Seen())
    assert used["window_granted_bytes"] == pytest.approx(1.91 * 1024**2 / 2)
    assert used["window_clamped"] == 0.0
    by_sysctl = iperf.window_metrics(10_000_000, granted, granted,
                                     Seen(granted=10_000_000, offered=15_000_000,
                                          advertised=900_000))
    assert by_sysctl == {"window_asked_bytes": 10_000_000.0,
                         "window_granted_bytes": 10_000_000.0, "window_clamped": 0.0,
                         "window_by_sysctl": 1.0, "window_used_bytes": 15_000_000.0,
                         "window_advertised_max_bytes": 900_000.0}


def test_ss_connections_and_one_namespace_per_window():
    out = ("28      3994463 10.0.0.1:50626 10.0.0.2:5001 \n"
           "\t bbr wscale:10,10 cwnd:16 rcv_ssthresh:64076 snd_wnd:1385472\n"
           "0 0 [::1]:5002 [::1]:41000\n\t cubic rcv_ssthresh:15414151 snd_wnd:65536\n")
    found = list(connections(out))
    assert [(local, peer) for local, peer, _ in found] == [(50626, 5001), (5002, 41000)]
    assert "snd_wnd:1385472" in found[0][2]
    assert namespace_windows([("a", 10), ("b", 10), ("a", 10)]) == {"a": 10, "b": 10}
    with pytest.raises(ValueError, match="windows 10 and 20 .* share namespace a"):
        namespace_windows([("a", 10), ("a", 20)])
