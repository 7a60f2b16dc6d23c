"""Workloads, AIM's candidate set and its model-size filter (McKenna et al. 2022, Sec. 4).

A *workload* is a list of marginal queries ``(W, c_W)``: a clique ``W`` and a weight
``c_W >= 0``. AIM selects among the *candidates*, the downward closure of the workload
(every non-empty subset of a workload clique), and weighs candidate ``r`` by its relevance
to the workload, ``w_r = sum_W c_W |r ∩ W|`` (the reference implementation's
``compile_workload``). Candidates are kept only while the model that would hold them stays
small: the junction tree of the measured cliques plus ``r`` must fit in
``max_model_size * (budget used / budget)`` megabytes (8 bytes a cell), unless ``r`` is
already inside a clique of the current junction tree (``filter_candidates`` of the
reference implementation), and no clique of that junction tree may exceed the model's
largest table (ours). The junction tree is ours (min-fill triangulation,
:mod:`pgm_dp.inference.triangulation`) where Private-PGM uses a greedy min-size elimination
order, so a size near the limit may be judged differently.

>>> from pgm_dp import Domain
>>> dom = Domain(["A", "B", "C"], [2, 3, 4])
>>> wl = workload_cliques(dom)
>>> [c for c, _ in wl]
[('A', 'B'), ('A', 'C'), ('B', 'C')]
>>> candidate_weights(wl)[("A",)], candidate_weights(wl)[("A", "B")]
(2.0, 4.0)
>>> model_size_mb(dom, [("A", "B"), ("B", "C")]) * 2**20 / 8  # cells: 6 + 12
18.0

A workload is resolved once (:func:`resolve_workload`): the :class:`Workload` holds its
weighted cliques, its candidates with their weights and the cells of its marginals, and the
planning of the rounds and :func:`~pgm_dp.select.aim` take it as it is.

>>> wl = resolve_workload(dom, [("A", "B"), (("B", "C"), 2.0)])
>>> wl.cells, len(wl.candidates), resolve_workload(dom, wl) is wl
((6, 12), 5, True)
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from types import MappingProxyType
from typing import Any

from ..domain import MAX_TABLE_CELLS, Clique, Domain, check_table_cells
from ..errors import DomainError
from ..inference.triangulation import DEFAULT_MAX_CELLS, elimination_order

__all__ = [
    "WORKLOAD_MAX_CELLS",
    "Workload",
    "resolve_workload",
    "workload_cliques",
    "downward_closure",
    "candidate_weights",
    "junction_tree_cliques",
    "model_size_mb",
    "filter_candidates",
]

#: Largest workload marginal of the named workloads (``"2way"``, ``"3way"``), in cells: the
#: reference implementation's ``max_cells`` default (its script drops larger marginals).
WORKLOAD_MAX_CELLS = 10_000

_NAMED = {"2way": 2, "3way": 3}


def _weight(value: Any, clique: Clique) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DomainError(f"the weight of {clique} must be a real number, got {value!r}")
    w = float(value)
    if not math.isfinite(w) or w < 0:
        raise DomainError(f"the weight of {clique} must be finite and >= 0, got {value!r}")
    return w


def _items(workload: Any) -> Iterable[tuple[Any, Any]]:
    """``(clique, weight)`` pairs of a mapping or a sequence of cliques / ``(clique, w)``."""
    if isinstance(workload, Mapping):
        return workload.items()
    if isinstance(workload, str) or not isinstance(workload, Iterable):
        raise DomainError(
            f"workload must be None, {sorted(_NAMED)}, a mapping or a sequence, got {workload!r}"
        )
    out = []
    for item in workload:
        weighted = (
            isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], tuple | list)
        )
        out.append((item[0], item[1]) if weighted else (item, 1.0))
    return out


def workload_cliques(
    domain: Domain, workload: Any = None, *, max_cells: int = WORKLOAD_MAX_CELLS
) -> tuple[tuple[Clique, float], ...]:
    """The workload as ``((clique, weight), ...)``, cliques in domain order.

    ``None`` or ``"2way"``: every pair of variables, weight 1; ``"3way"``: every triple; named
    workloads drop marginals of more than ``max_cells`` cells (the reference implementation's
    default). Otherwise a mapping ``{clique: weight}`` or a sequence of cliques (weight 1) or
    ``(clique, weight)`` pairs, kept whatever their size. Refused (``DomainError``): unknown
    variables, a repeated clique, a weight that is negative or not finite, all weights zero.
    A :class:`Workload` resolved on ``domain`` gives its cliques.
    """
    if isinstance(workload, Workload):
        return _resolved_on(domain, workload).cliques
    if workload is None or isinstance(workload, str):
        k = _NAMED.get("2way" if workload is None else workload)
        if k is None:
            raise DomainError(f"unknown workload {workload!r}; use one of {sorted(_NAMED)}")
        if len(domain) < k:
            raise DomainError(f"a {workload or '2way'} workload needs {k} variables or more")
        cl = [c for c in combinations(domain.attributes, k) if domain.size(c) <= max_cells]
        if not cl:
            raise DomainError(f"every {k}-way marginal has more than {max_cells} cells")
        return tuple((c, 1.0) for c in cl)
    out: dict[Clique, float] = {}
    for raw, w in _items(workload):
        names = (raw,) if isinstance(raw, str) or not isinstance(raw, Iterable) else tuple(raw)
        if not names:
            raise DomainError("empty clique in the workload")
        clique = domain.canonical(names)  # DomainError on unknown / repeated variables
        if clique in out:
            raise DomainError(f"clique {clique} appears twice in the workload")
        out[clique] = _weight(w, clique)
    if not out:
        raise DomainError("the workload is empty")
    if not any(out.values()):
        raise DomainError("every workload weight is zero")
    return tuple(out.items())


def downward_closure(cliques: Iterable[Sequence[Hashable]]) -> tuple[Clique, ...]:
    """Every non-empty subset of the cliques (each in its clique's order), by size then
    first appearance (the reference implementation's ``downward_closure`` order)."""
    seen: dict[Clique, None] = {}
    for cl in cliques:
        for k in range(1, len(cl) + 1):
            seen.update(dict.fromkeys(combinations(tuple(cl), k)))
    return tuple(sorted(seen, key=len))


def candidate_weights(workload: Sequence[tuple[Clique, float]]) -> dict[Clique, float]:
    """``{r: w_r}`` over the downward closure, ``w_r = sum_W c_W |r ∩ W|`` (AIM Sec. 4)."""
    return {
        r: math.fsum(w * len(set(r) & set(c)) for c, w in workload)
        for r in downward_closure(c for c, _ in workload)
    }


@dataclass(frozen=True)
class Workload:
    """A workload resolved on one domain (:func:`resolve_workload`): what AIM and the
    planning of its rounds read, checked once.

    Args:
        domain: the domain it was resolved on.
        cliques: ``((clique, weight), ...)``, as :func:`workload_cliques` gives them.
        candidates: ``{r: w_r}`` over the downward closure (:func:`candidate_weights`), read
            only.
        cells: the cells of each workload marginal, in the order of ``cliques``.
    """

    domain: Domain
    cliques: tuple[tuple[Clique, float], ...]
    candidates: Mapping[Clique, float]
    cells: tuple[int, ...]


def _resolved_on(domain: Domain, workload: Workload) -> Workload:
    if workload.domain != domain:
        raise DomainError("the workload was resolved on another domain")
    return workload


def resolve_workload(
    domain: Domain, workload: Any = None, *, max_cells: int = WORKLOAD_MAX_CELLS
) -> Workload:
    """The workload (any form :func:`workload_cliques` takes, or a :class:`Workload`, given
    back as it is) resolved on ``domain``: its cliques, its candidates and their weights, the
    cells of its marginals. Refused: as :func:`workload_cliques` (``DomainError``), or
    candidates whose tables hold more than ``MAX_TABLE_CELLS`` cells in all
    (``ModelTooLargeError``, :func:`~pgm_dp.domain.check_table_cells`)."""
    if isinstance(workload, Workload):
        return _resolved_on(domain, workload)
    cliques = workload_cliques(domain, workload, max_cells=max_cells)
    candidates = candidate_weights(cliques)
    check_table_cells(domain, list(candidates), MAX_TABLE_CELLS)
    cells = tuple(domain.size(c) for c, _ in cliques)
    return Workload(domain, cliques, MappingProxyType(candidates), cells)


@functools.lru_cache(maxsize=4096)
def _jt_cliques(domain: Domain, cliques: frozenset) -> tuple[frozenset, ...]:
    """Maximal cliques of the min-fill triangulation of ``cliques`` (a set of frozensets)."""
    ordered = sorted((tuple(domain.canonical(c)) for c in cliques), key=str)
    _, formed = elimination_order(domain, ordered)
    maximal: list[frozenset] = []
    for c in sorted((frozenset(c) for c in formed), key=len, reverse=True):
        if not any(c <= m for m in maximal):
            maximal.append(c)
    return tuple(maximal)


def junction_tree_cliques(domain: Domain, cliques: Iterable[Sequence[Hashable]]):
    """The maximal junction-tree cliques (frozensets) of a model on ``cliques``."""
    return _jt_cliques(domain, frozenset(frozenset(c) for c in cliques))


def model_size_mb(domain: Domain, cliques: Iterable[Sequence[Hashable]]) -> float:
    """Megabytes (``2^20`` bytes, 8 per cell) of the junction-tree tables of a model on
    ``cliques``: the reference implementation's ``hypothetical_model_size``."""
    return sum(domain.size(c) for c in junction_tree_cliques(domain, cliques)) * 8 / 2**20


def filter_candidates(
    candidates: Mapping[Clique, float],
    domain: Domain,
    measured: Sequence[Clique],
    limit_mb: float,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> dict[Clique, float]:
    """The candidates a model on ``measured`` may take next: the model on ``measured`` plus
    ``r`` fits in ``limit_mb`` megabytes, or ``r`` lies inside a clique of the junction tree
    of ``measured`` (free: no new table); the reference implementation's
    ``filter_candidates``. Ours besides: no clique of the new junction tree may have more
    than ``max_cells`` cells, the most that the model's exact inference builds
    (:data:`~pgm_dp.inference.triangulation.DEFAULT_MAX_CELLS`), so that whatever
    ``limit_mb``, a selection never picks a marginal whose model would then be refused
    (after the round's charge)."""
    free = junction_tree_cliques(domain, measured) if measured else ()
    out = {}
    for r, w in candidates.items():
        if any(set(r) <= c for c in free):
            out[r] = w
            continue
        tree = junction_tree_cliques(domain, [*measured, r])
        sizes = [domain.size(c) for c in tree]
        if max(sizes) <= max_cells and sum(sizes) * 8 / 2**20 <= limit_mb:
            out[r] = w
    return out
