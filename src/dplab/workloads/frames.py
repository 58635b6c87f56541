"""One Ethernet frame of a fixed size: IPv4 + UDP, or IPv4 + ICMP echo request.

Sizes count the whole Ethernet frame as a link carries it, 4-byte FCS included (RFC 2544's
convention: a "64 B frame" is the minimum Ethernet frame). The bytes built here are what a
sender hands to the device, without the FCS, which the link would add: size - 4 of them.
The payload is zeros; every checksum is computed, so receivers take the frame as valid.
"""

from __future__ import annotations

import ipaddress
import struct

from dplab.control.packets import build_ethernet

FCS = 4
ETH_HEADER = 14
IPV4_HEADER = 20
L4_HEADER = 8  # UDP and ICMP echo alike
MIN_SIZE = 64
MAX_SIZE = 1500  # fits the hosts' 1500 B MTU whatever the headers
ETHERTYPE_IPV4 = 0x0800
PROTO_ICMP = 1
PROTO_UDP = 17
ICMP_ECHO_REQUEST = 8
TTL = 64


def udp_frame(size: int, src_mac: str, dst_mac: str, src_ip: str, dst_ip: str,
              src_port: int, dst_port: int) -> bytes:
    """A UDP datagram of zeros in a frame of `size` bytes (FCS included)."""
    payload = bytes(_payload_len(size))
    length = L4_HEADER + len(payload)
    pseudo = _ip(src_ip) + _ip(dst_ip) + struct.pack("!BBH", 0, PROTO_UDP, length)
    header = struct.pack("!HHHH", src_port, dst_port, length, 0)
    checksum = internet_checksum(pseudo + header + payload) or 0xFFFF  # 0 means "none"
    udp = struct.pack("!HHHH", src_port, dst_port, length, checksum) + payload
    return build_ethernet(dst_mac, src_mac, ETHERTYPE_IPV4, _ipv4(src_ip, dst_ip, PROTO_UDP, udp))


def icmp_echo_frame(size: int, src_mac: str, dst_mac: str, src_ip: str, dst_ip: str,
                    ident: int, seq: int = 1) -> bytes:
    """An ICMP echo request (payload of zeros) in a frame of `size` bytes (FCS included)."""
    payload = bytes(_payload_len(size))
    header = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, 0, ident, seq)
    checksum = internet_checksum(header + payload)
    icmp = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, checksum, ident, seq) + payload
    return build_ethernet(dst_mac, src_mac, ETHERTYPE_IPV4,
                          _ipv4(src_ip, dst_ip, PROTO_ICMP, icmp))


def check_size(size: object, where: str) -> int:
    """`size` as a frame size MIN_SIZE..MAX_SIZE, or a ValueError naming the field."""
    if isinstance(size, bool) or not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"{where}: size must be an integer {MIN_SIZE}..{MAX_SIZE} (bytes of "
                         f"the Ethernet frame, FCS included), got {size!r}")
    return size


def internet_checksum(data: bytes) -> int:
    """RFC 1071: the ones' complement of the ones' complement sum of 16-bit words."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _payload_len(size: int) -> int:
    return size - FCS - ETH_HEADER - IPV4_HEADER - L4_HEADER


def _ipv4(src_ip: str, dst_ip: str, proto: int, body: bytes) -> bytes:
    total = IPV4_HEADER + len(body)
    # Version 4, IHL 5; identification 0 with DF set, as Linux sends unfragmentable packets.
    fields = [0x45, 0, total, 0, 0x4000, TTL, proto]
    header = struct.pack("!BBHHHBBH", *fields, 0) + _ip(src_ip) + _ip(dst_ip)
    checksum = internet_checksum(header)
    return struct.pack("!BBHHHBBH", *fields, checksum) + _ip(src_ip) + _ip(dst_ip) + body


def _ip(text: str) -> bytes:
    return ipaddress.IPv4Address(text).packed
