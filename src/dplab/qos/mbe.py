"""Meter Band Rate Evaluation (MBE), as study 004 describes its baseline: each class has
predefined band rates (the Band Rate Description Language's classes of bandwidth) and the
evaluator picks, every fixed interval, the band that covers the current demand. Study 004
gives no more detail than that; our reading: the smallest band at or above the measured
load, the largest band when none is, and never more than the capacity left. Pure."""

from __future__ import annotations


def band_rate(load_bps: float, bands_bps: tuple[float, ...], remaining_bps: float) -> float:
    """The smallest band >= ``load_bps`` (else the largest), capped by ``remaining_bps``."""
    covering = [band for band in sorted(bands_bps) if band >= load_bps]
    rate = covering[0] if covering else max(bands_bps)
    return max(0.0, min(rate, remaining_bps))
