"""Study 003's echo server through the runner: scenarios/study003_echo.yaml on the p4 plane
(echo.p4 with its entries file). Every ping h1 -> h2 is answered, with RTTs measured, while
h2 never receives an echo request: its namespace's `Icmp: InEchos` stays 0 and its capture
holds none; the switch answered. (The plane's readiness ping goes h1 -> h2 too, so it is
answered by the switch as well and h2's counter covers the whole run.) h1 resolved h2's
MAC by ARP through the node, so the node forwards what it does not answer.
Also the L3 and broadcast scenarios, and the drop scenarios in both technologies: nothing
delivered, every frame counted by the program, the run ok."""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP
from scapy.utils import rdpcap
from study003_rig import ROOT

from dplab import planes, runner
from dplab.planes import PlaneError
from dplab.spec import load
from dplab.substrate.network import Network
from dplab.workloads.flows import Flow, FlowResult

SCENARIO = ROOT / "scenarios" / "study003_echo.yaml"


def icmp_counters(net: Network, host: str) -> dict[str, int]:
    """The `Icmp:` counters of ``host``'s namespace (/proc/net/snmp), by name."""
    snmp = net.run(net.host_ns(host), ["cat", "/proc/net/snmp"]).stdout
    names, values = [line.split()[1:] for line in snmp.splitlines()
                     if line.startswith("Icmp:")]
    return dict(zip(names, map(int, values), strict=True))


@pytest.mark.net
def test_echo_scenario_is_answered_by_the_switch(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the scenario names its program and entries from the root
    experiment = load(SCENARIO)
    seen: dict[str, object] = {}
    real_run_flows = runner.run_flows

    def run_and_look(net: Network, flows: list[Flow]) -> list[FlowResult]:
        results = real_run_flows(net, flows)
        seen["h1"], seen["h2"] = icmp_counters(net, "h1"), icmp_counters(net, "h2")
        seen["h1 neighbours"] = net.run(net.host_ns("h1"), ["ip", "neigh"]).stdout
        seen["h2 mac"] = net.host_mac("h2")
        return results

    monkeypatch.setattr(runner, "run_flows", run_and_look)
    store = runner.run_matrix(experiment, tmp_path / "results")

    (run,) = store.rows("runs")
    assert (run["status"], run["error"]) == ("ok", None)
    summary = {row["metric"]: row["value"] for row in store.rows("summaries")}
    count = experiment.workloads[0].count
    assert summary["packets_sent"] == summary["packets_received"] == count
    assert summary["loss_pct"] == 0
    assert 0 < summary["rtt_min_ms"] <= summary["rtt_ms"] <= summary["rtt_max_ms"]
    assert seen["h2"]["InEchos"] == 0 and seen["h2"]["OutEchoReps"] == 0
    assert seen["h1"]["InEchoReps"] >= count  # the readiness ping's answer comes on top
    assert str(seen["h2 mac"]) in str(seen["h1 neighbours"])
    (pcap,) = (tmp_path / "results" / "pcap" / run["run_id"]).glob("h2-*.pcap")
    assert [p for p in rdpcap(str(pcap)) if ICMP in p and p[ICMP].type == 8] == []


@pytest.mark.net
@pytest.mark.parametrize("name", ["l3", "broadcast"])
def test_l3_and_broadcast_scenarios_deliver_every_ping(tmp_path, monkeypatch, name):
    """The routers carry ping and TCP h1 -> h2; the broadcast switch lets four hosts
    resolve each other (broadcast ARP) and ping."""
    monkeypatch.chdir(ROOT)
    store = runner.run_matrix(load(ROOT / "scenarios" / f"study003_{name}.yaml"),
                              tmp_path / "results")
    (run,) = store.rows("runs")
    assert (run["status"], run["error"]) == ("ok", None)
    flows = {row["flow_id"]: row for row in store.rows("flows")}
    assert all(flow["ok"] for flow in flows.values()), flows
    values: dict[tuple[str, str], float | None] = {
        (row["flow_id"], row["metric"]): row["value"] for row in store.rows("summaries")}
    for flow_id, flow in flows.items():
        if flow["kind"] == "icmp":
            assert values[(flow_id, "loss_pct")] == 0, flow_id
        else:
            assert values[(flow_id, "bytes")] > 1_000_000, flow_id


def test_option_ready_is_checked_and_only_the_p4_and_xdp_planes_take_it():
    for kind in ("p4", "xdp"):
        assert planes.create(kind, {}).pings_when_ready()
        assert not planes.create(kind, {"ready": "started"}).pings_when_ready()
        with pytest.raises(PlaneError, match="option 'ready' must be one of ping, started"):
            planes.create(kind, {"ready": "soon"})
    with pytest.raises(PlaneError, match="unknown option 'ready'"):
        planes.create("bridge", {"ready": "started"})


# scenario -> the plane's stat that counts the program's drops
DROP_COUNTERS = {"drop": "pipeline_drops", "xdp_drop": "xdp_drop"}


@pytest.mark.net
@pytest.mark.parametrize("name", sorted(DROP_COUNTERS))
def test_drop_scenarios_deliver_nothing_and_count_every_frame(tmp_path, monkeypatch, name):
    """A switch that drops everything, run by the runner: ready without the readiness
    ping (ready: started), frames to h2's own MAC (no ARP gets through); the run and its
    flow are ok, nothing reached h2, and the program counted at least every frame offered."""
    monkeypatch.chdir(ROOT)
    store = runner.run_matrix(load(ROOT / "scenarios" / f"study003_{name}.yaml"),
                              tmp_path / "results")
    (run,) = store.rows("runs")
    assert (run["status"], run["error"]) == ("ok", None)
    (flow,) = store.rows("flows")
    assert flow["ok"], flow
    summary = {row["metric"]: row["value"] for row in store.rows("summaries")}
    assert summary["frames_offered"] > 0 and summary["frames_received"] == 0
    assert summary["loss_pct"] == 100
    stats = {row["stat"]: row["value"] for row in store.rows("plane_stats")}
    assert stats[DROP_COUNTERS[name]] >= summary["frames_offered"]

