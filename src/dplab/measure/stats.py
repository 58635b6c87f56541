"""Small descriptive statistics over samples; None when there is nothing to describe."""

from collections.abc import Sequence


def percentile(values: Sequence[float], pct: float) -> float | None:
    """The pct-th percentile (0..100) with linear interpolation between closest ranks.

    Same definition as numpy's default ("linear"); None for an empty sample.
    """
    if not 0.0 <= pct <= 100.0:
        raise ValueError(f"percentile: pct must be within 0..100, got {pct}")
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    lower = int(rank)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (rank - lower)


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for an empty sample."""
    return sum(values) / len(values) if values else None
