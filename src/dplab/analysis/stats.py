"""Statistics over repetitions: mean, sd, 95% CI (Student t), Welch's t-test, improvement %.

Inputs here are *per-run* values, one per repetition: a run's value of a metric is the mean
over the flows of that run (see ``analysis.compare``). Repetitions, not flows, are the
independent samples, so n is the number of runs that measured the metric.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as sps

from dplab.analysis.metrics import direction

ALPHA = 0.05
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Description:
    """n, mean, sample sd and 95% CI half-width of the per-run values (None when undefined)."""

    n: int
    mean: float | None
    sd: float | None
    ci95: float | None


def describe(values: Sequence[float]) -> Description:
    """Mean, sd (n-1 denominator) and CI half-width t(0.975, n-1)·sd/√n; sd and CI need n ≥ 2."""
    n = len(values)
    if n == 0:
        return Description(0, None, None, None)
    mean = math.fsum(values) / n
    if n < 2:
        return Description(n, mean, None, None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    t_crit = float(sps.t.ppf(0.5 + CONFIDENCE / 2, n - 1))
    return Description(n, mean, sd, t_crit * sd / math.sqrt(n))


def welch_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's t-test; None when either side has < 2 values or neither
    side varies (then there is no noise to judge a difference against, e.g. loss 0 % in
    every run)."""
    if len(a) < 2 or len(b) < 2 or (_constant(a) and _constant(b)):
        return None
    with warnings.catch_warnings():
        # scipy warns about precision when one side is constant; its result is still exact.
        warnings.filterwarnings("ignore", message="Precision loss", category=RuntimeWarning)
        p = float(sps.ttest_ind(a, b, equal_var=False).pvalue)
    return None if math.isnan(p) else p


def improvement_pct(metric: str, baseline: float | None, other: float | None) -> float | None:
    """How much better ``other`` is than ``baseline``, in % of the baseline.

    Positive always means better: for "higher is better" metrics (throughput, bytes) it is
    the relative increase, for "lower is better" ones (rtt, loss, jitter, syn_delay) the
    relative reduction. None when either mean is missing, the baseline is 0, or the metric
    has no better side.
    """
    better = direction(metric)
    if baseline is None or other is None or baseline == 0 or better is None:
        return None
    change = (other - baseline) / abs(baseline) * 100.0
    return change if better == "higher" else -change


def ratio(baseline: float | None, other: float | None) -> float | None:
    """other / baseline, the way "2.1x the RTT of bridge" reads; None when either is missing
    or the baseline is 0."""
    if baseline is None or other is None or baseline == 0:
        return None
    return other / baseline


def _constant(values: Sequence[float]) -> bool:
    return all(v == values[0] for v in values)


def is_significant(p_value: float | None, alpha: float = ALPHA) -> bool:
    """Significant only with a p-value below alpha; no test (None) is not significant."""
    return p_value is not None and p_value < alpha
