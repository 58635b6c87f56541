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

from collections.abc import Hashable, Iterable
from ipaddress import IPv4Address, IPv4Network
from typing import TypeVar

A = TypeVar("A", bound=Hashable)


def aggregate(routes: Iterable[tuple[IPv4Network, A]]) -> list[tuple[IPv4Network, A]]:
    """The fewest routes with the same address -> action mapping as ``routes`` (prefix,
    action) pairs, whose prefixes must not overlap (ValueError naming two that do). In
    address order."""
    spans = ((int(prefix.network_address), int(prefix.broadcast_address), action)
             for prefix, action in routes)
    return [(IPv4Network((network, length)), action)
            for network, length, action in aggregate_spans(spans)]


def aggregate_spans(spans: Iterable[tuple[int, int, A]]) -> list[tuple[int, int, A]]:
    """``aggregate`` on integers, for callers with millions of routes: (first address, last
    address, action) of each input prefix in, (network address, prefix length, action) out."""
    ordered = sorted(spans, key=lambda span: span[0])
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after[0] <= before[1]:
            raise ValueError(f"routes to {_span_text(before)} and {_span_text(after)} "
                             "overlap; aggregation needs disjoint prefixes")
    runs: dict[A, list[list[int]]] = {}  # action -> [first, last] address runs, in order
    for first, last, action in ordered:
        own = runs.setdefault(action, [])
        if own and own[-1][1] + 1 == first:
            own[-1][1] = last
        else:
            own.append([first, last])
    merged = [(network, length, action) for action, own in runs.items() for first, last in own
              for network, length in _aligned_blocks(first, last)]
    return sorted(merged, key=lambda route: route[0])


def _aligned_blocks(first: int, last: int) -> Iterable[tuple[int, int]]:
    """The fewest prefixes (network address, length) covering first..last exactly: from
    ``first``, each time the largest block aligned there that does not pass ``last``."""
    while first <= last:
        aligned = first & -first if first else 1 << 32  # the block size first is aligned to
        fits = 1 << ((last - first + 1).bit_length() - 1)  # the largest power of 2 that fits
        size = min(aligned, fits)
        yield first, 33 - size.bit_length()
        first += size


def _span_text(span: tuple[int, int, object]) -> str:
    """An input prefix (first, last, action) as text, for errors."""
    first, last, _ = span
    return f"{IPv4Address(first)}/{33 - (last - first + 1).bit_length()}"
