"""What a DATAPLANE_ATOMIC Write costs the data plane: while the server applies the batch
it holds the switch's runtime (switch/PROTOCOL.md `hold`/`release`) and the data plane
waits. A packet stream (dplab-pktblast, a fixed rate into port 1) crosses a rig switch to
port 2; meanwhile batches of 1, 10 and 100 table-entry MODIFYs are written over real
P4Runtime, DATAPLANE_ATOMIC and, for reference, CONTINUE_ON_ERROR. The figure is the
longest gap between packets delivered at port 2 (kernel receive timestamps) that overlaps
each batch, beside the stream's own spacing and the Write RPC's duration.

    python benchmarks/p4runtime_atomic.py [--reps 3] [--pps 20000] [--write]

`--write` puts the table into docs/benchmarks.md (its own section) with this command.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import p4runtime_rig  # noqa: E402  (the test rigs live with the tests)
import switch_rig  # noqa: E402
from doc_section import machine_line, write_section  # noqa: E402
from p4.v1 import p4runtime_pb2 as pb  # noqa: E402

SIZES = (1, 10, 100)
ATOMICITIES = {"DATAPLANE_ATOMIC": pb.WriteRequest.DATAPLANE_ATOMIC,
               "CONTINUE_ON_ERROR": pb.WriteRequest.CONTINUE_ON_ERROR}
FILLERS = max(SIZES)  # entries the batches modify (other destinations than the stream's)
BATCHES = 15  # per cell and repetition
BATCH_SPACING_S = 0.03  # between batches: the stream settles back to its own spacing
SETTLE_S = 0.3  # stream running before the first batch
STREAM_DST = "02:00:00:00:00:09"
PKTBLAST = ROOT / "switch" / "target" / "release" / "dplab-pktblast"
SO_TIMESTAMPNS = 35  # Linux
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
PROGRAM = p4runtime_rig.ethernet_program("At", "", """
    action to_port(bit<9> port) { standard_metadata.egress_spec = port; }
    table route {
        key = { hdr.ethernet.dst: exact; }
        actions = { to_port; NoAction; }
        size = 1024;
    }
    apply { mark_to_drop(standard_metadata); route.apply(); }
""")


def route(n: p4runtime_rig.Names, dst: bytes, port: int) -> pb.Entity:
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id = n["route"]
    entry.match.add(field_id=1).exact.value = dst
    action = entry.action.action
    action.action_id = n["to_port"]
    action.params.add(param_id=1, value=bytes([port]))
    return entity


def filler(i: int) -> bytes:
    return bytes([2, 0, 0, 1, i >> 8, i & 0xFF])


class Arrivals:
    """Kernel receive times (ns, CLOCK_REALTIME) of the stream's frames at a host port."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.settimeout(0.2)
        self.sock = sock
        self.times: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        dst = switch_rig.mac(STREAM_DST)
        while not self._stop.is_set():
            try:
                data, anc, _, _ = self.sock.recvmsg(128, socket.CMSG_SPACE(16))
            except TimeoutError:
                continue
            stamp = next((d for level, kind, d in anc
                          if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS), None)
            if data[:6] == dst and stamp is not None:
                sec, nsec = struct.unpack("qq", stamp[:16])
                self.times.append(sec * 1_000_000_000 + nsec)

    def stop(self) -> list[int]:
        self._stop.set()
        self._thread.join()
        return self.times


def longest_gap(times: list[int], start: int, end: int) -> int | None:
    """The longest gap (ns) between consecutive arrivals whose span overlaps [start, end]."""
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b >= start and a <= end]
    return max(gaps) if gaps else None


def one_cell(rig, client, n, atomicity: int, size: int, pps: int) -> dict:
    """Stream at ``pps`` while BATCHES batches of ``size`` MODIFYs are written."""
    seconds = SETTLE_S + BATCHES * (BATCH_SPACING_S + 0.05) + 0.5
    arrivals = Arrivals(rig.sockets[2])
    frame = switch_rig.mac(STREAM_DST) + switch_rig.mac("02:00:00:00:00:01") + b"\x88\xb5" \
        + bytes(46)
    blast = subprocess.Popen(
        ["ip", "netns", "exec", rig.host_ns, str(PKTBLAST), "--iface", rig.host_if(1),
         "--frame", frame.hex(), "--seconds", f"{seconds:.2f}", "--pps", str(pps),
         "--batch", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(SETTLE_S)
        windows, rpc_s = [], []
        for b in range(BATCHES):
            req = pb.WriteRequest(device_id=1, election_id=client.election,
                                  atomicity=atomicity)
            for i in range(size):
                req.updates.add(type=pb.Update.MODIFY,
                                entity=route(n, filler(i), 2 + (b + i) % 2))
            start, t0 = time.time_ns(), time.perf_counter()
            client.stub.Write(req)
            rpc_s.append(time.perf_counter() - t0)
            windows.append((start, time.time_ns()))
            time.sleep(BATCH_SPACING_S)
    finally:
        blast.wait(seconds + 10)
        times = arrivals.stop()
    spacing = [b - a for a, b in zip(times, times[1:], strict=False)]
    stalls = [g for g in (longest_gap(times, s, e) for s, e in windows) if g is not None]
    return {"stall_us": [g / 1000 for g in stalls],
            "spacing_p50_us": statistics.median(spacing) / 1000 if spacing else None,
            "rpc_ms": [t * 1000 for t in rpc_s], "delivered": len(times)}


def run(reps: int, pps: int) -> dict[tuple[str, int], list[dict]]:
    results: dict[tuple[str, int], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "atomic_cost.p4"
        source.write_text(PROGRAM)
        program = p4runtime_rig.compile_with_info(source, Path(tmp))
        address = f"unix:{tmp}/p4rt.sock"
        with p4runtime_rig.rig_with_server(address) as rig, \
                p4runtime_rig.primary_client(address, program) as (client, _):
            n = p4runtime_rig.Names(program[1])
            client.write(route(n, switch_rig.mac(STREAM_DST), 2),
                         *(route(n, filler(i), 3) for i in range(FILLERS)))
            rig.drain()
            for _ in range(reps):  # cells interleaved, so the machine's moods spread
                for name, atomicity in ATOMICITIES.items():
                    for size in SIZES:
                        results.setdefault((name, size), []).append(
                            one_cell(rig, client, n, atomicity, size, pps))
    return results


def median_of(cells: list[dict], key: str) -> float | None:
    values = [v for c in cells for v in c[key]]
    return statistics.median(values) if values else None


def max_of(cells: list[dict], key: str) -> float | None:
    values = [v for c in cells for v in c[key]]
    return max(values) if values else None


def table(results: dict[tuple[str, int], list[dict]], pps: int) -> str:
    spacing = [c["spacing_p50_us"] for cells in results.values() for c in cells
               if c["spacing_p50_us"] is not None]
    lines = [f"Stream: {pps} pps of 64-byte frames into port 1, out of port 2; its median "
             f"spacing at port 2 was {_fmt(statistics.median(spacing) if spacing else None)} "
             f"µs. Per cell {BATCHES} batches × repetitions.", "",
             "| atomicity | batch | longest gap during a batch, median (µs) | max (µs) "
             "| Write RPC, median (ms) |", "|---|---:|---:|---:|---:|"]
    for (name, size), cells in results.items():
        lines.append(f"| {name} | {size} | {_fmt(median_of(cells, 'stall_us'))} "
                     f"| {_fmt(max_of(cells, 'stall_us'))} "
                     f"| {_fmt(median_of(cells, 'rpc_ms'), 2)} |")
    return "\n".join(lines)


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pps", type=int, default=20000)
    parser.add_argument("--write", action="store_true",
                        help="write the figures into docs/benchmarks.md")
    args = parser.parse_args()
    text = table(run(args.reps, args.pps), args.pps)
    print(text)
    if args.write:
        command = f"python benchmarks/p4runtime_atomic.py --reps {args.reps} --pps {args.pps}"
        write_section("p4runtime_atomic", "## DATAPLANE_ATOMIC hold cost (P4Runtime)\n\n"
                      f"{machine_line()}\n\nReproduce: `{command}` (root).\n\n{text}\n")


if __name__ == "__main__":
    main()
