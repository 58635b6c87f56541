"""The P4 switch transmitting through XDP (`--tx xdp`, switch/PROTOCOL.md): real frames
through it arrive byte-exact and in order, on several ports, beside super-packets; a port
whose peer takes no XDP frames falls back to the ring, delivers everything and counts the
fallback; nothing of the XDP machinery outlives the switch; the p4 plane's switches
transmit through XDP by default and TCP crosses chains of them whole.

Most tests send frames one at a time, which the switch reads one a round: they run it with
`--xdp-min-call 1` so that each lone frame takes an XDP call; by default a port sends fewer
than 8 frames through the ring (test_lone_frames_take_the_ring_a_burst_takes_xdp)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import switch_rig as rig_mod
from net_checks import ping_failures, tcp_received
from switch_rig import Rig, SwitchClient, set_gro, tag_frame
from test_switch_gso import compiled
from test_switch_superpackets import send_super_packet, with_extensions

from dplab.planes import PlaneError, create, running
from dplab.topology import catalog

pytestmark = pytest.mark.net

SIZES = (60, 61, 64, 100, 128, 333, 512, 777, 1000, 1024, 1400, 1500, 1513, 1514)
MULTICAST = 5  # switch_features.p4: tag kind 5 sends to multicast group 1
TAG_END = 22  # Ethernet header, then the tag header's 8 bytes


@pytest.fixture(scope="module")
def features_ir(tmp_path_factory):
    return compiled(rig_mod.ROOT / "tests" / "data" / "switch_features.p4", tmp_path_factory)


@pytest.fixture(scope="module")
def forward_ir(tmp_path_factory):
    return compiled(rig_mod.ROOT / "benchmarks" / "switch_forward.p4", tmp_path_factory)


def numbered(kind: int, seq: int, size: int) -> bytes:
    """A tag frame of `size` bytes whose payload says its number."""
    head = tag_frame(kind)
    body = seq.to_bytes(4, "big") * ((size - len(head)) // 4 + 1)
    return head + body[: size - len(head)]


def bodies(frames: list[bytes]) -> list[bytes]:
    """The frames behind their tag header (which the program writes into on the way)."""
    return [f[TAG_END:] for f in frames]


def xdp_stats(rig: Rig, port: int) -> dict:
    stats = rig.client.call("stats")["ports"]
    return next(p for p in stats if p["port"] == port)


def capture_until(rig: Rig, want: dict[int, int], timeout: float = 10.0) -> dict[int, list]:
    """What the host ports received, once each port in `want` got that many frames."""
    got: dict[int, list[bytes]] = {p: [] for p in rig.sockets}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p, frames in rig.capture(0.2).items():
            got[p] += frames
        if all(len(got[p]) >= n for p, n in want.items()):
            break
    return got


def test_frames_of_many_sizes_arrive_whole_and_in_order_on_every_replica(features_ir):
    with Rig(n_ports=3, tx="xdp", xdp_min_call=1) as rig:
        rig.load(features_ir)
        rig.client.call("mcast_group_set", group=1,
                        replicas=[{"port": 2, "rid": 7}, {"port": 3, "rid": 9}])
        frames = [numbered(MULTICAST, i, size) for i, size in enumerate(SIZES * 3)]
        for frame in frames:
            rig.send(1, frame)
        got = capture_until(rig, {2: len(frames), 3: len(frames)})
        assert bodies(got[2]) == bodies(frames)
        assert bodies(got[3]) == bodies(frames)
        for port in (2, 3):
            stats = xdp_stats(rig, port)
            assert stats["xdp"] == {"tx_packets": len(frames), "fallbacks": 0}
            assert stats["tx_packets"] == len(frames) and stats["drops"] == 0


def test_super_packets_keep_their_place_among_xdp_frames(forward_ir):
    with Rig(n_ports=2, tx="xdp", xdp_min_call=1) as rig:
        rig.load(forward_ir)
        before = [numbered(0, i, 200) for i in range(3)]
        after = [numbered(0, 10 + i, 200) for i in range(3)]
        for frame in before:
            rig.send(1, frame)
        send_super_packet(rig, 1, with_extensions())
        for frame in after:
            rig.send(1, frame)
        got = capture_until(rig, {2: 7})[2]
        tags = [f for f in got if f[12:14] == rig_mod.TAG_TYPE]
        assert tags == before + after
        # Everything of the super-packet (IPv6) came between the frames before and after it.
        tcp_at = [i for i, f in enumerate(got) if f[12:14] == b"\x86\xdd"]
        assert tcp_at and min(tcp_at) > got.index(before[-1]) and max(tcp_at) < got.index(after[0])
        stats = xdp_stats(rig, 2)
        assert stats["xdp"]["tx_packets"] == len(before + after)
        assert stats["drops"] == 0


def test_a_peer_without_napi_gets_everything_through_the_ring(features_ir):
    with Rig(n_ports=3, tx="xdp", xdp_min_call=1) as rig:
        set_gro(rig.host_ns, rig.host_if(3), False)  # port 3's peer takes no XDP frames
        frames = _sent_to_ports_2_and_3(rig, features_ir)
        assert xdp_stats(rig, 3)["xdp"] == {"tx_packets": 0, "fallbacks": 1}
        assert xdp_stats(rig, 3)["tx_packets"] == len(frames)
        # GRO back on: the port sends through XDP again.
        set_gro(rig.host_ns, rig.host_if(3), True)
        _port_3_takes_xdp_again(rig)


def test_lone_frames_take_the_ring_a_burst_takes_xdp(forward_ir):
    """By default a lone frame goes out through the ring (an XDP call costs more for one
    frame); frames the switch reads together (sent while it was stopped) take one XDP call."""
    with Rig(n_ports=2, tx="xdp") as rig:
        rig.load(forward_ir)
        lone = [numbered(0, i, 100) for i in range(3)]
        for frame in lone:
            rig.send(1, frame)
            assert bodies(capture_until(rig, {2: 1})[2]) == bodies([frame])
        assert xdp_stats(rig, 2)["xdp"] == {"tx_packets": 0, "fallbacks": 0}
        burst = [numbered(0, 10 + i, 100) for i in range(64)]
        rig.proc.send_signal(signal.SIGSTOP)  # it reads the burst in few rounds when back
        try:
            for frame in burst:
                rig.send(1, frame)
            _wait_for_empty_backlogs()
        finally:
            rig.proc.send_signal(signal.SIGCONT)
        got = capture_until(rig, {2: len(burst)})[2]
        stats = xdp_stats(rig, 2)
        assert bodies(got) == bodies(burst)
        # Should the backlogs not empty in time, a tail can still come in rounds of its own
        # (then too small for XDP): most of the burst, not all, is sure to go out through XDP.
        assert stats["xdp"]["fallbacks"] == 0
        assert len(burst) // 2 <= stats["xdp"]["tx_packets"] <= len(burst)
        assert stats["tx_packets"] == len(lone + burst) and stats["drops"] == 0


def _wait_for_empty_backlogs(timeout_s: float = 2.0) -> None:
    """Waits until no CPU's receive backlog holds a frame (/proc/net/softnet_stat, column 12).
    A frame sent into a veth waits there until a softirq hands it to the switch's ring; on a
    loaded machine that softirq runs later, in ksoftirqd, so frames sent while the switch was
    stopped could still be trickling in, a round each, after it continues."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lines = Path("/proc/net/softnet_stat").read_text().splitlines()
        if all(int(line.split()[11], 16) == 0 for line in lines):
            time.sleep(0.01)  # a frame just taken off a backlog is being delivered
            return
        time.sleep(0.005)


def _sent_to_ports_2_and_3(rig: Rig, features_ir) -> list[bytes]:
    """Loads the program, has it replicate port 1's frames to ports 2 and 3, sends frames
    of every size; returns them once both ports got them whole and in order (port 2
    through XDP)."""
    rig.load(features_ir)
    rig.client.call("mcast_group_set", group=1,
                    replicas=[{"port": 2, "rid": 7}, {"port": 3, "rid": 9}])
    frames = [numbered(MULTICAST, i, size) for i, size in enumerate(SIZES)]
    for frame in frames:
        rig.send(1, frame)
    got = capture_until(rig, {2: len(frames), 3: len(frames)})
    assert bodies(got[2]) == bodies(frames) and bodies(got[3]) == bodies(frames)
    assert xdp_stats(rig, 2)["xdp"] == {"tx_packets": len(frames), "fallbacks": 0}
    return frames


def _port_3_takes_xdp_again(rig: Rig) -> None:
    """Frames sent now reach port 3 whole, through XDP, with no further fallback."""
    more = [numbered(MULTICAST, 100 + i, 90) for i in range(4)]
    for frame in more:
        rig.send(1, frame)
    got = capture_until(rig, {3: len(more)})
    assert bodies(got[3]) == bodies(more)
    assert xdp_stats(rig, 3)["xdp"] == {"tx_packets": len(more), "fallbacks": 1}


def test_gro_flipped_off_and_on_mid_stream_loses_no_frame_silently(forward_ir):
    """The peer stops running NAPI while frames stream: those veth did not take go out
    through the ring, so every frame the switch read arrives at the host or is counted as
    dropped (by the switch, or by veth in tx_dropped); the switch's XDP count is exactly
    what veth took through XDP."""
    with Rig(n_ports=2, tx="xdp", capture=False) as rig:
        rig.load(forward_ir)
        blast = threading.Thread(target=rig.blast, args=(tag_frame(0) + bytes(46), 2.0),
                                 kwargs={"pps": 50_000})
        blast.start()
        for _ in range(4):  # each off long enough for frames to meet it
            set_gro(rig.host_ns, rig.host_if(2), False)
            time.sleep(0.1)
            set_gro(rig.host_ns, rig.host_if(2), True)
            time.sleep(0.1)
        blast.join()
        port_in, port_out = _ports_when_settled(rig)
        host_rx = _counter(rig.host_ns, rig.host_if(2), "rx_packets")
        veth_dropped = _counter(rig.sw_ns, rig.switch_if(2), "tx_dropped")
        assert port_in["rx_packets"] > 0
        assert host_rx + veth_dropped + port_out["drops"] == port_in["rx_packets"]
        assert port_out["xdp"]["tx_packets"] == _veth_xdp_xmit(rig.sw_ns, rig.switch_if(2))


def _ports_when_settled(rig: Rig) -> tuple[dict, dict]:
    """Ports 1 and 2's stats once port 2 has settled every frame port 1 read."""
    deadline = time.monotonic() + 10
    while True:
        ports = rig.client.call("stats")["ports"]
        port_in, port_out = ports[0], ports[1]
        settled = port_out["tx_packets"] + port_out["drops"] >= port_in["rx_packets"]
        if settled or time.monotonic() > deadline:
            return port_in, port_out
        time.sleep(0.05)


def _counter(ns: str, ifname: str, name: str) -> int:
    return int(subprocess.run(["ip", "netns", "exec", ns, "cat",
                               f"/sys/class/net/{ifname}/statistics/{name}"],
                              check=True, capture_output=True, text=True).stdout)


def _veth_xdp_xmit(ns: str, ifname: str) -> int:
    """Frames veth `ifname` took through ndo_xdp_xmit (ethtool -S)."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-S", ifname],
                         check=True, capture_output=True, text=True).stdout
    return sum(int(line.split(":")[1]) for line in out.splitlines()
               if line.strip().startswith("tx_queue_") and "_xdp_xmit:" in line)


def test_a_shaped_port_sends_through_the_ring_its_qdisc(features_ir):
    """XDP frames skip the interface's qdiscs: a port with a TBF (the lab's link shaping)
    keeps the ring, so its rate limit holds; without it, the port takes XDP again."""
    with Rig(n_ports=3, tx="xdp", xdp_min_call=1) as rig:
        tbf = ["tc", "-n", rig.sw_ns, "qdisc", "add", "dev", rig.switch_if(3), "root", "tbf",
               "rate", "100mbit", "burst", "20000", "latency", "50ms"]
        subprocess.run(tbf, check=True, capture_output=True)
        frames = _sent_to_ports_2_and_3(rig, features_ir)
        assert xdp_stats(rig, 3)["xdp"] == {"tx_packets": 0, "fallbacks": 1}
        sent_by_tbf = _qdisc_packets(rig.sw_ns, rig.switch_if(3))
        assert sent_by_tbf >= len(frames)  # they went through the TBF
        subprocess.run(["tc", "-n", rig.sw_ns, "qdisc", "del", "dev", rig.switch_if(3), "root"],
                       check=True, capture_output=True)
        _port_3_takes_xdp_again(rig)


def _qdisc_packets(ns: str, ifname: str) -> int:
    """Packets the root qdisc of `ifname` sent (tc -s)."""
    out = subprocess.run(["tc", "-n", ns, "-s", "qdisc", "show", "dev", ifname], check=True,
                         capture_output=True, text=True).stdout
    return int(out.split(" pkt")[0].rsplit(" ", 1)[1])


def test_nothing_of_the_xdp_transmit_outlives_the_switch(forward_ir):
    with Rig(n_ports=2, tx="xdp", xdp_min_call=1) as rig:
        rig.load(forward_ir)
        holder = f"{rig.switch_if(1)}x"
        links = subprocess.run(["ip", "-n", rig.sw_ns, "-o", "link"], capture_output=True,
                               text=True, check=True).stdout
        assert holder in links
        pid = rig.proc.pid
        bpf_fds = [p for p in _fd_targets(pid) if "bpf" in p]
        assert bpf_fds  # the program, its map and the holder's link
        rig.proc.terminate()
        assert rig.proc.wait(timeout=10) == 0
        links = subprocess.run(["ip", "-n", rig.sw_ns, "-o", "link"], capture_output=True,
                               text=True, check=True).stdout
        assert holder not in links


def test_xdp_calls_are_counted_by_a_tracepoint_read_from_a_detached_tracefs(forward_ir):
    """The switch counts what veth took of each XDP call from the xdp_devmap_xmit tracepoint
    (its perf event is open); under `ip netns exec`, whose sysfs has no tracefs, it reads
    tracefs from an instance mounted nowhere: no mount appears in its namespace or the
    host's. The counts are right: every frame went through XDP."""
    host_mounts = _tracefs_mounts("self")
    with Rig(n_ports=2, tx="xdp", xdp_min_call=1) as rig:
        rig.load(forward_ir)
        pid = rig.proc.pid
        assert "anon_inode:[perf_event]" in _fd_targets(pid)
        assert _tracefs_mounts(str(pid)) == []
        frames = [numbered(0, i, 100) for i in range(20)]
        for frame in frames:
            rig.send(1, frame)
        assert capture_until(rig, {2: len(frames)})[2] == frames
        assert xdp_stats(rig, 2)["xdp"] == {"tx_packets": len(frames), "fallbacks": 0}
    assert _tracefs_mounts("self") == host_mounts


def _tracefs_mounts(pid: str) -> list[str]:
    """Mount points of tracefs in a process's mount namespace."""
    with open(f"/proc/{pid}/mountinfo") as f:
        return [line.split()[4] for line in f if " - tracefs " in line]


def _fd_targets(pid: int) -> list[str]:
    fd_dir = f"/proc/{pid}/fd"
    return [os.readlink(f"{fd_dir}/{fd}") for fd in os.listdir(fd_dir)]


@pytest.mark.parametrize("switches", [1, 4])
def test_the_p4_plane_sends_tcp_through_xdp_across_switches(switches):
    """The plane's default: every switch transmits through XDP (it holds its program with
    a holder veth pair, `<port>x@<port>xp`; each port's peer, a host or the next switch,
    has GRO on and so receives super-packets GRO merged); TCP gets through whole and no
    switch dropped or fell back. Which frames took XDP depends on how the switch's rounds
    batch them (lone frames take the ring), so no count of them is asserted. Unshaped
    links: a shaped port keeps the ring (its qdisc, see
    test_a_shaped_port_sends_through_the_ring_its_qdisc)."""
    unshaped = {"core_bw": None, "edge_bw": None}
    topo = (catalog.build("single", hosts=2, **unshaped) if switches == 1 else
            catalog.build("linear", switches=switches, hosts_per_switch=1, **unshaped))
    with running("p4", {"mode": "proactive"}, topo, 40) as (net, plane):
        assert ping_failures(net) == []
        first, last = topo.hosts()[0], topo.hosts()[-1]
        received, _ = tcp_received(net, first, last, seconds=2.0)
        assert received > 1_000_000
        ports = [port for s in topo.switches()
                 for port in SwitchClient(str(plane.dir / f"{s}.sock")).call("stats")["ports"]]
        holders = {h for ns in {net.switch_ns(s) for s in topo.switches()}
                   for h in _holders(ns)}
    assert len(holders) == switches
    for port in ports:
        assert port["xdp"]["fallbacks"] == 0 and port["drops"] == 0, port


def _holders(ns: str) -> list[str]:
    """The XDP holder pairs in namespace `ns`: links `<name>x@<name>xp`."""
    out = subprocess.run(["ip", "-n", ns, "-o", "link"], check=True, capture_output=True,
                         text=True).stdout
    names = [line.split(":")[1].strip() for line in out.splitlines()]
    return [n for n in names if n.endswith("x@" + n.split("@")[0] + "p")]


def test_the_p4_plane_names_a_bad_tx_value():
    with pytest.raises(PlaneError, match="'tx'.*xdp, ring.*'fast'"):
        create("p4", {"tx": "fast"})
    assert create("p4", {}).options["tx"] == "xdp"
