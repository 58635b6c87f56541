"""The P4Runtime adapter: drives P4 switches running ``p4src/basic_fwd.p4`` with the same
``Forwarding`` logic as the OpenFlow app, implementing its ``Southbound`` with table
entries and packet-outs.

One gRPC channel and StreamChannel per switch; the controller becomes primary (election
id 1), loads the pipeline and then reports the switch up. basic_fwd holds the rule set of
``forwarding.Southbound``: ARP and LLDP always come in as packet-ins, and a path rule
becomes the entry ``path_rules: in_port, eth_src, eth_dst -> forward(out_port)`` (an exact
table: entries cannot overlap, so it has no priorities; the program applies it after the
traps and before the miss, the order OpenFlow's priorities give). Everything else the
table misses comes in as a packet-in carrying its ingress port; a packet-out to one port
carries that egress port, and one to several ports (a flood) carries a multicast group of
exactly those ports, which the app writes to the switch's packet replication engine the
first time it sends to that set of ports (a flood's new groups are written to all its
switches at once, its packet-outs held until each is answered): one stream message per
switch a flood reaches, as OpenFlow's one packet-out with an output action per port.
Reactive rules get the switch's idle timeout; the controller deletes them when the switch
reports them idle, as an OpenFlow switch removes them by itself.

Rules the logic asks for are collected and go out when the logic returns, or before its
next packet-out: one Write per switch, to all switches at once, and the packet-out waits
until every switch it will meet has answered (the path is in place before the packet moves
on, as in ONOS fwd; a path costs one Write round trip, not one per switch). A packet-out
skips its own switch's table, so that switch's rules wait and go after the packet-out:
one server process answers every switch's Writes, about one after another, and that
Write would only delay the ones the packet needs (and the packet-out). They are answered
before the logic's next event (no Write is in flight while the app's lock is free), so a
later packet of the flow that reaches that switch first waits for the rule as a packet-in
and is then only forwarded (forwarding.SETUP_HOLDOFF_S). A rule the switch is
known to hold goes as a MODIFY, others as an INSERT; a refusal because the entry is there
(or gone) is retried once the other way.

``python -m dplab.control.p4runtime_app --config F --mode reactive --stats-file S``; the
config JSON names ``ir`` and ``p4info`` (binary) files and ``switches``:
``{"s1": {"address": "unix:/...", "device_id": 1, "ports": [1, 2]}}``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from dplab.control.counters_file import write_counters
from dplab.control.forwarding import MODES, REACTIVE, Forwarding
from dplab.control.topology_view import PortRef
from dplab.p4runtime.errors import update_code, update_codes
from dplab.p4runtime.primary import PIPELINE_TIMEOUT_S, RPC_TIMEOUT_S

ELECTION_ID = pb.Uint128(high=0, low=1)
TICK_S = 0.1  # LLDP scheduling and stats-file period (short: planes wait for a fresh file)
CONNECT_TIMEOUT_S = 30.0
# Longest wait for gRPC's sending thread to take a switch's queued stream messages before
# a Write to that switch goes anyway (a stream that has stopped must not stall the app).
TAKEN_WAIT_S = 0.05
NS_PER_S = 1_000_000_000
# Pipelines being set at once. Every switch's P4Runtime server is one process and each
# SetForwardingPipelineConfig (checking the program, loading it into its switch) needs its
# CPU: a whole network's at once each wait behind all the others, past PIPELINE_TIMEOUT_S
# (at 320 switches 63 did), and a switch whose pipeline was not set never comes up.
PIPELINES_AT_ONCE = 8
# A refused update sent once more as the other operation: the entry is there, or gone.
RETRY_AS = {grpc.StatusCode.ALREADY_EXISTS: pb.Update.MODIFY,
            grpc.StatusCode.NOT_FOUND: pb.Update.INSERT}
log = logging.getLogger("dplab.p4runtime_app")


class Program:
    """The ids of what the adapter uses in basic_fwd's P4Info."""

    def __init__(self, ir_path: Path, p4info_path: Path) -> None:
        self.p4info = p4info_pb2.P4Info()
        self.p4info.ParseFromString(p4info_path.read_bytes())
        self.device_config = ir_path.read_bytes()
        tables = {t.preamble.alias: t for t in self.p4info.tables}
        actions = {a.preamble.alias: a.preamble.id for a in self.p4info.actions}
        headers = {h.preamble.name: {m.name: m.id for m in h.metadata}
                   for h in self.p4info.controller_packet_metadata}
        try:
            table = tables["path_rules"]
            fields = {f.name: f.id for f in table.match_fields}
            self.table_id = table.preamble.id
            self.match_ids = (fields["in_port"], fields["eth_src"], fields["eth_dst"])
            self.forward_id = actions["forward"]
            self.egress_port_id = headers["packet_out"]["egress_port"]
            self.mcast_grp_id = headers["packet_out"]["mcast_grp"]
            self.ingress_port_id = headers["packet_in"]["ingress_port"]
        except KeyError as exc:
            raise ValueError(f"{p4info_path}: not basic_fwd's P4Info (no {exc})") from exc
        # A packet-out carries every field of the header (P4Runtime 16.1); all but the
        # egress port or the multicast group are zero.
        self.packet_out_zeros = [pb.PacketMetadata(metadata_id=field_id, value=b"\x00")
                                 for field_id in headers["packet_out"].values()
                                 if field_id not in (self.egress_port_id, self.mcast_grp_id)]

    def packet_out(self, data: bytes, port: int = 0, group: int = 0) -> pb.StreamMessageRequest:
        """A packet-out of ``data`` to ``port``, or to multicast group ``group`` (not 0)."""
        msg = pb.StreamMessageRequest()
        msg.packet.payload = data
        msg.packet.metadata.add(metadata_id=self.egress_port_id, value=port.to_bytes(2, "big"))
        msg.packet.metadata.add(metadata_id=self.mcast_grp_id, value=group.to_bytes(2, "big"))
        msg.packet.metadata.extend(self.packet_out_zeros)
        return msg


RuleKey = tuple[int, bytes, bytes]  # a path rule's match: in_port, eth_src, eth_dst


def rule_key(entry: pb.TableEntry, match_ids: tuple[int, int, int]) -> RuleKey:
    """A ``path_rules`` entry's match as PathRule.key has it (``match_ids``: the ids of
    in_port, eth_src and eth_dst)."""
    values = {m.field_id: int.from_bytes(m.exact.value, "big") for m in entry.match}
    in_port, src, dst = (values.get(field_id, 0) for field_id in match_ids)
    return in_port, src.to_bytes(6, "big"), dst.to_bytes(6, "big")


@dataclass(frozen=True)
class PathRule:
    """A ``path_rules`` entry: frames from ``in_port`` with these MACs leave by
    ``out_port``. Kept as plain values until its Write is built: one message per Write,
    none per rule kept."""
    in_port: int
    eth_src: bytes
    eth_dst: bytes
    out_port: int
    idle_timeout_ns: int

    @property
    def key(self) -> RuleKey:
        return self.in_port, self.eth_src, self.eth_dst

    def fill(self, entry: pb.TableEntry, program: Program) -> None:
        entry.table_id = program.table_id
        in_port_id, src_id, dst_id = program.match_ids
        entry.match.add(field_id=in_port_id).exact.value = self.in_port.to_bytes(2, "big")
        entry.match.add(field_id=src_id).exact.value = self.eth_src
        entry.match.add(field_id=dst_id).exact.value = self.eth_dst
        action = entry.action.action
        action.action_id = program.forward_id
        action.params.add(param_id=1, value=self.out_port.to_bytes(2, "big"))
        entry.idle_timeout_ns = self.idle_timeout_ns


class Outbox:
    """A StreamChannel's requests, as gRPC's sending thread takes them. ``wait_taken``
    lets the app's thread step aside (and so free the GIL) until that thread has taken
    every message put: a packet-out then leaves before a Write that can wait."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._taken = threading.Condition()
        self._put = self._got = 0

    def put(self, msg: pb.StreamMessageRequest) -> None:
        with self._taken:
            self._put += 1
        self._queue.put(msg)

    def messages(self) -> Iterator[pb.StreamMessageRequest]:
        """For StreamChannel; gRPC asks for the next message once the last one is sent."""
        while True:
            msg = self._queue.get()
            with self._taken:
                self._got += 1
                self._taken.notify_all()
            yield msg

    def wait_taken(self) -> None:
        with self._taken:
            self._taken.wait_for(lambda: self._got >= self._put, TAKEN_WAIT_S)


class SwitchSession:
    """One switch: its channel, its stream, and the stream's reader thread."""

    def __init__(self, app: P4RuntimeSouthbound, name: str, address: str, device_id: int,
                 ports: list[int]) -> None:
        self.app, self.name, self.device_id, self.ports = app, name, device_id, ports
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.outbox = Outbox()
        self.ready = False
        # Both under the app's lock: the rules waiting for the next flush (by match, a
        # later rule replacing an earlier one as a later Write would), and the matches
        # whose entry the switch holds as far as we know.
        self.pending: dict[RuleKey, PathRule] = {}
        self.installed: set[RuleKey] = set()
        # Under the app's lock: the multicast group written for each set of ports floods
        # went to (ids from 1; 0 is "no group" in basic_fwd's packet_out header). A set's
        # group is never rewritten, so a packet-out still queued for it cannot get another
        # set's ports; the sets are few, as the ports a switch floods to change only with
        # the topology (edge ports, less the one a frame came in on).
        self.groups: dict[tuple[int, ...], int] = {}
        self._last_group = 0

    def start(self) -> None:
        grpc.channel_ready_future(self.channel).result(timeout=CONNECT_TIMEOUT_S)
        stream = self.stub.StreamChannel(self.outbox.messages())
        hello = pb.StreamMessageRequest()
        hello.arbitration.device_id = self.device_id
        hello.arbitration.election_id.CopyFrom(ELECTION_ID)
        self.outbox.put(hello)
        threading.Thread(target=self._receive, args=(stream,), daemon=True,
                         name=f"stream-{self.name}").start()

    def _receive(self, stream) -> None:
        try:
            for msg in stream:
                self.app.on_stream_message(self, msg)
        except grpc.RpcError as err:
            log.warning("%s: stream ended: %s", self.name, err.details())
        self.app.on_switch_gone(self)

    def set_pipeline(self, program: Program) -> None:
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=ELECTION_ID,
            action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(program.p4info)
        req.config.p4_device_config = program.device_config
        self.stub.SetForwardingPipelineConfig(req, timeout=PIPELINE_TIMEOUT_S)
        self.groups.clear()  # a pipeline loaded anew starts with no multicast groups
        self._last_group = 0

    def group(self, ports: Sequence[int]) -> tuple[int, grpc.Future | None]:
        """The multicast group replicating to exactly ``ports``, and, if this is the set's
        first flood, the Write that makes it, in flight (a packet-out naming the group
        must wait for its answer: see ``group_written``), else None."""
        key = tuple(sorted(set(ports)))
        group_id = self.groups.get(key)
        if group_id is not None:
            return group_id, None
        self._last_group += 1
        group_id = self.groups[key] = self._last_group
        req = self._request()
        entry = req.updates.add(type=pb.Update.INSERT).entity \
            .packet_replication_engine_entry.multicast_group_entry
        entry.multicast_group_id = group_id
        entry.replicas.extend(pb.Replica(egress_port=port) for port in key)
        return group_id, self.stub.Write.future(req, timeout=RPC_TIMEOUT_S)

    def group_written(self, group_id: int, call: grpc.Future) -> bool:
        """Waits for ``call`` (the Write of multicast group ``group_id``); a group the switch
        refused is forgotten (the next flood to its ports writes a new one)."""
        try:
            call.result()
            return True
        except grpc.RpcError as err:
            ports = next((k for k, g in self.groups.items() if g == group_id), ())
            self.groups.pop(ports, None)
            log.warning("%s: multicast group for ports %s refused (%s); flood not sent",
                        self.name, list(ports), err.details())
            return False

    def delete(self, entry: pb.TableEntry) -> None:
        req = self._request()
        req.updates.add(type=pb.Update.DELETE).entity.table_entry.CopyFrom(entry)
        self.stub.Write(req, timeout=RPC_TIMEOUT_S)

    def send(self, rules: list[tuple[int, PathRule]]) -> grpc.Future:
        """One Write of ``rules`` (each with its operation, CONTINUE_ON_ERROR), in flight
        when this returns."""
        req = self._request()
        for op, rule in rules:
            rule.fill(req.updates.add(type=op).entity.table_entry, self.app.program)
        return self.stub.Write.future(req, timeout=RPC_TIMEOUT_S)

    def _request(self) -> pb.WriteRequest:
        return pb.WriteRequest(device_id=self.device_id, election_id=ELECTION_ID)


class P4RuntimeSouthbound:
    def __init__(self, program: Program, switches: dict[str, dict], mode: str,
                 stats_file: str | None) -> None:
        self.program = program
        self.stats_file = stats_file
        self._lock = threading.Lock()
        self._pipelines = threading.BoundedSemaphore(PIPELINES_AT_ONCE)
        self.logic = Forwarding(self, mode=mode, hairpin=[
            PortRef(name, port) for name, s in switches.items()
            for port in s.get("hairpin_ports", [])])
        self.sessions = {name: SwitchSession(self, name, s["address"], s["device_id"],
                                             s["ports"]) for name, s in switches.items()}
        # Under the lock: the sessions with pending rules, so that a flush (one per
        # packet-in and packet-out) costs the switches written, not every switch.
        self._waiting: dict[str, SwitchSession] = {}
        # Under the lock: packet-outs waiting for their multicast group's Write (and those
        # after them), sent when the logic returns (_release).
        self._held: list[tuple[SwitchSession, pb.StreamMessageRequest, int,
                               grpc.Future | None]] = []

    # -- Southbound ----------------------------------------------------------------------

    def install_path_rule(
        self, switch: str, in_port: int, eth_src: str, eth_dst: str, out_port: int,
        idle_timeout: int,
    ) -> None:
        session = self.sessions.get(switch)
        if session is None or not session.ready:
            return  # switch went away meanwhile
        rule = PathRule(in_port, _mac(eth_src), _mac(eth_dst), out_port,
                        idle_timeout * NS_PER_S)
        session.pending[rule.key] = rule  # sent by the next flush
        self._waiting[switch] = session

    def packet_out(self, switch: str, ports: Sequence[int], data: bytes) -> None:
        session = self.sessions.get(switch)
        if session is None or not session.ready:
            return
        # The rules asked for so far are in on every other switch before the packet moves
        # on; its own switch's table does not see a packet-out, so its rules go after it.
        self._flush(but=session)
        if len(ports) == 1:
            msg, group, call = self.program.packet_out(data, port=ports[0]), 0, None
        else:
            group, call = session.group(ports)
            msg = self.program.packet_out(data, group=group)
        if call is None and not self._held:
            session.outbox.put(msg)
        else:  # after its group's Write, and every later one after it (a switch's order)
            self._held.append((session, msg, group, call))

    def _release(self) -> None:
        """Sends the packet-outs held for their multicast groups' Writes, in order, each
        once its group's Write is answered: a flood's new groups are written to all its
        switches at once, not one round trip after another. A refused group's packet-outs
        are dropped."""
        held, self._held = self._held, []
        refused: set[tuple[str, int]] = set()
        for session, msg, group, call in held:
            if call is not None and not session.group_written(group, call):
                refused.add((session.name, group))
            if (session.name, group) not in refused:
                session.outbox.put(msg)

    # -- rule writes ---------------------------------------------------------------------

    def _flush(self, but: SwitchSession | None = None) -> None:
        """Sends every pending rule, one Write per switch, all switches at once, and
        returns when each has answered (no Write is left in flight); ``but``'s rules stay
        pending for the next flush."""
        flushed = [session for session in self._waiting.values() if session is not but]
        for session in flushed:
            del self._waiting[session.name]
        sent = [(session, self._send(session)) for session in flushed if session.pending]
        for session, (rules, call) in sent:
            self._settle(session, rules, call)

    def _send(self, session: SwitchSession) -> tuple[list[tuple[int, PathRule]], grpc.Future]:
        """``session``'s pending rules, as sent (each with its operation), and their Write,
        sent once its packet-outs are on their way (building and sending a Write holds the
        GIL that gRPC's stream thread needs to send them)."""
        session.outbox.wait_taken()
        rules = [(self._op(session, key), rule) for key, rule in session.pending.items()]
        session.pending.clear()
        return rules, session.send(rules)

    def _settle(self, session: SwitchSession, rules: list[tuple[int, PathRule]],
                call: grpc.Future) -> None:
        """Waits for ``call`` (the Write of ``rules``); a rule it refused because its entry
        exists (or does not) is sent once more the other way, and waited for."""
        retry = self._answered(session, rules, call)
        if not retry:
            return
        refused = self._answered(session, retry, session.send(retry))
        if refused:
            log.warning("%s: %d rules refused both ways (their entries came and went)",
                        session.name, len(refused))

    @staticmethod
    def _op(session: SwitchSession, key: RuleKey) -> int:
        return pb.Update.MODIFY if key in session.installed else pb.Update.INSERT

    @staticmethod
    def _answered(session: SwitchSession, rules: list[tuple[int, PathRule]],
                  call: grpc.Future) -> list[tuple[int, PathRule]]:
        """Waits for ``call`` (the Write of ``rules``) and records which entries the
        switch holds; returns the rules to send again with the other operation."""
        try:
            call.result()
            codes = [grpc.StatusCode.OK] * len(rules)
        except grpc.RpcError as err:
            codes = update_codes(err)
            if len(codes) != len(rules):  # the whole Write was refused
                log.warning("%s: rules refused: %s", session.name, err.details())
                return []
        retry = []
        for (_op, rule), code in zip(rules, codes, strict=True):
            if code == grpc.StatusCode.OK:
                session.installed.add(rule.key)
            elif code in RETRY_AS:
                retry.append((RETRY_AS[code], rule))
            else:
                log.warning("%s: rule for port %d, %s -> %s refused: %s", session.name,
                            rule.in_port, rule.eth_src.hex(":"), rule.eth_dst.hex(":"),
                            code.name)
        return retry

    # -- stream events -------------------------------------------------------------------

    def on_stream_message(self, session: SwitchSession, msg: pb.StreamMessageResponse) -> None:
        kind = msg.WhichOneof("update")
        if kind == "arbitration" and msg.arbitration.status.code == 0 and not session.ready:
            with self._pipelines:
                session.set_pipeline(self.program)
            with self._driving() as logic:
                session.ready = True
                logic.switch_up(session.name, session.ports)
        elif kind == "packet":
            meta = {m.metadata_id: m.value for m in msg.packet.metadata}
            port = int.from_bytes(meta.get(self.program.ingress_port_id, b"\0"), "big")
            with self._driving() as logic:
                logic.packet_in(session.name, port, msg.packet.payload)
        elif kind == "idle_timeout_notification":
            self._delete_idle(session, msg.idle_timeout_notification.table_entry)
        elif kind == "error":
            log.warning("%s: %s", session.name, msg.error.message)

    def _delete_idle(self, session: SwitchSession, entries) -> None:
        """Under the lock, so that a rule of the same match being installed now goes after
        the delete (and as an INSERT)."""
        with self._lock:
            for entry in entries:
                session.installed.discard(rule_key(entry, self.program.match_ids))
                try:
                    session.delete(entry)
                except grpc.RpcError as err:
                    if update_code(err) != grpc.StatusCode.NOT_FOUND:  # already gone
                        log.warning("%s: idle entry not deleted: %s", session.name,
                                    err.details())

    def on_switch_gone(self, session: SwitchSession) -> None:
        with self._driving() as logic:
            if session.ready:
                session.ready = False
                session.pending.clear()
                self._waiting.pop(session.name, None)
                session.installed.clear()
                logic.switch_down(session.name)

    @contextmanager
    def _driving(self) -> Iterator[Forwarding]:
        """The logic, under the lock; the rules it asked for are sent when it returns."""
        with self._lock:
            yield self.logic
            self._release()
            self._flush()

    # -- housekeeping --------------------------------------------------------------------

    def start(self) -> None:
        for session in self.sessions.values():
            session.start()

    def tick(self) -> None:
        with self._driving() as logic:
            logic.tick()
        self.write_stats()

    def write_stats(self) -> None:
        """Counters to the stats file (see control.counters_file)."""
        write_counters(self.stats_file, self.logic, self._lock)


def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="JSON: ir, p4info, switches")
    parser.add_argument("--mode", choices=MODES, default=REACTIVE)
    parser.add_argument("--stats-file", help="JSON file the counters are written to")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    config = json.loads(Path(args.config).read_text())
    app = P4RuntimeSouthbound(Program(Path(config["ir"]), Path(config["p4info"])),
                              config["switches"], args.mode, args.stats_file)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    app.start()
    while not stop.wait(TICK_S):
        app.tick()
    app.write_stats()
    os._exit(0)  # stream threads block in gRPC; nothing is left to flush


if __name__ == "__main__":
    main()
