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

# Deadlines of single calls: a server that stops answering must fail its client's call,
# not hold it forever. Setting a pipeline loads the program into the switch: longer.
RPC_TIMEOUT_S = 10.0
PIPELINE_TIMEOUT_S = 30.0


class NotPrimary(RuntimeError):
    """No server at the address, or the arbitration not won; the message says which."""


class PrimarySession:
    """``timeout_s``: how long the arbitration waits for its answer (None: RPC_TIMEOUT_S)."""

    def __init__(self, address: str, device_id: int, election_id: pb.Uint128,
                 timeout_s: float | None = None) -> None:
        self.address, self.device_id, self.election_id = address, device_id, election_id
        self.timeout_s = timeout_s
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._outbox: queue.Queue = queue.Queue()
        self._stream = None

    def open(self) -> None:
        # The stream is the first call: it connects the channel, and fails at once
        # (UNAVAILABLE) when nothing listens at the address. A call before it to wait for
        # the connection (Capabilities) cost the client and the server each a round trip
        # per session, most of a session's CPU when a plane installs hundreds of switches.
        self._stream = self.stub.StreamChannel(iter(self._outbox.get, None))
        hello = pb.StreamMessageRequest()
        hello.arbitration.device_id = self.device_id
        hello.arbitration.election_id.CopyFrom(self.election_id)
        self._outbox.put(hello)
        # The stream lives as long as the session, so it has no deadline of its own: one
        # that does not answer the arbitration in time is cancelled.
        timeout_s = RPC_TIMEOUT_S if self.timeout_s is None else self.timeout_s
        unanswered = threading.Timer(timeout_s, self._stream.cancel)
        unanswered.start()
        try:
            reply = next(self._stream)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise NotPrimary(f"no P4Runtime server at {self.address}") from exc
            why = (f"no answer within {timeout_s:g} s"
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
