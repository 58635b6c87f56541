"""The forwarders benchmarks/switch_rate.py compares, each joining port 1 to port 2 of a
tests/switch_rig.Rig, and the CPU time each spends on the measured core.

Every forwarder gets the same frame on port 1 (`FRAME_DST` -> 10.0.2.5) and sends it out of
port 2; each says how it counts its CPU (`cpu_counted`), because a user-space switch has a
process to charge and kernel forwarding has none:

- the P4 switch: its data-plane thread's CPU in rounds that moved packets (the switch's own
  counter), kernel work done in its system calls included: transmit, and the sink's
  receive, which veth runs inside the send;
- OVS: ovs-vswitchd's CPU (all its threads, /proc/<pid>/stat), likewise with its kernel work;
- the user-space forwarder (dplab-fwd, the userspace plane), likewise: its process's CPU;
- the XDP router (the xdp plane's l3 program): no process either; port 1's NAPI runs in a
  kernel thread of its own (threaded NAPI) pinned to the measured core, and that thread's
  CPU is the program's, the redirect's and the sink's receive (raised inside it); through
  port 2's qdisc (the plane's path to a shaped port) also the skb, tc_qdisc and the qdisc;
- Linux bridge and router: no process, so RPS on port 1 (`rps_cpus`) moves their receive,
  forwarding, transmit and the sink's receive to the measured core as softirq work, and
  the core's softirq + hardirq time in /proc/stat is what they spent (tick-sampled: the
  kernel has no IRQ_TIME_ACCOUNTING; other softirq work on that core is counted too).

The user-space switches take frames from a packet socket whose receive (packet_rcv) runs
on the source's core, where veth's NAPI for port 1 runs; the kernel forwarders' stack receive
runs on the measured core after RPS. Their counts differ by that much.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import switch_rig
import xdp_drop

from dplab.measure.resources import parse_pid_stat
from dplab.planes.ovs import (
    BYPASS_QDISC,
    create_db,
    daemon_argv,
    global_config,
    interface_type,
    private_env,
)
from dplab.planes.userspace import FWD_BIN
from dplab.planes.xdp import TC_QDISC, route_entry
from dplab.xdp.netns import interfaces
from dplab.xdp.programs import XdpProgram

FRAME_DST, FRAME_SRC = "02:00:00:00:00:aa", "02:00:00:00:00:01"
SRC_IP, DST_IP = "10.0.1.1", "10.0.2.5"
NEXT_HOP_MAC = "02:00:00:00:00:02"  # what the L3 forwarders write as the frame's destination
CLK_TCK = os.sysconf("SC_CLK_TCK")
NAPI_PRIORITY = 50  # SCHED_FIFO, as the kernel's own threaded IRQ handlers


def frame(size: int) -> bytes:
    return switch_rig.udp_frame(FRAME_DST, FRAME_SRC, SRC_IP, DST_IP, size=size)


class Forwarder(Protocol):
    name: str
    cpu_counted: str
    rig: switch_rig.Rig

    def cpu_seconds(self) -> float:
        """CPU time spent forwarding so far (a counter: take differences)."""
        ...


def run_in(ns: str, *argv: str) -> str:
    done = subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"in {ns}: {' '.join(argv)} failed: {done.stderr.strip()}")
    return done.stdout


def prepare_ends(rig: switch_rig.Rig, xdp_sink: bool) -> None:
    """Port 1 takes the source's XDP frames (veth takes them only into a peer that runs
    NAPI, which GRO turns on); with `xdp_sink`, the sink discards in XDP."""
    run_in(rig.sw_ns, "ethtool", "-K", rig.switch_if(1), "gro", "on")
    if xdp_sink:
        sink_discards(rig)


def sink_discards(rig: switch_rig.Rig) -> None:
    """The sink (port 2's peer) drops every frame in XDP as it arrives, counted by veth.

    veth runs a peer's receive inside the sender's transmit, so a sink with a stack to run
    puts that work on the forwarder's core, which a NIC between them would not. Dropped in
    XDP, a frame costs the sink next to nothing: no socket buffer for an XDP frame, and a
    socket buffer's frame leaves veth's NAPI at once.
    """
    xdp_drop.attach(rig.host_ns, rig.host_if(2))


def core_irq_seconds(core: int) -> float:
    """Softirq + hardirq time of one core so far (/proc/stat, USER_HZ ticks)."""
    for line in Path("/proc/stat").read_text().splitlines():
        fields = line.split()
        if fields[0] == f"cpu{core}":
            return (int(fields[6]) + int(fields[7])) / CLK_TCK  # irq, softirq
    raise RuntimeError(f"/proc/stat has no line for cpu{core}")


def process_cpu_seconds(pid: int) -> float:
    """User + system time of a process, all its threads (/proc/<pid>/stat)."""
    _, utime, stime = parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
    return (utime + stime) / CLK_TCK


# -- the P4 switch ------------------------------------------------------------------------


class P4Switch:
    cpu_counted = "switch thread, busy rounds"

    def __init__(self, rig: switch_rig.Rig, name: str) -> None:
        self.rig, self.name = rig, name

    def cpu_seconds(self) -> float:
        return self.rig.client.call("stats")["dataplane_cpu_s"]


@contextmanager
def p4_switch(
    name: str, ir: Path, entries: list[dict], core: int | None, tx: str = "ring",
    switch_bin: Path = switch_rig.SWITCH_BIN, xdp_sink: bool = False,
    rx_frames: int | None = None,
) -> Iterator[P4Switch]:
    """dplab-switch (the build `switch_bin`) pinned to `core`, transmitting through `tx`
    (`ring` or `xdp`), running the compiled program `ir` with table `entries` (keyword
    arguments of the control protocol's table_add); with `xdp_sink`, the sink discards in
    XDP (sink_discards); `rx_frames`: each port's receive ring depth (None: the switch's
    default)."""
    with switch_rig.Rig(n_ports=2, core=core, capture=False, tx=tx,
                        switch_bin=switch_bin, rx_frames=rx_frames) as rig:
        rig.load(ir)
        for entry in entries:
            rig.client.call("table_add", **entry)
        prepare_ends(rig, xdp_sink)
        yield P4Switch(rig, name)


# -- Linux bridge and router -----------------------------------------------------------------


class KernelForwarder:
    cpu_counted = "core's softirq + irq"

    def __init__(self, rig: switch_rig.Rig, name: str, core: int) -> None:
        self.rig, self.name, self.core = rig, name, core

    def cpu_seconds(self) -> float:
        return core_irq_seconds(self.core)


def steer_to(rig: switch_rig.Rig, core: int) -> None:
    """RPS: port 1's received frames are processed (forwarded, sent, received by the sink)
    in softirq on `core`; the source's core only builds their socket buffers."""
    rps = f"/sys/class/net/{rig.switch_if(1)}/queues/rx-0/rps_cpus"
    run_in(rig.sw_ns, "sh", "-c", f"echo {1 << core:x} > {rps}")


@contextmanager
def linux_bridge(core: int, xdp_sink: bool = False) -> Iterator[KernelForwarder]:
    """A Linux bridge over ports 1 and 2; the frame's destination is a static entry on port 2,
    so it is forwarded, not flooded."""
    with switch_rig.Rig(n_ports=2, capture=False, run_switch=False) as rig:
        br = f"{rig.prefix}-br"
        run_in(rig.sw_ns, "ip", "link", "add", br, "type", "bridge")
        for port in (1, 2):
            run_in(rig.sw_ns, "ip", "link", "set", rig.switch_if(port), "master", br)
        run_in(rig.sw_ns, "ip", "link", "set", br, "up")
        run_in(rig.sw_ns, "bridge", "fdb", "add", FRAME_DST, "dev", rig.switch_if(2),
               "master", "static")
        prepare_ends(rig, xdp_sink)
        steer_to(rig, core)
        yield KernelForwarder(rig, "Linux bridge", core)


@contextmanager
def linux_router(core: int, xdp_sink: bool = False) -> Iterator[KernelForwarder]:
    """IPv4 forwarding in the switch namespace: port 1 owns the frame's destination MAC, the
    next hop's neighbour entry on port 2 is permanent (no ARP in the run)."""
    with switch_rig.Rig(n_ports=2, capture=False, run_switch=False) as rig:
        p1, p2 = rig.switch_if(1), rig.switch_if(2)
        run_in(rig.sw_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        run_in(rig.sw_ns, "ip", "link", "set", p1, "address", FRAME_DST)
        run_in(rig.sw_ns, "ip", "addr", "add", "10.0.1.254/24", "dev", p1)
        run_in(rig.sw_ns, "ip", "addr", "add", "10.0.2.254/24", "dev", p2)
        run_in(rig.sw_ns, "ip", "neigh", "replace", DST_IP, "lladdr", NEXT_HOP_MAC,
               "dev", p2, "nud", "permanent")
        prepare_ends(rig, xdp_sink)
        steer_to(rig, core)
        yield KernelForwarder(rig, "Linux router", core)


# -- XDP (the xdp plane's l3 program) --------------------------------------------------------


class XdpRouter:
    name = "XDP router (xdp plane, l3)"
    qdisc_name = "XDP router (xdp plane, l3, through port 2's qdisc)"
    cpu_counted = "port 1's NAPI thread"

    def __init__(self, rig: switch_rig.Rig, napi_pid: int, qdisc: bool) -> None:
        self.rig, self.napi_pid = rig, napi_pid
        if qdisc:
            self.name = self.qdisc_name

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.napi_pid)


@contextmanager
def xdp_router(core: int, xdp_sink: bool = False, qdisc: bool = False) -> Iterator[XdpRouter]:
    """The xdp plane's l3 program on port 1 with one static route, 10.0.2.0/24 out of port 2
    to the next hop's MAC; port 1's NAPI, where the program runs, in a kernel thread pinned
    to `core` (on a NIC it would be that queue's softirq; veth would run it on the source's
    core instead). `qdisc`: port 2 as a shaped port of the plane (xdp/qdisc.h): each frame
    passed up as an skb and sent by tc_qdisc through port 2's qdisc (veth's default,
    noqueue: the path's cost, no shaper's)."""
    with switch_rig.Rig(n_ports=2, capture=False, run_switch=False) as rig:
        program = XdpProgram("l3_router", "xdp_l3", map_prefix=rig.prefix,
                             tc_program=TC_QDISC if qdisc else None)
        try:
            ports = interfaces(rig.sw_ns)
            port1, port2 = ports[rig.switch_if(1)], ports[rig.switch_if(2)]
            program.set_ports(rig.sw_ns, [port1, port2])
            if qdisc:
                program.set_qdisc_ports([port2], [port1, port2])
            program.map("routes").update(*route_entry(
                ipaddress.ip_network(f"{DST_IP}/24", strict=False), port2,
                bytes.fromhex(NEXT_HOP_MAC.replace(":", ""))))
            program.attach(rig.sw_ns, [port1])
            # veth takes redirected frames only into a peer running NAPI: the sink's GRO
            # turns it on when no XDP sink does.
            switch_rig.set_gro(rig.host_ns, rig.host_if(2), True)
            prepare_ends(rig, xdp_sink)
            yield XdpRouter(rig, threaded_napi(rig.sw_ns, rig.switch_if(1), core), qdisc)
        finally:
            program.close()


def threaded_napi(ns: str, ifname: str, core: int) -> int:
    """Run the interface's NAPI in a kernel thread (it must have NAPI: XDP or GRO on), pinned
    to `core` at real-time priority; the thread's pid."""
    run_in(ns, "sh", "-c", f"echo 1 > /sys/class/net/{ifname}/threaded")
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().startswith(f"napi/{ifname}-"):
                pid = int(comm.parent.name)
                os.sched_setaffinity(pid, {core})
                # Softirq, where NAPI runs unthreaded, goes ahead of every task; a
                # real-time thread too, rather than taking turns with the machine's load.
                os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(NAPI_PRIORITY))
                return pid
        except OSError:
            continue  # the process ended while we looked
    raise RuntimeError(f"no NAPI thread for {ifname} in {ns}")


# -- the user-space forwarder (dplab-fwd, the userspace plane) -------------------------------


class UserspaceForwarder:
    cpu_counted = "process, all its time"

    def __init__(self, rig: switch_rig.Rig, proc: subprocess.Popen, name: str) -> None:
        self.rig, self.proc, self.name = rig, proc, name

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.proc.pid)


@contextmanager
def userspace(core: int, xdp_sink: bool = False, mode: str = "router"
              ) -> Iterator[UserspaceForwarder]:
    """dplab-fwd over ports 1 and 2, pinned to `core`. `router`: port 1 owns the frame's
    destination MAC, one route sends 10.0.2.0/24 out of port 2 to the next hop's MAC (the
    L3 forwarders' work: lookup, TTL, checksum, MACs). `bridge`: the learning bridge; the
    frame's destination never sends, so every frame is flooded, to port 2 alone."""
    with switch_rig.Rig(n_ports=2, capture=False, run_switch=False) as rig:
        p1, p2 = rig.switch_if(1), rig.switch_if(2)
        run_in(rig.sw_ns, "ip", "link", "set", p1, "address", FRAME_DST)
        macs = {port: json.loads(run_in(rig.sw_ns, "ip", "-j", "link", "show", ifname))[0]
                ["address"] for port, ifname in ((1, p1), (2, p2))}
        config = {"switch": "rig", "mode": mode,
                  "ports": [{"number": port, "iface": rig.switch_if(port), "mac": mac}
                            for port, mac in macs.items()]}
        if mode == "router":
            config["routes"] = [{"prefix": "10.0.2.0/24", "port": 2,
                                 "next_hop_mac": NEXT_HOP_MAC}]
        path = Path(rig.tmp.name) / "fwd.json"
        path.write_text(json.dumps(config))
        prepare_ends(rig, xdp_sink)
        proc = subprocess.Popen(["ip", "netns", "exec", rig.sw_ns, "taskset", "-c", str(core),
                                 str(FWD_BIN), "--config", str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"dplab-fwd did not start: {proc.communicate()[1].strip()}")
            yield UserspaceForwarder(rig, proc, f"user-space forwarder (dplab-fwd, {mode})")
        finally:
            _stop(proc)


# -- Open vSwitch, userspace datapath -------------------------------------------------------------

# The L3 program's work as OpenFlow actions: port 1's IPv4 to 10.0.2.0/24 gets the next
# hop's MAC, the old destination as source, one TTL less, and leaves by port 2.
OVS_FLOWS = (
    "priority=10,in_port=1,ip,nw_dst=10.0.2.0/24,"
    f"actions=mod_dl_src:{FRAME_DST},mod_dl_dst:{NEXT_HOP_MAC},dec_ttl,output:2",
    "priority=0,actions=drop",
)


class Ovs:
    cpu_counted = "ovs-vswitchd"

    def __init__(self, rig: switch_rig.Rig, vswitchd: subprocess.Popen, ports: str) -> None:
        self.rig, self.vswitchd = rig, vswitchd
        self.name = f"OVS (netdev datapath, ports {ports})"

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.vswitchd.pid)


@contextmanager
def ovs(core: int, xdp_sink: bool = False, ports: str = "netdev") -> Iterator[Ovs]:
    """A private ovsdb-server and ovs-vswitchd in the switch namespace (their files in the
    rig's temporary directory, never the host's /run/openvswitch), vswitchd and all its
    threads pinned to `core` (an AF_XDP port's PMD thread too, by pmd-cpu-mask); one
    netdev bridge with proactive L3 flows, its port I/O as the ovs plane's option
    ``ports`` (dplab.planes.ovs.PORTS)."""
    with switch_rig.Rig(n_ports=2, capture=False, run_switch=False) as rig:
        run_dir = Path(rig.tmp.name)
        env = private_env(run_dir)
        db, db_sock = create_db(run_dir), run_dir / "db.sock"
        daemons: list[subprocess.Popen] = []
        try:
            daemons.append(_ovs_daemon(rig, env, "ovsdb-server",
                                       [str(db), f"--remote=punix:{db_sock}"]))
            _wait_for(db_sock, "ovsdb-server's socket")
            daemons.append(_ovs_daemon(rig, env, "ovs-vswitchd", [f"unix:{db_sock}"], core))
            br = f"{rig.prefix}br"
            vsctl = ["ovs-vsctl", f"--db=unix:{db_sock}", "--timeout=30"]
            pmd = [f"other_config:pmd-cpu-mask={1 << core:#x}"] if ports in BYPASS_QDISC else []
            cmds = ["--", "set", "open_vswitch", ".", *global_config(ports), *pmd,
                    "--", "add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
                    "fail-mode=secure", "other-config:disable-in-band=true"]
            for port in (1, 2):
                ifname = rig.switch_if(port)
                cmds += ["--", "add-port", br, ifname, "--", "set", "interface", ifname,
                         f"ofport_request={port}",
                         *([f"type={kind}"] if (kind := interface_type(ports)) else [])]
            subprocess.run([*vsctl, *cmds], check=True, capture_output=True, env=env)
            for flow in OVS_FLOWS:
                subprocess.run(["ovs-ofctl", "add-flow", f"unix:{run_dir / br}.mgmt", flow],
                               check=True, capture_output=True)
            prepare_ends(rig, xdp_sink)
            yield Ovs(rig, daemons[-1], ports)
        finally:
            for daemon in reversed(daemons):
                _stop(daemon)


def _ovs_daemon(rig: switch_rig.Rig, env: dict[str, str], name: str, args: list[str],
                core: int | None = None) -> subprocess.Popen:
    """`name` in the foreground in the switch namespace, its sockets and logs in our dir."""
    pin = ["taskset", "-c", str(core)] if core is not None else []
    argv = ["ip", "netns", "exec", rig.sw_ns, *pin, *daemon_argv(Path(rig.tmp.name), name, args)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(daemon: subprocess.Popen) -> None:
    daemon.terminate()
    try:
        daemon.wait(timeout=10)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


def _wait_for(path: Path, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} ({path}) did not appear within {timeout:g} s")
        time.sleep(0.02)
