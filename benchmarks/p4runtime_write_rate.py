"""How fast our P4Runtime server takes Writes and answers Reads: one real gRPC client
(the p4runtime package's stubs) against our server in front of a rig switch. Figures: the
Write RPC latency of a single table-entry INSERT (p50, p99) beside that of an empty RPC
(Capabilities: what gRPC-Python itself costs per call here), updates per second for
batches of 1, 10, 100 and 1000 INSERTs (CONTINUE_ON_ERROR and DATAPLANE_ATOMIC), and the
time of a wildcard Read of 1000 entries. Every cell is the median of its repetitions; the
entries a cell inserted are deleted (untimed) before the next.

    python benchmarks/p4runtime_write_rate.py [--reps 5] [--write] [--profile FILE]

`--write` puts the table into docs/benchmarks.md (its own section) with this command.
`--profile FILE` also runs the server in this process under cProfile while it takes
DATAPLANE_ATOMIC batches of 1000 INSERTs, and writes the profile (pstats) to FILE.
"""

from __future__ import annotations

import argparse
import cProfile
import statistics
import sys
import tempfile
import time
from pathlib import Path

from google.protobuf.internal import api_implementation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import p4runtime_rig  # noqa: E402  (the test rigs live with the tests)
from doc_section import machine_line, write_section  # noqa: E402
from p4.v1 import p4runtime_pb2 as pb  # noqa: E402

from dplab.measure.stats import percentile  # noqa: E402
from dplab.p4runtime.server import P4RuntimeServicer  # noqa: E402

SIZES = (1, 10, 100, 1000)
ATOMICITIES = {"CONTINUE_ON_ERROR": pb.WriteRequest.CONTINUE_ON_ERROR,
               "DATAPLANE_ATOMIC": pb.WriteRequest.DATAPLANE_ATOMIC}
UPDATES_PER_CELL = 1000  # a cell of batch size s writes UPDATES_PER_CELL / s batches
LATENCY_WRITES = 200  # single-INSERT Writes timed one by one
READ_ENTRIES = 1000
PROGRAM = p4runtime_rig.ethernet_program("Wr", "", """
    action to_port(bit<9> port) { standard_metadata.egress_spec = port; }
    table route {
        key = { hdr.ethernet.dst: exact; }
        actions = { to_port; NoAction; }
        size = 4096;
    }
    apply { route.apply(); }
""")


def route(n: p4runtime_rig.Names, i: int) -> pb.Entity:
    """The entry for destination number ``i`` (to port 2 or 3)."""
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id = n["route"]
    entry.match.add(field_id=1).exact.value = bytes([2, 0, 0, 1, i >> 8, i & 0xFF])
    action = entry.action.action
    action.action_id = n["to_port"]
    action.params.add(param_id=1, value=bytes([2 + i % 2]))
    return entity


def batch(client, n, first: int, size: int, atomicity: int,
          op=pb.Update.INSERT) -> pb.WriteRequest:
    req = pb.WriteRequest(device_id=1, election_id=client.election, atomicity=atomicity)
    for i in range(first, first + size):
        req.updates.add(type=op, entity=route(n, i))
    return req


def delete_all(client, n, count: int) -> None:
    client.stub.Write(batch(client, n, 0, count, pb.WriteRequest.CONTINUE_ON_ERROR,
                            pb.Update.DELETE))


def empty_rpc_ms(client) -> list[float]:
    """Capabilities RPCs, each timed on its own: the server does nothing for them, so
    they show what any unary RPC costs on this machine, the floor of a Write."""
    times = []
    for _ in range(LATENCY_WRITES):
        t0 = time.perf_counter()
        client.stub.Capabilities(pb.CapabilitiesRequest())
        times.append((time.perf_counter() - t0) * 1000)
    return times


def latencies_ms(client, n) -> list[float]:
    """Single-INSERT Write RPCs, each timed on its own."""
    times = []
    for i in range(LATENCY_WRITES):
        req = batch(client, n, i, 1, pb.WriteRequest.CONTINUE_ON_ERROR)
        t0 = time.perf_counter()
        client.stub.Write(req)
        times.append((time.perf_counter() - t0) * 1000)
    delete_all(client, n, LATENCY_WRITES)
    return times


def updates_per_s(client, n, size: int, atomicity: int) -> float:
    """UPDATES_PER_CELL INSERTs in batches of ``size`` (requests built beforehand)."""
    requests = [batch(client, n, first, size, atomicity)
                for first in range(0, UPDATES_PER_CELL, size)]
    t0 = time.perf_counter()
    for req in requests:
        client.stub.Write(req)
    seconds = time.perf_counter() - t0
    delete_all(client, n, UPDATES_PER_CELL)
    return UPDATES_PER_CELL / seconds


def read_ms(client, n) -> float:
    """A wildcard Read of the route table holding READ_ENTRIES entries."""
    client.stub.Write(batch(client, n, 0, READ_ENTRIES, pb.WriteRequest.CONTINUE_ON_ERROR))
    want = pb.Entity()
    want.table_entry.table_id = n["route"]
    t0 = time.perf_counter()
    found = client.read(want)
    seconds = time.perf_counter() - t0
    assert len(found) == READ_ENTRIES, f"the Read found {len(found)} entries"
    delete_all(client, n, READ_ENTRIES)
    return seconds * 1000


def decode_ms(client, n) -> float:
    """What decoding the largest WriteRequest costs any Python server here (gRPC hands
    the handler a decoded message): the protobuf runtime's share of a Write."""
    data = batch(client, n, 0, max(SIZES), pb.WriteRequest.DATAPLANE_ATOMIC).SerializeToString()
    t0 = time.perf_counter()
    pb.WriteRequest.FromString(data)
    return (time.perf_counter() - t0) * 1000


def run(reps: int, address: str, program) -> dict:
    with p4runtime_rig.primary_client(address, program) as (client, _):
        n = p4runtime_rig.Names(program[1])
        results: dict = {"latency_ms": [], "empty_ms": [], "read_ms": [], "decode_ms": []}
        for _ in range(reps):  # cells interleaved, so the machine's moods spread
            results["decode_ms"].append(decode_ms(client, n))
            results["empty_ms"] += empty_rpc_ms(client)
            results["latency_ms"] += latencies_ms(client, n)
            for name, atomicity in ATOMICITIES.items():
                for size in SIZES:
                    results.setdefault((name, size), []).append(
                        updates_per_s(client, n, size, atomicity))
            results["read_ms"].append(read_ms(client, n))
    return results


class ProfiledServicer(P4RuntimeServicer):
    """Our servicer with its Write handler under cProfile (which sees one thread only:
    the handler's, one Write at a time)."""

    def __init__(self, switch_socket: str) -> None:
        super().__init__(switch_socket, 1)
        self.profile: cProfile.Profile | None = None

    def Write(self, request, context):
        if self.profile is None:
            return super().Write(request, context)
        self.profile.enable()
        try:
            return super().Write(request, context)
        finally:
            self.profile.disable()


def profile(servicer: ProfiledServicer, address: str, program, out: Path) -> None:
    """The server's Write handler profiled while DATAPLANE_ATOMIC batches of 1000 INSERTs
    are written."""
    with p4runtime_rig.primary_client(address, program) as (client, _):
        n = p4runtime_rig.Names(program[1])
        servicer.profile = cProfile.Profile()
        for _ in range(3):
            client.stub.Write(batch(client, n, 0, 1000, pb.WriteRequest.DATAPLANE_ATOMIC))
            delete_all(client, n, 1000)
        servicer.profile.dump_stats(out)


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def table(results: dict, reps: int) -> str:
    lat = results["latency_ms"]
    lines = [f"Write RPC of one INSERT: p50 {_fmt(median(lat), 2)} ms, p99 "
             f"{_fmt(percentile(lat, 99), 2)} ms ({len(lat)} Writes); an empty RPC "
             f"(Capabilities) p50 {_fmt(median(results['empty_ms']), 2)} ms. Wildcard Read of "
             f"{READ_ENTRIES} entries: {_fmt(median(results['read_ms']), 1)} ms (median of "
             f"{reps}). Decoding a WriteRequest of {max(SIZES)} INSERTs (protobuf "
             f"{api_implementation.Type()} implementation, as gRPC does before our handler "
             f"runs): {_fmt(median(results['decode_ms']), 1)} ms.", "",
             f"Table-entry INSERTs, {UPDATES_PER_CELL} per cell, median of {reps} "
             "repetitions:", "",
             "| atomicity | batch | updates/s | Write RPC (ms) |", "|---|---:|---:|---:|"]
    for name in ATOMICITIES:
        for size in SIZES:
            rate = median(results[(name, size)])
            rpc = None if rate is None else size / rate * 1000
            lines.append(f"| {name} | {size} | {_fmt(rate)} | {_fmt(rpc, 2)} |")
    return "\n".join(lines)


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--write", action="store_true",
                        help="write the figures into docs/benchmarks.md")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="also profile the server in process; pstats into FILE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        program = p4runtime_rig.compile_text(PROGRAM, "write_rate.p4", Path(tmp))
        address = f"unix:{tmp}/p4rt.sock"
        with p4runtime_rig.rig_with_server(address) as rig:
            results = run(args.reps, address, program)
            if args.profile:
                profiled = f"unix:{tmp}/profiled.sock"
                with p4runtime_rig.in_process_server(ProfiledServicer(rig.control_path),
                                                     profiled) as servicer:
                    profile(servicer, profiled, program, args.profile)
    text = table(results, args.reps)
    print(text)
    if args.write:
        command = f"python benchmarks/p4runtime_write_rate.py --reps {args.reps}"
        write_section("p4runtime_write_rate", "## P4Runtime Write and Read rate\n\n"
                      f"{machine_line()}\n\nReproduce: `{command}` (root).\n\n{text}\n")


if __name__ == "__main__":
    main()
