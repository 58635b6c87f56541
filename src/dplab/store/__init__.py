"""Persistent storage of an experiment's runs (Parquet, long format) and its metadata."""

from dplab.store.rows import StoreError
from dplab.store.runstore import RunStore

__all__ = ["RunStore", "StoreError"]
