"""What the P4Runtime tests share: a rig switch behind our P4Runtime server (a real
subprocess on a unix socket or on TCP loopback), a controller-like client built from the
p4runtime package's stubs, and P4Info lookups by name."""

from __future__ import annotations

import queue
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc
from switch_rig import Rig, compile_p4

from dplab.p4runtime import entries as entries_file
from dplab.p4runtime import errors
from dplab.p4runtime.installer import install
from dplab.p4runtime.server import P4RuntimeServicer, grpc_server

PRIMARY_WAIT_S = 10.0
# The election id of each test's own controller (fresh_pipeline): the highest there is, so
# that it is primary whatever ids earlier tests on the same server sent (the server keeps
# the highest id it has seen: spec 5).
TOP_ELECTION = 2**128 - 1


def compile_with_info(source: Path, out: Path) -> tuple[Path, p4info_pb2.P4Info]:
    """Compiles ``source``; returns (IR file, P4Info)."""
    ir = compile_p4(source, out)
    info = p4info_pb2.P4Info()
    info.ParseFromString((out / f"{source.stem}.p4info.bin").read_bytes())
    return ir, info


def compile_text(text: str, name: str, out: Path) -> tuple[Path, p4info_pb2.P4Info]:
    """Writes a test's own program ``text`` as ``out``/``name`` and compiles it."""
    source = out / name
    source.write_text(text)
    return compile_with_info(source, out)


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_on_unix_socket(folder: Path):
    """A fixture body: a rig switch and its server on a unix socket in ``folder``; yields
    (rig, address)."""
    address = f"unix:{folder}/p4rt.sock"
    with rig_with_server(address) as rig:
        yield rig, address


@contextmanager
def rig_with_server(address: str, n_ports: int = 3, options: tuple[str, ...] = ()):
    """A rig switch with our P4Runtime server (device 1) listening on ``address``
    (``unix:/path`` or ``127.0.0.1:port``), started with the command line ``options``;
    yields the rig once the server answers."""
    with Rig(n_ports=n_ports) as rig, server_process(rig, address, options):
        yield rig


@contextmanager
def installed_rig(program: Path, entries: Path | None, out: Path, n_ports: int,
                  switch: str = "s1"):
    """A rig with ``n_ports`` ports behind our P4Runtime server, running ``program`` with the
    entries of the file ``entries`` for ``switch`` (None or no such file: none), written by
    the p4 plane's own installer, which has left again. Yields (rig, address, P4Info)."""
    ir, info = compile_with_info(program, out)
    config = pb.ForwardingPipelineConfig(p4_device_config=ir.read_bytes())
    config.p4info.CopyFrom(info)
    mine = [e for e in entries_file.load(entries, info) if e.switches is None
            or switch in e.switches] if entries is not None and entries.is_file() else []
    address = f"unix:{out}/{program.stem}-p4rt.sock"
    with rig_with_server(address, n_ports=n_ports) as rig:
        install(address, 1, config, mine, str(entries))
        yield rig, address, info


@contextmanager
def server_process(rig: Rig, address: str, options: tuple[str, ...] = ()):
    """Our P4Runtime server (device 1) for ``rig``'s switch, a process of its own listening
    on ``address`` until the block ends (then stopped with SIGTERM)."""
    proc = subprocess.Popen([sys.executable, "-m", "dplab.p4runtime", "--serve", "1",
                             rig.control_path, address, *options])
    try:
        with grpc.insecure_channel(address) as channel:
            grpc.channel_ready_future(channel).result(timeout=10)
        yield proc
    finally:
        proc.terminate()
        proc.wait(5)


@contextmanager
def in_process_server(servicer: P4RuntimeServicer, address: str):
    """``servicer`` served in this process on ``address`` until the block ends (for a
    test or benchmark that reaches into the server); yields it."""
    server = grpc_server(servicer)
    server.add_insecure_port(address)
    server.start()
    try:
        yield servicer
    finally:
        server.stop(0).wait()


class Names:
    """P4Info ids by (short or full) name."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.info = info
        self.ids: dict[str, int] = {}
        for kind in ("tables", "actions", "counters", "direct_counters", "meters",
                     "direct_meters", "registers", "digests"):
            for obj in getattr(info, kind):
                self.ids[obj.preamble.name] = self.ids[obj.preamble.alias] = obj.preamble.id

    def __getitem__(self, name: str) -> int:
        return self.ids[name]


class Client:
    """A controller: one channel, one StreamChannel, received messages in a queue.
    ``election`` None: its arbitration leaves the election id unset (a backup for good)."""

    def __init__(self, address: str, election: int | None) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.election = pb.Uint128(high=(election or 0) >> 64,
                                   low=(election or 0) & (2**64 - 1))
        self.outbox: queue.Queue = queue.Queue()
        self.inbox: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.outbox.get, None))
        threading.Thread(target=self._receive, daemon=True).start()
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = 1
        if election is not None:
            req.arbitration.election_id.CopyFrom(self.election)
        self.outbox.put(req)

    def _receive(self) -> None:
        try:
            for msg in self.stream:
                self.inbox.put(msg)
        except grpc.RpcError as err:
            self.inbox.put(err)

    def next(self, kind: str, timeout: float = 3.0):
        """The next stream message of ``kind`` (e.g. "arbitration", "packet", "digest"),
        None if none came within ``timeout``; the stream's RpcError if it broke."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.inbox.get(timeout=deadline - time.monotonic())
            except queue.Empty:
                break
            if isinstance(msg, grpc.RpcError):
                return msg
            if msg.WhichOneof("update") == kind:
                return getattr(msg, kind)
        return None

    def send(self, msg: pb.StreamMessageRequest) -> None:
        self.outbox.put(msg)

    def set_pipeline(self, program: tuple[Path, p4info_pb2.P4Info],
                     action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT) -> None:
        ir_path, info = program
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=1, election_id=self.election, action=action)
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = Path(ir_path).read_bytes()
        self.stub.SetForwardingPipelineConfig(req)

    def write(self, *entities: pb.Entity, op=pb.Update.INSERT) -> None:
        req = pb.WriteRequest(device_id=1, election_id=self.election)
        for entity in entities:
            req.updates.add(type=op, entity=entity)
        self.stub.Write(req)

    def read(self, entity: pb.Entity) -> list[pb.Entity]:
        return [e for r in self.stub.Read(pb.ReadRequest(device_id=1, entities=[entity]))
                for e in r.entities]

    def close(self) -> None:
        self.outbox.put(None)
        self.channel.close()


def code_of(call) -> grpc.StatusCode:
    """The status code ``call`` fails with (an RPC-wide error: bad device, not primary...)."""
    with pytest.raises(grpc.RpcError) as failed:
        call()
    return failed.value.code()


def update_codes(failed: grpc.RpcError) -> list[int]:
    """The canonical code of each update (or read request) in a failed batch, in order; the
    details' own status must repeat the RPC's code and message (spec 10)."""
    details = dict(failed.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    assert (status.code, status.message) == (failed.code().value[0], failed.details())
    return [code.value[0] for code in errors.update_codes(failed)]


def update_code_of(call) -> grpc.StatusCode:
    """The code of the one update ``call`` writes: the spec's batch error (UNKNOWN at the
    top, the update's own code in its p4.v1.Error) even for a batch of one."""
    with pytest.raises(grpc.RpcError) as failed:
        call()
    assert failed.value.code() == grpc.StatusCode.UNKNOWN, failed.value.details()
    assert len(update_codes(failed.value)) == 1
    return errors.update_code(failed.value)


def stream_refusal(address: str, hello: pb.StreamMessageRequest) -> grpc.StatusCode:
    """The code the server ends a new stream with after its first arbitration message."""
    outbox: queue.Queue = queue.Queue()
    outbox.put(hello)
    with grpc.insecure_channel(address) as channel:
        stream = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(
            iter(outbox.get, None), timeout=10)
        try:
            with pytest.raises(grpc.RpcError) as failed:
                list(stream)
        finally:
            outbox.put(None)
        return failed.value.code()


def is_primary(reply: object) -> bool:
    """An arbitration reply that made its client primary (status OK, per the spec)."""
    return isinstance(reply, pb.MasterArbitrationUpdate) and reply.status.code == 0


@contextmanager
def primary_client(address: str, program: tuple[Path, p4info_pb2.P4Info], election: int = 1,
                   action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT):
    """A client that asked to be primary and set ``program`` (by ``action``); yields
    (client, its arbitration reply) and closes the client afterwards.

    A previous client's stream with the same election id may still be closing on the
    server (closing is asynchronous), and while it is, the id is taken: the new client
    then asks again until the server has let the old stream go."""
    deadline = time.monotonic() + PRIMARY_WAIT_S
    while True:
        client = Client(address, election)
        won = client.next("arbitration")
        if is_primary(won) or time.monotonic() > deadline:
            break
        client.close()
        time.sleep(0.05)
    try:
        client.set_pipeline(program, action)
        yield client, won
    finally:
        client.close()


@contextmanager
def fresh_pipeline(served: tuple[Rig, str], program: tuple[Path, p4info_pb2.P4Info]):
    """(rig, a primary client that loaded ``program`` afresh, its P4Info names), for a
    module's rig switch and server ``served``: a new pipeline clears every entry and cell,
    and the rig's ports start drained, so each test starts from a clean switch."""
    rig, address = served
    with primary_client(address, program, election=TOP_ELECTION) as (client, won):
        assert is_primary(won)
        rig.drain()
        yield rig, client, Names(program[1])


# Fixtures a test module takes by assignment (``served = p4runtime_rig.served``): pytest
# then keeps one instance per module.

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One rig switch and server for the module: (rig, address); each test loads its
    pipeline afresh (fresh_pipeline)."""
    yield from served_on_unix_socket(tmp_path_factory.mktemp("grpc"))


@pytest.fixture()
def ctl(served, program):
    """(rig, primary client with the module's ``program`` freshly loaded, P4Info names)."""
    with fresh_pipeline(served, program) as ctl:
        yield ctl


ETHERNET_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t {{ bit<48> dst; bit<48> src; bit<16> ether_type; }}
struct headers_t {{ ethernet_t ethernet; }}
struct metadata_t {{ {metadata} }}
parser {prefix}Parser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {{
    state start {{ packet.extract(hdr.ethernet); transition accept; }}
}}
control {prefix}Verify(inout headers_t hdr, inout metadata_t meta) {{ apply {{ }} }}
control {prefix}Ingress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {{
{ingress}}}
control {prefix}Egress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {{ apply {{ }} }}
control {prefix}Compute(inout headers_t hdr, inout metadata_t meta) {{ apply {{ }} }}
control {prefix}Deparser(packet_out packet, in headers_t hdr) {{
    apply {{ packet.emit(hdr.ethernet); }}
}}
V1Switch({prefix}Parser(), {prefix}Verify(), {prefix}Ingress(), {prefix}Egress(), {prefix}Compute(),
         {prefix}Deparser()) main;
"""


def ethernet_program(prefix: str, metadata: str, ingress: str) -> str:
    """A v1model program that parses and emits Ethernet only, for tests of what a control
    plane can do to its tables: `ingress` is the body of `<prefix>Ingress` (its actions,
    tables and apply block), `metadata` the fields of its metadata struct."""
    return ETHERNET_PROGRAM.format(prefix=prefix, metadata=metadata, ingress=ingress)
