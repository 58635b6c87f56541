"""Measurements the substrate and plane tests share: bytes a TCP flow really delivered."""

from __future__ import annotations

import subprocess
import time

from dplab.substrate.network import Network


def tcp_received(net: Network, src: str, dst: str, seconds: float = 1.0) -> tuple[int, float]:
    """Run iperf2 TCP src -> dst; return (bytes the server received, bits/s it measured)."""
    server = net.popen(net.host_ns(dst), ["iperf", "-s", "-y", "C"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    try:
        time.sleep(0.3)  # let the server listen
        net.run(net.host_ns(src), ["iperf", "-c", net.host_ip(dst), "-t", str(seconds)],
                timeout=seconds + 10)
        time.sleep(0.3)  # the server prints its report when the connection closes
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=5)
    fields = out.strip().splitlines()[-1].split(",")
    return int(fields[7]), float(fields[8])
