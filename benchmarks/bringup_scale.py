"""Fat-trees of 16 to 1,024 hosts per plane: bring-up, a ping sample across, teardown, memory.

Run through ``benchmarks/bringup.py --scale``. Per plane and fat-tree k: ``network up`` =
Network.up(); ``up incl. plane`` adds plane.start(); ``ready`` = plane.wait_ready() (a ping
between the two farthest hosts); ``ping sample`` = random host pairs (seeded) pinged once,
a pair that fails pinged once more; ``down`` = plane.stop() + Network.down(). Memory is the
growth of MemTotal - MemAvailable from before up() to after the ping sample (kernel objects
and processes together; other work on the machine adds noise) and the PSS of the processes
in the run's namespaces, taken once the plane is up (also when it then fails to become
ready). One run per cell: a 1,024-host run is long and the figures are far above the noise
of the small ones. A plane is ``KIND`` or ``KIND:OPTION=VALUE[:...]`` (e.g. ``p4:program=l3``:
static routes, no controller). ``--topohub KEY,...`` measures topohub graphs (a switch and a
host per node) instead of fat-trees.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from doc_section import machine_line, write_section

from dplab import planes
from dplab.planes import Plane, PlaneError
from dplab.substrate import Network, SubstrateError, registry
from dplab.topology import catalog, from_topohub
from dplab.topology.model import Topology

PING_SAMPLE = 32
# A run is stopped when the machine's MemAvailable falls below this (MemoryGuard).
MIN_AVAILABLE_MIB = 2500
READY_TIMEOUT_S = 180
# The kernel frees a deleted namespace's objects in a work queue after `ip netns del`
# returns; the next run waits until memory has come back, or this long.
SETTLE_TIMEOUT_S = 30
FREED_TIMEOUT_S = 120
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


def plane_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``KIND[:OPTION=VALUE...]`` as the plane's kind and options."""
    kind, *pairs = spec.split(":")
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--planes {spec}: {pair!r} is not OPTION=VALUE")
        options[name] = yaml.safe_load(value)  # as an experiment file would give it
    return kind, options


def measure(spec: str, topo: Topology) -> dict:
    """One bring-up, sample and teardown of ``topo`` on plane ``spec`` (see plane_spec);
    seconds and KiB."""
    settle()
    kind, options = plane_spec(spec)
    plane = planes.create(kind, options)
    net = Network(topo, addressing=plane.addressing, shared_switch_ns=plane.shared_switch_ns)
    before, netns_before = used_kib(), netns_objects()
    result: dict = {}
    guard = MemoryGuard(net, before, result)
    try:
        t0 = time.perf_counter()
        net.up()
        result["net_up_s"] = time.perf_counter() - t0
        plane.start(net)
        result["up_s"] = time.perf_counter() - t0
        plane.wait_ready(READY_TIMEOUT_S)
        result["ready_s"] = time.perf_counter() - t0 - result["up_s"]
        result["ping"] = ping_sample(net, PING_SAMPLE)
    except (PlaneError, SubstrateError) as exc:
        result.setdefault("error", f"{type(exc).__name__}: {str(exc)[:200]}")
    finally:
        guard.stop()
        if "up_s" in result:
            result["mem_kib"] = used_kib() - before
            result["pss_kib"] = pss_kib(registry.pids_in_netns(net.namespaces()))
            result["controller"] = controller_note(plane, topo)
            result["rx"] = receive_note(plane)
            result["routes"] = routes_note(plane)
        ours = len(net.namespaces()) if "net_up_s" in result else 0
        t4 = time.perf_counter()
        plane.stop()
        net.down()
        result["down_s"] = time.perf_counter() - t4
        if netns_before:  # 0: no net_namespace slab of its own to count
            freed = wait_freed(netns_before, ours)
            result["freed"] = (f"kernel freed the namespaces {freed:.1f} s after down"
                               if freed is not None else "kernel had not freed the "
                               f"namespaces {FREED_TIMEOUT_S} s after down")
    return result


class MemoryGuard:
    """Stops a run whose processes and kernel objects would take the machine's last memory
    (it is shared: the OOM killer would pick other work too): below MIN_AVAILABLE_MIB of
    MemAvailable it records how far the run got and SIGKILLs the run's processes, so the
    plane fails (a daemon died) and the run is torn down as any failed one."""

    def __init__(self, net: Network, before_kib: int, result: dict) -> None:
        self._net, self._before, self._result = net, before_kib, result
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(0.5):
            if available_mib() >= MIN_AVAILABLE_MIB:
                continue
            pids = registry.pids_in_netns(self._net.namespaces())
            self._result["error"] = (
                f"stopped: MemAvailable below {MIN_AVAILABLE_MIB} MiB with {len(pids)} "
                f"processes of the run up (PSS {pss_kib(pids) / 1024:.0f} MiB), memory "
                f"grown by {(used_kib() - self._before) / 1024:.0f} MiB")
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def available_mib() -> int:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(info["MemAvailable"].split()[0]) // 1024


def controller_note(plane: object, topo: Topology) -> str:
    """What the plane's controller had seen when the sample ended (or the plane failed):
    the LLDP links it knew against the topology's, the hosts it learnt, its flow set-up
    time. Empty for planes without a controller."""
    try:
        counters = json.loads(plane.stats_file.read_text())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return ""
    switches = set(topo.switches())
    links = sum(1 for u, v in topo.graph.edges if u in switches and v in switches)
    setup = counters.get("setup_ms_p50")
    return (f"controller: {counters.get('switches', 0):.0f} switches, "
            f"{counters.get('lldp_links', 0):.0f}/{links} LLDP links, "
            f"{counters.get('hosts', 0):.0f} hosts learnt, "
            f"{counters.get('packet_ins', 0):.0f} packet-ins"
            + (f", flow set-up p50 {setup:.0f} ms" if setup else ""))


def receive_note(plane: object) -> str:
    """The bridge plane's veth receive path (its option rx; auto decides at start());
    empty for other planes. Read from the plane, not stats(): that lists every bridge."""
    napi = getattr(plane, "napi", None)
    return "" if napi is None else f"veth rx: {'napi' if napi else 'backlog'}"


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


def wait_freed(before: int, ours: int) -> float | None:
    """Seconds until the kernel has freed most of a run's ``ours`` namespaces (the count of
    namespace objects back within a tenth of them of ``before``; other work makes and frees
    namespaces too), None past FREED_TIMEOUT_S.
    `ip netns del` returns at once; the kernel's cleanup_net work then tears them down under
    the locks a bring-up needs (rtnl, pernet_ops_rwsem), freeing a whole batch at its end:
    a run started meanwhile would measure that cleanup too."""
    t0 = time.monotonic()
    while netns_objects() > before + ours // 10:
        if time.monotonic() - t0 > FREED_TIMEOUT_S:
            return None
        time.sleep(0.2)
    return time.monotonic() - t0


def netns_objects() -> int:
    """Network namespace structs allocated now (live ones and those being freed); 0 where
    the kernel merged their slab cache into another (then only memory is watched)."""
    for line in Path("/proc/slabinfo").read_text().splitlines():
        if line.startswith("net_namespace "):
            return int(line.split()[1])
    return 0


def per_node_memory(results: dict, k: int) -> str:
    """Per host from a one-switch star of as many hosts as fat-tree k has, then per switch
    from the fat-tree's growth minus its hosts' (both on the bridge plane)."""
    tree = results.get(("bridge", f"k={k}"), {})
    if "mem_kib" not in tree or "error" in tree:
        return "Per host and per switch memory: not measured (no bridge run at this k)."
    if tree["mem_kib"] <= 0:
        return (f"Per host and per switch memory: not measured (the k={k} fat-tree's memory "
                f"growth, {tree['mem_kib'] / 1024:.0f} MiB, is below the noise of other work).")
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


def routes_note(plane: Plane) -> str:
    """The static routes the plane installed, aggregated and as one per switch and host
    before, and the hosts' TTL where the plane raised it (planes.host_ttl). Empty for
    planes without static routes."""
    try:
        stats = plane.stats()
    except PlaneError:
        return ""
    parts = []
    if stats.get("static_routes") is not None:
        parts.append(f"{stats['static_routes']:,.0f} routes"
                     + (f" (aggregated from {stats['routes_unaggregated']:,.0f})"
                        if stats.get("routes_unaggregated") is not None else ""))
    if "host_ttl" in plane.info():
        parts.append(f"host TTL {plane.info()['host_ttl']}")
    return "; ".join(parts)


def cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def row(spec: str, label: str, r: dict) -> str:
    ping = "{}/{}".format(*r["ping"]) if "ping" in r else "—"
    notes = (r.get("error"), r.get("controller"), r.get("routes"), r.get("rx"), r.get("freed"))
    mem, pss, switches = r.get("mem_kib"), r.get("pss_kib"), r["switches"]
    return (f"| {spec} | {label} | {r['hosts']} | {switches} | {cell(r.get('net_up_s'))} | "
            f"{cell(r.get('up_s'))} | {cell(r.get('ready_s'))} | {ping} | "
            f"{cell(r.get('down_s'))} | {'—' if mem is None else f'{mem / 1024:.0f}'} | "
            f"{'—' if pss is None else f'{pss / 1024:.0f} ({pss / 1024 / switches:.1f})'} | "
            f"{'; '.join(x for x in notes if x)} |")


def render(results: dict, memory_note: str, command: str, load: str,
           backlog: int | None, topohub: bool) -> str:
    rows = ["| plane | topology | hosts | switches | network up (s) | up incl. plane (s) | "
            "ready (s) | ping sample | down (s) | memory (MiB) | processes PSS (MiB) "
            "(per switch) | note |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *(row(spec, label, r) for (spec, label), r in results.items())]
    backlog_note = (f" With net.core.netdev_max_backlog raised to {backlog} for the runs."
                    if backlog else " net.core.netdev_max_backlog left at "
                    f"{BACKLOG.read_text().strip()}.")
    graphs = ("topohub graphs (a switch and a host per node; 100 Mbit/s host links, "
              "1 Gbit/s switch links, all shaped by TBF)" if topohub else
              "fat-trees (every link shaped by TBF: 100 Mbit/s host links, 1 Gbit/s "
              "switch links)")
    return "\n".join([
        "## Bring-up and teardown at scale ("
        + ("largest topohub graphs" if topohub else "fat-tree, 16 to 1,024 hosts") + "): "
        + ", ".join(dict.fromkeys(spec for spec, _ in results))
        + (f", backlog {backlog}" if backlog else ""),
        "",
        f"{machine_line()} Load average at the start: {load} (other sessions' test suites "
        f"ran at the same time: the figures are upper bounds). Topologies: {graphs}. One "
        f"run per cell; ping sample: {PING_SAMPLE} random host pairs.{backlog_note}",
        "",
        *rows,
        "",
        f"- {memory_note}",
        "- `memory` = growth of MemTotal − MemAvailable from before the bring-up to after",
        "  the ping sample, or to the failure once the plane was up (kernel and processes;",
        "  noisy: other work allocates too); `processes PSS` = the switch daemons and",
        "  controllers, at the same moment.",
        "- Budget (issue 21): bring-up ≤ 10 s and teardown ≤ 5 s for 1,024 hosts on 2 cores.",
        *(MININET_NOTE if any(spec.startswith("Mininet") for spec, _ in results) else []),
        "",
        f"Reproduce: `{command}`",
    ])


MININET_NOTE = [
    "- Mininet (Debian's python3-mininet 2.3.0, run by /usr/bin/python3) builds the same",
    "  graph with `LinuxBridge(stp=True)` switches (no openvswitch module in this kernel)",
    "  and `TCLink` (HTB) shaping, no controller: `up incl. plane` = `Mininet(...)` +",
    "  `net.start()`, `down` = `net.stop()`; its `network up`, `ready` (kernel STP still",
    "  settling after `net.start()`), ping sample and memory are not measured (—).",
]


def topologies(ks: list[int], topohub_keys: list[str]) -> Iterator[tuple[str, Topology]]:
    """(label, topology) per fat-tree k, or per topohub key when any are given."""
    if topohub_keys:
        for key in topohub_keys:
            yield key, from_topohub.load(key, core_bw=1000, edge_bw=100)
        return
    for k in ks:
        yield f"k={k}", catalog.build("fattree", k=k)


def mininet_cell(mininet: Callable[[Topology, int], dict], topo: Topology) -> dict:
    """One Mininet build and stop of ``topo`` in the cells of our table: its ``up_s`` is
    Mininet(...) + net.start(), its ``down_s`` net.stop(); nothing else is measured."""
    settle()
    done = mininet(topo, 1)
    if "error" in done:
        return {"error": done["error"][:200]}
    return {"up_s": done["up_s"][0], "down_s": done["down_s"][0]}


def main(ks: list[int], specs: list[str], backlog: int | None, write: bool,
         command: str, topohub_keys: list[str] | None = None,
         mininet: tuple[str, Callable[[Topology, int], dict]] | None = None) -> None:
    """``mininet``: (its row's name, a function timing Mininet's build of a topology),
    measured after our planes on each topology."""
    load = Path("/proc/loadavg").read_text().split()[0]
    results: dict = {}
    with max_backlog(backlog):
        for label, topo in topologies(ks, topohub_keys or []):
            size = {"hosts": len(topo.hosts()), "switches": len(topo.switches())}
            for spec in specs:
                results[(spec, label)] = {**size, **measure(spec, topo)}
                print(spec, label, results[(spec, label)], flush=True)
            if mininet is not None:
                results[(mininet[0], label)] = {**size, **mininet_cell(mininet[1], topo)}
                print(mininet[0], label, results[(mininet[0], label)], flush=True)
        memory_note = ("Per host and per switch memory: see the fat-tree tables."
                       if topohub_keys else per_node_memory(results, max(ks)))
    section = render(results, memory_note, command, load, backlog, bool(topohub_keys))
    print(section)
    if write:
        write_section(section_name(specs, ks, topohub_keys, backlog, mininet is not None),
                      section)


def section_name(specs: list[str], ks: list[int], topohub_keys: list[str] | None,
                 backlog: int | None, mininet: bool) -> str:
    """One docs section per plane set, topology set, backlog and Mininet: a run of other
    planes, or of the same planes at other sizes, keeps the figures already written."""
    sizes = ([key.replace("/", "_") for key in topohub_keys] if topohub_keys
             else [f"k{'_'.join(map(str, ks))}"])
    name = ["bringup_scale", *(s.replace(":", "_").replace("=", "_") for s in specs),
            *sizes, *(["mininet"] if mininet else []),
            *([f"backlog{backlog}"] if backlog else [])]
    return "_".join(name)


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
