"""How deep the P4 switches' receive rings are: the p4 plane's option ``rx_ring_frames``.

Each switch maps one AF_PACKET receive ring for all its ports (switch/pktio/src/phy/rx.rs)
and a transmit ring per port once that port sends (port.rs), all kernel memory: at the
switch's default depth, 2048 receive frames, the receive ring is ~3.3 MiB and a port's
transmit ring ~0.4 MiB, so a 16-port switch up to ~10 MiB and 320 of them (a k=16
fat-tree) up to ~3 GiB (the budget below counts every port's transmit ring: traffic may
reach them all). Left to the plane
(``auto``), the depth is the default unless every switch's rings would take more than
``RING_SHARE`` of the memory the kernel reports available (``MemAvailable``) when the plane
starts; then it is halved until they fit. A shallower ring holds fewer packets while the
switch's thread waits for its core, so it may drop bursts sooner (docs/benchmarks.md
measures the 64 B rate at both depths).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dplab.planes.base import PlaneError

AUTO = "auto"
# switch/pktio/src/phy/rx.rs: RX_FRAMES (the default), MIN_RX_FRAMES, MAX_RX_FRAMES.
DEFAULT_FRAMES = 2048
MIN_FRAMES = 64
MAX_FRAMES = 1 << 16
# ring.rs: a ring frame is at most MAX_FRAME_SIZE bytes whatever the MTU, and a port's
# transmit ring has port.rs's TX_FRAME_COUNT of them: frames × 2048 bytes bound a switch's
# receive ring and 256 × 2048 a port's transmit ring (at MTU 1500 the frames are 1600 and
# 1568 bytes, so the bound is ~25% above the real size).
FRAME_BYTES_BOUND = 2048
TX_FRAMES = 256
# The rings may take at most this share of MemAvailable: the rest is for the switches'
# own heaps, the P4Runtime server, the hosts' stacks and whatever else runs beside.
RING_SHARE = 0.5
MIB = 1 << 20


@dataclass(frozen=True)
class RingChoice:
    frames: int
    reason: str


def check_option(value: object) -> int | str:
    """``auto`` or a frame count from MIN_FRAMES to MAX_FRAMES (the switch's own bounds)."""
    if value == AUTO:
        return AUTO
    if isinstance(value, bool) or not isinstance(value, int) \
            or not MIN_FRAMES <= value <= MAX_FRAMES:
        raise PlaneError(f"plane p4: option 'rx_ring_frames' must be {AUTO!r} or a "
                              f"frame count from {MIN_FRAMES} to {MAX_FRAMES}, not {value!r}")
    return value


def ring_bytes(frames: int, switches: int, ports: int) -> int:
    """An upper bound of the rings of ``switches`` switches with ``ports`` ports in all: a
    receive ring of ``frames`` frames per switch, a transmit ring per port."""
    return (switches * frames + ports * TX_FRAMES) * FRAME_BYTES_BOUND


def mem_available(meminfo: Path = Path("/proc/meminfo")) -> int:
    """The kernel's estimate of memory available for new work, in bytes."""
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{meminfo}: no MemAvailable line")


def choose(option: int | str, switches: int, ports: int, available: int) -> RingChoice:
    """The receive ring depth for ``switches`` switches with ``ports`` ports in all, given
    ``available`` bytes (MemAvailable), and why. A count the user gave is taken as it is;
    ``auto`` halves the default until every ring fits in RING_SHARE of ``available``, and
    raises if even MIN_FRAMES does not (nothing has started then)."""
    budget = int(available * RING_SHARE)

    def need(frames: int) -> str:
        return (f"{switches} receive rings of {frames} frames and {ports} transmit rings = "
                f"{ring_bytes(frames, switches, ports) / MIB:,.0f} MiB")

    if option != AUTO:
        return RingChoice(int(option), f"set by option rx_ring_frames ({need(int(option))})")
    limit = (f"{RING_SHARE:.0%} of MemAvailable {available / MIB:,.0f} MiB "
             f"= {budget / MIB:,.0f} MiB")
    frames = DEFAULT_FRAMES
    while ring_bytes(frames, switches, ports) > budget and frames > MIN_FRAMES:
        frames //= 2
    if ring_bytes(frames, switches, ports) > budget:
        raise PlaneError(f"plane p4: the switches' rings do not fit: {need(frames)} at "
                              f"the fewest frames ({MIN_FRAMES}), over {limit}")
    if frames == DEFAULT_FRAMES:
        return RingChoice(frames, f"the default: {need(frames)} fits in {limit}")
    return RingChoice(frames, f"auto: the default {DEFAULT_FRAMES} would need "
                              f"{need(DEFAULT_FRAMES)}, over {limit}; {need(frames)} fits")
