"""A throwaway rig for the P4 switch: one switch namespace, one host namespace, veth pairs.

The switch namespace `dls<3 hex>-sw` holds the switch ports `dls<hex>-pN`; their peers
`dls<hex>-hN` sit in `dls<hex>-h`, where raw AF_PACKET sockets send and capture frames.
`tx` picks how the switch transmits (`ring` or `xdp`, switch/PROTOCOL.md); with `xdp` the
peers get GRO on (veth takes XDP frames only into a peer that runs NAPI), unless
`peer_gro=False`; `xdp_min_call` sets the switch's `--xdp-min-call` (None: its default);
`first_port` numbers the ports from 0 or 1 (the default).
Everything is removed on exit, also when the test fails. Used by tests/test_switch_packets.py
and benchmarks/switch_rate.py.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import socket
import struct
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from dplab.substrate import registry

ROOT = Path(__file__).resolve().parents[1]
SWITCH_BIN = ROOT / "switch" / "target" / "release" / "dplab-switch"
BLAST_BIN = ROOT / "switch" / "target" / "release" / "dplab-pktblast"
CLONE_NEWNET = 0x40000000
PACKET_OUTGOING = 4
# Rig._start_switch: how long the switch may take to open its control socket (a loaded
# machine may keep it from a core for seconds).
START_DEADLINE_S = 10.0
# Rig._wait_links_up: how long the kernel may take to bring the veth ends up.
LINKS_DEADLINE_S = 30.0
SEND_ATTEMPTS = 200  # Rig.send: 5 ms apart while the backlog is full
# Rig.capture: how long to wait for the switch to be done with what the rig gave it, and
# for its frames to reach the capture sockets (a loaded machine may keep the switch or the
# kernel's softirq work from a core for a while), before giving up on them.
READY_DEADLINE_S = 10.0
ETH_P_ALL = 0x0003
SO_RCVBUFFORCE = 33  # socket.h; Python names only SO_RCVBUF (root may force past rmem_max)
CAPTURE_RCVBUF = 8 << 20
P4C_REWRITES = ROOT / "tests" / "p4" / "p4c_rewrites"  # our rewrites of p4c testdata
VETH_MIN_FRAME = 60
TAG_TYPE = b"\x88\xb5"  # the tag header of tests/data/switch_features.p4


@functools.cache
def build_switch() -> None:
    """Builds the release binaries (a no-op when they are up to date), once per process:
    cargo's own up-to-date check costs a fraction of a second, and some thirty test modules
    ask for the switch."""
    cargo = os.environ.get("CARGO") or str(Path.home() / ".cargo" / "bin" / "cargo")
    subprocess.run([cargo, "build", "--release", "-q"], cwd=ROOT / "switch", check=True)


def ir_folder(tmp_path_factory, label: str) -> Path:
    """For a test module's fixture: skips it without root (network namespaces), builds the
    switch, and returns a fresh folder for the programs it compiles."""
    import pytest  # here: benchmarks use this rig without pytest's fixtures

    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces")
    build_switch()
    return tmp_path_factory.mktemp(label)


def compile_p4(source: Path, out_dir: Path) -> Path:
    """Compiles a P4 program with dplab's compiler; returns the IR file."""
    from dplab.p4.cli import compile_command

    return compile_command(source, out_dir)["ir"]


def padded(frame: bytes) -> bytes:
    """The frame with zeros after it up to the 60 bytes a veth carries at least (the
    reference tests of p4c send shorter ones)."""
    return frame + bytes(VETH_MIN_FRAME - len(frame))


def from_hex(spaced_hex: str) -> bytes:
    return bytes.fromhex(spaced_hex.replace(" ", ""))


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def set_gro(ns: str, ifname: str, on: bool) -> None:
    """Turns GRO of interface `ifname` in namespace `ns` on or off (on a veth, GRO on makes
    it receive through NAPI, which XDP frames sent to it need)."""
    subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "gro",
                    "on" if on else "off"], check=True, capture_output=True)


@contextmanager
def in_netns(name: str):
    """Runs the block in network namespace `name` (this thread only), then comes back."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name}")
        yield
    finally:
        libc.setns(home, CLONE_NEWNET)
        os.close(home)
        os.close(target)


class SwitchClient:
    """Line-delimited JSON client of the switch's control socket (switch/PROTOCOL.md)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.settimeout(10)
        self.buf = b""
        self.next_id = 1
        self.events: list[dict] = []

    def _read_message(self) -> dict:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("switch closed the control socket")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, cmd: str, **fields) -> dict:
        """Sends one request and returns the whole reply (ok, result or code/error)."""
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall((json.dumps({"id": rid, "cmd": cmd, **fields}) + "\n").encode())
        while True:
            msg = self._read_message()
            if "event" in msg:
                self.events.append(msg)
            elif msg.get("id") == rid:
                return msg

    def call(self, cmd: str, **fields):
        """Like request, but raises on an error reply and returns the result."""
        reply = self.request(cmd, **fields)
        if not reply["ok"]:
            raise RuntimeError(f"{cmd}: {reply['code']}: {reply['error']}")
        return reply["result"]

    def wait_event(self, kind: str, timeout: float = 2.0) -> dict | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, ev in enumerate(self.events):
                if ev["event"] == kind:
                    return self.events.pop(i)
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                msg = self._read_message()
            except TimeoutError:
                break
            finally:
                self.sock.settimeout(10)
            if "event" in msg:
                self.events.append(msg)
        return None

    def close(self) -> None:
        self.sock.close()


class Rig:
    """Namespaces, veths and a running switch; use as a context manager."""

    def __init__(
        self,
        n_ports: int = 3,
        cpu_port: int = 255,
        core: int | None = None,
        capture: bool = True,
        run_switch: bool = True,
        mtu: int | None = None,
        tx: str = "ring",
        peer_gro: bool | None = None,
        xdp_min_call: int | None = None,
        switch_bin: Path = SWITCH_BIN,
        first_port: int = 1,
        rx_frames: int | None = None,
    ) -> None:
        # A run prefix and record of the lab's own (substrate/registry.py): what a rig of a
        # killed test run leaves behind, the next rig or lab run reclaims.
        registry.reclaim_stale()
        self.record = registry.new_run()
        self.prefix = self.record.prefix
        self.sw_ns = f"{self.prefix}-sw"
        self.host_ns = f"{self.prefix}-h"
        self.n_ports = n_ports
        # The switch's port numbers: 0 too where a program expects BMv2's port 0.
        self.port_numbers = range(first_port, first_port + n_ports)
        self.cpu_port = cpu_port
        self.core = core
        # Capture sockets see every frame on the host side; benchmarks leave them out
        # because each open socket costs the kernel a clone per packet.
        self.capture_enabled = capture
        # Without the switch the rig is just its namespaces and veths, for another forwarder
        # (the benchmark's Linux bridge, router or OVS) to join port 1 to port 2.
        self.run_switch = run_switch
        self.mtu = mtu  # of every veth, both ends; None: veth's default (1500)
        if tx not in ("ring", "xdp"):
            raise ValueError(f"Rig: tx={tx!r}: expected 'ring' or 'xdp'")
        self.tx = tx
        self.switch_bin = switch_bin  # another build, for A/B benchmarks
        self.peer_gro = tx == "xdp" if peer_gro is None else peer_gro
        self.xdp_min_call = xdp_min_call
        self.rx_frames = rx_frames  # each port's receive ring depth; None: the switch's default
        self.tmp = tempfile.TemporaryDirectory(prefix=f"{self.prefix}-")
        self.control_path = f"{self.tmp.name}/switch.sock"
        self.proc: subprocess.Popen | None = None
        self.client: SwitchClient | None = None
        self.sockets: dict[int, socket.socket] = {}
        self.sent_to: dict[int, int] = {}  # frames Rig.send put on each port of this switch
        # Per host port, frames taken off its capture socket that came from the switch, and
        # those given up on (a full socket buffer): together they catch up with the
        # switch's tx_packets of the port once it is done (Rig.capture).
        self.taken: dict[int, int] = {}
        self.lost: dict[int, int] = {}

    def switch_if(self, port: int) -> str:
        return f"{self.prefix}-p{port}"

    def host_if(self, port: int) -> str:
        return f"{self.prefix}-h{port}"

    def __enter__(self) -> Rig:
        try:
            self._build()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _build(self) -> None:
        self.record.add_namespaces([self.sw_ns, self.host_ns])
        self.record.add_path(Path(self.tmp.name))
        for ns in (self.sw_ns, self.host_ns):
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ],
                check=True,
            )
        mtu = ["mtu", str(self.mtu)] if self.mtu else []
        for p in self.port_numbers:
            _ip("link", "add", self.switch_if(p), "netns", self.sw_ns, *mtu, "type", "veth",
                "peer", "name", self.host_if(p), "netns", self.host_ns, *mtu)
            _ip("-n", self.sw_ns, "link", "set", self.switch_if(p), "up")
            _ip("-n", self.host_ns, "link", "set", self.host_if(p), "up")
            if self.peer_gro:
                set_gro(self.host_ns, self.host_if(p), True)
        self._wait_links_up()
        if self.run_switch:
            self._start_switch()
        if not self.capture_enabled:
            return
        with in_netns(self.host_ns):
            for p in self.port_numbers:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                s.bind((self.host_if(p), 0))
                # A frame the switch sent through XDP arrives in a socket buffer the size of
                # a page (its truesize), so the default receive buffer (~208 KiB) holds only
                # ~50 of them: room for the bursts the tests send (root may force it).
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, CAPTURE_RCVBUF)
                s.setblocking(False)
                self.sockets[p] = s

    def _wait_links_up(self) -> None:
        """Returns once every veth end is operationally up. The end set up first has no
        carrier yet, so the kernel attaches its qdisc only later, from its link-watch work
        (a kworker a loaded machine may keep waiting for seconds); until then its qdisc is
        noop, which drops every frame sent through it while the sender counts it sent."""
        ends = {self.sw_ns: {self.switch_if(p) for p in self.port_numbers},
                self.host_ns: {self.host_if(p) for p in self.port_numbers}}
        deadline = time.monotonic() + LINKS_DEADLINE_S
        for ns, names in ends.items():
            while True:
                shown = subprocess.run(["ip", "-j", "-n", ns, "link", "show"], check=True,
                                       capture_output=True, text=True).stdout
                down = names - {link["ifname"] for link in json.loads(shown)
                                if link.get("operstate") == "UP"}
                if not down:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"veth ends {sorted(down)} in {ns} not up after "
                                       f"{LINKS_DEADLINE_S:.0f} s")
                time.sleep(0.01)

    def _start_switch(self) -> None:
        argv = [
            "ip",
            "netns",
            "exec",
            self.sw_ns,
            str(self.switch_bin),
            "--cpu-port",
            str(self.cpu_port),
            "--control",
            self.control_path,
            "--warm-loopback",  # the rig's switch namespace is its own
            "on",
        ]
        if self.tx != "ring":  # the default; older builds (A/B runs) know no --tx
            argv += ["--tx", self.tx]
        if self.xdp_min_call is not None:
            argv += ["--xdp-min-call", str(self.xdp_min_call)]
        if self.rx_frames is not None:
            argv += ["--rx-frames", str(self.rx_frames)]
        for p in self.port_numbers:
            argv += ["--port", f"{p}={self.switch_if(p)}"]
        if self.core is not None:
            argv += ["--core", str(self.core)]
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_DEADLINE_S
        while not os.path.exists(self.control_path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                # Its stderr ends only with the process: a switch still starting is stopped
                # first, or reading what it said would wait for it forever.
                self.proc.kill()
                _, said = self.proc.communicate()
                raise RuntimeError(f"switch did not start: {said}")
            time.sleep(0.02)
        self.client = SwitchClient(self.control_path)
        self.sent_to, self.taken, self.lost = {}, {}, {}

    def __exit__(self, *exc) -> None:
        for s in self.sockets.values():
            s.close()
        if self.client:
            self.client.close()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for ns in (self.sw_ns, self.host_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.tmp.cleanup()
        self.record.path.unlink(missing_ok=True)

    def switch_alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def load(self, ir_path: Path) -> None:
        self.client.call("load_pipeline", ir_path=str(ir_path))

    def send(self, port: int, frame: bytes) -> None:
        """Sends one frame; while the kernel's receive backlog is full (ENOBUFS: other work
        on a loaded machine flooding it) the frame was dropped before the switch, so it is
        sent again, for up to about a second."""
        for _ in range(SEND_ATTEMPTS - 1):
            try:
                self.sockets[port].send(frame)
                break
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise
                time.sleep(0.005)
        else:
            self.sockets[port].send(frame)
        self.sent_to[port] = self.sent_to.get(port, 0) + 1

    def blast(
        self, frame: bytes, seconds: float, pps: int | None = None, core: int | None = None,
        method: str | None = None,
    ) -> dict:
        """Runs dplab-pktblast on the host side of port 1 (on `core` if given), at `pps` or as
        fast as it can; returns its JSON report. `method` defaults to its transmit ring for a
        set rate and its XDP method (port 1 must run NAPI: GRO on) otherwise."""
        pin = ["taskset", "-c", str(core)] if core is not None else []
        argv = ["ip", "netns", "exec", self.host_ns, *pin, str(BLAST_BIN)]
        argv += ["--iface", self.host_if(1), "--frame", frame.hex(), "--seconds", str(seconds)]
        argv += ["--method", method or ("ring" if pps else "xdp")]
        argv += ["--pps", str(pps)] if pps else []
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"dplab-pktblast failed: {done.stderr.strip()}")
        return json.loads(done.stdout)

    def drain(self) -> None:
        """Empties the capture sockets (the frames count as taken: see `capture`)."""
        for p, s in self.sockets.items():
            while self._take(p, s) is not None:
                pass

    def _take(self, port: int, s: socket.socket) -> bytes | None:
        """The next frame socket `s` of `port` received from the switch, skipping the rig's
        own sends; None once it has none."""
        while True:
            try:
                data, addr = s.recvfrom(65536)
            except BlockingIOError:
                return None
            if addr[2] != PACKET_OUTGOING:
                self.taken[port] = self.taken.get(port, 0) + 1
                return data

    def _stats(self) -> dict | None:
        """The switch's `stats`, or None when it cannot tell (stopped or refused)."""
        if self.client is None:
            return None
        try:
            reply = self.client.request("stats")
        except OSError:
            return None
        return reply["result"] if reply.get("ok") else None

    def packet_outs_run(self) -> int:
        """How many packet-outs the switch has run, from any client (`stats`): read before
        another client sends some, plus their number, it is what `capture` waits for."""
        stats = self._stats()
        if stats is None:
            raise RuntimeError("the switch does not answer stats")
        return stats["cpu"]["packet_out"]

    def _handled(self, stats: dict, packet_outs: int) -> bool:
        """Whether the switch has read every frame Rig.send gave it (its ports' rx_packets,
        or lost it to a full receive ring), taken every packet-out it acknowledged off its
        queue and run `packet_outs` in all."""
        # The receive ring is every port's: its drops are not told by port.
        read = {p["port"]: p["rx_packets"] for p in stats["ports"]}
        unread = sum(max(0, n - read.get(port, 0)) for port, n in self.sent_to.items())
        return (unread <= stats["rx_ring"]["drops"]
                and stats["heap"]["queued_packet_outs"] == 0
                and stats["cpu"]["packet_out"] >= packet_outs)

    def settled_stats(self, packet_outs: int = 0) -> dict | None:
        """The first `stats` in which the switch is done with everything the rig gave it
        (and with `packet_outs` packet-outs in all): it read the frames and packet-outs, and
        the rounds that ran them have ended, so the `tx_packets` there count every copy
        they sent (switch/PROTOCOL.md, `rounds`). None after READY_DEADLINE_S (a switch
        kept from its core that long) or without a switch."""
        deadline = time.monotonic() + READY_DEADLINE_S
        begun = None
        while (stats := self._stats()) is not None:
            if begun is None and self._handled(stats, packet_outs):
                begun = stats["rounds"]["begun"]
            if begun is not None and stats["rounds"]["ended"] >= begun:
                return stats
            if time.monotonic() > deadline:
                return None
            time.sleep(0.002)
        return None

    def capture(self, wait: float | None = None,
                packet_outs: int = 0) -> dict[int, list[bytes]]:
        """Frames each host-side port received from the switch (own sends excluded).
        Without `wait`: every frame the switch sent for what the rig gave it (and for
        packet-outs up to a count of `packet_outs`, see packet_outs_run), as its
        `tx_packets` count them, and so nothing arrives later (see settled_stats). With
        `wait`: what arrives within `wait` seconds of the switch being done, for frames it
        sends on its own account (a controller's packet-outs of unknown number, timers)."""
        stats = self.settled_stats(packet_outs)
        if wait is None and stats is not None:
            return self._catch_up({p["port"]: p["tx_packets"] for p in stats["ports"]})
        return self._window(0.3 if wait is None else wait)  # no count to wait for

    def _catch_up(self, sent: dict[int, int]) -> dict[int, list[bytes]]:
        """Takes frames off the capture sockets until each port's taken (and lost) frames
        reach `sent`, the switch's tx_packets of that port."""
        got: dict[int, list[bytes]] = {p: [] for p in self.sockets}
        deadline = time.monotonic() + READY_DEADLINE_S
        while behind := [p for p in self.sockets
                         if self.taken.get(p, 0) + self.lost.get(p, 0) < sent.get(p, 0)]:
            if time.monotonic() > deadline:
                # Lost on the way (a full socket buffer): counted so, not waited for again.
                for p in behind:
                    self.lost[p] = sent[p] - self.taken.get(p, 0)
                break
            idle = True
            for p in behind:
                if (frame := self._take(p, self.sockets[p])) is not None:
                    got[p].append(frame)
                    idle = False
            if idle:
                time.sleep(0.001)
        return got

    def _window(self, wait: float) -> dict[int, list[bytes]]:
        """Frames each port received within the next `wait` seconds."""
        got: dict[int, list[bytes]] = {p: [] for p in self.sockets}
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            idle = True
            for p, s in self.sockets.items():
                if (frame := self._take(p, s)) is not None:
                    got[p].append(frame)
                    idle = False
            if idle:
                time.sleep(0.005)
        return got


def mac(text: str) -> bytes:
    return bytes(int(b, 16) for b in text.split(":"))


def tag_frame(kind: int, value: int = 0) -> bytes:
    """A 60-byte frame of tests/data/switch_features.p4: its tag header (EtherType 0x88b5)
    names the feature to exercise (`kind`) and its argument (`value`)."""
    frame = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01") + TAG_TYPE
    frame += struct.pack("!BBIBB", kind, value, 0, 0, 0)
    return frame + bytes(60 - len(frame))


def ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(
    dst_mac: str, src_mac: str, src_ip: str, dst_ip: str, size: int = 64, ttl: int = 64
) -> bytes:
    """An Ethernet/IPv4/UDP frame of `size` bytes (without FCS) with a correct IPv4 checksum."""
    ip_len = size - 14
    udp_len = ip_len - 20
    header = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        ip_len,
        1,
        0,
        ttl,
        17,
        0,
        socket.inet_aton(src_ip),
        socket.inet_aton(dst_ip),
    )
    header = header[:10] + struct.pack("!H", ipv4_checksum(header)) + header[12:]
    udp = struct.pack("!HHHH", 1234, 5678, udp_len, 0) + bytes(udp_len - 8)
    return mac(dst_mac) + mac(src_mac) + b"\x08\x00" + header + udp


def exchange(rig: Rig, port: int, frames: list[bytes],
             wait: float | None = None) -> dict[int, list[bytes]]:
    """Sends `frames` into `port` on a drained rig; what every host port received."""
    rig.drain()
    for frame in frames:
        rig.send(port, frame)
    return rig.capture(wait)


def outputs(program: Path, ir_dir: Path, n_ports: int,
            frames: dict[object, bytes]) -> dict[object, dict[int, list[bytes]]]:
    """Compiles `program` on a fresh rig and sends each frame alone into port 1: per frame's
    name, what each port received (ports that received nothing left out)."""
    with Rig(n_ports=n_ports) as rig:
        rig.load(compile_p4(program, ir_dir))
        return {name: {p: f for p, f in exchange(rig, 1, [frame]).items() if f}
                for name, frame in frames.items()}
