"""Real namespaces, veth pairs and shaping for a Topology; the only room that talks netlink."""

from dplab.substrate.network import Network
from dplab.substrate.registry import SubstrateError, cleanup_on_signals, reclaim_stale

__all__ = ["Network", "SubstrateError", "cleanup_on_signals", "reclaim_stale"]
