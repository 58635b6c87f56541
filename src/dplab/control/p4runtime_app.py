"""The P4Runtime adapter: drives P4 switches running ``p4src/basic_fwd.p4`` with the same
``Forwarding`` logic as the OpenFlow app, implementing its ``Southbound`` with table
entries and packet-outs.

One gRPC channel and StreamChannel per switch; the controller becomes primary (election
id 1), loads the pipeline and then reports the switch up. basic_fwd matches on the
destination MAC only, so a path rule becomes ``mac_exact: eth_dst -> forward(out_port)``:
the paths of every source towards one host share it, which is loop-free because each is
a shortest path. Everything the table misses (LLDP, ARP broadcasts, unknown hosts) comes
in as a packet-in carrying its ingress port; packet-outs carry their egress port.
Reactive rules get the switch's idle timeout; the controller deletes them when the switch
reports them idle, as an OpenFlow switch would by itself.

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
from collections.abc import Sequence
from pathlib import Path

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from dplab.control.counters_file import write_counters
from dplab.control.forwarding import MODES, REACTIVE, Forwarding
from dplab.p4runtime.errors import update_code

ELECTION_ID = pb.Uint128(high=0, low=1)
TICK_S = 0.1  # LLDP scheduling and stats-file period (short: planes wait for a fresh file)
CONNECT_TIMEOUT_S = 30.0
NS_PER_S = 1_000_000_000
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
            self.table_id = tables["mac_exact"].preamble.id
            self.forward_id = actions["forward"]
            self.egress_port_id = headers["packet_out"]["egress_port"]
            self.ingress_port_id = headers["packet_in"]["ingress_port"]
        except KeyError as exc:
            raise ValueError(f"{p4info_path}: not basic_fwd's P4Info (no {exc})") from exc
        # A packet-out carries every field of the header (P4Runtime 16.1); all but the
        # egress port are zero.
        self.packet_out_zeros = [pb.PacketMetadata(metadata_id=field_id, value=b"\x00")
                                 for field_id in headers["packet_out"].values()
                                 if field_id != self.egress_port_id]


class SwitchSession:
    """One switch: its channel, its stream, and the stream's reader thread."""

    def __init__(self, app: P4RuntimeSouthbound, name: str, address: str, device_id: int,
                 ports: list[int]) -> None:
        self.app, self.name, self.device_id, self.ports = app, name, device_id, ports
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.outbox: queue.Queue = queue.Queue()
        self.ready = False

    def start(self) -> None:
        grpc.channel_ready_future(self.channel).result(timeout=CONNECT_TIMEOUT_S)
        stream = self.stub.StreamChannel(iter(self.outbox.get, None))
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
        self.stub.SetForwardingPipelineConfig(req)

    def write(self, op: int, entry: pb.TableEntry) -> None:
        req = pb.WriteRequest(device_id=self.device_id, election_id=ELECTION_ID)
        req.updates.add(type=op).entity.table_entry.CopyFrom(entry)
        self.stub.Write(req)


class P4RuntimeSouthbound:
    def __init__(self, program: Program, switches: dict[str, dict], mode: str,
                 stats_file: str | None) -> None:
        self.program = program
        self.stats_file = stats_file
        self._lock = threading.Lock()
        self.logic = Forwarding(self, mode=mode)
        self.sessions = {name: SwitchSession(self, name, s["address"], s["device_id"],
                                             s["ports"]) for name, s in switches.items()}

    # -- Southbound ----------------------------------------------------------------------

    def install_path_rule(
        self, switch: str, in_port: int, eth_src: str, eth_dst: str, out_port: int,
        idle_timeout: int,
    ) -> None:
        session = self.sessions.get(switch)
        if session is None or not session.ready:
            return  # switch went away meanwhile
        entry = self._entry(eth_dst)
        action = entry.action.action
        action.action_id = self.program.forward_id
        action.params.add(param_id=1, value=out_port.to_bytes(2, "big"))
        entry.idle_timeout_ns = idle_timeout * NS_PER_S
        try:
            session.write(pb.Update.INSERT, entry)
        except grpc.RpcError as err:
            if update_code(err) != grpc.StatusCode.ALREADY_EXISTS:
                log.warning("%s: rule for %s refused: %s", switch, eth_dst, err.details())
                return
            session.write(pb.Update.MODIFY, entry)

    def packet_out(self, switch: str, ports: Sequence[int], data: bytes) -> None:
        session = self.sessions.get(switch)
        if session is None or not session.ready:
            return
        for port in ports:
            msg = pb.StreamMessageRequest()
            msg.packet.payload = data
            msg.packet.metadata.add(metadata_id=self.program.egress_port_id,
                                    value=port.to_bytes(2, "big"))
            msg.packet.metadata.extend(self.program.packet_out_zeros)
            session.outbox.put(msg)

    # -- stream events -------------------------------------------------------------------

    def on_stream_message(self, session: SwitchSession, msg: pb.StreamMessageResponse) -> None:
        kind = msg.WhichOneof("update")
        if kind == "arbitration" and msg.arbitration.status.code == 0 and not session.ready:
            session.set_pipeline(self.program)
            with self._lock:
                session.ready = True
                self.logic.switch_up(session.name, session.ports)
        elif kind == "packet":
            meta = {m.metadata_id: m.value for m in msg.packet.metadata}
            port = int.from_bytes(meta.get(self.program.ingress_port_id, b"\0"), "big")
            with self._lock:
                self.logic.packet_in(session.name, port, msg.packet.payload)
        elif kind == "idle_timeout_notification":
            self._delete_idle(session, msg.idle_timeout_notification.table_entry)
        elif kind == "error":
            log.warning("%s: %s", session.name, msg.error.message)

    def _delete_idle(self, session: SwitchSession, entries) -> None:
        for entry in entries:
            try:
                session.write(pb.Update.DELETE, entry)
            except grpc.RpcError as err:
                if update_code(err) != grpc.StatusCode.NOT_FOUND:  # NOT_FOUND: already gone
                    log.warning("%s: idle entry not deleted: %s", session.name, err.details())

    def on_switch_gone(self, session: SwitchSession) -> None:
        with self._lock:
            if session.ready:
                session.ready = False
                self.logic.switch_down(session.name)

    def _entry(self, eth_dst: str) -> pb.TableEntry:
        entry = pb.TableEntry(table_id=self.program.table_id)
        entry.match.add(field_id=1).exact.value = bytes.fromhex(eth_dst.replace(":", ""))
        return entry

    # -- housekeeping --------------------------------------------------------------------

    def start(self) -> None:
        for session in self.sessions.values():
            session.start()

    def tick(self) -> None:
        with self._lock:
            self.logic.tick()
        self.write_stats()

    def write_stats(self) -> None:
        """Counters to the stats file (see control.counters_file)."""
        write_counters(self.stats_file, self.logic, self._lock)


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
