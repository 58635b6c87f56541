"""What the study 003 tests share: its programs and entries files, and a rig switch running
one of them behind our P4Runtime server, programmed from its entries file by the p4 plane's
own installer (so the packets test the program and the file as the plane would load them)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import Client, Names, installed_rig

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "p4src" / "study003"
PROGRAMS = ("drop", "echo", "l3_forward", "broadcast")


def program(name: str) -> Path:
    return STUDY / f"{name}.p4"


def entries_of(name: str) -> Path:
    return STUDY / f"{name}_entries.yaml"


@contextmanager
def programmed_rig(name: str, out: Path, n_ports: int, switch: str = "s1",
                   entries: Path | None = None):
    """A rig with ``n_ports`` ports running program ``name``, its entries file's entries for
    ``switch`` written (``entries`` None: the program's own file; drop has none). Yields
    (rig, counters) where ``counters(counter, index)`` reads a counter cell over P4Runtime
    as (packets, bytes)."""
    path = entries if entries is not None else entries_of(name)
    with installed_rig(program(name), path, out, n_ports, switch) as (rig, address, info):
        reader = Client(address, election=None)
        try:
            yield rig, lambda counter, index: read_counter(reader, info, counter, index)
        finally:
            reader.close()


def read_counter(client: Client, info: p4info_pb2.P4Info, counter: str,
                 index: int) -> tuple[int, int]:
    entity = pb.Entity()
    entity.counter_entry.counter_id = Names(info)[counter]
    entity.counter_entry.index.index = index
    (cell,) = client.read(entity)
    data = cell.counter_entry.data
    return data.packet_count, data.byte_count
