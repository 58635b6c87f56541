"""The few frame formats the controller reads and writes: Ethernet, ARP, IPv4 addresses, LLDP.

Plain bytes in, plain values out, so the forwarding logic needs no OpenFlow or P4 library.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

ETH_ARP = 0x0806
ETH_IPV4 = 0x0800
ETH_LLDP = 0x88CC
BROADCAST_MAC = "ff:ff:ff:ff:ff:ff"
LLDP_MULTICAST_MAC = "01:80:c2:00:00:0e"
ARP_REQUEST = 1
ARP_REPLY = 2

_ETH_HEADER = struct.Struct("!6s6sH")
_ARP_BODY = struct.Struct("!HHBBH6s4s6s4s")
_MIN_FRAME = 60  # Ethernet minimum without FCS; short frames are padded


class PacketError(ValueError):
    """A frame too short or malformed for the header it claims to carry."""


@dataclass(frozen=True)
class EthFrame:
    dst: str
    src: str
    ethertype: int
    payload: bytes

    @property
    def is_multicast(self) -> bool:
        """Group bit of the destination: broadcast and multicast both set it."""
        return int(self.dst[:2], 16) & 1 == 1


@dataclass(frozen=True)
class Arp:
    op: int
    sender_mac: str
    sender_ip: str
    target_mac: str
    target_ip: str


def mac_to_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def mac_to_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def parse_ethernet(data: bytes) -> EthFrame:
    if len(data) < _ETH_HEADER.size:
        raise PacketError(f"Ethernet frame of {len(data)} bytes is shorter than its header")
    dst, src, ethertype = _ETH_HEADER.unpack_from(data)
    return EthFrame(mac_to_str(dst), mac_to_str(src), ethertype, data[_ETH_HEADER.size:])


def build_ethernet(dst: str, src: str, ethertype: int, payload: bytes) -> bytes:
    frame = _ETH_HEADER.pack(mac_to_bytes(dst), mac_to_bytes(src), ethertype) + payload
    return frame.ljust(_MIN_FRAME, b"\0")


def parse_arp(payload: bytes) -> Arp:
    if len(payload) < _ARP_BODY.size:
        raise PacketError(f"ARP body of {len(payload)} bytes is shorter than {_ARP_BODY.size}")
    _, _, _, _, op, smac, sip, tmac, tip = _ARP_BODY.unpack_from(payload)
    return Arp(op, mac_to_str(smac), socket.inet_ntoa(sip), mac_to_str(tmac), socket.inet_ntoa(tip))


def build_arp_reply(request: Arp, answer_mac: str) -> bytes:
    """The reply the owner of ``request.target_ip`` would send, addressed to the requester."""
    body = _ARP_BODY.pack(
        1, ETH_IPV4, 6, 4, ARP_REPLY,
        mac_to_bytes(answer_mac), socket.inet_aton(request.target_ip),
        mac_to_bytes(request.sender_mac), socket.inet_aton(request.sender_ip),
    )
    return build_ethernet(request.sender_mac, answer_mac, ETH_ARP, body)


def ipv4_addresses(payload: bytes) -> tuple[str, str]:
    """(source, destination) of an IPv4 header."""
    if len(payload) < 20:
        raise PacketError(f"IPv4 header of {len(payload)} bytes is shorter than 20")
    return socket.inet_ntoa(payload[12:16]), socket.inet_ntoa(payload[16:20])


# LLDP TLV types (IEEE 802.1AB); chassis and port ids use subtype 7 "locally assigned".
_TLV_END, _TLV_CHASSIS, _TLV_PORT, _TLV_TTL = 0, 1, 2, 3
_LOCALLY_ASSIGNED = 7


def _tlv(kind: int, value: bytes) -> bytes:
    return struct.pack("!H", (kind << 9) | len(value)) + value


def build_lldp(switch: str, port: int, src_mac: str) -> bytes:
    """A probe saying "sent by ``switch`` out of ``port``"; its arrival elsewhere reveals a link."""
    body = (
        _tlv(_TLV_CHASSIS, bytes([_LOCALLY_ASSIGNED]) + switch.encode())
        + _tlv(_TLV_PORT, bytes([_LOCALLY_ASSIGNED]) + str(port).encode())
        + _tlv(_TLV_TTL, struct.pack("!H", 120))
        + _tlv(_TLV_END, b"")
    )
    return build_ethernet(LLDP_MULTICAST_MAC, src_mac, ETH_LLDP, body)


def parse_lldp(payload: bytes) -> tuple[str, int]:
    """(switch, port) a probe of ours was sent from."""
    fields: dict[int, bytes] = {}
    offset = 0
    while offset + 2 <= len(payload):
        (header,) = struct.unpack_from("!H", payload, offset)
        kind, length = header >> 9, header & 0x1FF
        if kind == _TLV_END:
            break
        fields[kind] = payload[offset + 2: offset + 2 + length]
        offset += 2 + length
    chassis, port = fields.get(_TLV_CHASSIS), fields.get(_TLV_PORT)
    if not chassis or not port or chassis[0] != _LOCALLY_ASSIGNED or port[0] != _LOCALLY_ASSIGNED:
        raise PacketError("LLDP frame lacks a locally assigned chassis id and port id")
    try:
        return chassis[1:].decode(), int(port[1:].decode())
    except (UnicodeDecodeError, ValueError) as err:
        raise PacketError(f"LLDP port id is not a port number: {port[1:]!r}") from err
