"""Soak run of the P4 switch (issue 3: no leak under long runs): millions of mixed frames
with table churn, printing the switch's resident memory and live heap as it goes.

The switch runs tests/data/switch_features.p4 on a three-port rig (tests/switch_rig.py).
Each cycle sends every tag kind of that program (counters, registers, meters, hashes,
multicast, clones, resubmit, recirculate, digests, packet-ins, a ternary table) and
malformed frames (tests/test_fuzz_switch.py's list) into port 1 with dplab-pktblast, every
malformed frame once more through a raw socket, a batch of packet-outs, and churns the
tables over the control socket: classify entries added and deleted, a multicast group and
a clone session set and deleted. A second control connection subscribes to events and
reads them all, as a P4Runtime server would. Resident memory (VmRSS) and the live heap
(`stats` "heap", switch/src/heap.rs) are sampled at the start, every --every frames and
at the end, the last once the switch is idle again.

usage: sudo .venv/bin/python benchmarks/soak_switch.py [--frames 3000000]
           [--every 500000] [--pps 150000] [--write]
"""

from __future__ import annotations

import argparse
import random
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import switch_rig  # noqa: E402  (the test rig lives with the tests)
from doc_section import machine_line, write_section  # noqa: E402
from switch_rig import ETH_P_ALL, Rig, SwitchClient, in_netns, tag_frame  # noqa: E402
from test_fuzz_switch import malformed_frames, valid_frames  # noqa: E402

from dplab.measure.resources import parse_vmrss_kib  # noqa: E402

FEATURES = ROOT / "tests" / "data" / "switch_features.p4"
TAG_KINDS = range(1, 12)  # tests/data/switch_features.p4: counter ... ternary table
BLAST_SECONDS = 0.4  # per frame of the mix and cycle
CHURN_ENTRIES = 64  # classify entries added, then deleted, per cycle
PACKET_OUTS_PER_CYCLE = 1_000
IDLE_GAP_S, IDLE_DEADLINE_S = 0.05, 30.0
CLASSIFY, SET_COLOR = "FeatIngress.classify", "FeatIngress.set_color"


@dataclass
class Sample:
    label: str
    frames: int  # frames the switch read from its ports
    pipeline: int  # packets through the pipeline (packet-outs, resubmits and clones too)
    rss_kib: int | None
    heap_kib: float
    heap_blocks: int
    events_dropped: int
    seconds: float


class EventReader:
    """A subscribed control connection whose events are read and counted (and dropped)."""

    def __init__(self, path: str) -> None:
        self.client = SwitchClient(path)
        self.client.call("subscribe")
        self.client.sock.settimeout(None)
        self.lines = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = self.client.sock.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.lines += chunk.count(b"\n")

    def close(self) -> None:
        self.client.sock.shutdown(socket.SHUT_RDWR)
        self.client.close()
        self.thread.join(timeout=5)


def frame_mix(rng: random.Random) -> list[bytes]:
    """Every tag kind, a valid frame of each protocol and a few malformed ones, each sent
    by dplab-pktblast at the set rate."""
    tagged = [tag_frame(kind, value=kind) for kind in TAG_KINDS]
    malformed = [f for f in malformed_frames(rng) if len(f) >= 14]  # pktblast needs Ethernet
    return tagged + valid_frames() + rng.sample(malformed, 4)


def sample(rig: Rig, label: str, started: float) -> Sample:
    stats = rig.client.call("stats")
    status = Path(f"/proc/{rig.proc.pid}/status").read_text()
    heap = stats["heap"]
    return Sample(label, sum(p["rx_packets"] for p in stats["ports"]),
                  stats["pipeline"]["packets"], parse_vmrss_kib(status),
                  heap["live_bytes"] / 1024, heap["live_blocks"],
                  stats["cpu"]["events_dropped"], time.monotonic() - started)


def wait_idle(rig: Rig) -> None:
    """Until the switch's queues are empty and its heap and counters stop moving."""
    previous = None
    deadline = time.monotonic() + IDLE_DEADLINE_S
    while time.monotonic() < deadline:
        stats = rig.client.call("stats")
        heap = stats["heap"]
        marks = (heap["live_blocks"], stats["pipeline"]["packets"])
        if heap["queued_events"] == heap["queued_packet_outs"] == 0 and marks == previous:
            return
        previous = marks
        time.sleep(IDLE_GAP_S)


def send_raw(rig: Rig, frames: list[bytes]) -> None:
    """Every frame once into port 1 through a raw socket (any length, even runts)."""
    with in_netns(rig.host_ns):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    with sock:
        sock.bind((rig.host_if(1), 0))
        for frame in frames:
            try:
                sock.send(frame)
            except OSError:  # ENOBUFS on a full backlog: a lost frame, not a failed soak
                time.sleep(0.001)


def churn(client: SwitchClient, cycle: int) -> None:
    """Adds and deletes classify entries, sets and deletes a multicast group and a clone
    session: the switch's tables and replication state grow and shrink every cycle."""
    entries = [{"table": CLASSIFY, "priority": 1 + i,
                "match": [{"kind": "ternary", "v": hex(i), "m": "0xff"}],
                "action": {"action": SET_COLOR, "args": [hex(cycle % 256)]}}
               for i in range(CHURN_ENTRIES)]
    client.call("batch", requests=[{"cmd": "table_add", **e} for e in entries],
                stop_on_error=True)
    client.call("mcast_group_set", group=2, replicas=[{"port": 2, "rid": 7}])
    client.call("clone_session_set", session=6, replicas=[{"port": 2, "rid": 0}])
    client.call("batch", requests=[{"cmd": "table_delete", **e} for e in entries],
                stop_on_error=True)
    client.call("mcast_group_delete", group=2)
    client.call("clone_session_delete", session=6)


def packet_outs(client: SwitchClient) -> None:
    request = {"cmd": "packet_out", "payload": tag_frame(1).hex(),
               "metadata": [{"id": 1, "value": "0x3"}]}
    client.call("batch", requests=[request] * PACKET_OUTS_PER_CYCLE)


def configure(rig: Rig, out_dir: Path) -> None:
    rig.load(switch_rig.compile_p4(FEATURES, out_dir))
    c = rig.client
    c.call("mcast_group_set", group=1, replicas=[{"port": 2, "rid": 1}, {"port": 3, "rid": 2}])
    c.call("clone_session_set", session=5, replicas=[{"port": 3, "rid": 0}])
    c.call("meter_set", meter="FeatIngress.rate_meter", index=0,
           config={"cir": 1000, "cburst": 100, "pir": 2000, "pburst": 200})


def soak(frames: int, every: int, pps: int) -> tuple[list[Sample], int]:
    """Runs the soak; returns the samples and how many events the reader got."""
    rng = random.Random(9)
    switch_rig.build_switch()
    with Rig(n_ports=3, capture=False) as rig:
        configure(rig, Path(rig.tmp.name))
        events = EventReader(rig.control_path)
        mix, raw = frame_mix(rng), malformed_frames(rng)
        started = time.monotonic()
        samples = [sample(rig, "start", started)]
        print_sample(samples[-1])
        next_mark, cycle = every, 0
        while samples[-1].frames < frames:
            for frame in mix:
                rig.blast(frame, BLAST_SECONDS, pps)
            send_raw(rig, raw)
            churn(rig.client, cycle)
            packet_outs(rig.client)
            cycle += 1
            current = sample(rig, f"cycle {cycle}", started)
            if current.frames >= next_mark or current.frames >= frames:
                samples.append(current)
                print_sample(current)
                next_mark = current.frames + every
        wait_idle(rig)
        samples.append(sample(rig, "end, idle", started))
        print_sample(samples[-1])
        assert rig.switch_alive(), "the switch stopped during the soak"
        events.close()
        return samples, events.lines


HEADER = ("| sample | frames in | pipeline packets | RSS KiB | live heap KiB | heap blocks "
          "| events dropped | s |\n|---|---:|---:|---:|---:|---:|---:|---:|")


def row(s: Sample) -> str:
    rss = "None" if s.rss_kib is None else str(s.rss_kib)
    return (f"| {s.label} | {s.frames:,} | {s.pipeline:,} | {rss} | {s.heap_kib:.1f} "
            f"| {s.heap_blocks:,} | {s.events_dropped:,} | {s.seconds:.0f} |")


def print_sample(s: Sample) -> None:
    print(row(s), flush=True)


def section(samples: list[Sample], event_lines: int, command: str) -> str:
    first, last = samples[1] if len(samples) > 2 else samples[0], samples[-1]
    lines = [
        "## P4 switch soak (memory under a long run)", "",
        machine_line(), "",
        "Mixed frames (every tag kind of tests/data/switch_features.p4, valid and malformed "
        "frames), packet-outs, classify entries added and deleted, multicast groups and "
        "clone sessions set and deleted, events read by a subscribed connection. "
        f"Reproduce: `{command}`", "",
        HEADER, *(row(s) for s in samples), "",
        f"From the first sample after the start to the end: RSS "
        f"{delta(first.rss_kib, last.rss_kib)} KiB, live heap "
        f"{last.heap_kib - first.heap_kib:+.1f} KiB, {last.heap_blocks - first.heap_blocks:+,} "
        f"blocks; {event_lines:,} events read.",
    ]
    return "\n".join(lines)


def delta(a: int | None, b: int | None) -> str:
    return "None" if a is None or b is None else f"{b - a:+,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=3_000_000,
                        help="frames the switch reads before the run ends")
    parser.add_argument("--every", type=int, default=500_000, help="frames between samples")
    parser.add_argument("--pps", type=int, default=150_000, help="rate of each blast")
    parser.add_argument("--write", action="store_true",
                        help="write the figures into docs/benchmarks.md")
    args = parser.parse_args()
    for name in ("frames", "every", "pps"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive")
    print(HEADER)
    samples, event_lines = soak(args.frames, args.every, args.pps)
    command = ("sudo .venv/bin/python benchmarks/soak_switch.py "
               f"--frames {args.frames} --every {args.every} --pps {args.pps} --write")
    if args.write:
        write_section("soak_switch", section(samples, event_lines, command))


if __name__ == "__main__":
    main()
