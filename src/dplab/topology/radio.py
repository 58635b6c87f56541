"""A station's rate and loss on its access point's medium from its distance: a documented
model (docs/wireless.md), not radio physics.

1. Received power, log-distance path loss: ``P_rx = P_tx + G - PL(d0) - 10 n log10(d / d0)``
   with d0 = 1 m, PL(d0) the free-space loss at 1 m and 2.4 GHz (20 log10(4 pi d0 / lambda),
   lambda = c / 2.412 GHz), n = 3 (indoor, obstructed).
2. SNR = P_rx - the noise floor.
3. Rate: the highest 802.11g OFDM rate whose minimum SNR the SNR reaches. The minimum SNRs
   are IEEE 802.11's minimum receiver sensitivities for OFDM (-82 dBm at 6 Mbit/s ...
   -65 dBm at 54 Mbit/s, IEEE 802.11-2012 Table 18-18) above the same noise floor.
4. Loss: 0 while the SNR is EDGE_MARGIN_DB or more above the lowest rate's minimum; within
   that margin it rises linearly to EDGE_LOSS_PCT at the minimum (the edge of range).
   Below the minimum the station is out of range: refused, naming the edge.

A ``rate_mbit`` or ``loss_pct`` set on the edge overrides what the distance gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TX_POWER_DBM = 20.0
ANTENNA_GAIN_DB = 0.0  # both antennas together
FREQUENCY_HZ = 2.412e9  # 802.11g channel 1
PATH_LOSS_EXPONENT = 3.0
NOISE_FLOOR_DBM = -91.0
# (rate Mbit/s, minimum receiver sensitivity dBm): IEEE 802.11-2012 Table 18-18.
SENSITIVITY_DBM = ((54.0, -65.0), (48.0, -66.0), (36.0, -70.0), (24.0, -74.0),
                   (18.0, -77.0), (12.0, -79.0), (9.0, -81.0), (6.0, -82.0))
EDGE_MARGIN_DB = 3.0
EDGE_LOSS_PCT = 50.0
SPEED_OF_LIGHT = 299_792_458.0


class RangeError(ValueError):
    """A station is beyond its access point's range."""


@dataclass(frozen=True)
class RadioLink:
    rate_mbit: float
    loss_pct: float
    snr_db: float | None  # None when rate and loss were set directly


def free_space_loss_1m_db() -> float:
    wavelength = SPEED_OF_LIGHT / FREQUENCY_HZ
    return 20.0 * math.log10(4.0 * math.pi / wavelength)


def snr_db(distance_m: float) -> float:
    path_loss = free_space_loss_1m_db() + 10.0 * PATH_LOSS_EXPONENT * math.log10(
        max(distance_m, 1.0))
    return TX_POWER_DBM + ANTENNA_GAIN_DB - path_loss - NOISE_FLOOR_DBM


def max_range_m() -> float:
    """The distance where the SNR meets the lowest rate's minimum."""
    lowest = SENSITIVITY_DBM[-1][1] - NOISE_FLOOR_DBM
    budget = TX_POWER_DBM + ANTENNA_GAIN_DB - free_space_loss_1m_db() - NOISE_FLOOR_DBM - lowest
    return 10.0 ** (budget / (10.0 * PATH_LOSS_EXPONENT))


def from_distance(distance_m: float, edge: str) -> RadioLink:
    """Rate and loss at ``distance_m`` metres; RangeError naming ``edge`` when out of range."""
    snr = snr_db(distance_m)
    rates = [rate for rate, sensitivity in SENSITIVITY_DBM
             if snr >= sensitivity - NOISE_FLOOR_DBM]
    if not rates:
        raise RangeError(f"wireless link {edge}: {distance_m} m is beyond the range of "
                         f"{max_range_m():.1f} m (SNR {snr:.1f} dB, below the "
                         f"{SENSITIVITY_DBM[-1][1] - NOISE_FLOOR_DBM:.0f} dB 6 Mbit/s needs)")
    margin = snr - (SENSITIVITY_DBM[-1][1] - NOISE_FLOOR_DBM)
    loss = 0.0 if margin >= EDGE_MARGIN_DB else EDGE_LOSS_PCT * (1 - margin / EDGE_MARGIN_DB)
    return RadioLink(rates[0], round(loss, 3), round(snr, 2))


def link(edge: str, distance_m: float | None, rate_mbit: float | None,
         loss_pct: float | None) -> RadioLink:
    """A station's link: from its distance, with a directly set rate or loss over it; both
    set directly need no distance."""
    if distance_m is None:
        if rate_mbit is None:
            raise RangeError(f"wireless link {edge}: needs distance_m or rate_mbit")
        return RadioLink(rate_mbit, loss_pct or 0.0, None)
    modelled = from_distance(distance_m, edge)
    return RadioLink(rate_mbit if rate_mbit is not None else modelled.rate_mbit,
                     loss_pct if loss_pct is not None else modelled.loss_pct, modelled.snr_db)
