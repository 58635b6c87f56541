"""Fidelity: was a run limited by the emulating host rather than by the plane under test?

``FidelityMonitor`` watches a run's traffic (per-core CPU, senders' achieved rates, shaped
links' utilisation, drops everywhere) and ``record`` marks it host-bound with reasons;
``calibrate`` measures once what this machine can emulate faithfully, ``feasibility`` warns
before a run that asks for more. See docs/architecture.md, *fidelity*.
"""

from dplab.fidelity.monitor import FidelityMonitor, FidelityRecord
from dplab.fidelity.verdict import Measure

__all__ = ["FidelityMonitor", "FidelityRecord", "Measure"]
