"""Statistics over an experiment's stored runs: per-plane results and comparisons."""

from dplab.analysis.compare import PLANE, Analysis, Comparison, PlaneResult, Row, analyse

__all__ = ["PLANE", "Analysis", "Comparison", "PlaneResult", "Row", "analyse"]
