"""dplab-pktblast's XDP method (switch/src/bin/pktblast): it sends at a set rate, reports what
the interface really sent, and removes the veth pair that holds its program, also when
stopped by a signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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

RATE_PPS = 5_000  # low: what is asserted is delivery and accounting, never speed
SIZE = 60


@pytest.fixture(scope="module")
def fwd(tmp_path_factory):
    switch_rig.build_switch()
    out = tmp_path_factory.mktemp("forward_ir")
    ir = switch_rig.compile_p4(switch_rig.ROOT / "benchmarks" / "switch_forward.p4", out)
    with forwarders.p4_switch("fwd", ir, [], core=None) as fwd:
        yield fwd


def host_links(rig: switch_rig.Rig) -> list[dict]:
    out = forwarders.run_in(rig.host_ns, "ip", "-j", "-d", "link", "show")
    return json.loads(out)


def holder_left(rig: switch_rig.Rig) -> list[str]:
    """Links in the source's namespace other than its loopback and the rig's own ports."""
    rig_ports = {rig.host_if(p) for p in (1, 2)}
    return [link["ifname"] for link in host_links(rig)
            if link["ifname"] not in rig_ports | {"lo"}]


def test_xdp_method_at_a_set_rate_delivers_and_counts(fwd):
    run = switch_rate.one_run(fwd, SIZE, 1.0, pps=RATE_PPS, method="xdp")
    report = run["pktblast"]
    assert report["method"] == "xdp" and report["target_pps"] == RATE_PPS
    assert report["sent"] > 0
    assert report["sent"] == report["iface_tx_packets"]  # what it reports is what went out
    # Never ahead of the schedule (the slack: anything else the interface sent meanwhile).
    assert report["sent"] <= RATE_PPS * report["seconds"] + 16
    assert run["delivered"] > 0
    assert holder_left(fwd.rig) == []
    assert not any("xdp" in link for link in host_links(fwd.rig))  # no program left attached


def test_xdp_method_cleans_up_after_sigterm(fwd):
    rig = fwd.rig
    argv = ["ip", "netns", "exec", rig.host_ns, str(switch_rig.BLAST_BIN), "--iface",
            rig.host_if(1), "--frame", forwarders.frame(SIZE).hex(), "--seconds", "30",
            "--pps", str(RATE_PPS), "--method", "xdp"]
    blaster = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not holder_left(rig) and time.monotonic() < deadline:  # the holder is up: it runs
        time.sleep(0.05)
    assert holder_left(rig), "pktblast never made its holder pair"
    blaster.send_signal(signal.SIGTERM)
    out, _ = blaster.communicate(timeout=10)
    assert blaster.returncode == 0
    report = json.loads(out)
    assert report["sent"] > 0 and report["seconds"] < 30
    assert holder_left(rig) == []
