"""Readiness pings (planes.base.ping_until) on a link slower than a second each way."""

from __future__ import annotations

import time

import networkx as nx
import pytest

from dplab.planes.base import ping_until
from dplab.substrate.network import Network
from dplab.topology.model import HOST, Topology


@pytest.mark.net
def test_an_answer_later_than_a_second_counts() -> None:
    """A round trip of ~1.4 s (700 ms each way): a new ``ping -W1`` a second would never
    see an answer; the readiness ping does, well before its deadline."""
    g = nx.Graph()
    g.add_node("h1", kind=HOST)
    g.add_node("h2", kind=HOST)
    g.add_edge("h1", "h2", bw_mbit=None, delay_ms=700.0)
    with Network(Topology("pair", g)) as net:
        t0 = time.monotonic()
        assert ping_until(net, "h1", "h2", t0 + 8)
        assert time.monotonic() - t0 < 12
