"""Fat-trees of 16 to 1,024 hosts per plane: bring-up, a ping sample across, teardown, memory.

Run through ``benchmarks/bringup.py --scale``. Per plane and fat-tree k: ``network up`` =
Network.up(); ``up incl. plane`` adds plane.start(); ``ready`` = plane.wait_ready() (a ping
between the two farthest hosts); ``ping sample`` = random host pairs (seeded) pinged once,
a pair that fails pinged once more; ``down`` = plane.stop() + Network.down(). Memory is the
growth of MemTotal - MemAvailable from before up() to after the ping sample (kernel objects
and processes together; other work on the machine adds noise) and the PSS of the processes
in the run's namespaces. One run per cell: a 1,024-host run is long and the figures are
far above the noise of the small ones.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from doc_section import machine_line, write_section

from dplab import planes
from dplab.planes import PlaneError
from dplab.substrate import Network, SubstrateError, registry
from dplab.topology import catalog
from dplab.topology.model import Topology

PING_SAMPLE = 32
READY_TIMEOUT_S = 180
# The kernel frees a deleted namespace's objects in a work queue after `ip netns del`
# returns; the next run waits until memory has come back, or this long.
SETTLE_TIMEOUT_S = 30
STAR_HOSTS = 1000  # a Linux bridge takes at most 1,023 ports (BR_MAX_PORTS)
BACKLOG = Path("/proc/sys/net/core/netdev_max_backlog")


def used_kib() -> int:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])


def pss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
    return total


def ping_sample(net: Network, count: int, seed: int = 1) -> tuple[int, int]:
    """(pairs answered, pairs tried) over ``count`` random host pairs."""
    rng = random.Random(seed)
    pairs = [tuple(rng.sample(net.topo.hosts(), 2)) for _ in range(count)]

    def answered(pair: tuple[str, str]) -> bool:
        for _ in range(2):
            done = net.run(net.host_ns(pair[0]), ["ping", "-c1", "-W2", "-n",
                                                  net.host_ip(pair[1])], check=False)
            if done.returncode == 0:
                return True
        return False

    with ThreadPoolExecutor(max_workers=8) as pool:
        return sum(pool.map(answered, pairs)), len(pairs)


def measure(kind: str, topo: Topology) -> dict:
    """One bring-up, sample and teardown of ``topo`` on plane ``kind``; seconds and KiB."""
    settle()
    plane = planes.create(kind, {})
    net = Network(topo, addressing=plane.addressing, shared_switch_ns=plane.shared_switch_ns)
    before = used_kib()
    result: dict = {}
    try:
        t0 = time.perf_counter()
        net.up()
        result["net_up_s"] = time.perf_counter() - t0
        plane.start(net)
        result["up_s"] = time.perf_counter() - t0
        plane.wait_ready(READY_TIMEOUT_S)
        result["ready_s"] = time.perf_counter() - t0 - result["up_s"]
        result["ping"] = ping_sample(net, PING_SAMPLE)
        result["mem_kib"] = used_kib() - before
        result["pss_kib"] = pss_kib(registry.pids_in_netns(net.namespaces()))
    except (PlaneError, SubstrateError) as exc:
        result["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        t4 = time.perf_counter()
        plane.stop()
        net.down()
        result["down_s"] = time.perf_counter() - t4
    return result


def settle() -> None:
    """Wait for the memory of earlier runs' namespaces to be freed (or SETTLE_TIMEOUT_S)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    last = used_kib()
    while time.monotonic() < deadline:
        time.sleep(1)
        now = used_kib()
        if abs(now - last) < 4096:
            return
        last = now


def per_node_memory(results: dict, k: int) -> str:
    """Per host from a one-switch star of as many hosts as fat-tree k has, then per switch
    from the fat-tree's growth minus its hosts' (both on the bridge plane)."""
    tree = results.get(("bridge", k), {})
    if "mem_kib" not in tree:
        return "Per host and per switch memory: not measured (no bridge run at this k)."
    hosts, switches = k**3 // 4, 5 * k * k // 4
    star_hosts = min(hosts, STAR_HOSTS)
    star = star_memory_kib(star_hosts)
    per_host = star / star_hosts
    per_switch = (tree["mem_kib"] - per_host * hosts) / switches
    return (f"Per host (namespace, veth pair, two TBF, addresses): {per_host:.0f} KiB, from "
            f"one bridge with {star_hosts} hosts growing memory by {star / 1024:.0f} "
            f"MiB; per fat-tree switch (namespace, bridge, its share of the switch-switch "
            f"veth pairs and TBF) {per_switch:.0f} KiB, from the k={k} fat-tree's "
            f"{tree['mem_kib'] / 1024:.0f} MiB minus its hosts' share.")


def star_memory_kib(hosts: int) -> int:
    """Memory growth of one bridge with ``hosts`` hosts, up and configured (not pinged)."""
    settle()
    plane = planes.create("bridge", {})
    before = used_kib()
    with Network(catalog.build("single", hosts=hosts)) as net:
        plane.start(net)
        grown = used_kib() - before
        plane.stop()
    return grown


def cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def render(results: dict, memory_note: str, command: str, load: str,
           backlog: int | None) -> str:
    rows = ["| plane | hosts | switches | network up (s) | up incl. plane (s) | ready (s) "
            "| ping sample | down (s) | memory (MiB) | processes PSS (MiB) (per switch) | note |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (kind, k), r in results.items():
        ping = "{}/{}".format(*r["ping"]) if "ping" in r else "—"
        mem = r.get("mem_kib")
        pss = r.get("pss_kib")
        switches = 5 * k * k // 4
        rows.append(
            f"| {kind} | {k**3 // 4} | {switches} | {cell(r.get('net_up_s'))} | "
            f"{cell(r.get('up_s'))} | {cell(r.get('ready_s'))} | {ping} | "
            f"{cell(r.get('down_s'))} | {'—' if mem is None else f'{mem / 1024:.0f}'} | "
            f"{'—' if pss is None else f'{pss / 1024:.0f} ({pss / 1024 / switches:.1f})'} | "
            f"{r.get('error', '')} |")
    backlog_note = (f" With net.core.netdev_max_backlog raised to {backlog} for the runs."
                    if backlog else " net.core.netdev_max_backlog left at "
                    f"{BACKLOG.read_text().strip()}.")
    return "\n".join([
        "## Bring-up and teardown at scale (fat-tree, 16 to 1,024 hosts): "
        + ", ".join(dict.fromkeys(kind for kind, _ in results))
        + (f", backlog {backlog}" if backlog else ""),
        "",
        f"{machine_line()} Load average at the start: {load} (other sessions' test suites "
        "ran at the same time: the figures are upper bounds). Fat-tree k = "
        f"{', '.join(str(k) for k in sorted({k for _, k in results}))}; "
        "every link shaped (TBF, 100 Mbit/s host links, 1 Gbit/s switch links). One run "
        f"per cell; ping sample: {PING_SAMPLE} random host pairs.{backlog_note}",
        "",
        *rows,
        "",
        f"- {memory_note}",
        "- `memory` = growth of MemTotal − MemAvailable over the run (kernel and processes;",
        "  noisy: other work allocates too); `processes PSS` = the switch daemons.",
        "- Budget (issue 21): bring-up ≤ 10 s and teardown ≤ 5 s for 1,024 hosts on 2 cores.",
        "",
        f"Reproduce: `{command}`",
    ])


def main(ks: list[int], kinds: list[str], backlog: int | None, write: bool,
         command: str) -> None:
    load = Path("/proc/loadavg").read_text().split()[0]
    results: dict = {}
    with max_backlog(backlog):
        for k in ks:
            topo = catalog.build("fattree", k=k)
            for kind in kinds:
                results[(kind, k)] = measure(kind, topo)
                print(kind, k, results[(kind, k)], flush=True)
        memory_note = per_node_memory(results, max(ks))
    section = render(results, memory_note, command, load, backlog)
    print(section)
    if write:
        # one section per plane set and backlog: runs of other planes keep their figures
        write_section("_".join(["bringup_scale", *kinds, *([f"backlog{backlog}"]
                                                            if backlog else [])]), section)


@contextlib.contextmanager
def max_backlog(packets: int | None) -> Iterator[None]:
    """net.core.netdev_max_backlog at ``packets`` for the block (None: left alone). A
    broadcast flooded by bridges to a thousand veth ports is queued on one CPU's backlog in
    one softirq; past this limit (1000 by default) the kernel drops the rest."""
    if packets is None:
        yield
        return
    before = BACKLOG.read_text().strip()
    BACKLOG.write_text(str(packets))
    try:
        yield
    finally:
        BACKLOG.write_text(before)
