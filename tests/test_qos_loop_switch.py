"""The QoS loop against a real switch: dmbrl.p4 on a rig switch, programmed from its
entries file by the p4 plane's installer (its static meter configs included); the loop's
meter client reads the class counters and writes MeterEntry rates, read back over
P4Runtime. The loop's clock is the test's: the interval is what the test says it was, so
nothing depends on speed. Port 1 is h1 (10.0.1.1); 10.0.2.0/24 is behind ports 2-4."""

from __future__ import annotations

import io
import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import installed_rig
from switch_rig import exchange, ir_folder
from test_study004_packets import EF, SIZE, frame

from dplab.qos.dmbrl_loop import Loop
from dplab.qos.meter_client import MeterClient
from dplab.qos.options import parse

pytestmark = pytest.mark.net
STUDY = Path(__file__).resolve().parents[1] / "p4src" / "study004"
QOS = {"policy": "dmbrl", "classes": [1, 0], "capacity_mbit": 10, "rmin_mbit": 0.00001,
       "rmax_mbit": 8, "interval_ms": 1000, "theta_low_mbit": 0.0001,
       "theta_high_mbit": 6, "burst_bytes": 300}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return ir_folder(tmp_path_factory, "qos-loop")


@contextmanager
def loop_on_rig(out: Path):
    """(rig, meter client, loop, its clock, its samples): the entries file installed as the
    plane does, then the loop's own primary client."""
    with installed_rig(STUDY / "dmbrl.p4", STUDY / "dmbrl_entries.yaml", out,
                       n_ports=4) as (rig, address, info):
        client = MeterClient(address, 1, info, "class_meter", "class_bytes")
        try:
            client.connect()
            clock, samples = Clock(), io.StringIO()
            loop = Loop(parse(QOS), {"s1": client}, samples, clock=clock)
            yield rig, client, loop, clock, samples
        finally:
            client.close()


def meter_config(client: MeterClient, index: int) -> tuple[int, int, int, int]:
    entity = pb.Entity()
    entity.meter_entry.meter_id = client.meter_id
    entity.meter_entry.index.index = index
    (reply,) = client.stub.Read(pb.ReadRequest(device_id=1, entities=[entity]))
    config = reply.entities[0].meter_entry.config
    return config.cir, config.cburst, config.pir, config.pburst


def test_the_entries_file_sets_the_static_meter_and_the_loop_rewrites_it(out):
    with loop_on_rig(out) as (rig, client, loop, clock, samples):
        assert meter_config(client, 1) == (187500, 125000, 187500, 125000)
        got = exchange(rig, 1, [frame(EF)] * 5)
        assert len(got[2]) == 5  # the static bucket holds 1250 frames: all GREEN
        clock.now = 2.0  # 5 frames = 500 B counted over 2 s: Λ = 2000 bit/s
        ef = loop.states[0]
        loop.turn(ef)
        # R = min(max(2000, Rmin 10), Rmax) = 2000 bit/s = 250 B/s; burst 300 B.
        assert meter_config(client, 1) == (250, 300, 250, 300)
        sample = json.loads(samples.getvalue().splitlines()[0])
        assert (sample["bytes"], sample["used_bps"], sample["rate_bps"]) == (
            5 * SIZE, 2000.0, 2000.0)
        assert ef.interval_s == 1.0  # θlow 100 bit/s < 2000 bit/s < θhigh: T kept


def test_the_rate_the_loop_writes_is_the_rate_the_switch_enforces(out):
    # 500 B over 200 s: Λ = R = 20 bit/s (2 B/s), burst 300 B. The next EF burst of 8
    # frames of 100 B: 3 GREEN, then the buckets are empty (refilling under one frame in
    # 50 s), the other 5 RED on both looks and dropped.
    with loop_on_rig(out) as (rig, client, loop, clock, samples):
        exchange(rig, 1, [frame(EF)] * 5)
        clock.now = 200.0
        loop.turn(loop.states[0])
        assert meter_config(client, 1) == (2, 300, 2, 300)
        got = exchange(rig, 1, [frame(EF)] * 8)
        assert (len(got[1]), len(got[2]), len(got[3]), len(got[4])) == (0, 3, 0, 0)
