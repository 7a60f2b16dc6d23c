"""Private choice of cliques: a maximum spanning tree of pairwise dependence (MST).

The MST mechanism of McKenna, Miklau and Sheldon (2021, *Winning the NIST Contest: A
scalable and general approach to differentially private synthetic data*, JPC 11(3)) picks
the pairs of variables a model should hold: (1) measure every one-way marginal with noise;
(2) score each pair ``(i, j)`` by ``||n_ij - n̂_ij||_1``, the L1 distance between its count
table and the independent estimate ``n̂_ij = y_i y_j^T / sum(y_j)`` built from the noisy
one-way tables ``y`` alone; (3) grow a spanning tree (Kruskal) whose ``d - 1`` edges are each
chosen by the exponential mechanism among the pairs joining two components. ``n̂`` is
post-processing of step (1), so under add/remove-one neighbours a record changes one cell of
``n_ij`` by 1 and each score by at most 1: sensitivity 1. When one person owns up to ``K``
records (``max_records_per_person``, bounded by the caller: :mod:`pgm_dp.prepare.persons`),
``K`` records move each score by at most ``K`` and each one-way table by ``K`` (L1): every
sensitivity is ``K``. The budget (pure ε) is split:
``one_way_fraction`` for step (1) through :func:`~pgm_dp.privacy.release_marginals`, the
rest evenly over the ``d - 1`` exponential-mechanism draws; the accountant is checked for
the whole before the data are read, then charged per step.

>>> from pgm_dp.models import third_order_chain
>>> from pgm_dp import PureDP
>>> truth = third_order_chain(5, 3, rng=0)
>>> sel = select_cliques(truth.sample(5000, rng=1), PureDP(1.0), truth.domain, rng=2)
>>> len(sel.cliques)
4
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from ..domain import MAX_TABLE_CELLS, Clique, Domain, check_table_cells
from ..errors import DomainError, PrivacyParameterError
from ..privacy.accountant import Accountant
from ..privacy.argmax import exponential_mechanism
from ..privacy.budget import PureDP, compose, require_budget
from ..privacy.release import NoisyMarginals, check_records_per_person, release_marginals
from ..rng import RngLike, as_generator
from ..tables import contingency_table

__all__ = ["Selection", "select_cliques", "pair_scores", "with_one_way"]


@dataclass(frozen=True)
class Selection:
    """``cliques``: the chosen pairs (a spanning tree, in the order picked); ``one_way``: the
    noisy one-way release of step (1) (reusable by a learner); ``budget``: the total spent."""

    cliques: tuple[Clique, ...]
    one_way: NoisyMarginals
    budget: PureDP


def pair_scores(
    codes: np.ndarray, domain: Domain, one_way: NoisyMarginals, pairs: Sequence[Clique]
) -> np.ndarray:
    """``||n_ij - y_i y_j^T / sum(y_j)||_1`` of each pair (sensitivity 1; module doc)."""
    y = {a: np.clip(np.asarray(one_way.noisy[(a,)], float), 0, None) for a in domain}
    out = np.empty(len(pairs))
    for k, (a, b) in enumerate(pairs):
        counts = contingency_table(codes, [domain.index(a), domain.index(b)], domain.sizes((a, b)))
        est = np.outer(y[a], y[b]) / max(y[b].sum(), 1.0)
        out[k] = np.abs(counts - est).sum()
    return out


def select_cliques(
    data: Any,
    budget: PureDP,
    domain: Domain | None = None,
    *,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    one_way_fraction: float = 0.5,
    candidates: Sequence[tuple[Hashable, Hashable]] | None = None,
    max_records_per_person: int = 1,
) -> Selection:
    """A private spanning tree of pairs (MST, McKenna et al. 2021; see the module doc).

    Args:
        data: The records (codes or labels).
        budget: The whole selection's ``ε`` (one-way tables and the tree's choices).
        domain: Defaults to :meth:`Domain.from_dataframe` of ``data`` (which reads the
            categories from the data: declare it for a fully private pipeline).
        rng: ``None`` for a real release; a seed for tests.
        accountant: Charged before any noise is drawn.
        one_way_fraction: The share of ``budget`` spent on the one-way tables.
        candidates: The pairs to choose from (default: all); they must connect every
            variable.
        max_records_per_person: ``K``, the most records of one person in ``data``: every
            sensitivity times ``K`` (module doc).

    Everything is refused before the accountant is charged: candidates that do not connect
    every variable, a pair table over ``MAX_TABLE_CELLS`` cells. The one-way release
    estimates ``N`` from its noisy tables (``total="estimate"``, no extra cost).
    """
    require_budget(budget, PureDP, f"select_cliques needs a PureDP budget, got {budget!r}")
    if not 0 < one_way_fraction < 1:
        raise PrivacyParameterError(f"one_way_fraction must be in (0, 1), got {one_way_fraction}")
    domain = Domain.from_dataframe(data) if domain is None else domain
    attrs, pairs = _candidate_pairs(domain, candidates)
    k = check_records_per_person(max_records_per_person)
    if accountant is not None:
        accountant.check(budget, what="select_cliques")
    codes = domain.codes(data)  # never read by label again
    gen = as_generator(rng)
    eps1 = budget.epsilon * one_way_fraction
    one_way = release_marginals(
        codes,
        [(a,) for a in attrs],
        domain,
        budget=PureDP(eps1),
        rng=gen,
        accountant=accountant,
        what="select_cliques: one-way marginals",
        total="estimate",
        max_records_per_person=k,
    )
    scores = pair_scores(codes.array, domain, one_way, pairs)
    step = PureDP((budget.epsilon - eps1) / (len(attrs) - 1))
    component = {a: a for a in attrs}

    def root(a):
        while component[a] != a:
            a = component[a]
        return a

    chosen: list[Clique] = []
    for k in range(len(attrs) - 1):
        open_ = [i for i, (a, b) in enumerate(pairs) if root(a) != root(b)]
        if not open_:
            raise DomainError("candidates do not connect every variable")
        pick = open_[
            exponential_mechanism(
                scores[open_],
                sensitivity=float(k),
                budget=step,
                rng=gen,
                accountant=accountant,
                what=f"select_cliques: edge {k + 1}",
            )
        ]
        a, b = pairs[pick]
        component[root(a)] = root(b)
        chosen.append(pairs[pick])
    return Selection(tuple(chosen), one_way, budget)


def _candidate_pairs(domain: Domain, candidates) -> tuple[list, list[Clique]]:
    """The variables and the candidate pairs (default: all), refused (DomainError,
    ModelTooLargeError) before any charge unless they are pairs whose tables fit and that
    connect every variable."""
    attrs = list(domain.attributes)
    if len(attrs) < 2:
        raise DomainError("select_cliques needs at least two variables")
    pairs = [domain.canonical(p) for p in (candidates or combinations(attrs, 2))]
    if any(len(p) != 2 for p in pairs):
        raise DomainError("candidates must be pairs of distinct variables")
    for p in pairs:  # each pair table is counted on its own (pair_scores)
        check_table_cells(domain, [p], MAX_TABLE_CELLS)
    _check_connected(attrs, pairs)
    return attrs, pairs


def _check_connected(attrs: list, pairs: Sequence[Clique]) -> None:
    """DomainError unless the candidate pairs connect every variable (checked before any
    charge: the spanning tree needs ``d - 1`` of them)."""
    graph = {a: {a} for a in attrs}
    for a, b in pairs:
        if graph[a] is not graph[b]:
            merged = graph[a] | graph[b]
            for v in merged:
                graph[v] = merged
    if len(graph[attrs[0]]) != len(attrs):
        raise DomainError("candidates do not connect every variable")


def _joint_total(one: NoisyMarginals, release: NoisyMarginals) -> float:
    """The total ``N`` of the joined release: the clique release's when the one-way total is
    an estimate and the other is not (public, given or a noisy count); both estimates pooled
    (inverse-variance weights over all tables) when both are; else both must agree."""
    if one.total_source == "estimate" and release.total_source == "estimate":
        tables = [(t, one.noise[c]) for c, t in one.noisy.items()]
        tables += [(t, release.noise[c]) for c, t in release.noisy.items()]
        sums = np.array([float(np.sum(t)) for t, _ in tables])
        wts = np.array([1.0 / max(t.size * m.variance, 1e-300) for t, m in tables])
        return max(float(np.sum(wts * sums) / np.sum(wts)), 1.0)
    same = (one.total, one.total_source) == (release.total, release.total_source)
    if one.total_source != "estimate" and not same:
        raise PrivacyParameterError("the one-way and clique releases differ in their total")
    return release.total


def with_one_way(selection: Selection, release: NoisyMarginals) -> NoisyMarginals:
    """One release of the selection's noisy one-way tables (already paid for) and
    ``release`` (the chosen cliques' tables), so that a learner fits both, as MST's final
    estimate uses its one-way measurements too (McKenna et al. 2021). The budget is the
    composition of the whole selection's (its one-way tables and the choice of the cliques,
    both made on the data) and the release's; the domains and mechanisms must agree. The total
    ``N``: :func:`_joint_total`."""
    one = selection.one_way
    if one.domain != release.domain or one.mechanism != release.mechanism:
        raise PrivacyParameterError("the one-way and clique releases differ in domain or mechanism")
    total = _joint_total(one, release)
    cliques = one.cliques + tuple(c for c in release.cliques if c not in one.cliques)
    return release.with_tables(
        {**one.noisy, **release.noisy},
        {**one.noise, **release.noise},
        cliques=cliques,
        budget=compose(selection.budget, release.budget),
        sensitivity=one.sensitivity + release.sensitivity,
        total=total,
    )
