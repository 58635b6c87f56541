"""Program one switch once over P4Runtime: become primary, set the pipeline, write the
entries, leave. Used by the p4 plane for a user's program with static entries (no
controller stays connected; the switch keeps what was written). The entries go WRITE_BATCH
to a Write: a router of a thousand hosts has thousands of entries, and one round trip
each through the one P4Runtime server process was most of the plane's start."""

from __future__ import annotations

import grpc
from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.entries import Entry
from dplab.p4runtime.errors import update_errors
from dplab.p4runtime.primary import NotPrimary, PrimarySession

ELECTION_ID = pb.Uint128(high=0, low=1)
# Updates per Write: the server's per-update error codes of a failed batch still fit its
# trailer (server.DETAILS_BUDGET, ~36 bytes an update), so the installer can name the entry.
WRITE_BATCH = 128
# The deadline of each call of an install (arbitration, pipeline, each Write). An install
# runs while a large network starts, when its switch processes may starve the one server
# process of CPU: topohub's backbone/americas (1,138 switches, load average 880) stretched
# a Write of WRITE_BATCH entries, milliseconds on an idle machine, past 10 s. The deadline
# is there to end a server that stopped answering, not a slow one.
CALL_TIMEOUT_S = 120.0


class InstallError(RuntimeError):
    """The server refused the pipeline or an entry; the message says which and why."""


def install(address: str, device_id: int, config: pb.ForwardingPipelineConfig,
            entries: list[Entry], where: str) -> None:
    """``where`` names the entries' origin (e.g. the file) in error messages."""
    try:
        with PrimarySession(address, device_id, ELECTION_ID, CALL_TIMEOUT_S) as session:
            _set_pipeline(session.stub, device_id, config, address)
            for start in range(0, len(entries), WRITE_BATCH):
                _write(session.stub, device_id, entries[start:start + WRITE_BATCH], where)
    except NotPrimary as exc:
        raise InstallError(str(exc)) from exc


def _set_pipeline(stub, device_id: int, config: pb.ForwardingPipelineConfig,
                  address: str) -> None:
    req = pb.SetForwardingPipelineConfigRequest(
        device_id=device_id, election_id=ELECTION_ID, config=config,
        action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    try:
        stub.SetForwardingPipelineConfig(req, timeout=CALL_TIMEOUT_S)
    except grpc.RpcError as exc:
        raise InstallError(f"{address}: pipeline refused: {exc.details()}") from exc


def _write(stub, device_id: int, entries: list[Entry], where: str) -> None:
    """One Write of ``entries`` (each on its own: CONTINUE_ON_ERROR, the default); a refused
    one fails the install, named by its index."""
    req = pb.WriteRequest(device_id=device_id, election_id=ELECTION_ID)
    for entry in entries:
        op = pb.Update.MODIFY if entry.modifies else pb.Update.INSERT
        req.updates.add(type=op, entity=entry.entity)
    try:
        stub.Write(req, timeout=CALL_TIMEOUT_S)
    except grpc.RpcError as exc:
        refused = [(entry, code, message) for entry, (code, message)
                   in zip(entries, update_errors(exc), strict=False) if code != grpc.StatusCode.OK]
        if not refused:  # about the whole Write (not primary, deadline, ...)
            raise InstallError(f"{where}: entries {entries[0].index} to {entries[-1].index}: "
                               f"{exc.code().name}: {exc.details()}") from exc
        entry, code, message = refused[0]
        raise InstallError(f"{where}: entry {entry.index}: the switch refused it: "
                           f"{code.name}: {message}") from exc
