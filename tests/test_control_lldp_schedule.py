"""LLDP pacing and link expiry at scale, and the kept shortest paths (unit tests, fake clock)."""

from __future__ import annotations

import random
from collections import Counter

import networkx as nx
import pytest
from test_control_forwarding import FakeClock, FakeFabric

from dplab.control import lldp_schedule
from dplab.control.forwarding import REACTIVE, Forwarding
from dplab.control.lldp_schedule import PROBES_IN_FLIGHT, ProbeSchedule
from dplab.control.topology_view import PortRef, TopologyView


def probe_times(ports: list[PortRef], seconds: float, rtt: float,
                tick: float = 0.1) -> list[tuple[float, PortRef]]:
    """Probes a schedule sends over ``seconds`` when each comes back ``rtt`` later."""
    schedule, sent, now = ProbeSchedule(), [], 0.0
    schedule.sent(ports[0], -1.0)  # the path measured before the first round
    schedule.heard(ports[0], -1.0 + rtt)
    back: list[tuple[float, PortRef]] = []
    while now < seconds:
        for when, port in [b for b in back if b[0] <= now]:
            schedule.heard(port, when)
        back = [b for b in back if b[0] > now]
        for port in schedule.due(now, lambda: ports):
            schedule.sent(port, now)
            sent.append((now, port))
            back.append((now + rtt, port))
        now = round(now + tick, 6)
    return sent


def test_the_probe_rate_is_the_probes_in_flight_over_their_measured_round_trip():
    schedule, port = ProbeSchedule(), PortRef("s1", 1)
    assert schedule.rtt_s is None
    assert schedule.rate() == PROBES_IN_FLIGHT / lldp_schedule.UNMEASURED_RTT_S == 200
    schedule.sent(port, 10.0)
    schedule.heard(port, 10.08)
    assert schedule.rtt_s == pytest.approx(0.08)
    assert schedule.rate() == pytest.approx(PROBES_IN_FLIGHT / 0.08)
    schedule.sent(port, 11.0)
    schedule.heard(port, 11.4)  # slower: the smoothed round trip moves an eighth of the way
    assert schedule.rtt_s == pytest.approx(0.08 + (0.4 - 0.08) / 8)
    schedule.heard(port, 12.0)  # no probe out: no sample
    assert schedule.rtt_s == pytest.approx(0.08 + (0.4 - 0.08) / 8)


def test_a_slow_path_gets_longer_rounds_with_probes_spread_over_them():
    ports = [PortRef(f"s{s}", p) for s in range(180) for p in range(1, 13)]  # k=12: 2,160
    rtt = 0.4
    rate = PROBES_IN_FLIGHT / rtt  # 160 a second
    length = len(ports) / rate
    assert length > lldp_schedule.LLDP_INTERVAL_S
    sent = probe_times(ports, 3 * length + 0.35, rtt)
    per_second = Counter(int(t) for t, _ in sent[1:])
    assert max(per_second.values()) <= rate + 2
    # every port once a round, a round apart
    times = {}
    for t, port in sent:
        times.setdefault(port, []).append(t)
    assert all(len(ts) >= 3 for ts in times.values()) and len(times) == len(ports)
    gaps = [b - a for ts in times.values() for a, b in zip(ts, ts[1:], strict=False)]
    assert all(abs(gap - length) <= 0.35 for gap in gaps)


def test_a_path_that_stops_answering_holds_twice_the_probes_in_flight_at_most():
    ports = [PortRef(f"s{s}", p) for s in range(320) for p in range(1, 17)]  # k=16: 5,120
    schedule, now, sent = ProbeSchedule(), 0.0, []
    schedule.sent(ports[0], -1.0)
    schedule.heard(ports[0], -0.99)  # measured fast (10 ms): a 3 s round, 1,707 a second
    while now < 2.0:
        for port in schedule.due(now, lambda: ports):
            schedule.sent(port, now)  # and none comes back
            sent.append(now)
        now = round(now + 0.1, 6)
    window = lldp_schedule.WINDOW_SLACK * PROBES_IN_FLIGHT
    lost_after = lldp_schedule.LOST_AFTER_RTTS * 0.01
    assert max(sum(1 for t in sent if now_ - lost_after < t <= now_)
               for now_ in {round(t, 6) for t in sent}) <= window
    assert window <= len(sent) <= window * (2.0 / lost_after + 1)


def test_a_fast_path_keeps_three_second_rounds_on_a_large_network():
    ports = [PortRef(f"s{s}", p) for s in range(180) for p in range(1, 13)]  # k=12: 2,160
    sent = probe_times(ports, 9.05, rtt=0.02)
    times: dict[PortRef, list[float]] = {}
    for t, port in sent:
        times.setdefault(port, []).append(t)
    assert len(times) == len(ports) and all(len(ts) >= 3 for ts in times.values())
    gaps = [b - a for ts in times.values() for a, b in zip(ts, ts[1:], strict=False)]
    assert all(abs(gap - lldp_schedule.LLDP_INTERVAL_S) <= 0.11 for gap in gaps)
    per_tick = Counter(t for t, _ in sent)
    assert max(per_tick.values()) <= len(ports) / lldp_schedule.LLDP_INTERVAL_S * 0.1 + 2


def test_a_small_network_keeps_three_second_rounds_and_ten_second_expiry():
    ports = [PortRef(f"s{s}", p) for s in range(4) for p in range(1, 4)]
    sent = probe_times(ports, 9.0, rtt=0.01)
    assert Counter(port for _, port in sent) == dict.fromkeys(ports, 3)
    schedule = ProbeSchedule()
    schedule.due(0.0, lambda: ports)
    assert schedule.link_timeout(0.0) == 10.0


def test_a_round_slowed_down_keeps_its_length_so_far_in_the_link_timeout():
    ports = [PortRef(f"s{s}", p) for s in range(100) for p in range(1, 9)]
    schedule, fast = ProbeSchedule(), PortRef("s0", 1)
    schedule.sent(fast, -20.0)
    schedule.heard(fast, -10.0)  # a probe came back after 10 s: 6.4 a second
    schedule.due(0.0, lambda: ports)  # a round of 800 ports: 125 s at that rate
    for _ in range(40):  # 20 s on, the path is fast again: 0.1 s round trips
        schedule.sent(fast, 20.0)
        schedule.heard(fast, 20.0 + 0.1)
    assert schedule.interval == lldp_schedule.LLDP_INTERVAL_S  # the rest of it goes fast
    # but the ports it has not reached were last probed 20 s ago at least
    assert schedule.link_timeout(20.1) >= 3 * 20.0


def test_a_port_come_up_is_probed_again_soon_outside_the_round():
    ports = [PortRef("s1", 1)]
    schedule = ProbeSchedule()
    assert schedule.due(0.0, lambda: ports) == ports
    schedule.probe_again_soon([PortRef("s2", 1)], 0.1)
    assert schedule.due(0.2, lambda: ports) == []
    assert schedule.due(0.6, lambda: ports) == [PortRef("s2", 1)]
    assert schedule.due(1.0, lambda: ports) == []


def test_a_cut_link_lasts_three_of_the_longer_rounds_then_goes():
    fabric, clock = FakeFabric(), FakeClock()
    logic = Forwarding(fabric, REACTIVE, clock)
    fabric.logic = logic
    hosts = list(range(4, 400))  # many edge ports: 4 x 399 ports
    # A slow path: each probe comes back 0.64 s after it left (100 a second).
    heard = logic.probes.heard
    logic.probes.heard = lambda port, now: heard(port, now + 0.64)  # type: ignore[method-assign]
    for i in range(1, 5):
        logic.switch_up(f"s{i}", [1, 2, 3, *hosts])
    clock.now += 1
    logic.tick()
    assert logic.counters()["lldp_links"] == 4
    length = 4 * 399 / logic.probes.rate()  # ~16 s
    assert length == pytest.approx(16, rel=0.01)
    timeout = logic.probes.link_timeout(clock.now)
    assert timeout == pytest.approx(3 * length + lldp_schedule.EXPIRY_MARGIN_S)
    del fabric.wires[PortRef("s1", 2)], fabric.wires[PortRef("s2", 3)]
    cut_at = clock.now
    while clock.now < cut_at + 10:  # a 3 s round would have cut it after 10 s
        clock.now += 0.1
        logic.tick()
    assert logic.counters()["lldp_links"] == 4
    # Nearly every probe leaves by a host port and never comes back, so the window (each
    # counted in flight until 3 round trips old) stretches the rounds, and the expiry
    # with them: cut after about 3 of those rounds, never before 2 of the nominal ones.
    while logic.counters()["lldp_links"] == 4 and clock.now < cut_at + 4 * timeout:
        clock.now += 0.1
        logic.tick()
    assert logic.counters()["lldp_links"] == 3
    assert clock.now - cut_at > 2 * length


def test_kept_paths_are_shortest_and_follow_a_change():
    rng = random.Random(3)
    graph = nx.connected_watts_strogatz_graph(60, 4, 0.3, seed=3)
    view, ports = TopologyView(), Counter()
    for node in graph:
        view.add_switch(f"s{node}", list(range(1, 9)))
    for a, b in graph.edges:
        ports[a] += 1
        ports[b] += 1
        view.saw_link(PortRef(f"s{a}", ports[a]), PortRef(f"s{b}", ports[b]), 0.0)
    for _ in range(200):
        a, b = rng.sample(list(graph), 2)
        path = view.path(f"s{a}", f"s{b}")
        assert len(path) == nx.shortest_path_length(graph, a, b)
        at = PortRef(f"s{a}", 0)
        for out in path:  # each out-port leads on along the path
            assert out.switch == at.switch
            at = view.peer(out)
        assert at.switch == f"s{b}"
    a, b = next(iter(graph.edges))
    first_hop = next(out for out in view.path(f"s{a}", f"s{b}"))
    view.remove_port(first_hop)
    graph.remove_edge(a, b)
    expected = nx.shortest_path_length(graph, a, b) if nx.has_path(graph, a, b) else None
    path = view.path(f"s{a}", f"s{b}")
    assert (None if path is None else len(path)) == expected
