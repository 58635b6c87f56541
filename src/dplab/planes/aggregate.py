"""Exact aggregation of one switch's IPv4 routes for a longest-prefix-match table.

The rule: two sibling prefixes (the two halves of one parent) with the same action (next
hop, port, MAC rewrite: whatever the caller compares) become their parent, repeatedly, and
only when both halves are routed. The result is the smallest set of prefixes covering
exactly the addresses each action covered before, so every address resolves to the same
action as before, and an address no route covered (a miss: dropped, or the kernel's
"unreachable") is still covered by none. Nothing is gained by guessing: a default route or
a prefix spanning unused addresses would forward packets the original table drops.

The input prefixes must not overlap: then each action's addresses form a set disjoint from
every other action's, the output prefixes do not overlap either, and longest-prefix match
has nothing to choose between. (Overlapping input, e.g. a /24 with a more specific /32
inside it, is refused rather than guessed at: the caller keeps such entries apart.)

Aggregation pays when the addresses behind one next hop are contiguous and aligned: hosts
numbered along the topology (a fat-tree's pods) collapse to a few prefixes per switch,
hosts numbered in an order unrelated to the graph hardly do.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Hashable, Iterable
from ipaddress import IPv4Network
from typing import TypeVar

A = TypeVar("A", bound=Hashable)


def aggregate(routes: Iterable[tuple[IPv4Network, A]]) -> list[tuple[IPv4Network, A]]:
    """The fewest routes with the same address -> action mapping as ``routes`` (prefix,
    action) pairs, whose prefixes must not overlap (ValueError naming two that do). In
    address order."""
    ranges = sorted(((int(prefix.network_address), int(prefix.broadcast_address), prefix, action)
                     for prefix, action in routes), key=lambda r: r[0])
    for (_, last, prefix, _), (first, _, following, _) in zip(ranges, ranges[1:], strict=False):
        if first <= last:
            raise ValueError(f"routes to {prefix} and {following} overlap; aggregation needs "
                             "disjoint prefixes")
    runs: dict[A, list[list[int]]] = {}  # action -> [first, last] address runs, in order
    for first, last, _, action in ranges:
        own = runs.setdefault(action, [])
        if own and own[-1][1] + 1 == first:
            own[-1][1] = last
        else:
            own.append([first, last])
    merged = [(prefix, action) for action, spans in runs.items() for first, last in spans
              for prefix in ipaddress.summarize_address_range(
                  ipaddress.IPv4Address(first), ipaddress.IPv4Address(last))]
    return sorted(merged, key=lambda route: int(route[0].network_address))
