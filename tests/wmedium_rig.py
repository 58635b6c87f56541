"""A throwaway rig for the wireless medium (dplab-wmedium, switch/wmedium): one namespace for
the medium, one for the access point, one per station, and a veth pair from each node to
the medium, all named with a run prefix of the lab's (substrate/registry.py), so what a
killed test leaves behind the next run reclaims.

The medium's namespace `<prefix>-wm` holds `wap` (to the access point) and `ws1`... (to the
stations); every node's end is `wlan0` with MAC 02:00:00:00:00:<n> and address 10.77.0.<n>
(n = 1 for the access point, 2... for the stations). Neighbours are written in as
permanent, so no ARP frame shares the medium with what a test measures. Used by
tests/test_wmedium.py and benchmarks/wmedium.py.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dplab.substrate import realtime, registry

ROOT = Path(__file__).resolve().parents[1]
WMEDIUM_BIN = ROOT / "switch" / "target" / "release" / "dplab-wmedium"
READY_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
NODE_IF = "wlan0"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Rig:
    """Namespaces and veths for one access point and `stations` stations; a context manager."""

    def __init__(self, stations: int) -> None:
        registry.reclaim_stale()
        self.record = registry.new_run()
        self.prefix = self.record.prefix
        self.medium_ns = f"{self.prefix}-wm"
        self.stations = stations
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-"))
        self.record.add_path(self.tmp)

    def node_ns(self, node: int) -> str:
        """Node 0 is the access point, 1.. the stations."""
        return f"{self.prefix}-ap" if node == 0 else f"{self.prefix}-s{node}"

    def medium_if(self, node: int) -> str:
        return "wap" if node == 0 else f"ws{node}"

    @staticmethod
    def ip(node: int) -> str:
        return f"10.77.0.{node + 1}"

    @staticmethod
    def mac(node: int) -> str:
        return f"02:00:00:00:00:{node + 1:02x}"

    def __enter__(self) -> Rig:
        try:
            self._build()
        except BaseException:
            registry.teardown(self.record)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        registry.teardown(self.record)

    def _build(self) -> None:
        nodes = range(self.stations + 1)
        namespaces = [self.medium_ns, *(self.node_ns(n) for n in nodes)]
        self.record.add_namespaces(namespaces)
        for ns in namespaces:
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            # No IPv6: its router solicitations and reports would share the medium.
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                            "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], check=True)
        for n in nodes:
            _ip("-n", self.medium_ns, "link", "add", self.medium_if(n), "type", "veth",
                "peer", "name", NODE_IF, "address", self.mac(n), "netns", self.node_ns(n))
            _ip("-n", self.medium_ns, "link", "set", self.medium_if(n), "up")
            _ip("-n", self.node_ns(n), "addr", "add", f"{self.ip(n)}/24", "brd", "+",
                "dev", NODE_IF)
            _ip("-n", self.node_ns(n), "link", "set", NODE_IF, "up")
        for n in nodes:
            for other in nodes:
                if other != n:
                    _ip("-n", self.node_ns(n), "neigh", "replace", self.ip(other), "lladdr",
                        self.mac(other), "dev", NODE_IF, "nud", "permanent")

    def config(self, seed: int = 1, basic_rate_mbit: float = 6.0, queue_frames: int = 100,
               stations: list[tuple[float, float]] | None = None) -> dict:
        """dplab-wmedium's configuration; `stations`: (rate Mbit/s, loss %) of each."""
        stations = stations or [(54.0, 0.0)] * self.stations
        return {"name": "ap", "seed": seed, "basic_rate_mbit": basic_rate_mbit,
                "queue_frames": queue_frames, "stats_path": str(self.tmp / "stats.json"),
                "ap": {"ifname": self.medium_if(0)},
                "stations": [{"ifname": self.medium_if(i + 1), "rate_mbit": rate,
                              "loss_pct": loss} for i, (rate, loss) in enumerate(stations)]}

    @contextmanager
    def medium(self, config: dict) -> Iterator[Medium]:
        """Runs dplab-wmedium with `config` until the block ends, then stops it with SIGINT."""
        path = self.tmp / "wmedium.json"
        path.write_text(json.dumps(config))
        Path(config["stats_path"]).unlink(missing_ok=True)
        proc = subprocess.Popen(["ip", "netns", "exec", self.medium_ns, str(WMEDIUM_BIN),
                                 "--config", str(path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.record.add_process(proc.pid)
        medium = Medium(proc, Path(config["stats_path"]))
        try:
            medium.wait_ready()
            realtime.promote(proc.pid)  # as the substrate runs it (substrate.wmedium.start)
            yield medium
        finally:
            medium.stop()

    def popen(self, node: int, script: str, *args: object) -> subprocess.Popen:
        """Runs a Python `script` in node `node`'s namespace, its stdout a pipe."""
        return subprocess.Popen(["ip", "netns", "exec", self.node_ns(node), sys.executable,
                                 "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                                text=True)


class Medium:
    """A running dplab-wmedium; `stats` holds its counters once it stopped."""

    def __init__(self, proc: subprocess.Popen, stats_path: Path) -> None:
        self.proc = proc
        self.stats_path = stats_path
        self.stats: dict | None = None
        self.returncode: int | None = None

    def wait_ready(self) -> None:
        out = self.proc.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], READY_TIMEOUT_S)
        line = out.readline() if ready else ""
        if line.strip() != "ready":
            self.proc.kill()
            _, err = self.proc.communicate()
            raise RuntimeError(f"dplab-wmedium did not start: {err.strip() or 'no ready'}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
        self.returncode = self.proc.returncode
        if self.stats_path.exists():
            self.stats = json.loads(self.stats_path.read_text())


# Sends `n` numbered datagrams of `size` bytes to `dst`:`port` at `pps`, starting at the wall
# clock time `start` (so senders in several namespaces start together); with `broadcast`
# the socket may send to a broadcast address.
SENDER = textwrap.dedent("""
    import socket, sys, time
    dst, port, size, n, pps, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \\
        int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    time.sleep(max(0.0, start - time.time()))
    t0 = time.monotonic()
    for i in range(n):
        while time.monotonic() < t0 + i / pps:
            time.sleep(0.001)
        s.sendto(i.to_bytes(4, "big") + bytes(size - 4), (dst, port))
""")
# Counts what arrives on `port` until nothing came for 1 s (`wait` s before the first), or
# 0.3 s after the `expect`th datagram (0: no count expected), to see any copy beyond it:
# prints {source address: [datagrams, bytes, distinct numbers]} as JSON.
RECEIVER = textwrap.dedent("""
    import json, socket, sys
    port, wait, expect = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", port))
    s.settimeout(wait)
    print("ready", flush=True)
    got, seen = {}, {}
    try:
        while True:
            data, (src, _) = s.recvfrom(65536)
            c = got.setdefault(src, [0, 0])
            c[0] += 1
            c[1] += len(data)
            seen.setdefault(src, set()).add(int.from_bytes(data[:4], "big"))
            total = sum(v[0] for v in got.values())
            s.settimeout(0.3 if expect and total >= expect else 1.0)
    except TimeoutError:
        pass
    print(json.dumps({k: [*v, len(seen[k])] for k, v in got.items()}), flush=True)
""")


def receive(rig: Rig, node: int, port: int, expect: int = 0,
            wait_s: float = 10.0) -> subprocess.Popen:
    """Starts a RECEIVER in node `node` and waits until it listens."""
    proc = rig.popen(node, RECEIVER, port, wait_s, expect)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def received(proc: subprocess.Popen) -> dict[str, list[int]]:
    """What a RECEIVER counted: {source: [datagrams, bytes, distinct numbers]}."""
    out, _ = proc.communicate(timeout=60)
    return json.loads(out)


def send(rig: Rig, node: int, dst: str, port: int, size: int, n: int, pps: float,
         start: float | None = None) -> subprocess.Popen:
    """Starts a SENDER in node `node` (at wall clock `start`, or at once)."""
    return rig.popen(node, SENDER, dst, port, size, n, pps, start or time.time())
