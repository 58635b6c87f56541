"""The link emulator (dplab-linkem) in a real link: delay, loss and a TCP window measured
end to end across it, and its processes gone however the run ends."""

from __future__ import annotations

import math
import os
import re
import signal
import statistics
import subprocess
import sys
import textwrap
from contextlib import nullcontext

import networkx as nx
import pytest
from test_cleanup import assert_gone

from dplab.planes import create
from dplab.substrate import Network, registry
from dplab.substrate.linkem import LINKEM_BIN, flat_stats
from dplab.topology import catalog
from dplab.topology.model import HOST, Topology

pytestmark = [pytest.mark.net,
              pytest.mark.skipif(not LINKEM_BIN.exists(), reason="dplab-linkem not built")]


def pair(**attrs: object) -> Topology:
    """Two hosts on one direct link carried by our emulator (whether or not there is netem)."""
    g = nx.Graph()
    g.add_node("h1", kind=HOST)
    g.add_node("h2", kind=HOST)
    g.add_edge("h1", "h2", bw_mbit=None, emulator="dplab", **attrs)
    return Topology("pair", g)


def emulator_pids(net: Network) -> list[tuple[int, int | None]]:
    ns = net.emulator_ns(net.links[0])
    pids = registry.pids_in_netns([ns])
    assert pids, f"no emulator runs in {ns}"
    return [(pid, registry.process_start_time(pid)) for pid in pids]


def test_rtt_across_a_10_ms_link_is_20_ms():
    with Network(pair(delay_ms=10.0)) as net:
        assert net.emulated_links() == net.links
        ping = net.run(net.host_ns("h1"), ["ping", "-c", "120", "-i", "0.01", "-W", "2",
                                           net.host_ip("h2")], timeout=30)
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", ping.stdout)]
    assert len(rtts) >= 110, ping.stdout[-300:]
    p50 = statistics.median(rtts[10:])  # the first ones wait for ARP
    # ping prints these RTTs to 0.1 ms; rounded, so 20.3 is within 0.3 of 20.0 (a float's
    # 20.3 - 20.0 is 0.3000000000000007).
    assert round(abs(p50 - 20.0), 6) <= 0.3, f"p50 RTT {p50:.3f} ms across 2 x 10 ms"


# Sends N numbered UDP datagrams at about 20,000 a second (below what the emulator and the
# receiver take, so only the emulator's loss model loses packets).
SENDER = textwrap.dedent("""
    import socket, sys, time
    n, dst = int(sys.argv[1]), sys.argv[2]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(n):
        s.sendto(i.to_bytes(4, "big") + bytes(60), (dst, 9000))
        if i % 20 == 19:
            time.sleep(0.001)
""")
# Prints how many distinct datagrams came, and in how many runs the others were lost.
RECEIVER = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", 9000))
    print("ready", flush=True)
    seen = set()
    s.settimeout(5.0)
    try:
        while True:
            seen.add(int.from_bytes(s.recv(100)[:4], "big"))
            s.settimeout(1.0)
    except TimeoutError:
        n = int(sys.argv[1])
        runs = sum(1 for i in range(n) if i not in seen and (i == 0 or i - 1 in seen))
        print(len(seen), runs, flush=True)
""")


def udp_across(net: Network, n: int) -> tuple[int, int]:
    """(datagrams received, runs of lost ones) of n sent from h1 to h2."""
    rx = net.popen(net.host_ns("h2"), [sys.executable, "-c", RECEIVER, str(n)],
                   stdout=subprocess.PIPE, text=True)
    assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
    net.run(net.host_ns("h1"), [sys.executable, "-c", SENDER, str(n), net.host_ip("h2")],
            timeout=30)
    received, runs = map(int, rx.stdout.readline().split())
    return received, runs


def test_one_percent_loss_is_within_its_binomial_ci_over_10000_packets():
    n, p = 10_000, 0.01
    with Network(pair(loss_pct=1.0)) as net:
        received, _ = udp_across(net, n)
    lost = (n - received) / n
    # 99.9 % binomial interval (normal approximation, n p = 100): the seed is random.
    half = 3.29 * math.sqrt(p * (1 - p) / n)
    assert abs(lost - p) <= half, f"lost {lost:.4%} of {n}, want 1 % ± {half:.3%}"
    # The emulator's own count: the same datagrams, maybe an ARP packet more; a run stores it.
    counted = net.emulator_reports[0]["report"]["a_to_b"]["lost"]
    assert n - received <= counted <= n - received + 3
    assert flat_stats(net.emulator_reports)["linkem_h1_to_h2_lost"] == counted


def test_gilbert_elliott_loses_in_bursts():
    """p = 1 %, r = 25 %: the bad state 1 / (1 + r/p) = 1/26 of the time, bursts of 1/r = 4."""
    n = 10_000
    ge = {"loss": {"model": "gilbert_elliott", "p_pct": 1.0, "r_pct": 25.0}}
    with Network(pair(linkem=ge)) as net:
        received, runs = udp_across(net, n)
    lost = n - received
    assert 0.025 <= lost / n <= 0.055, f"lost {lost} of {n}, want about {n / 26:.0f}"
    assert 2.5 <= lost / runs <= 6.0, f"{lost} lost in {runs} runs, want bursts of about 4"


# Sends 1000-byte datagrams for 2 s at about 2,000 a second (16.8 Mbit/s of frames).
FLOOD = textwrap.dedent("""
    import socket, sys, time
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = time.monotonic()
    for i in range(4000):
        while time.monotonic() < start + i / 2000:
            time.sleep(0.002)
        s.sendto(bytes(1000), (sys.argv[1], 9002))
""")
# Prints the frame bit rate between the first and the last arrival (kernel timestamps).
RATE_SINK = textwrap.dedent("""
    import socket, struct
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
    s.bind(("0.0.0.0", 9002)); s.settimeout(5.0)
    print("ready", flush=True)
    stamps = []
    try:
        while True:
            data, anc, _, _ = s.recvmsg(2048, 64)
            sec, nsec = struct.unpack("qq", anc[0][2][:16])
            stamps.append(sec * 1e9 + nsec)
            s.settimeout(1.0)
    except TimeoutError:
        pass
    frame_bits = (1000 + 8 + 20 + 14) * 8
    print(frame_bits * (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1e9), flush=True)
""")


def test_a_rate_with_its_queue_delivers_that_rate():
    rate = 10e6
    with Network(pair(linkem={"rate_bps": rate, "queue_packets": 100})) as net:
        sink = net.popen(net.host_ns("h2"), [sys.executable, "-c", RATE_SINK],
                         stdout=subprocess.PIPE, text=True)
        assert sink.stdout is not None and sink.stdout.readline().strip() == "ready"
        net.run(net.host_ns("h1"), [sys.executable, "-c", FLOOD, net.host_ip("h2")],
                timeout=30)
        measured = float(sink.stdout.readline())
    way = net.emulator_reports[0]["report"]["a_to_b"]
    assert way["queue_full"] > 0, "the offered 16.8 Mbit/s never filled the queue"
    assert abs(measured - rate) <= 0.01 * rate, f"{measured / 1e6:.3f} Mbit/s on a 10 Mbit/s rate"


# Reads what arrives; prints the rate between about 1 s and 3 s after the connection, from
# the kernel's count of bytes received (tcpi_bytes_received) read at two instants, so a
# reader that runs late on a busy machine moves an instant but does not miscount.
SINK = textwrap.dedent("""
    import socket, time
    s = socket.socket()
    # Room for far more than the window: a late reader does not shrink what h2 advertises.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", 9001)); s.listen(1)
    print("ready", flush=True)
    c, _ = s.accept()
    def received():
        info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 136)
        return time.monotonic(), int.from_bytes(info[128:136], "little")
    t0, marks = time.monotonic(), []
    while len(marks) < 2:
        c.recv(1 << 16)
        if time.monotonic() - t0 >= 1.0 + 2.0 * len(marks):
            marks.append(received())
    (t1, b1), (t2, b2) = marks
    print((b2 - b1) / (t2 - t1), flush=True)
""")
SOURCE = textwrap.dedent("""
    import socket, sys, time
    c = socket.socket()
    # cubic, not the default bbr: bbr paces at its own estimate, below what the window allows.
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    c.connect((sys.argv[1], 9001))
    c.settimeout(0.5)
    end, data = time.monotonic() + 3.5, bytes(1 << 16)
    try:
        while time.monotonic() < end:
            c.send(data)
    except OSError:
        pass
    info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    rtt, retrans = (int.from_bytes(info[at:at + 4], "little") for at in (68, 100))
    print(f"srtt {rtt / 1000} ms, {retrans} retransmitted")  # tcpi_rtt, tcpi_total_retrans
""")
MSS = 1448  # 1500 - IP and TCP headers - the timestamp option


def test_tcp_with_a_window_limit_gets_window_over_rtt():
    # Without window scaling h2 advertises at most 65535 bytes, in whole segments.
    window = 65535 // MSS * MSS
    with Network(pair(delay_ms=25.0)) as net:
        h1, h2 = net.host_ns("h1"), net.host_ns("h2")
        net.sysctl({h2: {"net.ipv4.tcp_window_scaling": "0"}})
        sink = net.popen(h2, [sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
        assert sink.stdout is not None and sink.stdout.readline().strip() == "ready"
        srtt = net.run(h1, [sys.executable, "-c", SOURCE, net.host_ip("h2")], timeout=30).stdout
        rate = float(sink.stdout.readline())
    want = window / 0.050
    assert abs(rate - want) <= 0.05 * want, (f"{rate:.0f} B/s, window/RTT {want:.0f} B/s "
                                             f"(sender: {srtt.strip()}; {net.emulator_reports})")


CHILD = textwrap.dedent("""
    import networkx as nx, time
    from dplab.substrate import Network, cleanup_on_signals
    from dplab.topology.model import HOST, Topology
    cleanup_on_signals()
    g = nx.Graph()
    g.add_nodes_from(["h1", "h2"], kind=HOST)
    g.add_edge("h1", "h2", bw_mbit=None, delay_ms=1.0, emulator="dplab")
    with Network(Topology("pair", g)) as net:
        print(net.prefix, flush=True)
        time.sleep(120)
""")


@pytest.mark.parametrize("how", ["normal", "exception", "sigint"])
def test_every_emulator_process_is_gone_afterwards(how):
    if how == "sigint":
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                                 text=True)
        assert child.stdout is not None
        prefix = child.stdout.readline().strip()
        procs = [(pid, registry.process_start_time(pid))
                 for pid in registry.pids_in_netns([f"{prefix}-linkem0"])]
        assert procs, "the child's emulator is not running"
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=20) != 0
    else:
        raises = pytest.raises(ZeroDivisionError) if how == "exception" else nullcontext()
        with raises, Network(pair(delay_ms=1.0, linkem={"seed": 41})) as net:
            prefix, procs = net.prefix, emulator_pids(net)
            if how == "exception":
                1 / 0  # noqa: B018
        # The seed set in the link's linkem settings (plus the link's number, 0) ran it.
        assert net.emulator_reports[0]["report"]["seed"] == 41
    assert_gone(prefix, procs)


def test_link_classes_of_a_catalog_topology_add_up_across_a_plane():
    """Edge and core links get their own delay and linkem settings; a bridge plane forwards
    through them; every emulator runs at real-time priority."""
    topo = catalog.build("linear", switches=2, hosts_per_switch=1, edge_bw=None, core_bw=None,
                         edge_delay_ms=2.0, core_delay_ms=5.0, emulator="dplab",
                         linkem={"seed": 11}, core_linkem={"duplicate_pct": 100})
    plane = create("bridge", {})
    with Network(topo, addressing=plane.addressing) as net:
        assert len(net.emulated_links()) == 3
        policies = {pid: os.sched_getscheduler(pid)
                    for link in net.emulated_links()
                    for pid in registry.pids_in_netns([net.emulator_ns(link)])}
        try:
            plane.start(net)
            plane.wait_ready(40)
            ping = net.run(net.host_ns("h1"), ["ping", "-c", "40", "-i", "0.02", "-W", "2",
                                               net.host_ip("h2")], timeout=30)
        finally:
            plane.stop()
    assert len(policies) == 3 and set(policies.values()) == {os.SCHED_FIFO}, policies
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", ping.stdout)]
    p50 = statistics.median(rtts[5:])
    assert abs(p50 - 18.0) <= 0.5, f"p50 RTT {p50:.3f} ms, want 2 x (2 + 5 + 2) ms"
    # Only the core link (s1–s2) duplicates; each link draws from linkem's seed + its number.
    duplicated = {"–".join(sorted(r["ends"])): r["report"]["a_to_b"]["duplicated"]
                  + r["report"]["b_to_a"]["duplicated"] for r in net.emulator_reports}
    assert duplicated == {"s1–s2": duplicated["s1–s2"], "h1–s1": 0, "h2–s2": 0}, duplicated
    assert duplicated["s1–s2"] >= 80, duplicated
    assert sorted(r["seed"] for r in net.emulator_reports) == [11, 12, 13]
    assert flat_stats(net.emulator_reports)["linkem_s1_s2_realtime"] == 1.0
