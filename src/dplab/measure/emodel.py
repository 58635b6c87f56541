"""ITU-T G.107 E-model, simplified for a G.711 voice stream: R-factor and MOS.

R = Ro - Is - Id - Ie,eff + A, with every G.107 parameter at its default except the ones
a network changes: the mouth-to-ear delay Ta and the packet loss.

- Ro - Is - Idte - Idle at G.107's defaults is 93.2 (DEFAULT_R): the R of a perfect call.
  Idte (talker echo) is held at its T = 0 value; with G.107's default TELR of 65 dB its
  growth with delay is below 1 R point for Ta < 300 ms.
- Idd: G.107 §7.4 delay impairment, 0 up to Ta = 100 ms (mA = 100 ms, sT = 1).
- Ie,eff = Ie + (95 - Ie) * Ppl / (Ppl / BurstR + Bpl), Ppl in percent.
  G.711: Ie = 0. Bpl from ITU-T G.113 Appendix I: 25.1 with packet loss concealment
  (G.711 Appendix I PLC, what real endpoints run; our default), 4.3 without.
- A (advantage factor) = 0: a wired call.

Mouth-to-ear delay is not what the network measures; see mouth_to_ear_ms for the
assumption that turns one-way network delay and jitter into Ta.
"""

from collections.abc import Sequence
from math import log10

DEFAULT_R = 93.2
IE_G711 = 0.0
BPL_G711_PLC = 25.1
BPL_G711_NO_PLC = 4.3
DELAY_FREE_MS = 100.0  # G.107 mA: Idd is 0 up to this mouth-to-ear delay


def delay_impairment(ta_ms: float) -> float:
    """G.107 Idd for an absolute mouth-to-ear delay Ta in ms (0 for Ta <= 100 ms)."""
    if ta_ms < 0:
        raise ValueError(f"E-model: mouth-to-ear delay must be >= 0 ms, got {ta_ms}")
    if ta_ms <= DELAY_FREE_MS:
        return 0.0
    x = log10(ta_ms / DELAY_FREE_MS) / log10(2)
    return 25.0 * ((1 + x**6) ** (1 / 6) - 3 * (1 + (x / 3) ** 6) ** (1 / 6) + 2)


def effective_equipment_impairment(
    loss_pct: float, burst_r: float = 1.0, ie: float = IE_G711, bpl: float = BPL_G711_PLC
) -> float:
    """G.107 Ie,eff for a packet loss of loss_pct percent (BurstR 1 = random loss)."""
    if not 0 <= loss_pct <= 100:
        raise ValueError(f"E-model: packet loss must be 0..100 %, got {loss_pct}")
    if burst_r <= 0:
        raise ValueError(f"E-model: BurstR must be > 0, got {burst_r}")
    return ie + (95.0 - ie) * loss_pct / (loss_pct / burst_r + bpl)


def r_factor(
    ta_ms: float, loss_pct: float, burst_r: float = 1.0, plc: bool = True, advantage: float = 0.0
) -> float:
    """Transmission rating R of a G.711 call (not clipped; MOS handles R < 0 and > 100)."""
    bpl = BPL_G711_PLC if plc else BPL_G711_NO_PLC
    impairment = effective_equipment_impairment(loss_pct, burst_r, IE_G711, bpl)
    return DEFAULT_R - delay_impairment(ta_ms) - impairment + advantage


def mos(r: float) -> float:
    """G.107 Annex B: estimated mean opinion score (1..4.5) from R."""
    if r <= 0:
        return 1.0
    if r >= 100:
        return 4.5
    return 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6


def mouth_to_ear_ms(owd_ms: float, jitter_ms: float, packet_ms: float) -> float:
    """Ta from what the network measured, under a stated assumption.

    Ta = packetisation (one packet's worth of voice, packet_ms) + mean one-way network
    delay + a de-jitter buffer of 2 x RFC 3550 jitter (a common sizing rule). Codec and
    sound-card delays are left out: the lab compares networks, not telephones.
    """
    return packet_ms + owd_ms + 2.0 * jitter_ms


def burst_ratio(lost: Sequence[bool]) -> float:
    """G.107 BurstR of a loss pattern (one flag per sent packet, in sequence order).

    BurstR = 1 / (p + q), p = P(loss | previous received), q = P(received | previous lost):
    1 for random loss, > 1 when losses come in bursts. 1 when it cannot be estimated.
    """
    after_received = [b for a, b in zip(lost, lost[1:], strict=False) if not a]
    after_lost = [b for a, b in zip(lost, lost[1:], strict=False) if a]
    if not after_received or not after_lost:
        return 1.0
    p = sum(after_received) / len(after_received)
    q = sum(not b for b in after_lost) / len(after_lost)
    return 1.0 if p + q == 0 else 1.0 / (p + q)
