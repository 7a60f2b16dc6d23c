"""Factor-graph structure for vectorised message passing: factors stacked by shape.

Loopy BP (:mod:`.loopy_bp`) treats each clique as a factor node and each variable as a
variable node. So that its compiled program does not grow with the number of factors or
edges, the structure is laid out as index arrays, computed once per (domain, cliques):

* factors of one canonical table shape form a *group*; a group's log-potentials are one
  stacked array ``(n_factors, *shape)`` read from the flat parameter vector by one gather;
* an *edge* joins a factor to one of its variables. Edges are numbered group by group,
  then by slot (axis) in the group's shape, then by factor, so the messages of one slot of a
  group are one contiguous block of rows of the ``(n_edges, width)`` message array
  (``width`` the largest domain size; a variable's padded states hold ``-inf``);
* a variable sums its incoming messages with one ``segment_sum`` over ``edge_var``.

The flat parameter vector is the flat table layout (:mod:`pgm_dp.tables`: every
clique's table raveled in clique order, axes in the clique's order); ``scatter`` maps
the stacked groups back to it.

>>> from pgm_dp import Domain
>>> g = factor_graph(Domain(["A", "B", "C"], [2, 3, 3]), (("A", "B"), ("C", "B"), ("B",)))
>>> [(grp.shape, grp.size) for grp in g.groups], g.n_edges, g.width
([((2, 3), 1), ((3, 3), 1), ((3,), 1)], 5, 3)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..domain import Clique, Domain
from ..tables import table_layout

__all__ = ["FactorGraph", "FactorGroup", "factor_graph"]


@dataclass(frozen=True, eq=False)
class FactorGroup:
    """Factors of one canonical shape: ``gather`` reads their stacked tables
    ``(size, *shape)`` from the flat parameter vector; the messages of slot ``j`` are the
    rows ``first_edge + j * size`` to ``first_edge + (j + 1) * size``; ``members``: the
    factors' positions in ``cliques``."""

    shape: tuple[int, ...]
    size: int
    gather: np.ndarray
    first_edge: int
    members: np.ndarray

    def rows(self, slot: int) -> slice:
        start = self.first_edge + slot * self.size
        return slice(start, start + self.size)


@dataclass(frozen=True, eq=False)
class FactorGraph:
    """The factor graph of ``cliques`` over ``domain`` as index arrays (see module doc).

    ``edge_var[e]``: the variable (domain position) of edge ``e``; ``edge_valid[e, x]``:
    whether state ``x`` exists for it; ``var_valid``, ``degree``: per variable;
    ``scatter``: position of each flat parameter in the concatenated raveled groups."""

    domain: Domain
    cliques: tuple[Clique, ...]
    width: int
    groups: tuple[FactorGroup, ...]
    edge_var: np.ndarray
    edge_valid: np.ndarray
    var_valid: np.ndarray
    degree: np.ndarray
    scatter: np.ndarray

    @property
    def n_edges(self) -> int:
        return int(self.edge_var.shape[0])

    @property
    def n_vars(self) -> int:
        return len(self.domain.attributes)

    @property
    def n_params(self) -> int:
        return int(self.scatter.shape[0])


@functools.lru_cache(maxsize=128)
def factor_graph(domain: Domain, cliques: tuple[Clique, ...]) -> FactorGraph:
    """Build (or fetch from cache) the stacked factor graph of validated ``cliques``."""
    offsets = table_layout(domain, cliques).offsets
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for f, c in enumerate(cliques):
        by_shape.setdefault(domain.sizes(domain.canonical(c)), []).append(f)
    groups, gathers, edge_var, first = [], [], [], 0
    for shape, members in by_shape.items():
        cells = []
        for f in members:
            c, canon = cliques[f], domain.canonical(cliques[f])
            local = np.arange(math.prod(shape)).reshape(domain.sizes(c))
            cells.append(offsets[f] + np.transpose(local, [c.index(v) for v in canon]).ravel())
        gather = np.concatenate(cells).astype(np.int64)
        gathers.append(gather)
        groups.append(FactorGroup(shape, len(members), gather, first, np.asarray(members)))
        for slot in range(len(shape)):
            edge_var += [domain.index(domain.canonical(cliques[f])[slot]) for f in members]
        first += len(shape) * len(members)
    sizes = np.asarray(domain.shape, dtype=np.int64)
    width = int(sizes.max()) if sizes.size else 1
    edge_var_arr = np.asarray(edge_var, dtype=np.int64)
    states = np.arange(width)
    var_valid = states[None, :] < sizes[:, None]
    stacked = np.concatenate(gathers) if gathers else np.zeros(0, dtype=np.int64)
    scatter = np.empty_like(stacked)
    scatter[stacked] = np.arange(stacked.size)
    return FactorGraph(
        domain=domain,
        cliques=cliques,
        width=width,
        groups=tuple(groups),
        edge_var=edge_var_arr,
        edge_valid=var_valid[edge_var_arr] if edge_var else np.zeros((0, width), bool),
        var_valid=var_valid,
        degree=np.bincount(edge_var_arr, minlength=len(sizes)),
        scatter=scatter,
    )
