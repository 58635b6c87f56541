"""Issue 22's metrics measured on a real Network: h1-h2 unshaped, h3-h4 over a 1 Mbit/s link
whose TBF queue holds ~20 ms (substrate.network.TBF_LATENCY_MS) plus its burst."""

import os
import time

import networkx as nx
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.utils import PcapReader, wrpcap

from dplab import planes
from dplab.fidelity import FidelityMonitor
from dplab.fidelity.controller import controller_load
from dplab.substrate.network import HOST_IF, Network
from dplab.topology import catalog
from dplab.topology.model import HOST, Topology
from dplab.workloads import video as video_module
from dplab.workloads import voip as voip_module
from dplab.workloads.capture import CapturePoint, Captures
from dplab.workloads.flows import FIRST_PORT, Flow, run_flows

pytestmark = pytest.mark.net

SEGMENT_AT_1_MBIT_MS = 1448 * 8 / 1e6 * 1000  # one full segment's time on the wire
LIGHT_VIDEO = {"resolution": "320x180", "fps": 25, "bitrate_kbit": 500}


@pytest.fixture(scope="module")
def net():
    graph = nx.Graph()
    for host in ("h1", "h2", "h3", "h4"):
        graph.add_node(host, kind=HOST)
    graph.add_edge("h1", "h2", bw_mbit=None)
    graph.add_edge("h3", "h4", bw_mbit=1.0)
    with Network(Topology("metrics-test", graph)) as network:
        yield network


def test_icmp_throughput_is_answered_payload_over_the_send_span(net):
    params = {"count": 40, "interval": 0.05, "size": 1000}
    [result] = run_flows(net, [Flow("icmp-h1-h2", "icmp", "h1", "h2", params)])
    assert result.ok, result.error
    s = result.summary
    assert s["packets_received"] == 40
    # 40 answers x 1000 B x 8 over the measured send span: at least the 2 s ping's schedule
    # takes (a loaded machine sends late, never early)
    assert 0.5 * 40 * 8000 / 2.0 < s["throughput_bps"] <= 40 * 8000 / 2.0 * 1.01
    *whole, last = result.intervals
    assert whole, result.intervals  # each whole 1 s bin: its answers x 1000 B x 8 / 1 s
    for row in whole:
        assert row["packets_received"] > 0
        assert row["throughput_bps"] == pytest.approx(row["packets_received"] * 8000, rel=0.01)


def test_tcp_over_a_1_mbit_link_with_a_short_queue_retransmits(net):
    [result] = run_flows(net, [Flow("tcp-h3-h4", "tcp", "h3", "h4", {"duration": 3})])
    assert result.ok, result.error
    s = result.summary
    # TCP overfills a ~12-packet queue in slow start: the sender's kernel retransmits
    assert s["retransmits"] > 0
    assert 0 < s["tcp_loss_pct"] < 100
    # the queue is on the path: RTT at least one segment's time on the 1 Mbit/s wire
    assert SEGMENT_AT_1_MBIT_MS < s["srtt_ms"] < 2000
    assert s["throughput_bps"] == pytest.approx(1e6, rel=0.2)
    rows = [row for row in result.intervals if row["retransmits"] is not None]
    assert rows and sum(row["retransmits"] for row in rows) <= s["retransmits"]


def tos_by_port(pcap):
    """ToS bytes seen per UDP destination port and TCP source port in a capture."""
    seen: dict[int, set[int]] = {}
    with PcapReader(str(pcap)) as packets:
        for packet in packets:
            if IP in packet and UDP in packet:
                seen.setdefault(packet[UDP].dport, set()).add(packet[IP].tos)
            elif IP in packet and TCP in packet:
                seen.setdefault(packet[TCP].sport, set()).add(packet[IP].tos)
    return seen


def test_tos_on_voip_udp_and_video_and_study_jitters_of_each(net, tmp_path, monkeypatch):
    monkeypatch.setenv("DPLAB_VIDEO_CACHE", str(tmp_path / "video-cache"))
    flows = [
        Flow("voip-h1-h2", "voip", "h1", "h2", {"duration": 2, "tos": 184}),
        Flow("udp-h1-h2", "udp", "h1", "h2", {"duration": 2, "rate_mbit": 2, "tos": 40}),
        Flow("video-h2-h1", "video", "h2", "h1", {"mode": "rtp", "duration": 2, "tos": 136,
                                                  **LIGHT_VIDEO}),
        Flow("http-h2-h1", "video", "h2", "h1", {"mode": "http", "duration": 2,
                                                 "segment_s": 1, "tos": 72, **LIGHT_VIDEO}),
    ]
    point = CapturePoint(net.host_ns("h2"), HOST_IF, tmp_path / "h2.pcap")
    with Captures(net, [point], f"udp or tcp src port {video_module.HTTP_FIRST_PORT}") as capture:
        voip, udp, video, http = run_flows(net, flows)
    assert not capture.problems
    for result in (voip, udp, video, http):
        assert result.ok, result.error
    seen = tos_by_port(point.path)
    assert seen[voip_module.FIRST_PORT] == {184}
    assert seen[FIRST_PORT] == {40}  # iperf's datagrams (udp is the first tool flow)
    assert seen[video_module.RTP_FIRST_PORT] == {136}  # the first (only) RTP viewer
    assert seen[video_module.HTTP_FIRST_PORT] == {72}  # the HTTP server's every segment
    for result in (voip, udp, video):
        s = result.summary
        # Eq. 1 (a mean of RFC 3550 values) and Eq. 5 (a variance) of delays measured on a
        # veth: positive, and within what the delays' own spread allows
        assert s["jitter_eq1_ms"] is not None and s["jitter_eq1_ms"] >= 0
        assert s["delay_var_ms2"] is not None and s["delay_var_ms2"] >= 0
    for result in (voip, udp):  # values within [min, max] have a variance <= (max-min)²/4
        s = result.summary  # (voip stores no minimum; a delay is >= 0)
        spread = s["owd_max_ms"] - s.get("owd_min_ms", 0.0)
        assert s["delay_var_ms2"] <= spread ** 2 / 4 * 1.01 + 1e-6
        assert s["jitter_eq1_ms"] <= spread + 1e-6


def test_trace_replay_from_csv_and_pcap_keeps_sizes_times_and_tos(net, tmp_path):
    # CSV: 40 packets 25 ms apart, sizes 100..1400 B, every other one DSCP EF
    rows = [(i * 0.025, 100 + (i * 37) % 1300, 184 if i % 2 else 0) for i in range(40)]
    csv_file = tmp_path / "paced.csv"
    csv_file.write_text("time,size,tos\n" + "".join(f"{t},{s},{q}\n" for t, s, q in rows))
    # pcap: a burst of 40 x 1400 B at once into the 1 Mbit/s link's ~18 kB queue
    burst = [Ether() / IP(dst="10.0.0.9", len=1400) / UDP() for _ in range(40)]
    for number, packet in enumerate(burst):
        packet.time = 100.0 + number * 1e-5
    pcap_file = tmp_path / "burst.pcap"
    wrpcap(str(pcap_file), burst)
    flows = [Flow("trace-h1-h2", "trace", "h1", "h2", {"file": str(csv_file)}),
             Flow("trace-h3-h4", "trace", "h3", "h4", {"file": str(pcap_file)})]
    point = CapturePoint(net.host_ns("h2"), HOST_IF, tmp_path / "h2.pcap")
    with Captures(net, [point], "udp") as capture:
        paced, bursty = run_flows(net, flows)
    assert not capture.problems
    assert paced.ok, paced.error
    s = paced.summary
    assert (s["packets_sent"], s["packets_received"], s["loss_pct"]) == (40, 40, 0.0)
    assert s["bytes"] == sum(size for _, size, _ in rows)  # each packet its recorded size
    assert s["throughput_bps"] == pytest.approx(s["bytes"] * 8 / rows[-1][0], rel=0.01)
    assert [row["packets_sent"] for row in paced.intervals] == [40]  # all within the 1st s
    with PcapReader(str(point.path)) as packets:
        wire = [(p[IP].len, p[IP].tos) for p in packets if UDP in p]
    assert wire == [(size, tos) for _, size, tos in rows]
    assert 0 <= s["delay_var_ms2"] <= (s["owd_max_ms"] - s["owd_min_ms"]) ** 2 / 4 + 1e-6
    # the burst overflows the shaped link's queue: some lost, the rest queued behind it
    b = bursty.summary
    assert b["packets_sent"] == 40 and 0 < b["packets_received"] < 40
    assert b["loss_pct"] == pytest.approx(100 * (40 - b["packets_received"]) / 40)
    assert b["owd_max_ms"] > 5 * 1400 * 8 / 1e6 * 1000  # queued behind >= 5 packets at 1 Mbit/s


def broadcast_arps(net, tmp_path, name, flows):
    """run_flows while counting the ARP broadcasts h1 sends (next-hop resolutions)."""
    point = CapturePoint(net.host_ns("h2"), HOST_IF, tmp_path / f"{name}.pcap")
    with Captures(net, [point], "arp and ether dst ff:ff:ff:ff:ff:ff") as capture:
        [result] = run_flows(net, flows)
    assert not capture.problems and result.ok, result.error
    with PcapReader(str(point.path)) as packets:
        return sum(1 for packet in packets if ARP in packet and packet[ARP].op == 1)


def test_a_cold_flow_pays_arp_again_and_a_warm_one_does_not(net, tmp_path):
    ping = {"count": 3, "interval": 0.05}
    broadcast_arps(net, tmp_path, "warm-up", [Flow("icmp-a", "icmp", "h1", "h2", ping)])
    warm = broadcast_arps(net, tmp_path, "warm", [Flow("icmp-b", "icmp", "h1", "h2", ping)])
    cold = broadcast_arps(net, tmp_path, "cold",
                          [Flow("icmp-c", "icmp", "h1", "h2", ping, cold=True)])
    assert (warm, cold) == (0, 1)


def test_interface_counters_per_interval_carry_the_flow_at_its_rate(net):
    began = time.monotonic()
    with FidelityMonitor(net, interval_s=0.5) as monitor:
        [result] = run_flows(net, [Flow("udp-h1-h2", "udp", "h1", "h2",
                                        {"duration": 3, "rate_mbit": 2})])
    assert result.ok, result.error
    series = monitor.series(began)
    rx = [p for p in series if p.series == "rx_bps:h2/eth0"]
    assert len(rx) >= 5 and all(p.t > 0 for p in rx)
    # 2 Mbit/s of 1470-byte UDP payload is 2 x 1512/1470 Mbit/s of Ethernet frames on the
    # wire (42 header bytes each); intervals wholly inside the flow carry that rate
    frame_bps = 2e6 * (1470 + 42) / 1470
    middle = sorted(p.value for p in rx)[len(rx) // 2]
    assert middle == pytest.approx(frame_bps, rel=0.1)
    pps = sorted(p.value for p in series if p.series == "rx_pps:h2/eth0")
    assert pps[len(pps) // 2] == pytest.approx(2e6 / (1470 * 8), rel=0.1)
    idle = [p.value for p in series if p.series == "tx_bps:h3/eth0"]
    assert idle and max(idle) < 1e4  # the other link stayed quiet


@pytest.mark.parametrize("kind", ["ovs", "p4", "xdp"])
def test_a_flows_recorded_path_is_the_shortest_path_the_controller_chose(kind):
    """Reactive planes under our controller on the looped multipath fabric: h2 (leaf 0) to
    h6 (leaf 2) is not the readiness ping's pair, so its rules are set up by this traffic,
    on the switches of the one path (of several equally short) the controller chose."""
    topo = catalog.build("multipath")
    with planes.running(kind, {"mode": "reactive"}, topo, ready_timeout=30) as (net, plane):
        began = time.monotonic()
        flows = [Flow("icmp-h2-h6", "icmp", "h2", "h6", {"count": 10, "interval": 0.1},
                      cold=True)]
        [result] = run_flows(net, flows)
        assert result.ok, result.error
        paths, ended = plane.flow_paths(flows), time.monotonic() - began
        pair = (net.host_mac("h2").lower(), net.host_mac("h6").lower())
        chosen = {s for s, rules in plane.path_rule_packets().items() if pair in rules}
        series = plane.series(began) if kind != "xdp" else []
        deadline = time.monotonic() + 5  # the controller adds a series line once a second
        while kind != "xdp" and not any(p.t > ended for p in series):
            assert time.monotonic() < deadline, "no controller series line after the traffic"
            time.sleep(0.1)
            series = plane.series(began)
    graph = topo.graph
    path = paths["icmp-h2-h6"]
    # the switches holding the controller's rules for the pair, each crossed once, in order:
    # edge switch of h2, one spine, edge switch of h6
    assert set(path) == chosen and len(path) == len(chosen)
    assert len(path) == nx.shortest_path_length(graph, "h2", "h6") - 1 == 3
    assert graph.has_edge("h2", path[0]) and graph.has_edge(path[-1], "h6")
    assert all(graph.has_edge(a, b) for a, b in zip(path, path[1:], strict=False))
    if kind == "xdp":
        return  # the controller runs in this process: no series file of its own
    after = [p for p in series if p.t > 0]
    installs = sum(p.value for p in after if p.series == "flow_installs_per_s:controller")
    packet_ins = sum(p.value for p in after if p.series == "packet_ins_per_s:controller")
    assert installs > 0 and packet_ins > 0  # per second, summed over ~1 s intervals
    cpu = [p.value for p in series if p.series == "cpu_pct:controller"]
    assert cpu and all(0 <= value <= 100 * os.cpu_count() for value in cpu)
    load = controller_load(series)  # the plane statistics the runner stores from them
    assert load["controller_cpu_max_pct"] == max(p.value for p in series if p.t >= 0 and
                                                 p.series == "cpu_pct:controller")
    assert load["packet_ins_max_per_s"] > 0 and load["controller_saturated_s"] >= 0
