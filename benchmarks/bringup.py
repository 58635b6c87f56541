"""Bring-up and teardown time of the 36-host transit-stub network, per plane and for Mininet;
with ``--scale``, of fat-trees from 16 to 1,024 hosts per plane.

    sudo .venv/bin/python benchmarks/bringup.py [--repeat 5] [--no-mininet] [--write]
    sudo .venv/bin/python benchmarks/bringup.py --scale [--ks 4,8,12,16] [--planes ...] [--write]
    sudo .venv/bin/python benchmarks/bringup.py --scale --topohub backbone/europe [--planes ...]
    sudo .venv/bin/python benchmarks/bringup.py --scale --ks 4,8 --planes bridge --mininet

For each dplab plane: ``up`` = Network.up() + plane.start() (the namespaces, links, shaping
and switch configuration exist), ``ready`` = plane.wait_ready() (forwarding proven by a
ping across), ``down`` = plane.stop() + Network.down(). Mininet 2.3 (Debian's python3-mininet,
run with /usr/bin/python3) builds the same graph with TCLink shaping: ``up`` = Mininet(...)
+ net.start(), ``down`` = net.stop(). Medians over the repetitions. ``--write`` replaces the
bring-up section of docs/benchmarks.md. ``--scale`` (see bringup_scale.py) writes its own.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import bringup_scale  # beside this script
from doc_section import write_section

from dplab import planes
from dplab.planes import PlaneError
from dplab.substrate import Network, SubstrateError, registry
from dplab.topology import catalog
from dplab.topology.model import Topology

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
DRIVER = Path(__file__).resolve().parent / "mininet_driver.py"
SYSTEM_PYTHON = "/usr/bin/python3"
MININET_DEB = "2.3.0-1"  # Debian's package, the version measured in docs/benchmarks.md
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
TOPOLOGY = "internet"
READY_TIMEOUT_S = 60


def time_plane(kind: str, topo: Topology, repeat: int) -> dict:
    """Seconds per repetition of each phase of ``kind`` on ``topo``, or the error."""
    net_up, up, ready, down = [], [], [], []
    for _ in range(repeat):
        try:
            plane = planes.create(kind, {})
        except PlaneError as exc:
            return {"error": str(exc)}
        net = Network(topo, addressing=plane.addressing, shared_switch_ns=plane.shared_switch_ns)
        try:
            t0 = time.perf_counter()
            net.up()
            t_net = time.perf_counter()
            plane.start(net)
            t1 = time.perf_counter()
            plane.wait_ready(READY_TIMEOUT_S)
            t2 = time.perf_counter()
        except (PlaneError, SubstrateError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            t3 = time.perf_counter()
            plane.stop()
            net.down()
            t4 = time.perf_counter()
        net_up.append(t_net - t0)
        up.append(t1 - t0)
        ready.append(t2 - t1)
        down.append(t4 - t3)
    return {"net_up_s": net_up, "up_s": up, "ready_s": ready, "down_s": down}


def graph_spec(topo: Topology) -> dict:
    return {"hosts": topo.hosts(), "switches": topo.switches(),
            "links": [[a, b, attrs.get("bw_mbit")] for a, b, attrs in topo.graph.edges(data=True)]}


def time_mininet(switch: str, topo: Topology, repeat: int) -> dict:
    """Run the Mininet driver; for OVS, against a private ovsdb-server/ovs-vswitchd."""
    spec = {**graph_spec(topo), "switch": switch, "repeat": repeat}
    with contextlib.ExitStack() as stack:
        env = dict(os.environ)
        if switch == "ovs-user":
            env["OVS_RUNDIR"] = str(stack.enter_context(private_ovs()))
        done = subprocess.run([SYSTEM_PYTHON, str(DRIVER)], input=json.dumps(spec), env=env,
                              capture_output=True, text=True, timeout=600, check=False)
    lines = done.stdout.strip().splitlines()
    if "No module named 'mininet'" in done.stderr:
        return {"error": f"Mininet is not installed for {SYSTEM_PYTHON}: `apt-get install "
                         f"mininet={MININET_DEB}` (scripts/setup.sh installs it)"}
    if not lines:
        return {"error": f"driver printed nothing; stderr: {done.stderr.strip()[-300:]}"}
    return json.loads(lines[-1])


@contextlib.contextmanager
def private_ovs() -> Iterator[Path]:
    """ovsdb-server + ovs-vswitchd of our own (never the host's), recorded for cleanup.

    They run in the host namespace because Mininet puts its switch ports there."""
    record = registry.new_run()
    rundir = registry.RECORD_DIR / f"{record.prefix}-mininet-ovs"
    rundir.mkdir()
    record.add_path(rundir)
    try:
        subprocess.run(["ovsdb-tool", "create", str(rundir / "conf.db"), OVS_SCHEMA], check=True)
        db = f"unix:{rundir}/db.sock"
        _daemon(record, ["ovsdb-server", str(rundir / "conf.db"), f"--remote=p{db}",
                         f"--unixctl={rundir}/ovsdb-server.ctl",
                         f"--log-file={rundir}/ovsdb-server.log"])
        _wait_for(rundir / "db.sock")
        subprocess.run(["ovs-vsctl", f"--db={db}", "--no-wait", "init"], check=True)
        _daemon(record, ["ovs-vswitchd", db, f"--unixctl={rundir}/ovs-vswitchd.ctl",
                         f"--log-file={rundir}/ovs-vswitchd.log"])
        _wait_for(rundir / "ovs-vswitchd.ctl")
        yield rundir
    finally:
        registry.teardown(record)


def _daemon(record: registry.RunRecord, argv: list[str]) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record.add_process(proc.pid)


def _wait_for(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {timeout} s")
        time.sleep(0.05)


def median(values: list[float] | None) -> str:
    """Median (and the fastest run): the machine is shared, the fastest shows the floor."""
    return f"{statistics.median(values):.3f} ({min(values):.3f})" if values else "—"


LOAD_AT_START = Path("/proc/loadavg").read_text().split()[0]


def render(results: dict[str, dict], repeat: int, topo: Topology, command: str) -> str:
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    rows = ["| system | network up (s) | up incl. plane (s) | ready (s) | down (s) | note |",
            "|---|---|---|---|---|---|"]
    for name, r in results.items():
        times = " | ".join(median(r.get(k)) for k in ("net_up_s", "up_s", "ready_s", "down_s"))
        rows.append(f"| {name} | {times} | {r.get('error', '')} |")
    return "\n".join([
        "## Bring-up and teardown (36-host transit-stub)",
        "",
        f"Measured {when} on {platform.node()} (kernel {platform.release()}, "
        f"{os.cpu_count()} cores, shared with other work: read ratios, not absolutes). "
        f"Topology `{topo.name}`: {len(topo.hosts())} hosts, {len(topo.switches())} switches, "
        f"{topo.graph.number_of_edges()} links, all shaped. Median (fastest) of {repeat} runs; "
        f"load average at the start: {LOAD_AT_START}.",
        "",
        *rows,
        "",
        "- dplab `network up` = `Network.up()`: namespaces, veth, TBF shaping, addresses;",
        "  `up incl. plane` adds the plane's switch configuration (`plane.start()`);",
        "  `ready` = until a ping crosses the network (bridge: kernel STP,",
        "  forward delay 2 s, must settle first); `down` = plane stop + teardown.",
        "- Mininet `up incl. plane` = `Mininet(...)` + `net.start()` with `TCLink` (HTB)",
        "  shaping, no controller; `down` = `net.stop()`. Its `network up` and `ready` are not",
        "  measured (—). `ovs-user` is",
        "  OVSSwitch(datapath='user', failMode='standalone', stp=True) against a private",
        "  ovsdb-server/ovs-vswitchd: this kernel has no openvswitch module, so Mininet's",
        "  default kernel-datapath OVS cannot run here at all.",
        "",
        f"Reproduce: `{command}`",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-mininet", action="store_true")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--scale", action="store_true", help="fat-trees of 16 to 1,024 hosts")
    parser.add_argument("--ks", default="4,8,12,16", help="--scale: fat-tree k values")
    parser.add_argument("--planes", default="bridge,router,p4,ovs",
                        help="--scale: planes, each KIND or KIND:OPTION=VALUE[:...]")
    parser.add_argument("--mininet", action="store_true",
                        help="--scale: Mininet with Linux bridges on each topology too")
    parser.add_argument("--topohub", default="",
                        help="--scale: topohub keys (e.g. backbone/europe) instead of fat-trees")
    parser.add_argument("--backlog", type=int, default=None,
                        help="--scale: raise net.core.netdev_max_backlog (host-wide) to this "
                        "for the runs, put back afterwards")
    args = parser.parse_args()
    registry.cleanup_on_signals()
    registry.reclaim_stale()
    if args.scale:
        bringup_scale.main([int(k) for k in args.ks.split(",")], args.planes.split(","),
                           args.backlog, args.write, "sudo .venv/bin/python "
                           "benchmarks/bringup.py " + " ".join(sys.argv[1:]),
                           [key for key in args.topohub.split(",") if key],
                           ("Mininet 2.3 linuxbridge", functools.partial(
                               time_mininet, "linuxbridge")) if args.mininet else None)
        return
    topo = catalog.build(TOPOLOGY)
    results = {f"dplab {kind}": time_plane(kind, topo, args.repeat)
               for kind in ("bridge", "router", "ovs")}
    if not args.no_mininet:
        for switch in ("ovs-user", "linuxbridge"):
            results[f"Mininet 2.3 {switch}"] = time_mininet(switch, topo, args.repeat)
    command = "sudo .venv/bin/python benchmarks/bringup.py " + " ".join(sys.argv[1:])
    section = render(results, args.repeat, topo, command.strip())
    print(section)
    if args.write:
        write_section("bringup", section)


if __name__ == "__main__":
    main()
