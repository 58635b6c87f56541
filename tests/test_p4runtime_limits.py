"""Misbehaving clients cannot starve a device's P4Runtime server (limits.py): idle or
silent StreamChannels, a flood of short-lived streams, an abandoned or stalled Read. A
controller's arbitration, Write and Read still complete within a bound, against the real
server process and a rig switch."""

from __future__ import annotations

import itertools
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc
from p4runtime_rig import Client, Names, compile_with_info, is_primary

from dplab.p4runtime.arbitration import Arbiter
from dplab.p4runtime.errors import P4RuntimeError
from dplab.p4runtime.limits import DEFAULTS, Limits
from dplab.p4runtime.server import READ_CHUNK_BYTES, _chunks
from dplab.p4runtime.waiting import Waiting

ROOT = Path(__file__).resolve().parents[1]
TABLE = "BasicIngress.mac_exact"
ENTRIES = 2000
BOUND_S = 3.0  # each controller call; without the limits they never complete
READ_DEADLINE_S = 5.0
ARBITRATION_TIMEOUT_S = 2.0
SERVER_OPTIONS = ("--read-deadline-s", str(READ_DEADLINE_S),
                  "--arbitration-timeout-s", str(ARBITRATION_TIMEOUT_S))
IDLE_CLIENTS = 16
SHORT_LIVED = 300
WAIT_S = 30.0  # bounds waits for the server's own ends of streams; never reached when it works
# Each controller's election id is higher than any before it on the module's server (which
# keeps the highest it has seen): each one becomes primary, even while another is closing.
ELECTIONS = itertools.count(2**100)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(ROOT / "tests" / "p4" / "dst_mac_fwd.p4",
                             tmp_path_factory.mktemp("p4"))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(rig, address) of a server with a short read deadline and arbitration timeout."""
    address = f"unix:{tmp_path_factory.mktemp('grpc')}/p4rt.sock"
    with p4runtime_rig.rig_with_server(address, options=SERVER_OPTIONS) as rig:
        yield rig, address


@pytest.fixture()
def ctl(served, program):
    """(the primary client, which loaded ``program`` afresh: no entries; P4Info names)."""
    _, address = served
    with p4runtime_rig.primary_client(address, program, election=next(ELECTIONS)) as (
            client, won):
        assert is_primary(won)
        yield client, Names(program[1])


def entry(names: Names, index: int) -> pb.Entity:
    entity = pb.Entity()
    te = entity.table_entry
    te.table_id = names[TABLE]
    te.match.add(field_id=1).exact.value = index.to_bytes(6, "big")
    te.action.action.action_id = names["BasicIngress.forward"]
    te.action.action.params.add(param_id=1, value=bytes([1]))
    return entity


def wildcard_read(entities: int) -> pb.ReadRequest:
    """``entities`` wildcard reads of every table in one request."""
    req = pb.ReadRequest(device_id=1)
    for _ in range(entities):
        req.entities.add().table_entry.SetInParent()
    return req


def controller_works(address: str, names: Names, key: int) -> None:
    """A new controller (the highest election id yet) is told it is primary, writes an
    entry and reads it back, each within BOUND_S."""
    client = Client(address, next(ELECTIONS))
    try:
        assert is_primary(client.next("arbitration", timeout=BOUND_S))
        new = entry(names, key)
        req = pb.WriteRequest(device_id=1, election_id=client.election)
        req.updates.add(type=pb.Update.INSERT, entity=new)
        client.stub.Write(req, timeout=BOUND_S)
        found = [e for r in client.stub.Read(pb.ReadRequest(device_id=1, entities=[new]),
                                             timeout=BOUND_S) for e in r.entities]
        assert [int.from_bytes(e.table_entry.match[0].exact.value, "big")
                for e in found] == [key]  # (read back in the shortest form: spec 8.3)
    finally:
        client.close()


def raw_stream(stub, hello: pb.StreamMessageRequest | None):
    """A StreamChannel that sends ``hello`` (or nothing) and then stays silent; returns
    (call, its outbox: put None to end the requests)."""
    outbox: queue.Queue = queue.Queue()
    if hello is not None:
        outbox.put(hello)
    return stub.StreamChannel(iter(outbox.get, None)), outbox


def backup_hello() -> pb.StreamMessageRequest:
    hello = pb.StreamMessageRequest()
    hello.arbitration.device_id = 1  # no election id: a backup for good
    return hello


def ending(call) -> grpc.RpcError:
    """How the server ended a stream we only listen to."""
    with pytest.raises(grpc.RpcError) as ended:
        for _ in call:
            pass
    return ended.value


@pytest.mark.net
def test_idle_backups_are_capped_and_the_controller_still_works(served, ctl):
    _, address = served
    _, names = ctl
    idle = [Client(address, None) for _ in range(IDLE_CLIENTS)]
    try:
        first = [c.next("arbitration", timeout=WAIT_S) for c in idle]
        refused = [m for m in first if isinstance(m, grpc.RpcError)]
        # the test's own controller is primary; the cap is on the others (a previous
        # test's client may still be leaving: then one more is refused)
        admitted = [m for m in first if not isinstance(m, grpc.RpcError)]
        assert len(admitted) <= DEFAULTS.max_backup_streams
        assert len(admitted) + len(refused) == IDLE_CLIENTS
        assert all(isinstance(m, pb.MasterArbitrationUpdate)
                   and m.status.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
                   for m in admitted)  # backups, told there is a primary (spec 5.5)
        for err in refused:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_backup_streams" in err.details()
        controller_works(address, names, ENTRIES + 1)
    finally:
        for c in idle:
            c.close()


@pytest.mark.net
def test_silent_streams_make_room_and_time_out(served, ctl):
    _, address = served
    _, names = ctl
    with grpc.insecure_channel(address) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        silent = [raw_stream(stub, None) for _ in range(IDLE_CLIENTS)]
        try:
            controller_works(address, names, ENTRIES + 2)
            ends = [ending(call) for call, _ in silent]
        finally:
            for call, outbox in silent:
                outbox.put(None)
                call.cancel()
    # room for max_waiting_streams: a newer stream ended the one waiting longest, and the
    # last ones in the room timed out (on a slow machine, maybe some before being pushed out)
    why = {grpc.StatusCode.RESOURCE_EXHAUSTED: "max_waiting_streams",
           grpc.StatusCode.DEADLINE_EXCEEDED: "no arbitration within"}
    assert all(e.code() in why and why[e.code()] in e.details() for e in ends), ends
    assert {e.code() for e in ends} == set(why)


@pytest.mark.net
def test_a_flood_of_short_lived_streams_leaves_the_controller_working(served, ctl):
    _, address = served
    _, names = ctl
    with grpc.insecure_channel(address) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        # a third arbitrate as backups, a third say nothing, a third leave at once; none
        # of the others ever reads or closes its stream
        flood = [raw_stream(stub, backup_hello() if i % 3 else None)
                 for i in range(SHORT_LIVED)]
        for call, _ in flood[::3]:
            call.cancel()
        try:
            controller_works(address, names, ENTRIES + 3)
        finally:
            for call, outbox in flood:
                outbox.put(None)
                call.cancel()


def fill(client: Client, names: Names) -> None:
    client.write(*(entry(names, i) for i in range(ENTRIES)))


@pytest.mark.net
def test_a_cancelled_wildcard_read_lets_go_of_the_device_lock(served, ctl):
    _, address = served
    client, names = ctl
    fill(client, names)
    with grpc.insecure_channel(address) as channel:
        # thousands of wildcard reads of a 2,000-entry table: minutes of work if not stopped
        read = p4runtime_pb2_grpc.P4RuntimeStub(channel).Read(wildcard_read(ENTRIES))
        write = waiting_write(client, names)
        read.cancel()
        cancelled = time.monotonic()
        assert write.wait(WAIT_S)
    assert write.ended - cancelled < BOUND_S  # well before the read deadline


@pytest.mark.net
def test_stalled_wildcard_reads_end_at_the_read_deadline(served, ctl):
    """As many stalled Reads as the server takes at once (one more is refused): they wait
    for the lock in turn, but their deadlines run from their start, so together they delay
    a Write by about one read deadline."""
    _, address = served
    client, names = ctl
    fill(client, names)
    with grpc.insecure_channel(address) as channel:
        started = time.monotonic()
        reads = [p4runtime_pb2_grpc.P4RuntimeStub(channel).Read(wildcard_read(ENTRIES))
                 for _ in range(DEFAULTS.max_reads + 1)]
        write = waiting_write(client, names)  # the reading client never reads, nor leaves
        assert write.wait(WAIT_S)
        assert write.ended - started < READ_DEADLINE_S + BOUND_S
        ends = [ending(read) for read in reads]
    codes = [e.code() for e in ends]
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 1
    assert codes.count(grpc.StatusCode.DEADLINE_EXCEEDED) == DEFAULTS.max_reads
    assert all(("read deadline" if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                else "max_reads") in e.details() for e in ends)


class PendingWrite(threading.Thread):
    """A one-entry Write on a thread of its own; ``ended`` is when it returned."""

    def __init__(self, client: Client, entity: pb.Entity) -> None:
        super().__init__(daemon=True)
        self.client, self.entity = client, entity
        self.ended: float | None = None
        self.error: grpc.RpcError | None = None
        self.start()

    def run(self) -> None:
        try:
            self.client.write(self.entity)
        except grpc.RpcError as err:
            self.error = err
        self.ended = time.monotonic()

    def wait(self, timeout: float) -> bool:
        """Whether it ended (successfully: a failed Write fails the test) in ``timeout``."""
        self.join(timeout)
        assert self.error is None, self.error
        return self.ended is not None


def waiting_write(client: Client, names: Names, patience_s: float = 0.3) -> PendingWrite:
    """A Write that is still waiting (for the device lock, held by a Read that has just
    started) after ``patience_s``: a Write that got in first is done again, until one waits."""
    key = ENTRIES + 10
    while True:
        write = PendingWrite(client, entry(names, key))
        if not write.wait(patience_s):
            return write
        key += 1
        assert key < ENTRIES + 100, "no Write ever waited for the Read"


# -- the parts alone -----------------------------------------------------------------------

def recorder() -> tuple[list, object]:
    got: list = []
    return got, got.append


def test_a_new_backup_over_the_cap_is_refused_but_a_new_primary_gets_in():
    arbiter = Arbiter(1, max_backups=1)
    hello = pb.MasterArbitrationUpdate(device_id=1)
    arbiter.join(hello, "backup", recorder()[1])
    with pytest.raises(P4RuntimeError) as refused:
        arbiter.join(hello, "another backup", recorder()[1])
    assert refused.value.code == "RESOURCE_EXHAUSTED"
    assert "max_backup_streams" in refused.value.message
    hello.election_id.low = 5
    arbiter.join(hello, "primary", recorder()[1])
    assert arbiter.is_primary("primary")


def test_a_demoted_primary_ends_the_backup_with_the_lowest_election_id():
    arbiter = Arbiter(1, max_backups=1)
    (no_id, to_no_id), (old, to_old) = recorder(), recorder()
    arbiter.join(pb.MasterArbitrationUpdate(device_id=1), "no id", to_no_id)
    update = pb.MasterArbitrationUpdate(device_id=1)
    update.election_id.low = 5
    arbiter.join(update, "old", to_old)
    update.election_id.low = 6
    arbiter.join(update, "new", recorder()[1])  # "old" is a backup now: one too many
    assert isinstance(no_id[-1], P4RuntimeError) and no_id[-1].code == "RESOURCE_EXHAUSTED"
    assert not any(isinstance(m, P4RuntimeError) for m in old)
    assert isinstance(old[-1], pb.StreamMessageResponse)  # told it is a backup now


def test_waiting_streams_beyond_the_room_end_the_oldest():
    waiting = Waiting(room=2, timeout_s=60)
    ended: dict[str, list] = {name: [] for name in "abc"}
    for name in "abc":
        waiting.enter(name, ended[name].append)
    assert [len(ended[n]) for n in "abc"] == [1, 0, 0]
    assert ended["a"][0].code == "RESOURCE_EXHAUSTED"
    assert waiting.time_left("a") is None and waiting.time_left("b") > 0
    waiting.leave("b")  # arbitrated
    assert waiting.time_left("b") is None


def test_limits_refuse_what_is_not_a_finite_positive_number():
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="read_deadline_s"):
            Limits(read_deadline_s=bad)
    with pytest.raises(ValueError, match="max_reads"):
        Limits(max_reads=8, unary_workers=8)
    assert Limits().workers > Limits().max_backup_streams + Limits().max_waiting_streams


def test_a_big_read_answer_goes_in_chunks_a_client_can_take():
    found = pb.ReadResponse()
    for i in range(READ_CHUNK_BYTES * 3 // 1000):
        found.entities.add().table_entry.metadata = i.to_bytes(1000, "big")
    chunks = list(_chunks(found))
    assert len(chunks) > 1
    assert all(c.ByteSize() <= READ_CHUNK_BYTES for c in chunks)
    assert [e for c in chunks for e in c.entities] == list(found.entities)


HUNG_CLIENT = """
import queue, sys
import grpc
from p4.v1 import p4runtime_pb2 as pb, p4runtime_pb2_grpc
outbox = queue.Queue()
hello = pb.StreamMessageRequest()
hello.arbitration.device_id = 1
outbox.put(hello)
channel = grpc.insecure_channel(sys.argv[1])
stream = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(outbox.get, None))
print(next(stream).arbitration.status.code, flush=True)
sys.stdin.read()
"""


@pytest.mark.net
def test_keepalive_frees_the_seat_of_a_client_that_stopped_answering(tmp_path):
    """A client process that stops (SIGSTOP: its connection stays open, nothing answers
    on it) loses its backup stream once the server's keepalive ping goes unanswered."""
    address = f"unix:{tmp_path}/p4rt.sock"
    options = ("--max-backup-streams", "1", "--keepalive-s", "0.5",
               "--keepalive-timeout-s", "0.5")
    with p4runtime_rig.rig_with_server(address, options=options):
        hung = subprocess.Popen([sys.executable, "-c", HUNG_CLIENT, address],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert hung.stdout.readline().strip() == str(grpc.StatusCode.NOT_FOUND.value[0])
            assert p4runtime_rig.stream_refusal(address, backup_hello()) == \
                grpc.StatusCode.RESOURCE_EXHAUSTED  # the one backup seat is taken
            hung.send_signal(signal.SIGSTOP)
            deadline = time.monotonic() + WAIT_S
            while True:  # a new backup gets the seat once the hung one is dropped
                newcomer = Client(address, None)
                told = newcomer.next("arbitration", timeout=WAIT_S)
                newcomer.close()
                if not isinstance(told, grpc.RpcError):
                    break
                assert time.monotonic() < deadline, told
                time.sleep(0.05)  # nothing signals the server's drop: poll for it
            assert told.status.code == grpc.StatusCode.NOT_FOUND.value[0]  # a backup
        finally:
            hung.kill()
            hung.wait()
