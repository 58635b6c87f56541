"""Resource sampler arithmetic and /proc reading, on a synthetic /proc tree."""

import os

import pytest

from dplab.measure.resources import (
    ProcCpu,
    ProcReader,
    Snapshot,
    parse_pid_stat,
    parse_proc_stat,
    summarise,
)

HZ = 100.0


def stat_line(pid: int, comm: str, utime: int, stime: int) -> str:
    # fields 3..13, then utime (14), stime (15), then the rest
    return f"{pid} ({comm}) S 1 1 1 0 -1 4194560 10 0 0 0 {utime} {stime} 0 0 20 0 1 0 5\n"


def proc_stat(user: int, system: int, idle: int, softirq: int) -> str:
    return (f"cpu  {user} 0 {system} {idle} 0 0 {softirq} 0 0 0\n"
            f"cpu0 {user} 0 {system} {idle} 0 0 {softirq} 0 0 0\nintr 1 2 3\n")


def test_parse_pid_stat_survives_spaces_and_parens_in_comm():
    assert parse_pid_stat(stat_line(7, "odd ) name", 123, 45)) == ("odd ) name", 123, 45)


def test_summarise_process_and_host_figures():
    host0 = parse_proc_stat(proc_stat(1000, 500, 8000, 100))
    # 2 s later, 400 ticks passed on the machine (2 cores x 2 s x 100 Hz):
    # user +60, system +40, softirq +100, idle +200
    host1 = parse_proc_stat(proc_stat(1060, 540, 8200, 200))
    snaps = [
        Snapshot(10.0, {1: ProcCpu(100, 50, 2048)}, host0),
        # pid 2 started during the sampling: all its ticks count; pid 1 reached 4 MiB
        Snapshot(11.0, {1: ProcCpu(130, 60, 4096), 2: ProcCpu(10, 10, 1024)}, None),
        # pid 2 exited: its last seen ticks stay counted
        Snapshot(12.0, {1: ProcCpu(180, 70, 3072)}, host1),
    ]
    got = summarise(snaps, HZ)
    # user: pid 1 80 + pid 2 10 = 90 ticks = 0.9 s CPU in 2 s = 45 % of one core
    assert got["cpu_user_pct"] == pytest.approx(45.0)
    assert got["cpu_sys_pct"] == pytest.approx(15.0)  # (20 + 10) ticks
    assert got["mem_rss_mb"] == pytest.approx(5.0)  # peak of the sum: 4096 + 1024 KiB
    assert got["host_user_pct"] == pytest.approx(15.0)
    assert got["host_sys_pct"] == pytest.approx(10.0)
    assert got["host_softirq_pct"] == pytest.approx(25.0)


def test_no_plane_processes_means_missing_not_zero():
    host0 = parse_proc_stat(proc_stat(0, 0, 100, 0))
    host1 = parse_proc_stat(proc_stat(0, 0, 180, 20))
    got = summarise([Snapshot(0.0, {}, host0), Snapshot(1.0, {}, host1)], HZ)
    assert got["cpu_user_pct"] is None and got["cpu_sys_pct"] is None
    assert got["mem_rss_mb"] is None
    assert got["host_softirq_pct"] == pytest.approx(20.0)


def test_a_single_snapshot_measures_nothing():
    got = summarise([Snapshot(0.0, {1: ProcCpu(1, 1, 1)}, None)], HZ)
    assert set(got.values()) == {None}


def fake_proc(tmp_path):
    """/proc with pid 10 (daemon) and 11 (iperf) in namespace A, pid 12 in namespace B."""
    netns, proc = tmp_path / "netns", tmp_path / "proc"
    netns.mkdir()
    (netns / "A").write_text("")
    (netns / "B").write_text("")
    for pid, comm, ns in ((10, "ovs-vswitchd", "A"), (11, "iperf", "A"), (12, "other", "B")):
        d = proc / str(pid)
        (d / "ns").mkdir(parents=True)
        os.symlink(netns / ns, d / "ns" / "net")  # same inode, as the kernel's nsfs link
        (d / "stat").write_text(stat_line(pid, comm, 300 + pid, 40 + pid))
        (d / "status").write_text(f"Name:\t{comm}\nVmRSS:\t   {pid * 1000} kB\n")
    (proc / "self").mkdir()
    (proc / "stat").write_text(proc_stat(1, 2, 3, 4))
    return ProcReader(["A"], proc=proc, netns_dir=netns)


def test_reader_keeps_plane_processes_of_our_namespaces_only(tmp_path):
    snap = fake_proc(tmp_path).snapshot()
    assert snap.procs == {10: ProcCpu(310, 50, 10000)}
    assert snap.host == {"user": 1, "nice": 0, "system": 2, "idle": 3, "iowait": 0, "irq": 0,
                         "softirq": 4, "steal": 0}


def test_reader_names_a_missing_namespace(tmp_path):
    with pytest.raises(ValueError, match="no network namespace 'dlzzzz-s1'"):
        ProcReader(["dlzzzz-s1"], netns_dir=tmp_path)
