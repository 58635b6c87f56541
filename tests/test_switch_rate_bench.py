"""benchmarks/switch_rate.py's forwarders: each really carries the benchmark's frames from
port 1 to the sink, rewritten as its program says, and leaves nothing behind."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
import switch_rig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import forwarders  # noqa: E402  (a module beside the benchmark scripts, not a package)
import switch_rate  # noqa: E402

pytestmark = [
    pytest.mark.net,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

RATE_PPS = 2_000  # low: what is asserted is delivery, never speed
SIZE = 60
L2, L3 = "frame unchanged", "L3 rewrite"


@pytest.fixture(scope="module")
def forward_ir(tmp_path_factory) -> Path:
    switch_rig.build_switch()
    out = tmp_path_factory.mktemp("forward_ir")
    return switch_rig.compile_p4(switch_rig.ROOT / "benchmarks" / "switch_forward.p4", out)


def sink_socket(rig: switch_rig.Rig) -> socket.socket:
    with switch_rig.in_netns(rig.host_ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(switch_rig.ETH_P_ALL))
        s.bind((rig.host_if(2), 0))
    s.settimeout(2)
    return s


def without_source_mac(frame: bytes) -> bytes:
    """The router writes its own port's MAC as the source: the one field left unchecked."""
    return frame[:6] + frame[12:]


def expected(kind: str) -> bytes:
    if kind == L2:
        return forwarders.frame(SIZE)
    # The sent frame (TTL 64) to the next hop with one TTL less and its checksum redone.
    return switch_rig.udp_frame(forwarders.NEXT_HOP_MAC, forwarders.FRAME_SRC, forwarders.SRC_IP,
                                forwarders.DST_IP, size=SIZE, ttl=63)


def first_unicast(sink: socket.socket) -> bytes:
    """The first frame to a unicast address: the Linux bridge sends its own multicast
    (IGMP queries, router advertisements to 224.0.0.106) out of its ports now and then."""
    while True:
        frame = sink.recv(65536)
        if not frame[0] & 1:  # the group bit of the destination MAC
            return frame


def check_delivery(fwd: forwarders.Forwarder, kind: str) -> None:
    sink = sink_socket(fwd.rig)
    try:
        run = switch_rate.one_run(fwd, SIZE, 1.0, pps=RATE_PPS)
        first = first_unicast(sink)
    finally:
        sink.close()
    assert run["pktblast"]["sent"] > 0
    assert run["delivered"] > 0
    assert without_source_mac(first) == without_source_mac(expected(kind))


def test_forward_only_p4_program_carries_frames_unchanged(forward_ir):
    with forwarders.p4_switch("fwd", forward_ir, [], core=None) as fwd:
        check_delivery(fwd, L2)
        prefix = fwd.rig.prefix
    assert_gone(prefix)


@pytest.mark.parametrize(("start", "kind"), [
    (forwarders.linux_bridge, L2),
    (forwarders.linux_router, L3),
])
def test_kernel_forwarders_carry_frames(start, kind):
    with start(0) as fwd:
        check_delivery(fwd, kind)
        rps = forwarders.run_in(fwd.rig.sw_ns, "cat",
                                f"/sys/class/net/{fwd.rig.switch_if(1)}/queues/rx-0/rps_cpus")
        assert int(rps, 16) == 1  # steered to core 0
        prefix = fwd.rig.prefix
    assert_gone(prefix)


@pytest.mark.parametrize("qdisc", [False, True], ids=["redirect", "qdisc"])
def test_the_xdp_router_carries_frames_on_its_pinned_napi_thread(qdisc: bool):
    with forwarders.xdp_router(0, qdisc=qdisc) as fwd:
        check_delivery(fwd, L3)
        assert os.sched_getaffinity(fwd.napi_pid) == {0}
        assert os.sched_getscheduler(fwd.napi_pid) == os.SCHED_FIFO
        assert fwd.cpu_seconds() >= 0
        prefix = fwd.rig.prefix
    assert_gone(prefix)


def test_the_xdp_sink_counts_what_it_drops(forward_ir):
    """With `xdp_sink`, the sink drops every frame in XDP and still counts it: all the frames
    the switch sent arrive in the sink's receive count, none reaches a socket there."""
    with forwarders.p4_switch("fwd", forward_ir, [], core=None, tx="xdp",
                              xdp_sink=True) as fwd:
        sink = sink_socket(fwd.rig)
        try:
            run = switch_rate.one_run(fwd, SIZE, 1.0, pps=RATE_PPS)
            sink.settimeout(0.5)
            with pytest.raises(TimeoutError):
                sink.recv(65536)
        finally:
            sink.close()
        stats = fwd.rig.client.call("stats")["ports"][1]
        prefix = fwd.rig.prefix
    assert run["pktblast"]["sent"] > 0
    assert run["delivered"] == stats["tx_packets"] == run["pktblast"]["sent"]
    assert_gone(prefix)


def test_ovs_carries_frames_and_stops():
    with forwarders.ovs(0) as fwd:
        check_delivery(fwd, L3)
        prefix, pid = fwd.rig.prefix, fwd.vswitchd.pid
    assert_gone(prefix)
    assert not Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize(("mode", "kind"), [("router", L3), ("bridge", L2)])
def test_the_user_space_forwarder_carries_frames_pinned_and_stops(mode, kind):
    with forwarders.userspace(0, mode=mode) as fwd:
        check_delivery(fwd, kind)
        assert os.sched_getaffinity(fwd.proc.pid) == {0}
        assert fwd.cpu_seconds() >= 0  # tick-sampled: a second at 2 kpps may be no tick
        prefix, pid = fwd.rig.prefix, fwd.proc.pid
    assert_gone(prefix)
    assert not Path(f"/proc/{pid}").exists()


def assert_gone(prefix: str) -> None:
    assert not [ns for ns in os.listdir("/run/netns") if ns.startswith(prefix)]
