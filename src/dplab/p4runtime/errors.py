"""A P4Runtime error: a gRPC status code name and a message for the client."""

from __future__ import annotations

import grpc


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
