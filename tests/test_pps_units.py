"""The pps workload without a network: its frames (bytes and checksums as scapy reads
them), its parameter checks, the spec's field errors, and how reports become metrics."""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether

from dplab.spec import SpecError, parse
from dplab.workloads import frames, pps

ADDRESSES = ("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2")


def recomputed(packet: Ether) -> Ether:
    """The same packet with every checksum recomputed by scapy."""
    copy = packet.copy()
    del copy[IP].chksum
    for layer in (UDP, ICMP):
        if layer in copy:
            del copy[layer].chksum
    return Ether(bytes(copy))


@pytest.mark.parametrize("size", [64, 65, 128, 1500])
def test_udp_frame_has_the_size_addresses_and_valid_checksums(size):
    raw = frames.udp_frame(size, *ADDRESSES, 40000, 40001)
    assert len(raw) == size - 4  # the FCS is the link's
    packet = Ether(raw)
    assert (packet.src, packet.dst) == ADDRESSES[:2]
    assert (packet[IP].src, packet[IP].dst, packet[IP].ttl) == ("10.0.0.1", "10.0.0.2", 64)
    assert (packet[UDP].sport, packet[UDP].dport) == (40000, 40001)
    assert packet[IP].len == size - 4 - 14
    assert bytes(recomputed(packet)) == raw


@pytest.mark.parametrize("size", [64, 1500])
def test_icmp_frame_is_an_echo_request_with_valid_checksums(size):
    raw = frames.icmp_echo_frame(size, *ADDRESSES, ident=40007)
    assert len(raw) == size - 4
    packet = Ether(raw)
    assert (packet[ICMP].type, packet[ICMP].code, packet[ICMP].id) == (8, 0, 40007)
    assert bytes(recomputed(packet)) == raw


@pytest.mark.parametrize("size", [63, 1501, "64", True, 64.0])
def test_a_bad_size_is_refused_naming_the_field(size):
    with pytest.raises(ValueError, match=r"flow 'f': size must be an integer 64\.\.1500"):
        pps.validate({"size": size, "pps": 100, "count": 10}, "flow 'f'")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"count": 10}, "'pps' .* is required"),
        ({"pps": 0, "count": 10}, "'pps' must be a number > 0"),
        ({"pps": -5, "count": 10}, "'pps' must be a number > 0"),
        ({"pps": 2e7, "count": 10}, "'pps' must be at most"),
        ({"pps": 10}, "exactly one of 'duration'"),
        ({"pps": 10, "count": 5, "duration": 1}, "exactly one of 'duration'"),
        ({"pps": 10, "count": 2.5}, "'count' must be an integer > 0"),
        ({"pps": 10, "count": 5, "protocol": "tcp"}, "'protocol' must be one of"),
        ({"pps": 10, "count": 5, "rate": 3}, r"unknown parameter\(s\) \['rate'\]"),
        ({"pps": 10, "count": 5, "dst_mac": "gateway"}, "'dst_mac' must be one of"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(params, message):
    with pytest.raises(ValueError, match=message):
        pps.validate(params, "flow 'f'")


def test_a_count_gives_the_sender_a_deadline_beyond_its_plan():
    params = pps.validate({"pps": 1000, "count": 500}, "f")
    assert params.send_s > 0.5 and params.timeout_s > params.send_s
    assert pps.validate({"pps": 1000, "duration": 2}, "f").send_s == 2


SPEC = """
name: t
topology: {name: single, params: {hosts: 2}}
planes: [bridge]
workloads:
  - {kind: pps, pairs: [[h1, h2]], WORKLOAD}
"""


def test_the_spec_takes_a_pps_workload():
    exp = parse(SPEC.replace("WORKLOAD", "size: 128, pps: 5000, count: 100, protocol: icmp"))
    workload = exp.workloads[0]
    assert (workload.size, workload.pps, workload.count, workload.protocol) == (
        128, 5000, 100, "icmp")
    assert workload.duration is None


@pytest.mark.parametrize(
    ("workload", "field", "expected"),
    [
        ("size: 40, pps: 10, count: 5", "workloads.0.pps.size", "greater than or equal to 64"),
        ("size: 9000, pps: 10, count: 5", "workloads.0.pps.size", "less than or equal to 1500"),
        ("pps: 0, count: 5", "workloads.0.pps.pps", "greater than 0"),
        ("count: 5", "workloads.0.pps.pps", "missing"),
        ("pps: 10", "workloads.0.pps", "exactly one of 'duration'"),
        ("pps: 10, count: 5, protocol: tcp", "workloads.0.pps.protocol", "'udp' or 'icmp'"),
        ("pps: 10, count: 5, dst_mac: mine", "workloads.0.pps.dst_mac", "'resolved' or 'host'"),
    ],
)
def test_bad_spec_values_name_the_field(workload, field, expected):
    with pytest.raises(SpecError) as err:
        parse(SPEC.replace("WORKLOAD", workload), source="exp.yaml")
    assert field in str(err.value) and expected in str(err.value)


REPORT = {"sent": 1000, "not_sent": 0, "pps": 1002.0, "rate_error": 0.002, "seconds": 0.998}


def test_measure_counts_loss_against_what_was_really_sent():
    params = pps.validate({"pps": 1000, "count": 1000, "protocol": "icmp"}, "f")
    m = pps.measure(params, REPORT, {"at_dst": {"frames": 990}, "replies": {"frames": 0}}, "f")
    assert m.error is None
    s = m.summary
    assert (s["frames_offered"], s["frames_received"], s["replies_received"]) == (1000, 990, 0)
    assert s["loss_pct"] == pytest.approx(1.0)
    assert s["rate_error_pct"] == pytest.approx(0.2)
    assert s["target_pps"] == 1000 and s["offered_pps"] == 1002.0


def test_measure_leaves_what_was_not_counted_missing():
    params = pps.validate({"pps": 1000, "count": 1000}, "f")
    m = pps.measure(params, REPORT, {"at_dst": None}, "flow 'f'")
    assert "counter at the destination reported nothing" in m.error
    assert m.summary["frames_received"] is None and m.summary["loss_pct"] is None
    assert m.summary["replies_received"] is None  # udp: nothing to count
    assert m.summary["frames_offered"] == 1000


def test_a_sender_that_sent_nothing_is_an_error_without_a_rate():
    params = pps.validate({"pps": 1000, "count": 1000}, "f")
    report = {**REPORT, "sent": 0, "pps": 0.0, "rate_error": -1.0}
    m = pps.measure(params, report, {"at_dst": {"frames": 0}}, "flow 'f'")
    assert "sent no frame" in m.error
    assert m.summary["offered_pps"] is None and m.summary["loss_pct"] is None
    assert m.summary["frames_received"] == 0
