"""A P4Runtime client session as the primary of one device: the channel up, its
StreamChannel open, the arbitration won. A client is primary only while its stream lives,
so the session holds the stream until it is closed. Used by the plane's installer (for
the time of its writes) and the QoS loop's meter client (for the whole run)."""

from __future__ import annotations

import queue
import threading
from types import TracebackType

import grpc
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

CONNECT_TIMEOUT_S = 15.0
# Deadlines of single calls: a server that stops answering must fail its client's call,
# not hold it forever. Setting a pipeline loads the program into the switch: longer.
RPC_TIMEOUT_S = 10.0
PIPELINE_TIMEOUT_S = 30.0


class NotPrimary(RuntimeError):
    """No server at the address, or the arbitration not won; the message says which."""


class PrimarySession:
    def __init__(self, address: str, device_id: int, election_id: pb.Uint128) -> None:
        self.address, self.device_id, self.election_id = address, device_id, election_id
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._outbox: queue.Queue = queue.Queue()
        self._stream = None

    def open(self) -> None:
        # A call that waits for the connection, not grpc.channel_ready_future: that one
        # subscribes to the channel's connectivity, whose polling thread channel.close()
        # then waits for (~0.2 s a session, most of installing hundreds of switches).
        # Any answer, even an error about the call, says a server is there.
        try:
            self.stub.Capabilities(pb.CapabilitiesRequest(), timeout=CONNECT_TIMEOUT_S,
                                   wait_for_ready=True)
        except grpc.RpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise NotPrimary(f"no P4Runtime server at {self.address}") from exc
        self._stream = self.stub.StreamChannel(iter(self._outbox.get, None))
        hello = pb.StreamMessageRequest()
        hello.arbitration.device_id = self.device_id
        hello.arbitration.election_id.CopyFrom(self.election_id)
        self._outbox.put(hello)
        # The stream lives as long as the session, so it has no deadline of its own: one
        # that does not answer the arbitration in time is cancelled.
        unanswered = threading.Timer(RPC_TIMEOUT_S, self._stream.cancel)
        unanswered.start()
        try:
            reply = next(self._stream)
        except grpc.RpcError as exc:
            why = (f"no answer within {RPC_TIMEOUT_S:g} s"
                   if exc.code() == grpc.StatusCode.CANCELLED else exc.details())
            raise NotPrimary(f"{self.address}: arbitration failed: {why}") from exc
        finally:
            unanswered.cancel()
        if reply.arbitration.status.code != 0:
            raise NotPrimary(f"{self.address}: another client is primary "
                             f"({reply.arbitration.status.message})")

    def close(self) -> None:
        self._outbox.put(None)
        if self._stream is not None:
            self._stream.cancel()
        self.channel.close()

    def __enter__(self) -> PrimarySession:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
