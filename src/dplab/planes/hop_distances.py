"""Hop counts between many nodes of a large graph, breadth-first in C (scipy) a block of
sources at a time: backbone graphs have thousands of nodes, and a Python breadth-first
search from each of them takes minutes where this takes seconds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import networkx as nx
import numpy as np
from scipy.sparse.csgraph import shortest_path

ROWS_AT_ONCE = 256  # distance rows per shortest_path call: bounds its matrix's memory


def hop_rows(graph: nx.Graph, nodes: Sequence[str], sources: Sequence[int]
             ) -> Iterator[tuple[int, np.ndarray]]:
    """(index into ``sources`` of the block's first row, hops from each source of the block to
    every node of ``nodes``, in that order; inf where unreachable). ``sources`` index
    ``nodes``; ``graph`` holds exactly ``nodes``."""
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=list(nodes), format="csr")
    for start in range(0, len(sources), ROWS_AT_ONCE):
        block = list(sources[start:start + ROWS_AT_ONCE])
        yield start, shortest_path(adjacency, unweighted=True, indices=block)
