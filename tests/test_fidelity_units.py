"""The host-bound decision from synthetic samples, the counters' parsers, and the store's
fidelity columns (old stores load with them null)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from dplab.fidelity import FidelityRecord, Measure
from dplab.fidelity.controller import controller_load
from dplab.fidelity.counters import parse_ss_packet, socket_drop_deltas
from dplab.fidelity.cpu import CoreTicks, busy_shares, parse_cores
from dplab.fidelity.verdict import (
    Interval,
    LinkInterval,
    SenderRate,
    cpu_saturation,
    link_load,
    udp_sender_rate,
)
from dplab.planes.base import SeriesPoint
from dplab.store import RunStore

PROC_STAT = """cpu  500 0 300 1000 10 0 20 0 0 0
cpu0 300 0 200 400 5 0 10 0 0 0
cpu1 200 0 100 600 5 0 10 0 0 0
intr 12345
"""


def test_per_core_busy_share_counts_all_but_idle_and_iowait():
    before = parse_cores(PROC_STAT)
    assert before == {"cpu0": CoreTicks(510, 915), "cpu1": CoreTicks(310, 915)}
    after = {"cpu0": CoreTicks(610, 1015), "cpu1": CoreTicks(310, 1015),
             "cpu2": CoreTicks(1, 1)}
    assert busy_shares(before, after) == {"cpu0": 1.0, "cpu1": 0.0}


def _intervals(busy_pairs: list[tuple[float, float]]) -> list[Interval]:
    return [Interval(0.5, {"cpu0": a, "cpu1": b}) for a, b in busy_pairs]


def test_cores_saturated_most_of_the_time_is_a_reason_and_a_light_load_is_not():
    share, reason = cpu_saturation(_intervals([(0.99, 0.97)] * 9 + [(0.5, 0.99)]))
    assert share == 0.9
    assert reason == "all 2 cores ≥ 95% busy for 90% of the traffic time"
    # one core saturated all the time (a single-threaded sender) does not saturate the host
    assert cpu_saturation(_intervals([(1.0, 0.3)] * 10)) == (0.0, None)
    share, reason = cpu_saturation(_intervals([(0.99, 0.99)] * 7 + [(0.2, 0.2)] * 3))
    assert reason is None and abs(share - 0.7) < 1e-9
    assert cpu_saturation([]) == (None, None)
    assert cpu_saturation(_intervals([(None, 0.99)])) == (None, None)


def test_udp_sender_short_of_its_rate_is_a_reason_with_its_figures():
    rate = udp_sender_rate("w0-udp-h1-h5", {"rate_mbit": 1000, "size": 1000},
                           {"packets_sent": 76_500.0, "transmission_time_s": 1.0})
    assert rate.achieved == 612.0
    assert rate.reason() == "w0-udp-h1-h5 sent 612 of 1000 Mbit/s requested"
    # iperf's defaults: 1 Mbit/s of 1470-byte datagrams; 85 datagrams in 1 s is on target
    ok = udp_sender_rate("f", {}, {"packets_sent": 85.0, "transmission_time_s": 1.0})
    assert ok.requested == 1.0 and ok.reason() is None
    unmeasured = udp_sender_rate("f", {"rate_mbit": 10}, {"packets_sent": None})
    assert unmeasured.achieved is None and unmeasured.reason() is None
    assert SenderRate("p", "pps", 1e6, 8e5).reason() == "p sent 800000 of 1000000 pps requested"


def test_a_link_below_capacity_while_its_queue_overflows_is_a_reason():
    # 100 Mbit/s link; its queue drops for 2 s while it carries 50 Mbit/s
    slow = [LinkInterval(0.5, 3_125_000, 10)] * 4 + [LinkInterval(0.5, 0, 0)] * 4
    load = link_load("h1/eth0", 100.0, slow)
    assert (load.overflow_s, load.carried_mbit) == (2.0, 50.0)
    assert load.reason() == ("link h1/eth0 carried 50 of 100 Mbit/s while its queue "
                             "overflowed (2.0 s)")
    full = [LinkInterval(0.5, 6_000_000, 10)] * 4  # 96 Mbit/s: the link is doing its job
    assert link_load("h1/eth0", 100.0, full).reason() is None
    brief = [LinkInterval(0.5, 100, 3)]  # one burst is not a sustained overload
    assert link_load("h1/eth0", 100.0, brief).reason() is None
    idle = link_load("h1/eth0", 100.0, [LinkInterval(0.5, 1000, 0)] * 4)
    assert idle.carried_mbit is None and idle.reason() is None


SS_OUT = """p_raw 0 0 *:s1-eth1 * ino:1001 sk:1
\tver:0 cpy_thresh:0 flags( running ) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d17)
p_raw 0 0 *:s1-eth2 * ino:1002 sk:2
\tver:0 cpy_thresh:0 flags( running ) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d3)
"""


def test_packet_socket_drops_per_interface_between_two_readings():
    after = parse_ss_packet(SS_OUT)
    assert after == {1001: ("s1-eth1", 17), 1002: ("s1-eth2", 3)}
    before = {1001: ("s1-eth1", 7), 999: ("s1-eth9", 50)}  # 999 closed meanwhile
    assert socket_drop_deltas(before, after) == {"s1-eth1": 10, "s1-eth2": 3}


RECORD = FidelityRecord(True, ["all 2 cores ≥ 95% busy for 90% of the traffic time",
                               "w0-udp-h1-h2 sent 199 of 20000 Mbit/s requested"],
                        [Measure("cpu_busy_pct", "cpu0", 99.0),
                         Measure("cpu_saturated_share", "all", None)])


def _add(store: RunStore, run_id: str, fidelity: FidelityRecord | None) -> None:
    store.add_run(run_id, plane_label="bridge", repetition=1, status="ok", error=None,
                  started=1.0, duration_s=2.0, plane_stats={}, results=[], fidelity=fidelity)


def test_store_keeps_the_verdict_and_measures_and_old_stores_load_as_not_monitored(tmp_path):
    store = RunStore(tmp_path)
    _add(store, "bridge-r1", RECORD)
    [run] = RunStore.open(tmp_path).rows("runs")
    assert run["host_bound"] is True
    assert run["host_bound_reasons"] == "; ".join(RECORD.reasons)
    assert [(r["measure"], r["subject"], r["value"]) for r in store.rows("fidelity")] == [
        ("cpu_busy_pct", "cpu0", 99.0), ("cpu_saturated_share", "all", None)]
    # a store written before the monitor: no fidelity table, runs without its columns
    (tmp_path / "fidelity.parquet").unlink()
    runs = pq.read_table(tmp_path / "runs.parquet").drop_columns(["host_bound",
                                                                  "host_bound_reasons"])
    pq.write_table(runs, tmp_path / "runs.parquet")
    old = RunStore.open(tmp_path)
    assert old.rows("fidelity") == []
    assert old.rows("runs")[0]["host_bound"] is None
    _add(old, "bridge-r2", FidelityRecord(False, []))
    assert [r["host_bound"] for r in RunStore.open(tmp_path).rows("runs")] == [None, False]


def test_udp_receive_buffer_drops_come_from_the_udp_lines_of_snmp():
    from dplab.fidelity.counters import parse_snmp_udp

    text = ("Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n"
            "Udp: 64 0 7 65 5\nUdpLite: InDatagrams\nUdpLite: 0\n")
    assert parse_snmp_udp(text)["RcvbufErrors"] == 5
    assert parse_snmp_udp("Ip: Forwarding\nIp: 1\n") == {}


def test_tables_mark_the_planes_with_host_bound_runs_and_say_why_first(tmp_path):
    from rich.console import Console

    from dplab import report
    from dplab.workloads.flows import Flow, FlowResult

    store = RunStore(tmp_path)
    store.write_experiment({"name": "marks", "planes": ["bridge", "ovs"]})
    for plane, record in (("bridge", FidelityRecord(False, [])), ("ovs", RECORD)):
        result = FlowResult(Flow("w0-udp-h1-h2", "udp", "h1", "h2", {}), True, None,
                            {"loss_pct": 1.0}, [])
        store.add_run(f"{plane}-r1", plane_label=plane, repetition=1, status="ok",
                      error=None, started=1.0, duration_s=2.0, plane_stats={},
                      results=[result], fidelity=record)
    console = Console(record=True, width=200)
    report.print_tables(tmp_path, console)
    text = console.export_text()
    assert "Host-bound: 1 of 2 ok runs was limited by this machine" in text
    assert "ovs-r1: all 2 cores ≥ 95% busy" in text
    assert text.index("Host-bound") < text.index("udp traffic")
    [row] = [line for line in text.splitlines() if "loss_pct" in line]
    assert row.count("†") == 1 and row.index("†") > row.index("(n=1)", row.index("(n=1)") + 1)
    assert "† the plane's figures include host-bound runs" in text


def test_a_sender_held_back_by_its_own_shaped_link_is_not_host_bound():
    # 150 Mbit/s asked over a 100 Mbit/s link: the qdisc pushes back, ~97 Mbit/s of
    # 1470-byte datagrams is all the link lets out
    summary = {"packets_sent": 8_200.0, "transmission_time_s": 1.0}
    held = udp_sender_rate("f", {"rate_mbit": 150}, summary, link_mbit=100.0)
    assert held.reason() is None
    slow = udp_sender_rate("f", {"rate_mbit": 150}, {**summary, "packets_sent": 4_000.0},
                           link_mbit=100.0)
    assert slow.reason() == "f sent 47 of the 97 Mbit/s its link carries (150 requested)"


def test_controller_load_counts_the_seconds_at_a_whole_core_during_traffic() -> None:
    points = [SeriesPoint(t, "cpu_pct:controller", v)
              for t, v in ((-1.0, 99.0), (0.5, 99.0), (1.5, 40.0), (2.5, 97.0), (3.5, None))]
    points += [SeriesPoint(t, "packet_ins_per_s:controller", v)
               for t, v in ((-1.0, 900.0), (0.5, 120.0), (1.5, 300.0))]
    load = controller_load(points)
    # the interval ending at 0.5 counts only from t = 0 (traffic), the one at 2.5 whole
    assert load == {"controller_saturated_s": pytest.approx(1.5),
                    "controller_cpu_max_pct": 99.0, "packet_ins_max_per_s": 300.0}
    assert controller_load([SeriesPoint(0.5, "rate_bps:s1:c1", 1.0)]) == {}
