"""Wireless topologies: the distance model, the catalog's wifi shapes, and over a real medium
(dplab-wmedium) stations talking through the bridge, p4, xdp and ovs planes on the access point,
broadcasts reaching every station, two stations sharing the airtime, nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw
from test_cleanup import assert_gone

from dplab import planes
from dplab.plan import build_plan
from dplab.spec.loader import load, parse
from dplab.study003 import matrix
from dplab.study003.frames import listening, received, send
from dplab.substrate import Network, registry
from dplab.substrate.wmedium import WMEDIUM_BIN, flat_stats
from dplab.topology import catalog, radio
from dplab.topology.exporters import to_containerlab
from dplab.topology.model import TopologyError

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
needs_medium = pytest.mark.skipif(not WMEDIUM_BIN.exists(), reason="dplab-wmedium not built")


# --- the model and the catalog (no network) --------------------------------------------------

def test_rate_falls_in_802_11g_steps_with_distance_and_loss_rises_at_the_edge():
    links = [radio.from_distance(d, "sta1–ap1") for d in (1, 20, 40, 60, 80, 100, 112, 115)]
    rates = [link.rate_mbit for link in links]
    assert rates == sorted(rates, reverse=True)
    assert rates[0] == 54.0 and rates[-1] == 6.0
    assert set(rates) <= {r for r, _ in radio.SENSITIVITY_DBM}
    losses = [link.loss_pct for link in links]
    assert losses[:5] == [0.0] * 5  # 80 m: more than EDGE_MARGIN_DB above 6 Mbit/s's minimum
    assert 0 < losses[5] < losses[6] < losses[7] <= radio.EDGE_LOSS_PCT


def test_beyond_range_is_refused_naming_the_edge():
    with pytest.raises(TopologyError, match=r"sta2–ap1: 130.0 m is beyond the range"):
        catalog.build("wifi", n=2, distance_m=[10, 130])


def test_rate_and_loss_set_directly_override_the_distance():
    topo = catalog.build("wifi", n=2, distance_m=100, rate_mbit=[None, 11], wifi_loss_pct=5)
    edges = [topo.graph.edges["ap1", s] for s in ("sta1", "sta2")]
    assert [e["rate_mbit"] for e in edges] == [radio.from_distance(100, "").rate_mbit, 11.0]
    assert [e["loss_pct"] for e in edges] == [5.0, 5.0]
    with pytest.raises(TopologyError, match="distance_m lists 1 values for 2 stations"):
        catalog.build("wifi", n=2, distance_m=[10])


def test_every_station_of_an_ap_is_behind_its_one_wlan_port():
    topo = catalog.build("wifi2", n=4, hosts=1)
    ports = topo.port_numbers()
    assert topo.stations("ap1") == ["sta1", "sta2"] and topo.stations("ap2") == ["sta3", "sta4"]
    assert ports["ap1", "sta1"] == ports["ap1", "sta2"] != ports["ap1", "h1"]
    assert len({ports["ap1", n] for n in topo.graph.neighbors("ap1")}) == 3  # h1, ap2, wlan
    assert len({topo.host_index(h) for h in topo.hosts()}) == len(topo.hosts())


def test_the_wireless_scenarios_are_valid():
    paths = sorted(SCENARIOS.glob("study003_wireless_*.yaml")) + [SCENARIOS / "wifi_airtime.yaml"]
    assert len(paths) == 5
    for path in paths:
        build_plan(load(path), str(path))


def test_a_wireless_topology_is_not_exported_to_containerlab():
    with pytest.raises(TopologyError, match="wireless medium, which a containerlab file"):
        to_containerlab(catalog.build("wifi"))


def test_an_experiment_file_reads_the_wifi_topology():
    exp = parse(textwrap.dedent("""
        name: wifi
        topology: {name: wifi, params: {n: 3, distance_m: [5, 50, 100]}}
        planes: [{kind: bridge}]
        workloads: [{kind: icmp, pairs: [[sta1, sta3]], count: 1}]
    """))
    topo = catalog.build(exp.topology.name, **exp.topology.params)
    assert [topo.graph.edges["ap1", s]["rate_mbit"] for s in topo.stations("ap1")] == [
        54.0, 24.0, 9.0]


# --- over a real medium -------------------------------------------------------------------

MARKER = b"dplab-test-wifi"


def medium_processes(net: Network) -> list[tuple[int, int | None]]:
    pids = registry.pids_in_netns([net.medium_ns(ap) for ap in net.topo.access_points()])
    assert pids, "no medium emulator runs"
    return [(pid, registry.process_start_time(pid)) for pid in pids]


@pytest.mark.net
@needs_medium
@pytest.mark.parametrize("kind", ["bridge", "p4", "xdp", "ovs"])
def test_stations_talk_through_the_plane_on_the_ap(kind):
    """Station to station goes back out of the wlan port it came in on; a broadcast ARP
    from one station reaches each other station once (the sender hears its own back from
    the AP, as on a real medium: not counted)."""
    plane = planes.create(kind, {})
    with Network(catalog.build("wifi", n=3), addressing=plane.addressing,
                 shared_switch_ns=plane.shared_switch_ns) as net:
        prefix = net.prefix
        procs = medium_processes(net)
        try:
            plane.start(net)
            plane.wait_ready(30)
            pings = {(a, b): net.run(net.host_ns(a), ["ping", "-c3", "-i0.05", "-W2", "-q",
                                                       net.host_ip(b)], check=False)
                     for a, b in (("sta1", "sta2"), ("sta3", "sta1"))}
            arp = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=net.host_mac("sta2"))
                        / ARP(hwsrc=net.host_mac("sta2"), psrc=net.host_ip("sta2"),
                              pdst="10.255.255.254") / Raw(MARKER))
            with listening(net, net.topo.hosts()) as sockets:
                send(net, "sta2", [arp])
                # A generous quiet time: on a loaded machine the medium's copies come late.
                got = {h: [f for f in frames if MARKER in f]
                       for h, frames in received(sockets, settle_s=1.0).items()}
        finally:
            plane.stop()
    assert all(p.returncode == 0 for p in pings.values()), {k: p.stdout for k, p in pings.items()}
    assert [len(got["sta1"]), len(got["sta3"])] == [1, 1], {h: len(f) for h, f in got.items()}
    report = net.medium_reports[0]["stats"]["nodes"]
    assert report["wsta1"]["tx_frames"] >= 3 and report["wap"]["tx_frames"] >= 6
    assert_gone(prefix, procs)


# Counts the UDP bytes each source sends to port 5001 for a while, printing ``ready`` once bound.
RECEIVER = textwrap.dedent("""
    import json, socket, sys, time
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 5001))
    sock.settimeout(0.2)
    print("ready", flush=True)
    got, end = {}, time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        try:
            data, (src, _) = sock.recvfrom(2048)
        except socket.timeout:
            continue
        got[src] = got.get(src, 0) + len(data)
    print(json.dumps(got), flush=True)
""")
# Sends 1000-byte datagrams at a rate (Mbit/s) for a while, paced against the clock.
SENDER = textwrap.dedent("""
    import socket, sys, time
    dst, mbit, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gap, start, sent = 1000 * 8 / (mbit * 1e6), time.monotonic(), 0
    while time.monotonic() - start < seconds:
        while sent * gap < time.monotonic() - start:
            sock.sendto(bytes(1000), (dst, 5001))
            sent += 1
        time.sleep(gap)
""")
STATION_MBIT, OFFERED_MBIT, SEND_S = 12.0, 10.0, 3.0


@pytest.mark.net
@needs_medium
def test_two_stations_sending_at_once_each_get_about_half_the_airtime():
    """Two stations at 12 Mbit/s each offer 10 Mbit/s to a wired host behind the AP: the
    medium carries about 12 Mbit/s in all, and each station gets about half of it."""
    plane = planes.create("bridge", {})
    topo = catalog.build("wifi", n=2, hosts=1, rate_mbit=STATION_MBIT)
    with Network(topo) as net:
        try:
            plane.start(net)
            plane.wait_ready(30)
            receiver = net.popen(net.host_ns("h1"), [sys.executable, "-c", RECEIVER,
                                                     str(SEND_S + 2)],
                                 stdout=subprocess.PIPE, text=True)
            assert receiver.stdout is not None and receiver.stdout.readline().strip() == "ready"
            senders = [net.popen(net.host_ns(s), [sys.executable, "-c", SENDER,
                                                  net.host_ip("h1"), str(OFFERED_MBIT),
                                                  str(SEND_S)]) for s in ("sta1", "sta2")]
            for sender in senders:
                sender.wait(timeout=SEND_S + 20)
            got = json.loads(receiver.communicate(timeout=SEND_S + 20)[0])
        finally:
            plane.stop()
    received = [got.get(net.host_ip(s), 0) for s in ("sta1", "sta2")]
    nodes = net.medium_reports[0]["stats"]["nodes"]
    airtime = [nodes[f"w{s}"]["airtime_ns"] for s in ("sta1", "sta2")]
    mbit = sum(received) * 8 / SEND_S / 1e6
    assert mbit < STATION_MBIT * 1.1, f"{mbit:.1f} Mbit/s through a {STATION_MBIT} medium"
    assert mbit > STATION_MBIT * 0.5, f"only {mbit:.1f} Mbit/s of {STATION_MBIT}"
    assert 0.8 < received[0] / received[1] < 1.25, f"bytes received {received}"
    assert 0.8 < airtime[0] / airtime[1] < 1.25, f"airtime ns {airtime}"


@pytest.mark.net
@needs_medium
def test_the_feasibility_matrix_wireless_half_comes_from_real_runs():
    """Study 003's XDP-Wireless and P4-Wireless columns, every cell from its run's packets."""
    cells = matrix.matrix(columns=(f"xdp-{matrix.WIRELESS}", f"p4-{matrix.WIRELESS}"))
    xdp = {case: row[f"xdp-{matrix.WIRELESS}"] for case, row in cells.items()}
    p4 = {case: row[f"p4-{matrix.WIRELESS}"] for case, row in cells.items()}
    assert all(c.feasible for c in xdp.values()), {k: c.reason for k, c in xdp.items()}
    assert all(c.feasible for k, c in p4.items() if k != "pass"), {
        k: c.reason for k, c in p4.items()}
    assert p4["pass"].reason == matrix.P4_NO_PASS
    for copies in [xdp["broadcast"].evidence["XDP_TX"]["evidence"]["copies"],
                   p4["broadcast"].evidence["copies"]]:
        assert sorted(copies) == ["sta1", "sta2", "sta3", "sta4"]
        for sender, seen in copies.items():
            assert all(n == 1 for host, n in seen.items() if host != sender), copies
    # No copy was made: the XDP program sent each broadcast back out (XDP_TX), once.
    assert xdp["broadcast"].evidence["XDP_TX"]["evidence"]["counters"]["tx"] >= 4
    assert xdp["echo"].evidence["requests_at_target"] == 0


@pytest.mark.net
@needs_medium
def test_an_exception_inside_the_run_leaves_no_medium_behind():
    with pytest.raises(RuntimeError, match="inside the run"), \
            Network(catalog.build("wifi2")) as net:
        prefix, procs = net.prefix, medium_processes(net)
        assert len(procs) == 2  # one medium per access point
        # each at real-time priority (substrate.realtime)
        assert [os.sched_getscheduler(pid) for pid, _ in procs] == [os.SCHED_FIFO] * 2
        raise RuntimeError("inside the run")
    assert_gone(prefix, procs)
    assert [r["ap"] for r in net.medium_reports] == ["ap1", "ap2"]
    assert all(r["stats"] is not None for r in net.medium_reports)
    assert flat_stats(net.medium_reports)["wmedium_ap2_realtime"] == 1.0
