"""Packet captures asked for in an experiment file land as real pcaps with the run's packets."""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP
from scapy.utils import rdpcap

from dplab.runner import ExperimentError, run_matrix
from dplab.spec import parse

EXPERIMENT = """
name: capture
topology: {{name: linear, params: {{switches: 2, hosts_per_switch: 1}}}}
planes: [bridge]
workloads:
  - {{kind: icmp, pairs: [[h1, h2]], count: 5, interval: 0.05}}
capture: {capture}
"""


@pytest.mark.net
def test_requested_interfaces_capture_the_runs_packets(tmp_path):
    exp = parse(EXPERIMENT.format(capture="[h1, 's2:s2-eth1', s1]"))
    store = run_matrix(exp, tmp_path)
    [run] = store.rows("runs")
    assert run["status"] == "ok", run["error"]
    pcap_dir = tmp_path / "pcap" / "bridge-r1"
    files = sorted(p.name for p in pcap_dir.glob("*.pcap"))
    assert files == ["h1-eth0.pcap", "s1-s1-eth1.pcap", "s1-s1-eth2.pcap", "s2-s2-eth1.pcap"]
    echo = [p for p in rdpcap(str(pcap_dir / "h1-eth0.pcap")) if ICMP in p]
    requests = [p for p in echo if p[ICMP].type == 8]
    replies = [p for p in echo if p[ICMP].type == 0]
    assert len(requests) == 5 and len(replies) == 5
    # the inter-switch link carries the same echo traffic
    between = [p for p in rdpcap(str(pcap_dir / "s2-s2-eth1.pcap")) if ICMP in p]
    assert len(between) == 10


def test_a_capture_of_an_unknown_node_or_interface_is_refused_before_any_run(tmp_path):
    with pytest.raises(ExperimentError, match=r"capture.1: 'h9' is not a host or switch"):
        run_matrix(parse(EXPERIMENT.format(capture="[h1, h9]")), tmp_path)
    with pytest.raises(ExperimentError, match=r"capture.0: s1 has no interface 's1-eth7'"):
        run_matrix(parse(EXPERIMENT.format(capture="['s1:s1-eth7']")), tmp_path / "b")
