"""Everything a run creates is gone afterwards: normal exit, exception, Ctrl-C, SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from dplab import cli
from dplab.substrate import Network, reclaim_stale, registry, staging
from dplab.topology import catalog
from dplab.workloads import flows

pytestmark = pytest.mark.net

# A run in a child process: a network with a sleeping process in h1, then sleep itself.
CHILD = textwrap.dedent("""
    import time
    from dplab.substrate import Network, cleanup_on_signals
    from dplab.topology import catalog
    cleanup_on_signals()
    with Network(catalog.build("linear")) as net:
        net.popen(net.host_ns("h1"), ["sleep", "120"])
        print(net.prefix, flush=True)
        time.sleep(120)
""")


def assert_gone(prefix: str, procs: list[tuple[int, int | None]]) -> None:
    assert registry.netns_with_prefix(prefix) == []
    assert not (registry.RECORD_DIR / f"{prefix}.json").exists()
    assert not (registry.RECORD_DIR / prefix).exists()
    root_veths = subprocess.run(["ip", "-o", "link", "show", "type", "veth"],
                                capture_output=True, text=True, check=True).stdout
    assert f"{prefix}-" not in root_veths
    for pid, start in procs:
        assert not registry.is_running(pid, start), f"process {pid} of {prefix} survived"


def start_child_run() -> tuple[subprocess.Popen, str, list[tuple[int, int | None]]]:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    prefix = child.stdout.readline().strip()
    assert registry.PREFIX_RE.match(prefix), f"child printed {prefix!r}"
    record = registry.RunRecord.load(registry.RECORD_DIR / f"{prefix}.json")
    assert record is not None and record.owner_pid == child.pid
    procs = record.processes
    assert procs and all(registry.is_running(pid, start) for pid, start in procs)
    return child, prefix, procs


def test_normal_exit_leaves_nothing():
    with Network(catalog.build("linear")) as net:
        prefix = net.prefix
        sleeper = net.popen(net.host_ns("h2"), ["sleep", "60"])
        started = registry.process_start_time(sleeper.pid)
        assert len(registry.netns_with_prefix(prefix)) == 8
    assert_gone(prefix, [(sleeper.pid, started)])
    net.down()  # idempotent


def test_a_process_started_in_the_network_namespace_alone_is_cleaned_up_too():
    """popen(own_sysfs=False): the process is in the namespace's network stack but shares
    this process's mount namespace (no per-process copy), and down() kills it as any."""
    with Network(catalog.build("single")) as net:
        prefix = net.prefix
        sleeper = net.popen(net.host_ns("h1"), ["sleep", "60"], own_sysfs=False)
        started = registry.process_start_time(sleeper.pid)
        ns = os.stat(registry.NETNS_DIR / net.host_ns("h1")).st_ino
        deadline = time.monotonic() + 5
        while os.readlink(f"/proc/{sleeper.pid}/exe").split("/")[-1] != "sleep":
            assert time.monotonic() < deadline, "nsenter did not exec sleep"
            time.sleep(0.01)
        assert os.readlink(f"/proc/{sleeper.pid}/ns/net") == f"net:[{ns}]"
        assert os.readlink(f"/proc/{sleeper.pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt")
    assert_gone(prefix, [(sleeper.pid, started)])


def test_exception_inside_with_leaves_nothing():
    with pytest.raises(ZeroDivisionError), Network(catalog.build("single")) as net:
        prefix = net.prefix
        sleeper = net.popen(net.host_ns("h1"), ["sleep", "60"])
        started = registry.process_start_time(sleeper.pid)
        1 / 0  # noqa: B018
    assert_gone(prefix, [(sleeper.pid, started)])


def test_sigint_to_the_owner_cleans_up():
    child, prefix, procs = start_child_run()
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=20) != 0
    assert_gone(prefix, procs)


def test_sigterm_to_the_owner_cleans_up():
    child, prefix, procs = start_child_run()
    child.terminate()
    assert child.wait(timeout=20) == 128 + signal.SIGTERM
    assert_gone(prefix, procs)


def test_sigkill_leftovers_are_reclaimed_by_the_next_start():
    child, prefix, procs = start_child_run()
    child.kill()
    child.wait(timeout=10)
    assert registry.netns_with_prefix(prefix), "SIGKILL cannot clean up; the namespaces stay"
    assert prefix in reclaim_stale()
    assert_gone(prefix, procs)


def test_orphan_namespaces_without_record_are_reclaimed_and_foreign_ones_kept():
    orphan = f"dl{os.urandom(2).hex()}-h1"
    foreign = f"dplabtest{os.getpid()}"  # not our pattern: must survive reclaim_stale
    subprocess.run(["ip", "netns", "add", orphan], check=True)
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    try:
        reclaim_stale()
        names = registry.list_netns()
        assert orphan not in names
        assert foreign in names
    finally:
        subprocess.run(["ip", "netns", "del", foreign], check=False)
        subprocess.run(["ip", "netns", "del", orphan], check=False, capture_output=True)


def test_a_live_run_is_not_reclaimed():
    with Network(catalog.build("single")) as net:
        assert net.prefix not in reclaim_stale()
        ping = net.run(net.host_ns("h1"), ["ping", "-c1", "-W1", net.host_ip("h1")])
        assert " 0% packet loss" in ping.stdout


def test_cleanup_removes_staging_folders_of_dead_owners_only(tmp_path, monkeypatch, capsys):
    temp, cache = tmp_path / "tmp", tmp_path / "video"
    temp.mkdir()
    cache.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("DPLAB_VIDEO_CACHE", str(cache))
    dead = subprocess.Popen(["sleep", "60"])
    dead_tag = f"{dead.pid}-{registry.process_start_time(dead.pid)}"
    dead.kill()
    dead.wait()
    stale = [temp / f"{flows.STAGING_MARKER}{dead_tag}-k2j3", cache / f"abc.building-{dead_tag}"]
    live = [temp / f"{flows.STAGING_MARKER}{staging.owner_tag()}-x7y8",
            cache / f"abc.building-{staging.owner_tag()}", cache / "abc"]
    for folder in stale + live:
        folder.mkdir()
        (folder / "content.mp4").write_text("half")
    assert cli.main(["cleanup"]) == 0
    said = capsys.readouterr().err
    for folder in stale:
        assert not folder.exists()
        assert f"removed staging folder {folder}" in said.replace("\n", "")
    assert all(folder.exists() for folder in live)
    assert cli.main(["cleanup"]) == 0  # (another run on this machine may have died meanwhile)
    assert "staging folder" not in capsys.readouterr().err
