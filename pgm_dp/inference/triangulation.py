"""Junction-tree structure: min-fill triangulation, maximal cliques, the tree and its schedule.

The structure depends only on the domain and the clique set; it is computed once by
:func:`build_junction_tree` and cached. Message passing over it lives in
:mod:`.junction_tree` (log space) and :mod:`.scaled_pass` (probability space).

Triangulation uses the greedy *min-fill* heuristic with ties broken by *min-weight* (the size
of the table the elimination would create). Before anything is allocated the largest clique
table is compared with ``max_cells``, and :class:`~pgm_dp.errors.ModelTooLargeError` is raised
if it is larger (loopy BP or Gibbs sampling are the alternatives then).

>>> from pgm_dp import Domain
>>> jt = build_junction_tree(Domain(["A", "B", "C"], [2, 2, 2]), [("A", "B"), ("B", "C")])
>>> jt.cliques
(('A', 'B'), ('B', 'C'))
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import networkx as nx

from ..domain import Clique, Domain, normalize_cliques
from ..errors import ModelTooLargeError

__all__ = ["DEFAULT_MAX_CELLS", "JunctionTree", "build_junction_tree", "elimination_order"]

#: Largest clique table (cells) exact inference will build by default (2**26 float64 = 512 MiB).
DEFAULT_MAX_CELLS = 2**26


@dataclass(frozen=True, eq=False)
class JunctionTree:
    """The static structure of a junction tree over ``domain`` for ``factor_cliques``.

    ``cliques`` are the maximal cliques of the triangulated graph (canonical order),
    ``messages`` the directed edges ``(sender, receiver)`` in schedule order (the upward
    pass toward ``root`` then the downward pass), ``assignment[f]`` the junction-tree clique
    that holds input factor ``f``.
    """

    domain: Domain
    factor_cliques: tuple[Clique, ...]
    cliques: tuple[Clique, ...]
    edges: tuple[tuple[int, int], ...]
    messages: tuple[tuple[int, int], ...]
    assignment: tuple[int, ...]
    root: int

    def separator(self, i: int, j: int) -> Clique:
        return tuple(v for v in self.cliques[i] if v in self.cliques[j])

    def containing(self, variables: Sequence[Hashable]) -> int | None:
        """Index of the smallest junction-tree clique containing ``variables``, if any."""
        want = set(variables)
        best = [i for i, c in enumerate(self.cliques) if want <= set(c)]
        return min(best, key=lambda i: self.domain.size(self.cliques[i])) if best else None


def elimination_order(domain: Domain, cliques: Sequence[Clique]) -> tuple[list, list[set]]:
    """Greedy min-fill elimination (ties: min-weight); returns the order and the cliques it
    forms (variable + its neighbours at elimination time)."""
    adj: dict[Hashable, set] = {v: set() for v in domain.attributes}
    for cl in cliques:
        for u in cl:
            adj[u].update(w for w in cl if w != u)
    order, formed = [], []
    remaining = set(domain.attributes)

    # Variable names may not be mutually orderable; compare positions instead.
    pos = {v: i for i, v in enumerate(domain.attributes)}
    cells = dict(zip(domain.attributes, domain.shape, strict=True))

    def fill_in(v):
        nb = list(adj[v])
        return sum(1 for i, a in enumerate(nb) for b in nb[i + 1 :] if b not in adj[a])

    def key(u):  # (fill-in, cells of u and its neighbours, position)
        return fill_in(u), cells[u] * math.prod(cells[w] for w in adj[u]), pos[u]

    while remaining:
        v = min(remaining, key=key)
        nb = adj[v]
        formed.append(nb | {v})
        for a in nb:
            adj[a].update(nb - {a})
            adj[a].discard(v)
        order.append(v)
        remaining.discard(v)
        del adj[v]
    return order, formed


@functools.lru_cache(maxsize=256)
def _build(domain: Domain, factor_cliques: tuple[Clique, ...], max_cells: int) -> JunctionTree:
    _, formed = elimination_order(domain, factor_cliques)
    # Keep maximal cliques only (a formed clique contained in another is redundant).
    maximal: list[frozenset] = []
    for c in sorted((frozenset(c) for c in formed), key=len, reverse=True):
        if not any(c <= m for m in maximal):
            maximal.append(c)
    cliques = tuple(domain.canonical(c) for c in maximal)
    biggest = max(cliques, key=domain.size)
    if domain.size(biggest) > max_cells:
        raise ModelTooLargeError(
            f"exact inference needs a clique table on {biggest} with {domain.size(biggest):,} "
            f"cells, above max_cells={max_cells:,}; use method='loopy_bp' (or Gibbs sampling) "
            f"or raise max_cells"
        )
    # Maximum-weight spanning tree on separator sizes (zero-weight edges join components).
    g = nx.Graph()
    g.add_nodes_from(range(len(cliques)))
    for i in range(len(cliques)):
        for j in range(i + 1, len(cliques)):
            g.add_edge(i, j, weight=len(set(cliques[i]) & set(cliques[j])))
    tree = nx.maximum_spanning_tree(g, algorithm="kruskal")
    root = max(range(len(cliques)), key=lambda i: (domain.size(cliques[i]), -i))
    bfs = list(nx.bfs_edges(tree, root))  # (parent, child) in breadth-first order
    upward = [(child, parent) for parent, child in reversed(bfs)]
    messages = tuple(upward + [(parent, child) for parent, child in bfs])
    assignment = []
    for fc in factor_cliques:
        s = set(fc)
        holders = [i for i, c in enumerate(cliques) if s <= set(c)]
        assignment.append(min(holders, key=lambda i: domain.size(cliques[i])))
    return JunctionTree(
        domain=domain,
        factor_cliques=factor_cliques,
        cliques=cliques,
        edges=tuple(sorted((min(a, b), max(a, b)) for a, b in tree.edges())),
        messages=messages,
        assignment=tuple(assignment),
        root=root,
    )


def build_junction_tree(
    domain: Domain,
    cliques: Sequence[Sequence[Hashable]],
    max_cells: int = DEFAULT_MAX_CELLS,
    *,
    validated: bool = False,
) -> JunctionTree:
    """Triangulate and build (or fetch from cache) the junction tree for ``cliques``.

    Raises :class:`~pgm_dp.errors.ModelTooLargeError` before allocating anything when the
    largest clique table would exceed ``max_cells``. ``validated=True`` skips re-checking
    cliques that are already a tuple of validated tuples (a model's own cliques).
    """
    if not validated:
        cliques = normalize_cliques(domain, cliques)
    return _build(domain, tuple(cliques), int(max_cells))
