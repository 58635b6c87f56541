"""Which way is better for each metric: the sign convention of every improvement figure."""

from __future__ import annotations

from typing import Literal

Direction = Literal["lower", "higher"]

# Metrics of the workloads/measure contract (docs/architecture.md).
DIRECTION: dict[str, Direction] = {
    "throughput_bps": "higher",
    "bytes": "higher",
    "packets_received": "higher",
    "transmission_time_s": "lower",
    "loss_pct": "lower",
    "rtt_ms": "lower",
    "rtt_min_ms": "lower",
    "rtt_max_ms": "lower",
    "jitter_ms": "lower",
    "out_of_order": "lower",
    "syn_delay_ms": "lower",
    "r_factor": "higher",
    "mos": "higher",
    "rebuffers": "lower",
    "segments_received": "higher",
    "retransmits": "lower",
    "delay_var_ms2": "lower",
}

# Display order of metrics in tables; metrics not listed follow in alphabetical order.
METRIC_ORDER = (
    "throughput_bps", "bytes", "transmission_time_s", "loss_pct", "rtt_ms", "rtt_min_ms",
    "rtt_p50_ms", "rtt_p99_ms", "rtt_max_ms", "owd_ms", "owd_min_ms", "owd_max_ms",
    "jitter_ms", "out_of_order", "syn_delay_ms", "connect_ms", "packets_sent", "packets_received",
    "jitter_eq1_ms", "delay_var_ms2", "retransmits", "tcp_loss_pct", "srtt_ms",
)

# Metrics not in the table fall back on the unit in their name: rates are better high,
# times and percentages (loss, CPU) better low. Anything else has no direction, and the
# report shows no improvement figure for it rather than guess.
_SUFFIX_DIRECTION: tuple[tuple[str, Direction], ...] = (
    ("_bps", "higher"),
    ("_pps", "higher"),
    ("_ms", "lower"),
    ("_us", "lower"),
    ("_s", "lower"),
    ("_pct", "lower"),
)


def direction(metric: str) -> Direction | None:
    """"lower" or "higher" (which is better), or None when the metric has no better side."""
    if metric in DIRECTION:
        return DIRECTION[metric]
    for suffix, better in _SUFFIX_DIRECTION:
        if metric.endswith(suffix):
            return better
    return None


def metric_sort_key(metric: str) -> tuple[int, str]:
    """Sorts metrics into METRIC_ORDER, unknown ones after it by name."""
    if metric in METRIC_ORDER:
        return (METRIC_ORDER.index(metric), "")
    return (len(METRIC_ORDER), metric)
