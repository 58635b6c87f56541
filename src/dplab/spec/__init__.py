"""Experiment files: validation and typed objects."""

from dplab.spec.axes import Point, expand
from dplab.spec.loader import SpecError, load, parse
from dplab.spec.model import Experiment, PlaneSpec

__all__ = ["Experiment", "PlaneSpec", "Point", "SpecError", "expand", "load", "parse"]
