"""The p4 plane on a looped topology: real switches, P4Runtime servers, the controller,
real traffic; nothing left behind, also when its P4Runtime server dies mid-run."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from net_checks import check_controlled_plane_on_multipath, leftovers, ping_failures

from dplab.p4runtime import switch_link
from dplab.planes import PlaneError, create
from dplab.planes import p4 as p4_plane
from dplab.substrate.network import Network
from dplab.topology import catalog

PORT_FWD = Path(__file__).resolve().parent / "p4" / "port_fwd.p4"
PORT_FWD_ENTRIES = PORT_FWD.with_name("port_fwd_entries.yaml")


@pytest.mark.net
@pytest.mark.parametrize("mode", ["reactive", "proactive"])
def test_p4_carries_ping_tcp_and_udp_over_a_looped_fabric(mode: str) -> None:
    stats = check_controlled_plane_on_multipath("p4", mode, ready_timeout=40)
    assert stats["ready_s"] > 0


def test_p4_options_are_checked(tmp_path) -> None:
    with pytest.raises(PlaneError, match="'mode'.*'fast'"):
        create("p4", {"mode": "fast"})
    with pytest.raises(PlaneError, match="'program'.*nowhere.p4"):
        create("p4", {"program": str(tmp_path / "nowhere.p4")})


@pytest.mark.net
def test_a_switch_that_exits_fails_the_start_before_the_next_switch_starts(monkeypatch) -> None:
    """One switch starting at a time, whose binary exits at once: the start fails naming
    that switch without waiting out its deadline, the second switch never started."""
    monkeypatch.setattr(p4_plane, "START_WINDOW", 1)
    monkeypatch.setattr(p4_plane, "SWITCH_BIN", Path("/bin/false"))
    plane = create("p4", {"mode": "proactive"})
    with Network(catalog.build("linear", switches=2, hosts_per_switch=1), addressing="l2",
                 shared_switch_ns=plane.shared_switch_ns) as net:
        prefix, run_dir = net.prefix, net.run_dir
        began = time.monotonic()
        try:
            with pytest.raises(PlaneError, match="switch-s1 exited"):
                plane.start(net)
            assert time.monotonic() - began < p4_plane.START_TIMEOUT_S
            assert not (run_dir / "p4" / "switch-s2.log").exists()
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []


@pytest.mark.net
def test_a_static_plane_programs_each_switch_before_the_last_one_starts(monkeypatch) -> None:
    """Each switch is installed as soon as the P4Runtime server serves it: one switch
    starting at a time, the last one is started only once the first runs the program
    (asked on its control socket), which a plane installing after all switches started
    never lets happen."""
    monkeypatch.setattr(p4_plane, "START_WINDOW", 1)
    plane = create("p4", {"program": str(PORT_FWD), "entries": str(PORT_FWD_ENTRIES)})
    start_switch = plane._start_switch
    programmed_first = []

    def start(net: Network, switch: str) -> None:
        if switch == "s3":
            programmed_first.append(_runs_a_program(plane._control("s1"), deadline_s=20))
        start_switch(net, switch)

    monkeypatch.setattr(plane, "_start_switch", start)
    with Network(catalog.build("linear", switches=3, hosts_per_switch=1), addressing="l2",
                 shared_switch_ns=plane.shared_switch_ns) as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            assert programmed_first == [True]
            assert plane.stats()["entries_written"] == 3 * 2 + 1  # s1 has one more
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []


def _runs_a_program(control: Path, deadline_s: float) -> bool:
    """Whether the switch behind ``control`` has a pipeline loaded within ``deadline_s``."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            return bool(switch_link.request(str(control), "get_pipeline", 1.0)["program"])
        except switch_link.SwitchError:
            time.sleep(0.05)  # no pipeline yet (or the switch is still busy loading it)
    return False


@pytest.mark.net
def test_a_p4runtime_server_killed_mid_run_fails_the_run_and_leaves_nothing_behind(
        monkeypatch) -> None:
    """kill -9 of the one P4Runtime server process after the plane is ready: the switches
    keep forwarding what they had, but failures() (which the runner asks after every
    traffic phase) names the server, and stop() still removes everything. The switches
    start one at a time here, so a start that waits for a free place is covered too. Hosts and
    switch-facing ports carry the offloads the plane sets (HOST_FEATURES, peer GRO)."""
    monkeypatch.setattr(p4_plane, "START_WINDOW", 1)
    plane = create("p4", {"mode": "proactive"})
    with Network(catalog.build("linear", switches=2, hosts_per_switch=1), addressing="l2",
                 shared_switch_ns=plane.shared_switch_ns) as net:
        prefix, run_dir = net.prefix, net.run_dir
        try:
            plane.start(net)
            plane.wait_ready(40)
            host = _features(net, net.host_ns("h1"), "eth0")
            assert (host["generic-receive-offload"], host["tx-gso-list"],
                    host["tcp-segmentation-offload"]) == ("on", "off", "on")
            core = net.switch_ports("s1")[net.port_towards("s1", "s2")]
            assert _features(net, net.switch_ns("s1"), core)["generic-receive-offload"] == "on"
            server = _p4runtime_server_pid(run_dir)
            os.kill(server, signal.SIGKILL)
            _wait_until_gone(server)
            assert ping_failures(net) == []  # the data plane alone still forwards
            # The server went first (the controller may follow once its streams end).
            assert plane.failures()[0].startswith("p4runtime was killed by SIGKILL; log ")
        finally:
            plane.stop()
    assert leftovers(prefix, run_dir) == []


def _features(net: Network, ns: str, ifname: str) -> dict[str, str]:
    """``ethtool -k``'s features of ``ifname``: name -> on/off (without "[fixed]")."""
    listed = net.run(ns, ["ethtool", "-k", ifname]).stdout.splitlines()[1:]
    return {name.strip(): value.split()[0]
            for name, value in (line.split(": ", 1) for line in listed if ": " in line)}


def _p4runtime_server_pid(run_dir: Path) -> int:
    """The process running ``python -m dplab.p4runtime`` for this run."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"dplab.p4runtime" in argv and any(str(run_dir).encode() in a for a in argv):
            return int(cmdline.parent.name)
    raise AssertionError(f"no P4Runtime server process for {run_dir}")


def _wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}/cmdline").exists() and _state(pid) != "Z":
        assert time.monotonic() < deadline, f"process {pid} still runs after SIGKILL"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_finished_compile_is_read_after_its_deadline(tmp_path) -> None:
    """The switches' start may outlast the compile's deadline; a compiler that finished
    in time is read then, not reported as too slow."""
    compiling = p4_plane.Compilation(p4_plane.DEFAULT_PROGRAM, tmp_path)
    compiling.process.wait(p4_plane.COMPILE_TIMEOUT_S)
    compiling.deadline = time.monotonic() - 1
    files = compiling.files()
    assert files["ir"].is_file() and files["p4info_bin"].is_file()
