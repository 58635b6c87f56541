"""SYN delay read from a pcap written with known packet times."""

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from dplab.measure.syn_delay import syn_delays_ms


def _packet(src: str, dst: str, sport: int, dport: int, flags: str, at: float):
    packet = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags)
    packet.time = at
    return packet


def test_delay_runs_from_first_syn_to_first_syn_ack_per_server_port(tmp_path):
    pcap = tmp_path / "syn.pcap"
    wrpcap(str(pcap), [
        _packet("10.0.0.1", "10.0.0.2", 40000, 5001, "S", 100.000),
        _packet("10.0.0.1", "10.0.0.3", 40001, 5002, "S", 100.010),
        _packet("10.0.0.1", "10.0.0.2", 40000, 5001, "S", 101.000),  # retransmitted SYN
        _packet("10.0.0.2", "10.0.0.1", 5001, 40000, "SA", 101.0025),
        _packet("10.0.0.3", "10.0.0.1", 5002, 40001, "SA", 100.0105),
        _packet("10.0.0.2", "10.0.0.1", 5001, 40000, "SA", 101.0030),  # duplicate SYN-ACK
        _packet("10.0.0.1", "10.0.0.4", 40002, 5003, "S", 102.0),  # never answered
    ])
    delays = syn_delays_ms(pcap)
    assert delays[("10.0.0.1", "10.0.0.2", 5001)] == pytest.approx(1002.5, abs=1e-6)
    assert delays[("10.0.0.1", "10.0.0.3", 5002)] == pytest.approx(0.5, abs=1e-6)
    assert ("10.0.0.1", "10.0.0.4", 5003) not in delays
