"""Cost per namespace of the kernel steps of Network.up() as the namespaces grow in number.

    sudo .venv/bin/python benchmarks/netns_cost.py [--namespaces 4000] [--step 500]

Makes ``--namespaces`` namespaces ``--step`` at a time the way Network.up() does (one
``ip -batch`` of ``netns add``, the two IPv6 sysctls from one thread entering each, one
``ip -batch`` of a veth pair per namespace) and prints milliseconds per namespace for each
step: a step whose cost grows with the namespaces already there makes a large bring-up
grow faster than linearly. Everything is made under a run prefix and torn down after.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

from dplab.substrate import registry
from dplab.substrate.network import NO_IPV6
from dplab.substrate.sysctl import set_sysctls


def ip_batch(lines: list[str]) -> None:
    subprocess.run(["ip", "-batch", "-"], input="".join(f"{line}\n" for line in lines),
                   text=True, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=4000)
    parser.add_argument("--step", type=int, default=500)
    args = parser.parse_args()
    registry.cleanup_on_signals()
    record = registry.new_run()
    names = [f"{record.prefix}-n{i}" for i in range(args.namespaces)]
    record.add_namespaces(names)
    print(f"load average {Path('/proc/loadavg').read_text().split()[0]}")
    print("namespaces | netns add (ms each) | sysctls (ms each) | veth pair (ms each)")
    try:
        for first in range(0, args.namespaces, args.step):
            chunk = names[first:first + args.step]
            t0 = time.perf_counter()
            ip_batch([f"netns add {n}" for n in chunk])
            t1 = time.perf_counter()
            set_sysctls({n: NO_IPV6 for n in chunk})
            t2 = time.perf_counter()
            ip_batch([f"link add name a netns {n} type veth peer name b netns {n}"
                      for n in chunk])
            t3 = time.perf_counter()
            ms = [1000 * t / len(chunk) for t in (t1 - t0, t2 - t1, t3 - t2)]
            print(f"{first + len(chunk)} | " + " | ".join(f"{m:.2f}" for m in ms), flush=True)
    finally:
        registry.teardown(record)


if __name__ == "__main__":
    main()
