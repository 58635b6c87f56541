"""The P4Runtime gRPC service of one switch (device): pipeline, Write/Read, StreamChannel."""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from dplab.p4runtime import codec, pipeline_check
from dplab.p4runtime.arbitration import Arbiter
from dplab.p4runtime.batching import write_all_or_none, write_each
from dplab.p4runtime.codec import P4InfoIndex
from dplab.p4runtime.digests import Digests
from dplab.p4runtime.entities import Entities
from dplab.p4runtime.entry_extras import Extras
from dplab.p4runtime.errors import P4RuntimeError, invalid, not_found
from dplab.p4runtime.limits import DEFAULTS, Limits
from dplab.p4runtime.switch_link import SwitchError, SwitchLink
from dplab.p4runtime.waiting import Waiting

API_VERSION = "1.5.0"
Action = pb.SetForwardingPipelineConfigRequest
# A batch error's status details travel (base64) in a trailer; gRPC clients refuse trailers
# above 8 KiB by default (their soft limit), so the details stay below that.
DETAILS_BUDGET = 6000
SHOWN_FAILURES = 3  # failures named in a batch error's message
# Longest text of one update's error in the batch error (its message and its p4.v1.Error),
# so that one long error cannot push every update's code out of the trailer.
MESSAGE_ROOM = 300
Atomicity = pb.WriteRequest
# A Read's answer goes out in ReadResponses of about this size at most: gRPC clients refuse
# messages above 4 MiB by default, and a big answer must not fail for that.
READ_CHUNK_BYTES = 1 << 20
# One process serves every switch of a run, and the plane gives each the same config: its
# IR is parsed and checked once per process (by the config's tag), not once per switch.
# The IRs kept are only read (sent to switches), never changed.
VERIFIED_KEPT = 8
_verified_irs: dict[str, dict] = {}
ENTITY_FRAMING = 8  # bytes an entity's tag and length add to a ReadResponse, at most


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, switch_socket: str, device_id: int, switch_wait_s: float = 0.0,
                 limits: Limits = DEFAULTS) -> None:
        self.device_id, self.limits = device_id, limits
        self.arbiter = Arbiter(device_id, limits.max_backup_streams)
        self.waiting = Waiting(limits.max_waiting_streams, limits.arbitration_timeout_s)
        self._reads = threading.BoundedSemaphore(limits.max_reads)
        self.switch = SwitchLink(switch_socket, self._on_switch_event, switch_wait_s)
        self._config: pb.ForwardingPipelineConfig | None = None
        self._saved: pb.ForwardingPipelineConfig | None = None
        self._index: P4InfoIndex | None = None
        self.digests = Digests(self._send_to_primary)
        # Writes one batch at a time, reads between batches: a rolled-back batch is never
        # seen half applied (the spec wants Write/Read strictly serializable). Arbitration
        # changes take it too: a Write checked against the primary runs whole before the
        # primary can change (it is ordered before the change), never half after it.
        self._serial = threading.Lock()

    # -- unary RPCs ----------------------------------------------------------------------

    def Capabilities(self, request, context):
        return pb.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request, context):
        with self._serial:  # as a Write: checked against the primary, applied whole
            return self._guard(context, self._set_pipeline, request)

    def GetForwardingPipelineConfig(self, request, context):
        return self._guard(context, self._get_pipeline, request)

    def Write(self, request, context):
        return self._guard(context, self._write, request)

    def Read(self, request, context):
        """The answer is built whole under the device lock (the building stops when the
        client cancels or the server's read deadline passes), then sent without it. A
        client that stops reading blocks only the send, which gets the read deadline
        again and is then cancelled: its thread is let go too."""
        if not self._reads.acquire(blocking=False):
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"{self.limits.max_reads} Reads are in flight already (the "
                          "server's max_reads); retry when one has ended")
        try:
            yield from self._answer(request, context)
        finally:
            self._reads.release()

    def _answer(self, request: pb.ReadRequest, context):
        deadline = time.monotonic() + self.limits.read_deadline_s
        try:
            found, errors = self._read(request, self._read_check(context, deadline))
        except P4RuntimeError as err:
            context.abort(err.grpc_code, err.message)
        if request.role:  # a filter (spec 11): no entity belongs to a role but the default
            found = pb.ReadResponse()
        timer = threading.Timer(self.limits.read_deadline_s, context.cancel)
        timer.daemon = True
        timer.start()
        try:
            yield from _chunks(found)
        finally:
            timer.cancel()
        if any(errors):
            _abort_batch(context, _BatchError(errors))

    def _read_check(self, context, deadline: float) -> Callable[[], None]:
        """What a Read checks before each entity it reads: that its client still waits
        for it, and that it is within the server's read deadline."""
        def check() -> None:
            if not context.is_active():
                raise P4RuntimeError("CANCELLED", "the client left the Read")
            if time.monotonic() > deadline:
                raise P4RuntimeError(
                    "DEADLINE_EXCEEDED", "the Read took longer than the server's read "
                    f"deadline ({self.limits.read_deadline_s:g} s, read_deadline_s); "
                    "read fewer entities per request")
        return check

    # -- pipeline ------------------------------------------------------------------------

    def _set_pipeline(self, request: pb.SetForwardingPipelineConfigRequest):
        self._check_device(request.device_id)
        _check_default_role(request.role, request.role_id)
        self.arbiter.check_primary(request.election_id, "SetForwardingPipelineConfig")
        if request.action == Action.COMMIT:  # spec 12: NOT_FOUND / INVALID_ARGUMENT
            if request.HasField("config"):
                raise invalid("COMMIT takes no config (it commits the saved one)")
            if self._saved is None:
                raise not_found("COMMIT without a saved config (VERIFY_AND_SAVE first)")
            self._load(self._saved)
            return pb.SetForwardingPipelineConfigResponse()
        ir = _verified(request.config)
        if request.action == Action.VERIFY_AND_SAVE:
            self._saved = request.config
        elif request.action == Action.VERIFY_AND_COMMIT:
            self._load(request.config, ir)
        elif request.action == Action.RECONCILE_AND_COMMIT:
            self._reconcile(request.config, ir)
        elif request.action != Action.VERIFY:
            raise invalid(f"unknown action {request.action}")
        return pb.SetForwardingPipelineConfigResponse()

    def _load(self, config: pb.ForwardingPipelineConfig, ir: dict | None = None) -> None:
        try:
            self.switch.call("load_pipeline", ir=ir or _verified(config),
                             tag=_tag(config))
        except P4RuntimeError as err:
            raise invalid(f"the switch refused the pipeline: {err.message}") from err
        self._config, self._index = config, P4InfoIndex(config.p4info)
        self.digests.reset()

    def _reconcile(self, config: pb.ForwardingPipelineConfig, ir: dict) -> None:
        """RECONCILE_AND_COMMIT must keep the forwarding state: this server can only when
        the program stays the same (then only the cookie changes) or none is loaded yet.
        A server that has none yet (e.g. restarted) takes over a switch already running
        this config, state and all (the switch keeps the config's tag); any other switch
        is loaded."""
        if self._config is None:
            if self._switch_runs(config):
                self._config, self._index = config, P4InfoIndex(config.p4info)
            else:
                self._load(config, ir)
        elif (config.p4info == self._config.p4info
              and config.p4_device_config == self._config.p4_device_config):
            self._config = config
        else:
            raise invalid("RECONCILE_AND_COMMIT: the forwarding state cannot be kept across "
                          "a different program (use VERIFY_AND_COMMIT, which clears it)")

    def _switch_runs(self, config: pb.ForwardingPipelineConfig) -> bool:
        try:
            running = self.switch.call("get_pipeline")
        except SwitchError:  # no pipeline loaded
            return False
        return running.get("tag") == _tag(config)

    def _get_pipeline(self, request: pb.GetForwardingPipelineConfigRequest):
        self._check_device(request.device_id)
        if self._config is None:  # spec 13: no pipeline yet is not an error, config unset
            return pb.GetForwardingPipelineConfigResponse()
        out = pb.ForwardingPipelineConfig(cookie=self._config.cookie)
        kind = pb.GetForwardingPipelineConfigRequest
        if request.response_type in (kind.ALL, kind.P4INFO_AND_COOKIE):
            out.p4info.CopyFrom(self._config.p4info)
        if request.response_type in (kind.ALL, kind.DEVICE_CONFIG_AND_COOKIE):
            out.p4_device_config = self._config.p4_device_config
        return pb.GetForwardingPipelineConfigResponse(config=out)

    # -- write and read ------------------------------------------------------------------

    def _write(self, request: pb.WriteRequest):
        self._check_device(request.device_id)
        _check_default_role(request.role, request.role_id)
        with self._serial:  # the primary checked is the primary until the Write ends
            self.arbiter.check_primary(request.election_id, "Write")
            entities = self._entities()
            if request.atomicity not in (Atomicity.CONTINUE_ON_ERROR,
                                         Atomicity.ROLLBACK_ON_ERROR,
                                         Atomicity.DATAPLANE_ATOMIC):
                raise invalid(f"unknown atomicity {request.atomicity}")
            if request.atomicity == Atomicity.CONTINUE_ON_ERROR:
                errors = write_each(entities, request.updates)
            else:
                errors = write_all_or_none(entities, request.updates, hold=(
                    request.atomicity == Atomicity.DATAPLANE_ATOMIC))
        if any(errors):
            raise _BatchError(errors)
        return pb.WriteResponse()

    def _read(self, request: pb.ReadRequest, check: Callable[[], None],
              ) -> tuple[pb.ReadResponse, list[P4RuntimeError | None]]:
        """The entities every valid request finds, and one error (or None) per request: a
        bad request fails alone with its own code (and adds nothing), a valid one the
        switch failed with INTERNAL; the others are still answered (spec 11.2, "Batch
        Processing"). ``check`` raises to end the whole Read (and free the lock)."""
        self._check_device(request.device_id)
        entities = self._entities()
        found = pb.ReadResponse()
        errors: list[P4RuntimeError | None] = []
        with self._serial:  # a read sees a batch whole or not at all (spec 12.5)
            for want in request.entities:
                check()
                before = len(found.entities)
                try:
                    entities.read(want, found.entities)
                    errors.append(None)
                except SwitchError as err:  # a valid request the switch failed: INTERNAL
                    errors.append(P4RuntimeError(
                        "INTERNAL", f"the switch failed the read: {err.code}: {err.message}"))
                except P4RuntimeError as err:  # an invalid request: its own code
                    errors.append(err)
                if errors[-1] is not None:
                    del found.entities[before:]
        return found, errors

    def _entities(self) -> Entities:
        if self._index is None:
            raise P4RuntimeError("FAILED_PRECONDITION", "no forwarding pipeline is set")
        return Entities(self.switch, self._index, self.digests)

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise P4RuntimeError("NOT_FOUND", f"no device {device_id} "
                                 f"(this server is device {self.device_id})")

    def _guard(self, context, method, request):
        try:
            return method(request)
        except _BatchError as err:
            _abort_batch(context, err)
        except P4RuntimeError as err:
            context.abort(err.grpc_code, err.message)

    # -- stream --------------------------------------------------------------------------

    def StreamChannel(self, request_iterator, context):
        outbox: queue.Queue = queue.Queue()  # also names the stream to the arbiter
        # However the RPC ends (client gone, server stopping), the loop below is told: it
        # would otherwise wait on the outbox forever and keep its worker thread, and with
        # it the process, alive.
        context.add_callback(lambda: outbox.put(None))
        self.waiting.enter(outbox, outbox.put)  # until its arbitration
        # Set when this handler ends the stream (also while the client still sends): an
        # arbitration the reader takes after that must not register a stream nobody serves.
        ended = threading.Event()
        reader = threading.Thread(target=self._serve_stream,
                                  args=(request_iterator, outbox, ended), daemon=True)
        reader.start()
        try:
            while True:
                msg = self._next_message(outbox)
                if msg is None:
                    return
                if isinstance(msg, P4RuntimeError):
                    context.abort(msg.grpc_code, msg.message)
                yield msg
        finally:
            self.waiting.leave(outbox)
            with self._serial:  # after a Write it let through, never amid it
                ended.set()
                self.arbiter.leave(outbox)

    def _next_message(self, outbox: queue.Queue):
        """The stream's next message, or its end: None, or the error to end it with (also
        when it has sent no arbitration within the arbitration timeout)."""
        while (wait := self.waiting.time_left(outbox)) is not None:
            if wait <= 0:
                self.waiting.leave(outbox)
                return P4RuntimeError(
                    "DEADLINE_EXCEEDED", "no arbitration within "
                    f"{self.limits.arbitration_timeout_s:g} s (arbitration_timeout_s): a "
                    "stream's first message must be its MasterArbitrationUpdate")
            try:
                return outbox.get(timeout=wait)
            except queue.Empty:
                continue
        return outbox.get()

    def _serve_stream(self, requests, outbox: queue.Queue, ended: threading.Event) -> None:
        try:
            for req in requests:
                kind = req.WhichOneof("update")
                if kind == "arbitration":
                    self.waiting.leave(outbox)
                    with self._serial:  # a new primary: after a running Write, not amid it
                        if ended.is_set():
                            return
                        self.arbiter.join(req.arbitration, outbox, outbox.put)
                elif kind == "packet":
                    self._packet_out(req.packet, outbox)
                elif kind == "digest_ack":
                    self._digest_ack(req.digest_ack, outbox)
        except P4RuntimeError as err:
            outbox.put(err)
            return
        except grpc.RpcError:
            pass  # the client went away
        outbox.put(None)

    def _packet_out(self, packet: pb.PacketOut, outbox: queue.Queue) -> None:
        """Errors go back as StreamErrors naming the packet-out (spec 16.4)."""
        try:
            if not self.arbiter.is_primary(outbox):
                raise P4RuntimeError("PERMISSION_DENIED", "packet-out from a non-primary client")
            self.switch.call("packet_out", payload=packet.payload.hex(),
                             metadata=self._packet_out_metadata(packet))
        except P4RuntimeError as err:
            msg = _stream_error(err)
            msg.error.packet_out.packet_out.CopyFrom(packet)
            outbox.put(msg)

    def _packet_out_metadata(self, packet: pb.PacketOut) -> list[dict]:
        """Each field of the P4Info's packet_out header must be given, once, and fit its
        width (spec 16.1: a packet-out missing one is dropped)."""
        if self._index is None:
            raise P4RuntimeError("FAILED_PRECONDITION", "no forwarding pipeline is set")
        fields = self._index.packet_out_fields
        given: dict[int, dict] = {}
        for m in packet.metadata:
            field = fields.get(m.metadata_id)
            if field is None:
                raise invalid(f"packet-out metadata id {m.metadata_id} is not a field of the "
                              f"packet_out header (fields: {sorted(fields)})")
            if m.metadata_id in given:
                raise invalid(f"packet-out metadata {field.name} given twice")
            given[m.metadata_id] = {"id": m.metadata_id,
                                    "value": codec.to_hex(m.value, field.bitwidth or None,
                                                          f"packet-out metadata {field.name}")}
        missing = fields.keys() - given.keys()
        if missing:
            names = sorted(fields[i].name for i in missing)
            raise invalid(f"packet-out metadata missing: {', '.join(names)} (every field of "
                          "the packet_out header must be given)")
        return list(given.values())

    def _digest_ack(self, ack: pb.DigestListAck, outbox: queue.Queue) -> None:
        if self._index is None or ack.digest_id not in self._index.digests:
            msg = _stream_error(invalid(f"digest list ack for digest id {ack.digest_id}, "
                                        "which is not in the P4Info"))
            msg.error.digest_list_ack.digest_list_ack.CopyFrom(ack)
            outbox.put(msg)
            return
        self.digests.ack(ack)

    def _send_to_primary(self, msg: pb.StreamMessageResponse) -> bool:
        send = self.arbiter.primary_sender()
        if send is None:
            return False  # no controller: the spec drops packet-ins and notifications
        send(msg)
        return True

    def _on_switch_event(self, event: dict) -> None:
        if event["event"] == "digest":
            self.digests.on_digest(event["digest"],
                                   tuple(codec.to_bytes(v) for v in event["data"]))
            return
        msg = pb.StreamMessageResponse()
        if event["event"] == "packet_in":
            msg.packet.payload = bytes.fromhex(event["payload"])
            for m in event.get("metadata", []):
                msg.packet.metadata.add(metadata_id=m["id"], value=codec.to_bytes(m["value"]))
        elif event["event"] == "idle_timeout" and self._index is not None:
            note = msg.idle_timeout_notification
            note.timestamp = time.time_ns()
            key = self._index.keys[event["table"]]  # a table of the loaded pipeline
            for item in event["entries"]:
                entry = note.table_entry.add(table_id=event["table"],
                                             priority=item.get("priority") or 0)
                codec.match_from_switch(key, item["match"], entry.match)
                # the key, the metadata and the TTL (spec "Table Idle Timeout Notification")
                Extras.from_switch(item["meta"]).fill(entry)
                entry.idle_timeout_ns = item["idle_timeout_ns"]
        else:
            return
        self._send_to_primary(msg)


def grpc_server(servicer: P4RuntimeServicer, name: str = "p4rt") -> grpc.Server:
    """A gRPC server for ``servicer`` (not started, no port yet), its thread pool and
    keepalive settings from the servicer's limits."""
    limits = servicer.limits
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=limits.workers,
                                                    thread_name_prefix=name),
                         options=limits.grpc_options())
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(servicer, server)
    return server


def _chunks(found: pb.ReadResponse) -> Iterator[pb.ReadResponse]:
    """``found`` as ReadResponses of at most about READ_CHUNK_BYTES each (one entity
    bigger than that alone); a small answer is sent as it is."""
    if found.ByteSize() <= READ_CHUNK_BYTES:
        yield found
        return
    chunk, size = pb.ReadResponse(), 0
    for entity in found.entities:
        grows = entity.ByteSize() + ENTITY_FRAMING
        if chunk.entities and size + grows > READ_CHUNK_BYTES:
            yield chunk
            chunk, size = pb.ReadResponse(), 0
        chunk.entities.add().CopyFrom(entity)
        size += grows
    yield chunk


def _check_default_role(role: str, role_id: int) -> None:
    """This server has the default role only; a request naming another role names one
    the device does not have (spec 12.1, 13: NOT_FOUND)."""
    if role or role_id:
        raise not_found(f"no role {role or role_id} (this server has only the default role)")


class _BatchError(Exception):
    def __init__(self, errors: list[P4RuntimeError | None]) -> None:
        self.errors = errors


def _abort_batch(context, err: _BatchError) -> None:
    """The spec's batch error (12.4, 11.2): UNKNOWN, with one p4.v1.Error per update (or
    read request), in order, in the status details; OK for those that succeeded. Details
    that would not fit a client's trailer limit lose their messages first (codes stay);
    if even the codes do not fit, they are left out and the message says so."""
    failed = [(i, e) for i, e in enumerate(err.errors) if e is not None]
    message = f"{len(failed)} of {len(err.errors)} failed: " + "; ".join(
        f"#{i}: {e.code}: {_clip(e.message)}" for i, e in failed[:SHOWN_FAILURES])
    if len(failed) > SHOWN_FAILURES:
        message += f"; and {len(failed) - SHOWN_FAILURES} more"
    for with_messages in (True, False):
        details = _status_details(err.errors, message, with_messages)
        if len(details) <= DETAILS_BUDGET:
            context.set_trailing_metadata((("grpc-status-details-bin", details),))
            break
    else:
        message += (f" (the {len(err.errors)} p4.v1.Errors exceed gRPC's trailer limit; "
                    "send smaller batches to get them)")
    context.abort(grpc.StatusCode.UNKNOWN, message)


def _status_details(errors: list[P4RuntimeError | None], message: str,
                    with_messages: bool) -> bytes:
    status = status_pb2.Status(code=grpc.StatusCode.UNKNOWN.value[0], message=message)
    for e in errors:
        item = pb.Error(canonical_code=0 if e is None else e.grpc_code.value[0],
                        message=_clip(e.message) if e is not None and with_messages else "")
        status.details.add().Pack(item)
    return status.SerializeToString()


def _clip(message: str) -> str:
    return message if len(message) <= MESSAGE_ROOM else message[:MESSAGE_ROOM - 1] + "…"


def _stream_error(err: P4RuntimeError) -> pb.StreamMessageResponse:
    msg = pb.StreamMessageResponse()
    msg.error.canonical_code = err.grpc_code.value[0]
    msg.error.message = err.message
    return msg


def _verified(config: pb.ForwardingPipelineConfig) -> dict:
    """pipeline_check.verify's IR of ``config``, from the process's cache when a config with
    the same tag was verified before (threads racing on a new tag each verify it once)."""
    tag = _tag(config)
    ir = _verified_irs.get(tag)
    if ir is None:
        ir = pipeline_check.verify(config)
        if len(_verified_irs) >= VERIFIED_KEPT:
            _verified_irs.clear()
        _verified_irs[tag] = ir
    return ir


def _tag(config: pb.ForwardingPipelineConfig) -> str:
    """What names a config's program on the switch: a digest of its P4Info and device
    config (not its cookie, which a RECONCILE_AND_COMMIT may change alone)."""
    digest = hashlib.sha256(config.p4info.SerializeToString(deterministic=True))
    digest.update(config.p4_device_config)
    return digest.hexdigest()
