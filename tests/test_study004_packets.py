"""Study 004's data plane (p4src/study004/dmbrl.p4) on a rig switch, programmed from its
entries file by the p4 plane's installer; meters configured over P4Runtime (MeterEntry).
Port 1 is h1 (10.0.1.1); ports 2, 3, 4 are three routes to 10.0.2.0/24 (port 2 primary).

Meter rates are a few bytes a second, so within a burst the buckets refill by far less than
one 100-byte frame (20 B/s would need 5 s): the colours are those of the buckets' sizes."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import (
    TOP_ELECTION,
    Client,
    Names,
    installed_rig,
    is_primary,
)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from study003_rig import read_counter
from switch_rig import exchange, ir_folder

from dplab.p4runtime import entries as entries_file

pytestmark = pytest.mark.net
STUDY = Path(__file__).resolve().parents[1] / "p4src" / "study004"
EF, AF41, BEST_EFFORT = 0xB8, 0x88, 0x00  # ToS bytes (DSCP 46, 34, 0; ECN 0)
GREEN, YELLOW, RED = 0, 1, 2
SIZE = 100


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return ir_folder(tmp_path_factory, "study004")


def frame(tos: int, sport: int = 1000, dst: str = "10.0.2.1") -> bytes:
    """A UDP frame of SIZE bytes from h1 with IPv4 ToS byte ``tos``."""
    head = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
            / IP(src="10.0.1.1", dst=dst, tos=tos) / UDP(sport=sport, dport=5000))
    return bytes(head / Raw(bytes(SIZE - len(head))))


class Switch:
    """A primary P4Runtime client of the rig's switch, by names of the program's P4Info."""

    def __init__(self, client: Client, names: Names) -> None:
        self.client, self.names = client, names

    def counter(self, name: str, index: int) -> tuple[int, int]:
        return read_counter(self.client, self.names.info, name, index)

    def colours(self, passes: int = 1) -> list[int]:
        """colour_packets: packets per (pass, colour), GREEN, YELLOW, RED of each pass."""
        return [self.counter("colour_packets", i)[0] for i in range(3 * passes)]

    def set_meter(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        entity = pb.Entity()
        entity.meter_entry.meter_id = self.names["class_meter"]
        entity.meter_entry.index.index = index
        entity.meter_entry.config.CopyFrom(
            pb.MeterConfig(cir=cir, cburst=cburst, pir=pir, pburst=pburst))
        self.client.write(entity, op=pb.Update.MODIFY)

    def meter_counts(self, index: int) -> list[int]:
        """The switch's own per-colour packet counts of a meter cell (MeterCounterData)."""
        entity = pb.Entity()
        entity.meter_entry.meter_id = self.names["class_meter"]
        entity.meter_entry.index.index = index
        entity.meter_entry.counter_data.SetInParent()
        (cell,) = self.client.read(entity)
        data = cell.meter_entry.counter_data
        return [data.green.packet_count, data.yellow.packet_count, data.red.packet_count]


@contextmanager
def programmed(out: Path):
    """(rig, Switch): dmbrl.p4 with its entries file's entries, installed as the p4 plane
    does, then a primary client for meters and reads."""
    with installed_rig(STUDY / "dmbrl.p4", STUDY / "dmbrl_entries.yaml", out,
                       n_ports=4) as (rig, address, info):
        client = Client(address, election=TOP_ELECTION)
        try:
            assert is_primary(client.next("arbitration"))
            yield rig, Switch(client, Names(info))
        finally:
            client.close()


def test_classification_by_tos_counts_each_class(out):
    sent = {EF: 3, EF | 0x01: 2, AF41: 4, BEST_EFFORT: 5, 0xB4: 1}  # 0xb4: DSCP 45
    with programmed(out) as (rig, switch):
        frames = [frame(tos, sport=2000) for tos, n in sent.items() for _ in range(n)]
        got = exchange(rig, 1, frames)
        assert len(got[2]) == 3 + 2 + 4 and got[1] == []  # high priority: primary route
        assert sum(len(got[p]) for p in (2, 3, 4)) == len(frames)
        assert switch.counter("class_bytes", 1)[1] == (3 + 2) * SIZE  # EF, any ECN
        assert switch.counter("class_bytes", 2)[1] == 4 * SIZE
        assert switch.counter("class_bytes", 0)[1] == (5 + 1) * SIZE
        assert switch.colours(passes=2) == [len(frames), 0, 0, 0, 0, 0]  # unconfigured


def test_meter_colours_a_low_priority_burst_and_drops_red(out):
    # Committed bucket 3 frames, peak bucket 5: 3 GREEN, 2 YELLOW, then RED (dropped).
    with programmed(out) as (rig, switch):
        switch.set_meter(0, cir=10, cburst=3 * SIZE, pir=20, pburst=5 * SIZE)
        got = exchange(rig, 1, [frame(BEST_EFFORT)] * 8)
        assert sum(len(got[p]) for p in (1, 2, 3, 4)) == 5
        assert switch.colours(passes=2) == [3, 2, 3, 0, 0, 0]  # low priority: no 2nd look
        assert switch.meter_counts(0) == [3, 2, 3]
        assert switch.counter("class_bytes", 0)[1] == 8 * SIZE


def test_red_high_priority_gets_one_more_look_then_is_dropped(out):
    # Committed bucket 2 frames, peak 3: GREEN, GREEN, YELLOW, RED, RED; the two RED ones
    # are recirculated and metered again at the same cell, still RED (no refill), dropped.
    with programmed(out) as (rig, switch):
        switch.set_meter(1, cir=10, cburst=2 * SIZE, pir=20, pburst=3 * SIZE)
        got = exchange(rig, 1, [frame(EF)] * 5)
        assert (len(got[1]), len(got[2]), len(got[3]), len(got[4])) == (0, 3, 0, 0)
        assert switch.colours(passes=2) == [2, 1, 2, 0, 0, 2]
        assert switch.meter_counts(1) == [2, 1, 4]
        assert switch.counter("class_bytes", 1)[1] == 5 * SIZE  # first passes only


def test_recirculated_frame_that_passes_its_second_look_goes_out(out):
    # The second look forced to pass: an entry for recirculated EF names meter cell 3,
    # left unconfigured (GREEN), standing in for a bucket refilled in between.
    with programmed(out) as (rig, switch):
        switch.client.write(second_look_entry(switch.names.info, out, meter_index=3))
        switch.set_meter(1, cir=10, cburst=2 * SIZE, pir=20, pburst=3 * SIZE)
        sent = frame(EF)
        got = exchange(rig, 1, [sent] * 5)
        assert got[2] == [sent] * 5 and got[1] == got[3] == got[4] == []
        assert switch.colours(passes=2) == [2, 1, 2, 2, 0, 0]
        assert (switch.meter_counts(1), switch.meter_counts(3)) == ([2, 1, 2], [2, 0, 0])


def second_look_entry(info: p4info_pb2.P4Info, folder: Path, meter_index: int) -> pb.Entity:
    """A tos_class entry for recirculated EF packets, above the file's EF entry."""
    path = folder / "second_look.json"
    path.write_text(json.dumps([{
        "table": "tos_class", "priority": 20,
        "match": {"hdr.ipv4.diffserv": "0xb8 &&& 0xfc", "meta.recirculated": 1},
        "action": "set_class", "params": {"class_id": 1, "meter_index": meter_index}}]))
    (entry,) = entries_file.load(path, info)
    return entry.entity


def test_low_priority_flows_spread_over_all_routes_each_on_one(out):
    flows = range(40000, 40030)
    with programmed(out) as (rig, switch):
        got = exchange(rig, 1, [frame(BEST_EFFORT, sport=s) for s in flows for _ in range(2)])
        ports_of: dict[int, set[int]] = {}
        for port in (2, 3, 4):
            for data in got[port]:
                ports_of.setdefault(Ether(data)[UDP].sport, set()).add(port)
        assert set(ports_of) == set(flows)  # every frame out, none lost
        assert sum(len(got[p]) for p in (2, 3, 4)) == 2 * len(flows)
        assert all(len(ports) == 1 for ports in ports_of.values()), ports_of
        assert set().union(*ports_of.values()) == {2, 3, 4}
        high = exchange(rig, 1, [frame(EF, sport=s) for s in flows])
        assert len(high[2]) == len(flows)  # high priority stays on the primary route
