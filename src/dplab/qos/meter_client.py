"""A primary P4Runtime client of one switch for the QoS loop: reads a counter cell's bytes
and writes a meter cell's rate (MeterEntry, MODIFY). It holds its StreamChannel open for as
long as it writes: a client is primary only while its stream lives."""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.codec import named
from dplab.p4runtime.primary import RPC_TIMEOUT_S, PrimarySession

# Above the plane's installer (1), which has left by the time the loop connects; a higher
# id keeps the loop primary should anything else with a lower one connect.
ELECTION_ID = pb.Uint128(high=0, low=2)


class MeterClientError(RuntimeError):
    """A name missing from the program, or a counter cell not read."""


class MeterClient:
    def __init__(self, address: str, device_id: int, info: p4info_pb2.P4Info,
                 meter: str, counter: str) -> None:
        self.address, self.device_id = address, device_id
        self.meter_id = _id_of(info.meters, meter, "meter")
        self.counter_id = _id_of(info.counters, counter, "counter")
        self.session = PrimarySession(address, device_id, ELECTION_ID)
        self.stub = self.session.stub

    def connect(self) -> None:
        """Primary from here on (primary.NotPrimary if not)."""
        self.session.open()

    def close(self) -> None:
        self.session.close()

    def read_bytes(self, index: int) -> int:
        entity = pb.Entity()
        entity.counter_entry.counter_id = self.counter_id
        entity.counter_entry.index.index = index
        request = pb.ReadRequest(device_id=self.device_id, entities=[entity])
        for reply in self.stub.Read(request, timeout=RPC_TIMEOUT_S):
            for found in reply.entities:
                return found.counter_entry.data.byte_count
        raise MeterClientError(f"{self.address}: counter cell {index} not read")

    def write_rate(self, index: int, rate_bps: float, burst_bytes: int) -> None:
        """One rate for both buckets of a bytes meter (bytes/s = bit/s / 8): traffic
        above it is RED, which the program drops (YELLOW passes, so a lower committed
        rate would change nothing)."""
        per_s = int(rate_bps // 8)
        entity = pb.Entity()
        entity.meter_entry.meter_id = self.meter_id
        entity.meter_entry.index.index = index
        entity.meter_entry.config.CopyFrom(pb.MeterConfig(cir=per_s, cburst=burst_bytes,
                                                          pir=per_s, pburst=burst_bytes))
        request = pb.WriteRequest(device_id=self.device_id, election_id=ELECTION_ID)
        request.updates.add(type=pb.Update.MODIFY, entity=entity)
        self.stub.Write(request, timeout=RPC_TIMEOUT_S)


def _id_of(objects, name: str, what: str) -> int:
    found = named(objects, name)
    if found is None:
        raise MeterClientError(f"the program has no {what} {name!r}")
    return found.preamble.id
