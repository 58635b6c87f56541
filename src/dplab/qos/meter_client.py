"""A primary P4Runtime client of one switch for the QoS loop: reads a counter cell's bytes
and writes a meter cell's rate (MeterEntry, MODIFY). It holds its StreamChannel open for as
long as it writes: a client is primary only while its stream lives."""

from __future__ import annotations

import queue

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

# Above the plane's installer (1), which has left by the time the loop connects; a higher
# id keeps the loop primary should anything else with a lower one connect.
ELECTION_ID = pb.Uint128(high=0, low=2)
CONNECT_TIMEOUT_S = 15.0


class MeterClientError(RuntimeError):
    """No server, not primary, or a name missing from the program."""


class MeterClient:
    def __init__(self, address: str, device_id: int, info: p4info_pb2.P4Info,
                 meter: str, counter: str) -> None:
        self.address, self.device_id = address, device_id
        self.meter_id = _id_of(info.meters, meter, "meter")
        self.counter_id = _id_of(info.counters, counter, "counter")
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.outbox: queue.Queue = queue.Queue()
        self.stream = None

    def connect(self) -> None:
        try:
            grpc.channel_ready_future(self.channel).result(timeout=CONNECT_TIMEOUT_S)
        except grpc.FutureTimeoutError as exc:
            raise MeterClientError(f"no P4Runtime server at {self.address}") from exc
        self.stream = self.stub.StreamChannel(iter(self.outbox.get, None))
        hello = pb.StreamMessageRequest()
        hello.arbitration.device_id = self.device_id
        hello.arbitration.election_id.CopyFrom(ELECTION_ID)
        self.outbox.put(hello)
        reply = next(self.stream)
        if reply.arbitration.status.code != 0:
            raise MeterClientError(f"{self.address}: not primary "
                                   f"({reply.arbitration.status.message})")

    def close(self) -> None:
        self.outbox.put(None)
        if self.stream is not None:
            self.stream.cancel()
        self.channel.close()

    def read_bytes(self, index: int) -> int:
        entity = pb.Entity()
        entity.counter_entry.counter_id = self.counter_id
        entity.counter_entry.index.index = index
        request = pb.ReadRequest(device_id=self.device_id, entities=[entity])
        for reply in self.stub.Read(request):
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
        self.stub.Write(request)


def _id_of(objects, name: str, what: str) -> int:
    for obj in objects:
        if name in (obj.preamble.name, obj.preamble.alias):
            return obj.preamble.id
    raise MeterClientError(f"the program has no {what} {name!r}")
