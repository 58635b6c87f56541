"""An XDP program that drops every frame, for a sink that counts frames and does nothing
else: switch_rate.py's sink discards what arrives before any socket buffer is built.

The program is two instructions, so it needs no compiler: it is loaded with the
bpf() system call and attached in driver mode with pyroute2, from this thread moved into
the namespace (dplab.xdp.netns.inside): pyroute2's own ``netns=`` forks a child, and a child
that a signal reaches before it exits unwinds into the caller's stack and runs on as a
second copy of the caller (under pytest: the rest of the tests, twice). The interface
holds the program; it goes when the interface is deleted (the rig's namespaces go at its
end).
"""

from __future__ import annotations

import ctypes
import os
import struct

from pyroute2 import IPRoute

from dplab.xdp.netns import inside

SYS_BPF = 321  # x86_64
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_XDP = 6
XDP_DROP = 1
ATTR_SIZE = 128
# r0 = XDP_DROP; exit (struct bpf_insn: code, dst/src registers, offset, immediate)
PROGRAM = struct.pack("<BBhi", 0xB7, 0, 0, XDP_DROP) + struct.pack("<BBhi", 0x95, 0, 0, 0)

_libc = ctypes.CDLL(None, use_errno=True)


def load() -> int:
    """The program's file descriptor."""
    insns = ctypes.create_string_buffer(PROGRAM, len(PROGRAM))
    license_ = ctypes.create_string_buffer(b"GPL")
    attr = ctypes.create_string_buffer(ATTR_SIZE)
    # union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns, license.
    struct.pack_into("<IIQQ", attr, 0, BPF_PROG_TYPE_XDP, len(PROGRAM) // 8,
                     ctypes.addressof(insns), ctypes.addressof(license_))
    fd = _libc.syscall(SYS_BPF, BPF_PROG_LOAD, attr, ATTR_SIZE)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"loading the XDP drop program: {os.strerror(err)}")
    return fd


def attach(netns: str, ifname: str) -> None:
    """Every frame arriving on `ifname` (in namespace `netns`) is dropped by XDP."""
    fd = load()
    try:
        with inside(netns), IPRoute() as ipr:
            index = ipr.link_lookup(ifname=ifname)
            if not index:
                raise RuntimeError(f"no interface {ifname} in {netns}")
            ipr.link("set", index=index[0], xdp_fd=fd)
    finally:
        os.close(fd)  # the attachment keeps the program
