"""Preinitialized tables (P4Runtime 1.5 spec 9.1.5 "Preinitialized tables"): a P4 table
with `entries = {...}` (no `const`) gets its entries when the pipeline is loaded; the
P4Info says `has_initial_entries` and not `is_const_table`; reads return the entries
(`is_const` only for one marked `const`); the controller may modify, delete and add to
them, but not change a const-marked one (PERMISSION_DENIED). A real gRPC client against a
rig switch; packets show what the table holds."""

from __future__ import annotations

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    compile_text,
    ethernet_program,
    fresh_pipeline,
    update_code_of,
)
from switch_rig import udp_frame

pytestmark = pytest.mark.net
MODIFY, DELETE = pb.Update.MODIFY, pb.Update.DELETE
PRESET_PROGRAM = ethernet_program("Pi", "bit<1> unused;", """
    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action drop() { mark_to_drop(standard_metadata); }
    table preset {
        key = { standard_metadata.ingress_port: exact; }
        actions = { forward; drop; }
        default_action = drop();
        entries = {
            1 : forward(2);
            const 3 : forward(1);
        }
    }
    apply { preset.apply(); }
""")
FRAME = udp_frame("00:00:00:00:00:09", "00:00:00:00:00:01", "10.0.0.1", "10.0.0.2")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_text(PRESET_PROGRAM, "preset.p4", tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served


def entry(n, in_port: int, out_port: int | None = None) -> pb.Entity:
    entity = pb.Entity()
    entity.table_entry.table_id = n["preset"]
    entity.table_entry.match.add(field_id=1).exact.value = bytes([in_port])
    if out_port is not None:
        entity.table_entry.action.action.action_id = n["forward"]
        entity.table_entry.action.action.params.add(param_id=1, value=bytes([out_port]))
    return entity


def out_port(rig, in_port: int) -> int | None:
    """The port a frame sent in on ``in_port`` leaves by (None: dropped)."""
    rig.drain()
    rig.send(in_port, FRAME)
    ports = [port for port, frames in rig.capture().items() if frames]
    assert len(ports) <= 1
    return ports[0] if ports else None


def held(client, n) -> dict[int, tuple[int, bool]]:
    """in port -> (out port, is_const) of each entry a read returns."""
    found = client.read(pb.Entity(table_entry=pb.TableEntry(table_id=n["preset"])))
    return {e.table_entry.match[0].exact.value[0]:
            (e.table_entry.action.action.params[0].value[0], e.table_entry.is_const)
            for e in found}


def test_initial_entries_are_installed_read_and_changeable(served, program):
    table = next(t for t in program[1].tables if t.preamble.name.endswith("preset"))
    assert (table.has_initial_entries, table.is_const_table) == (True, False)
    with fresh_pipeline(served, program) as (rig, client, n):
        assert held(client, n) == {1: (2, False), 3: (1, True)}
        assert (out_port(rig, 1), out_port(rig, 3), out_port(rig, 2)) == (2, 1, None)
        client.write(entry(n, 1, 3), op=MODIFY)
        client.write(entry(n, 2, 1))  # the table takes new entries too
        assert (out_port(rig, 1), out_port(rig, 2)) == (3, 1)
        client.write(entry(n, 1), op=DELETE)
        assert out_port(rig, 1) is None
        denied = grpc.StatusCode.PERMISSION_DENIED
        assert update_code_of(lambda: client.write(entry(n, 3, 2), op=MODIFY)) == denied
        assert update_code_of(lambda: client.write(entry(n, 3), op=DELETE)) == denied
        assert held(client, n) == {2: (1, False), 3: (1, True)}
        assert out_port(rig, 3) == 1
    with fresh_pipeline(served, program) as (rig, client, n):  # a new pipeline: afresh
        assert held(client, n) == {1: (2, False), 3: (1, True)}
        assert out_port(rig, 1) == 2
