"""The QoS loop's decisions (dplab.qos.dmbrl_loop) on stand-in meter clients, the qos
option's checks, MBE's band rule, meter configs in entries files and the ToS option of the
iperf workloads. The loop against a real switch: tests/test_qos_loop_switch.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from dplab.p4.cli import compile_command
from dplab.p4runtime import entries as entries_file
from dplab.planes import PlaneError, create
from dplab.qos.dmbrl_loop import Loop
from dplab.qos.mbe import band_rate
from dplab.qos.options import QosError, parse
from dplab.spec.loader import SpecError
from dplab.spec.loader import parse as parse_experiment
from dplab.workloads import iperf

STUDY = Path(__file__).resolve().parents[1] / "p4src" / "study004"
MBIT = 1e6


class StandInSwitch:
    """A meter client of a switch whose counters the test sets; keeps what was written."""

    def __init__(self) -> None:
        self.bytes: dict[int, int] = {}
        self.rates: dict[int, tuple[float, int]] = {}

    def read_bytes(self, index: int) -> int:
        return self.bytes.get(index, 0)

    def write_rate(self, index: int, rate_bps: float, burst_bytes: int) -> None:
        self.rates[index] = (rate_bps, burst_bytes)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def loop_of(qos: dict, switch: StandInSwitch, clock: Clock) -> tuple[Loop, io.StringIO]:
    samples = io.StringIO()
    return Loop(parse(qos), {"s1": switch}, samples, clock=clock), samples


DMBRL = {"policy": "dmbrl", "classes": [1, 0], "capacity_mbit": 10, "rmin_mbit": 1,
         "rmax_mbit": 8, "interval_ms": 1000, "interval_min_ms": 250, "interval_max_ms": 4000,
         "theta_high_mbit": 6, "theta_low_mbit": 0.5, "burst_bytes": 5000}


def test_dmbrl_sets_the_measured_load_within_bounds_and_adapts_its_interval():
    switch, clock = StandInSwitch(), Clock()
    loop, samples = loop_of(DMBRL, switch, clock)
    ef, best_effort = loop.states
    switch.bytes = {1: 250_000, 0: 1_000_000}  # over 1 s: 2 Mbit/s and 8 Mbit/s
    clock.now += 1.0
    loop.turn(ef)
    loop.turn(best_effort)
    assert switch.rates[1] == (2 * MBIT, 5000)
    # 8 Mbit/s is within Rmax, but only 10 - 2 Mbit/s of capacity is left below EF.
    assert switch.rates[0] == (8 * MBIT, 5000)
    assert (ef.interval_s, best_effort.interval_s) == (1.0, 0.5)  # 8 > θhigh: halved
    rows = [json.loads(line) for line in samples.getvalue().splitlines()]
    assert rows[0] == {"t": 1.0, "monotonic": 101.0, "switch": "s1", "class": 1,
                       "bytes": 250_000,
                       "used_bps": 2 * MBIT, "rate_bps": 2 * MBIT, "interval_s": 1.0}
    switch.bytes[1] += 20_000  # 0.8 Mbit/s over the 0.2 s measured (not the nominal 1 s)
    clock.now += 0.2
    loop.turn(ef)
    assert switch.rates[1][0] == 1 * MBIT  # raised to Rmin
    assert ef.interval_s == 1.0  # 0.8 Mbit/s is between θlow and θhigh


def test_a_class_gets_no_more_than_the_capacity_left_above_it():
    switch, clock = StandInSwitch(), Clock()
    loop, _ = loop_of({**DMBRL, "rmax_mbit": 10}, switch, clock)
    ef, best_effort = loop.states
    switch.bytes = {1: 875_000, 0: 875_000}  # 7 Mbit/s each
    clock.now += 1.0
    loop.turn(ef)
    loop.turn(best_effort)
    assert (switch.rates[1][0], switch.rates[0][0]) == (7 * MBIT, 3 * MBIT)


def test_idle_classes_lengthen_their_interval_up_to_the_bound():
    switch, clock = StandInSwitch(), Clock()
    loop, _ = loop_of(DMBRL, switch, clock)
    ef = loop.states[0]
    intervals = []
    for _ in range(4):
        clock.now = ef.due
        loop.turn(ef)
        intervals.append(ef.interval_s)
    assert intervals == [2.0, 4.0, 4.0, 4.0]
    assert switch.rates[1][0] == 1 * MBIT  # nothing sent: Rmin


def test_mbe_picks_the_band_covering_the_load_on_a_fixed_interval():
    switch, clock = StandInSwitch(), Clock()
    qos = {"policy": "mbe", "classes": [1, 0], "bands_mbit": [4, 1, 2], "capacity_mbit": 10}
    loop, _ = loop_of(qos, switch, clock)
    ef, best_effort = loop.states
    switch.bytes = {1: 162_500, 0: 750_000}  # 1.3 and 6 Mbit/s
    clock.now += 1.0
    loop.turn(ef)
    loop.turn(best_effort)
    assert (switch.rates[1][0], switch.rates[0][0]) == (2 * MBIT, 4 * MBIT)
    assert ef.interval_s == best_effort.interval_s == 1.0
    assert band_rate(3 * MBIT, (1 * MBIT, 4 * MBIT), remaining_bps=2.5 * MBIT) == 2.5 * MBIT


def test_the_loop_reads_its_baselines_first_and_static_runs_none():
    switch = StandInSwitch()
    switch.bytes = {1: 7, 0: 9}
    loop, _ = loop_of(DMBRL, switch, Clock())
    assert [(s.class_id, s.last_bytes, s.rate_bps) for s in loop.states] == [
        (1, 7, None), (0, 9, None)]
    with pytest.raises(ValueError, match="runs no loop"):
        loop_of({"policy": "static"}, switch, Clock())


@pytest.mark.parametrize(("qos", "message"), [
    ("dmbrl", "must be a mapping"),
    ({"policy": "fast"}, "'policy' must be one of static, dmbrl, mbe, not 'fast'"),
    ({"rate": 1}, "unknown key 'rate'"),
    ({"rmin_mbit": 5, "rmax_mbit": 2}, "rate bounds must be 0 <= low <= high"),
    ({"theta_high_mbit": -1}, "'theta_high_mbit' must be a number >= 0"),
    ({"interval_ms": 10}, "'interval_ms' 10 is outside 125.0 .. 4000.0"),
    ({"classes": [1, 1]}, "'classes' must be a non-empty list of distinct"),
    ({"bands_mbit": []}, "'bands_mbit' must be a non-empty list"),
    ({"burst_bytes": 0.5}, "'burst_bytes' must be a whole number > 0"),
])
def test_bad_qos_options_name_key_and_value(qos, message):
    with pytest.raises(QosError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(qos)


def test_the_plane_and_the_experiment_file_refuse_a_bad_qos_option(tmp_path):
    entries = str(STUDY / "dmbrl_entries.yaml")
    program = str(STUDY / "dmbrl.p4")
    with pytest.raises(PlaneError, match="option 'qos': 'policy'"):
        create("p4", {"program": program, "entries": entries, "qos": {"policy": "x"}})
    with pytest.raises(PlaneError, match="option 'qos' needs option 'entries'"):
        create("p4", {"program": program, "qos": {"policy": "dmbrl"}})
    with pytest.raises(SpecError, match=r"planes\.0: plane p4: option 'qos': unknown key"):
        parse_experiment("name: x\ntopology: {name: single}\nworkloads: [{kind: icmp}]\n"
                         "planes: [{kind: p4, options: {qos: {speed: 1}}}]\n")


@pytest.fixture(scope="module")
def info(tmp_path_factory) -> p4info_pb2.P4Info:
    compiled = compile_command(STUDY / "dmbrl.p4", tmp_path_factory.mktemp("dmbrl"))
    return p4info_pb2.P4Info.FromString(compiled["p4info_bin"].read_bytes())


def test_entries_files_carry_meter_configs(info):
    loaded = entries_file.load(STUDY / "dmbrl_spineleaf_entries.yaml", info)
    meters = [e for e in loaded if e.entity.HasField("meter_entry")]
    assert len(meters) == 3 and all(e.modifies and e.switches is None for e in meters)
    ef = meters[0].entity.meter_entry
    assert (ef.index.index, ef.config.cir, ef.config.cburst, ef.config.pir,
            ef.config.pburst) == (1, 187500, 125000, 187500, 125000)


@pytest.mark.parametrize(("meter", "message"), [
    ({"meter": "nope", "index": 0}, "meter 'nope' is not in the program"),
    ({"index": 64}, "'index' must be a whole number in 0..63"),
    ({"cir": -1}, "'cir' must be a whole number >= 0, not -1"),
    ({"pir": 1}, "'pir' 1 is below 'cir' 10"),
    ({"pburst": None}, "'pburst' must be a whole number"),
    ({"colour": 1}, "unknown key 'colour' for a meter config"),
])
def test_bad_meter_configs_name_file_entry_and_field(info, tmp_path, meter, message):
    good = {"meter": "class_meter", "index": 1, "cir": 10, "cburst": 100, "pir": 20,
            "pburst": 200}
    path = tmp_path / "meters.json"
    path.write_text(json.dumps([good, {**good, **meter}]))
    with pytest.raises(entries_file.EntriesError, match=f"{path}: entry 1: {message}"):
        entries_file.load(path, info)
    path.write_text(json.dumps([{k: v for k, v in good.items() if k != "cburst"}]))
    with pytest.raises(entries_file.EntriesError, match="entry 0: .*'cburst' is missing"):
        entries_file.load(path, info)


def test_iperf_clients_set_the_tos_byte():
    params = iperf.validate("udp", {"duration": 1, "tos": 184}, "workload 0")
    argv = iperf.client_argv(params, "10.0.2.1", 5001)
    assert argv[argv.index("-S") + 1] == "184"
    assert "-S" not in iperf.client_argv(iperf.validate("tcp", {"duration": 1}, "w"),
                                         "10.0.2.1", 5001)
    with pytest.raises(ValueError, match="workload 0: 'tos': Input should be less than or "
                       "equal to 255"):
        iperf.validate("udp", {"duration": 1, "tos": 256}, "workload 0")
    with pytest.raises(SpecError, match=r"workloads\.0\.udp\.tos"):
        parse_experiment("name: x\ntopology: {name: single}\nplanes: [bridge]\n"
                         "workloads: [{kind: udp, duration: 1, tos: -1}]\n")
