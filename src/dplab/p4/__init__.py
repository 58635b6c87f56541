"""P4_16 (v1model subset) compiler: source -> pipeline IR (docs/p4-ir.md) + P4Info."""

from dplab.p4.errors import P4Error

__all__ = ["P4Error"]
