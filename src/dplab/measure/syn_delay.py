"""TCP SYN delay from a packet capture: the time from a connection's first SYN to the
first SYN-ACK answering it, both as seen on the client's interface (so it includes any
SYN retransmission wait, as a user would feel it)."""

from __future__ import annotations

from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.utils import PcapReader

SYN, ACK = 0x02, 0x10
Endpoint = tuple[str, str, int]  # (client ip, server ip, server port)


def syn_delays_ms(pcap: Path) -> dict[Endpoint, float]:
    """SYN delay in ms of every handshake in `pcap`, keyed by (client, server, server port).

    A port reused by a second connection keeps its first handshake: dplab gives each TCP
    flow its own server port, so one key is one flow."""
    first_syn: dict[Endpoint, float] = {}
    delays: dict[Endpoint, float] = {}
    with PcapReader(str(pcap)) as packets:
        for packet in packets:
            if IP not in packet or TCP not in packet:
                continue
            ip, tcp, stamp = packet[IP], packet[TCP], float(packet.time)
            flags = int(tcp.flags)
            if flags & SYN and not flags & ACK:
                first_syn.setdefault((ip.src, ip.dst, int(tcp.dport)), stamp)
            elif flags & SYN and flags & ACK:
                key = (ip.dst, ip.src, int(tcp.sport))
                if key in first_syn and key not in delays:
                    delays[key] = (stamp - first_syn[key]) * 1000.0
    return delays
