"""Mastership changes against Writes in flight (P4Runtime spec 5, 12): two real
controllers (the p4runtime package's stubs) race on one server and a rig switch. A Write
the primary sent runs whole before a new primary takes over: the new primary, once told
so, never finds the switch half way through its predecessor's Write."""

from __future__ import annotations

import threading
import time

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import Client, code_of, compile_text, ethernet_program, is_primary

pytestmark = pytest.mark.net
CELLS = 300  # one Write of this many register cells: one switch round trip or two each
REGISTER = "MsIngress.cells"
PROGRAM = ethernet_program("Ms", "bit<32> seen;", f"""
    register<bit<32>>({CELLS}) cells;
    apply {{ cells.read(meta.seen, 0); }}
""")
WAIT_S = 30.0  # bounds the waits below on a loaded machine; never reached when it works


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_text(PROGRAM, "mastership.p4", tmp_path_factory.mktemp("p4"))


served = p4runtime_rig.served


def fill(client: Client, register_id: int, value: int) -> pb.WriteRequest:
    """A ROLLBACK_ON_ERROR Write of every cell: the server applies it cell by cell."""
    req = pb.WriteRequest(device_id=1, election_id=client.election,
                          atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    for index in range(CELLS):
        entity = pb.Entity()
        entity.register_entry.register_id = register_id
        entity.register_entry.index.index = index
        entity.register_entry.data.bitstring = bytes([value])
        req.updates.add(type=pb.Update.MODIFY, entity=entity)
    return req


def cells(rig) -> list[int]:
    """The register as the switch holds it (its own control socket, beside the server)."""
    return [int(cell["value"], 16)
            for cell in rig.client.call("register_read", register=REGISTER)["cells"]]


def wait_until(condition) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_new_primary_takes_over_after_the_write_in_flight_not_amid_it(served, program):
    rig, address = served
    register_id = program[1].registers[0].preamble.id
    with p4runtime_rig.primary_client(address, program, election=10) as (old, won):
        assert is_primary(won)
        outcome: dict = {}

        def write() -> None:
            try:
                old.stub.Write(fill(old, register_id, 1))
                outcome["code"] = grpc.StatusCode.OK
            except grpc.RpcError as err:
                outcome["code"] = err.code()

        writer = threading.Thread(target=write)
        writer.start()
        wait_until(lambda: cells(rig)[0] == 1)  # the Write is being applied
        new = Client(address, 11)
        try:
            told = new.next("arbitration", timeout=WAIT_S)
            seen = cells(rig)  # what the new primary finds, once told it is primary
            writer.join(WAIT_S)
            assert is_primary(told)
            assert outcome["code"] == grpc.StatusCode.OK  # checked when it was primary
            assert seen == [1] * CELLS  # whole: the new primary came after it
            # from now on the old primary's Writes are refused, and nothing of them lands
            assert code_of(lambda: old.stub.Write(fill(old, register_id, 2))) == \
                grpc.StatusCode.PERMISSION_DENIED
            new.stub.Write(fill(new, register_id, 3))
            assert cells(rig) == [3] * CELLS
        finally:
            new.close()
