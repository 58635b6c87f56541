"""A P4Runtime error: a gRPC status code name and a message for the client; and, for
clients, the per-update codes of a failed batch."""

from __future__ import annotations

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2


class P4RuntimeError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def grpc_code(self) -> grpc.StatusCode:
        return grpc.StatusCode[self.code]


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError("INVALID_ARGUMENT", message)


def not_found(message: str) -> P4RuntimeError:
    return P4RuntimeError("NOT_FOUND", message)


def update_errors(err: grpc.RpcError) -> list[tuple[grpc.StatusCode, str]]:
    """A client's view of a failed Write or Read batch: the code and message of each update
    (or read request) in order, from the p4.v1.Errors of the ``grpc-status-details-bin``
    trailer (P4Runtime spec 12.4); empty when the error was about the whole RPC (no
    details)."""
    details = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin")
    if details is None:
        return []
    by_number = {code.value[0]: code for code in grpc.StatusCode}
    errors = []
    for packed in status_pb2.Status.FromString(details).details:
        item = p4runtime_pb2.Error()
        packed.Unpack(item)
        errors.append((by_number.get(item.canonical_code, grpc.StatusCode.UNKNOWN),
                       item.message))
    return errors


def update_codes(err: grpc.RpcError) -> list[grpc.StatusCode]:
    """The code of each update (or read request) of a failed batch (``update_errors``)."""
    return [code for code, _ in update_errors(err)]


def update_code(err: grpc.RpcError) -> grpc.StatusCode:
    """Why a one-update Write failed: its update's code (the RPC's code is UNKNOWN then),
    or the RPC's own code for an error about the whole request (not primary, ...)."""
    codes = update_codes(err)
    return codes[0] if len(codes) == 1 else err.code()
