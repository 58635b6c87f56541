"""Watch ports (P4Runtime spec 9.2.2) on a real dplab-switch with real packets: a group
member whose watch port goes down (its veth peer set down: the switch's end loses carrier)
is left out of the selection, every flow still gets out; back up, it is used again. Read
back gives the watch port as written, for groups and one shots.

The switch reads its ports' state every 50 ms: what it forwards to a port before it has
seen that port go down is lost, by design. So each test waits until the switch reports
the port's new state (`port_status`, switch/PROTOCOL.md) before it sends its flows."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import p4runtime_rig
import profile_flows
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import Names, compile_with_info
from profile_flows import flows, forward, member, ports_of_flows, profile_id
from switch_rig import ETH_P_ALL, in_netns
from test_p4runtime_selector import route

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
DEADLINE_S = 30.0
FLOW_COUNT = 24


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "ecmp_selector.p4", tmp_path_factory.mktemp("p4"))


served = profile_flows.served
ctl = p4runtime_rig.ctl


def watched_group(n: Names, deprecated_on: int = 0) -> pb.Entity:
    """Group 1: members 2, 3, 4 (to ports 2, 3, 4), each watching its own port; the
    member ``deprecated_on`` names it with the deprecated ``watch`` field."""
    entity = pb.Entity()
    g = entity.action_profile_group
    g.action_profile_id, g.group_id = profile_id(n, "ecmp"), 1
    for port in (2, 3, 4):
        m = g.members.add(member_id=port, weight=1)
        if port == deprecated_on:
            m.watch = port
        else:
            m.watch_port = bytes([port])
    return entity


def set_peer(rig, port: int, state: str) -> None:
    """Sets the host end of ``port`` down or up. Its capture socket would fail while the
    link is down (ENETDOWN), so it is closed then and opened afresh once the link is up."""
    if state == "down":
        rig.sockets.pop(port).close()
    subprocess.run(["ip", "-n", rig.host_ns, "link", "set", rig.host_if(port), state],
                   check=True)
    if state == "up":
        with in_netns(rig.host_ns):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((rig.host_if(port), 0))
        s.setblocking(False)
        rig.sockets[port] = s


def wait_until_the_switch_sees(rig, port: int, running: bool) -> None:
    """Returns once the switch's selectors take ``port`` as running (or not)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        reply = rig.client.request("port_status")
        assert reply["ok"], reply
        state = {p["port"]: p["running"] for p in reply["result"]["ports"]}
        if state[port] is running:
            return
        assert time.monotonic() < deadline, f"the switch still has port {port} as {state}"
        time.sleep(0.01)


def used(seen: dict) -> set[int]:
    return set().union(*seen.values())


def test_the_switch_reports_its_ports_running_as_its_selectors_see_them(served):
    rig, _ = served
    wait_until_the_switch_sees(rig, 3, True)
    set_peer(rig, 3, "down")
    try:
        wait_until_the_switch_sees(rig, 3, False)
        ports = rig.client.request("port_status")["result"]["ports"]
        assert {p["port"]: p["running"] for p in ports} == {1: True, 2: True, 3: False,
                                                              4: True}
    finally:
        set_peer(rig, 3, "up")
    wait_until_the_switch_sees(rig, 3, True)


def test_a_member_watching_a_down_port_is_left_out_until_it_is_up(ctl):
    rig, client, n = ctl
    client.write(*(member(n, "ecmp", port, port) for port in (2, 3, 4)))
    client.write(watched_group(n, deprecated_on=4))
    client.write(route(n, group_id=1))
    assert used(ports_of_flows(rig, flows(FLOW_COUNT))) == {2, 3, 4}
    port_3_is_left_out_while_down(rig)
    read = pb.Entity()
    read.action_profile_group.action_profile_id = profile_id(n, "ecmp")
    (got,) = client.read(read)
    assert got.action_profile_group == watched_group(n, deprecated_on=4).action_profile_group


def test_watch_ports_the_switch_lacks_are_refused(ctl):
    rig, client, n = ctl
    client.write(member(n, "ecmp", 2, 2))
    entity = pb.Entity()
    g = entity.action_profile_group
    g.action_profile_id, g.group_id = profile_id(n, "ecmp"), 1
    g.members.add(member_id=2, weight=1, watch_port=bytes([9]))
    code = p4runtime_rig.update_code_of(lambda: client.write(entity))
    assert code == p4runtime_rig.grpc.StatusCode.INVALID_ARGUMENT


def test_one_shot_actions_follow_their_watch_ports_and_read_back_as_written(ctl):
    rig, client, n = ctl
    entity = route(n, member_id=1)
    action_set = entity.table_entry.action.action_profile_action_set
    for port in (2, 3, 4):
        action = action_set.action_profile_actions.add(action=forward(n, port), weight=1)
        if port == 4:
            action.watch = port
        else:
            action.watch_port = bytes([port])
    client.write(entity)
    port_3_is_left_out_while_down(rig)
    read = pb.Entity()
    read.table_entry.table_id = n["ecmp"]
    (got,) = client.read(read)
    assert got.table_entry.action.action_profile_action_set == action_set


def port_3_is_left_out_while_down(rig) -> None:
    """Port 3's peer down: every flow still gets out, none through port 3; up: used again."""
    set_peer(rig, 3, "down")
    try:
        wait_until_the_switch_sees(rig, 3, False)
        seen = ports_of_flows(rig, flows(FLOW_COUNT))
        assert all(len(ports) == 1 for ports in seen.values())  # every flow still gets out
        assert used(seen) == {2, 4}
    finally:
        set_peer(rig, 3, "up")
    wait_until_the_switch_sees(rig, 3, True)
    assert used(ports_of_flows(rig, flows(FLOW_COUNT))) == {2, 3, 4}
