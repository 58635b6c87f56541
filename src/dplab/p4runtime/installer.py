"""Program one switch once over P4Runtime: become primary, set the pipeline, write the
entries, leave. Used by the p4 plane for a user's program with static entries (no
controller stays connected; the switch keeps what was written)."""

from __future__ import annotations

import grpc
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.entries import Entry
from dplab.p4runtime.errors import update_code
from dplab.p4runtime.primary import (
    PIPELINE_TIMEOUT_S,
    RPC_TIMEOUT_S,
    NotPrimary,
    PrimarySession,
)

ELECTION_ID = pb.Uint128(high=0, low=1)


class InstallError(RuntimeError):
    """The server refused the pipeline or an entry; the message says which and why."""


def install(address: str, device_id: int, config: pb.ForwardingPipelineConfig,
            entries: list[Entry], where: str) -> None:
    """``where`` names the entries' origin (e.g. the file) in error messages."""
    try:
        with PrimarySession(address, device_id, ELECTION_ID) as session:
            _set_pipeline(session.stub, device_id, config, address)
            for entry in entries:
                _write(session.stub, device_id, entry, where)
    except NotPrimary as exc:
        raise InstallError(str(exc)) from exc


def _set_pipeline(stub, device_id: int, config: pb.ForwardingPipelineConfig,
                  address: str) -> None:
    req = pb.SetForwardingPipelineConfigRequest(
        device_id=device_id, election_id=ELECTION_ID, config=config,
        action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    try:
        stub.SetForwardingPipelineConfig(req, timeout=PIPELINE_TIMEOUT_S)
    except grpc.RpcError as exc:
        raise InstallError(f"{address}: pipeline refused: {exc.details()}") from exc


def _write(stub, device_id: int, entry: Entry, where: str) -> None:
    op = pb.Update.MODIFY if entry.modifies else pb.Update.INSERT
    req = pb.WriteRequest(device_id=device_id, election_id=ELECTION_ID)
    req.updates.add(type=op, entity=entry.entity)
    try:
        stub.Write(req, timeout=RPC_TIMEOUT_S)
    except grpc.RpcError as exc:
        raise InstallError(f"{where}: entry {entry.index}: the switch refused it: "
                           f"{update_code(exc).name}: {exc.details()}") from exc
