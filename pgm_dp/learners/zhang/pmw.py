"""Private multiplicative weights (Hardt & Rothblum 2010) for parity queries over ``{±1}^p``.

The queries are parities ``q_I(z) = prod_{i in I} z_i`` of order ``1 <= |I| <= t`` (as in
Zhang et al. 2020, Alg. 5 line 2, which releases them with PMW); answers are means over the
records, so one record replaced moves an answer by at most ``Delta = 2 / n``.

Online PMW, one pass over the queries in the given order, with at most ``K`` updates:

* a sparse-vector test (AboveThreshold, Lyu et al. 2017, Alg. 1 with ``eps_1 = eps_2 =
  eps_0 / 2``): ``|a_q(D) - a_q(x)| + Lap(4 Delta / eps_0) >= alpha + Lap(2 Delta / eps_0)``,
  threshold noise redrawn after every update; ``eps_0``-DP per update. Floating-point safe
  (Mironov 2012): the gap and ``alpha`` are rounded to one lattice ``g Z`` (``g <= 2^-20
  Delta``) and both noises are exact discrete Laplace on it
  (:mod:`~pgm_dp.privacy.lattice`), with ``Delta`` raised to ``Delta + g`` (the rounded gap's
  sensitivity) in both scales, so the comparison is exact and the proof holds as written;
* on a hit, the Laplace measurement ``m = a_q(D) + Lap(Delta / eps_0)`` (``eps_0``-DP) and the
  multiplicative-weights update ``x(u) <- x(u) exp(q(u) (m - a_q(x)) / 2)`` (the update of MWEM,
  Hardt, Ligett & McSherry 2012 — our choice of step), renormalised.

Budget: ``2K`` pieces of ``eps_0``-DP, each ``eps_0^2/2``-zCDP (Zhang et al. Lemma 2.14), so
``eps_0 = sqrt(rho / K)`` spends ``rho`` (Lemma 2.15). An ``ApproxDP(eps, delta)`` budget is
spent as the largest ``rho`` whose conversion fits it
(:func:`~pgm_dp.privacy.noise.zcdp_rho_within`). The accountant is charged once, before any
noise. Defaults (ours; the paper leaves them open): ``K`` and ``alpha`` from :func:`pmw_plan`,
the smallest ``K`` that the multiplicative-weights potential argument says is never exhausted
and ``alpha`` three times the sparse-vector noise level (derivation in :mod:`~.parities`,
which also says when per-query noise is the better release).

The synthetic distribution ``x`` is a table over all ``2^p`` points: PMW refuses ``p >``
:data:`PMW_MAX_VARIABLES` (:class:`~pgm_dp.errors.ModelTooLargeError`) before allocating it.
All parities of ``x`` are read at once by a fast Walsh-Hadamard transform (``O(p 2^p)``).

>>> z = np.where(np.random.default_rng(0).random((5000, 4)) < 0.8, 1.0, -1.0)
>>> res = pmw_release(z, parity_queries(4, 1), ZCDP(10.0), rng=1)
>>> bool(np.max(np.abs(res.answers - 0.6)) < 0.1)
True
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ...errors import DataValidationError, DomainError, ModelTooLargeError, PrivacyParameterError
from ...models.mrf import MarkovRandomField
from ...privacy import ZCDP, Accountant, ApproxDP, Budget, PureDP, laplace_mechanism
from ...privacy.budget import require_budget
from ...privacy.lattice import LAPLACE_BITS, LatticePlan, lattice_noisy, to_lattice
from ...privacy.samplers import discrete_laplace_rational_scale
from ...rng import RngLike, as_generator
from ..base import Fit
from .pairwise import as_model

__all__ = [
    "PMW",
    "PMW_MAX_VARIABLES",
    "PMWPlan",
    "PMWResult",
    "parity_queries",
    "parity_sums",
    "pmw_plan",
    "pmw_release",
    "walsh",
]

PMW_MAX_VARIABLES = 20
"""Largest ``p`` PMW accepts: its table has ``2^p`` float64 cells (8 MiB at ``p = 20``)."""
#: ``Delta' / Delta``: the lattice rounding raises the sensitivity by ``2^-20`` of itself.
_LATTICE_SLACK = 1 + 2.0**-20


@dataclass(frozen=True)
class PMWResult:
    """Released answers ``(m,)``, the synthetic distribution ``(2^p,)``, updates, cost."""

    answers: np.ndarray
    distribution: np.ndarray
    updates: int
    spent: ZCDP


@dataclass(frozen=True)
class PMWPlan:
    """PMW's derived settings: ``K`` updates, threshold ``alpha``, per-piece ``eps0`` and the
    high-probability max error ``bound = 4 nu`` (module docstring)."""

    max_updates: int
    alpha: float
    eps0: float
    bound: float


def parity_queries(p: int, t: int) -> list[tuple[int, ...]]:
    """All index sets ``I`` with ``1 <= |I| <= t`` in ``range(p)`` (by order, then lexically).

    >>> parity_queries(3, 2)
    [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    """
    return [c for r in range(1, t + 1) for c in itertools.combinations(range(p), r)]


def walsh(table: np.ndarray) -> np.ndarray:
    """``out[mask] = sum_u table[u] prod_{i in mask} z_i(u)`` for a ``2^p`` table indexed by
    ``u = sum_i [z_i = +1] 2^i`` (fast Walsh-Hadamard transform, ``z_i = -1`` for bit 0)."""
    out = np.array(table, dtype=np.float64)
    p = int(round(math.log2(out.size)))
    for i in range(p):
        view = out.reshape(-1, 2, 1 << i)
        low, high = view[:, 0, :].copy(), view[:, 1, :].copy()
        view[:, 0, :], view[:, 1, :] = high + low, high - low  # mask bit 0: sum, bit 1: +1 - -1
    return out


def _mask(query: tuple[int, ...]) -> int:
    return sum(1 << i for i in query)


def _comparison_slack(n: int, m: int, k: int, rho: float, beta: float) -> float:
    """``nu = 6 Delta' L / eps_0``: how far the sparse-vector noises move one comparison on
    the probability-``1 - beta`` event (:mod:`~.parities`)."""
    return 6 * (2.0 / n) * _LATTICE_SLACK * math.log(3 * (m + 1) / beta) / math.sqrt(rho / k)


def pmw_plan(n: int, m: int, p: int, rho: float, beta: float = 0.05) -> PMWPlan:
    """``K``, ``alpha`` and the error bound of PMW on ``m`` parities over ``p`` spins, ``n``
    records, ``rho``-zCDP (derivation: :mod:`~.parities`)."""
    check_sizes(n, m, p, beta)
    if not (math.isfinite(rho) and rho > 0):
        raise PrivacyParameterError(f"rho must be finite and > 0, got {rho}")
    per_update = _comparison_slack(n, m, 1, rho, beta)  # nu at K = 1; nu grows as sqrt(K)
    k = min(max(math.ceil(math.sqrt(0.56 * p) / per_update), 1), m)
    nu = _comparison_slack(n, m, k, rho, beta)
    return PMWPlan(k, 3 * nu, math.sqrt(rho / k), 4 * nu)


def _rho_of(budget: Budget) -> float:
    require_budget(budget, (ZCDP, ApproxDP), f"need a ZCDP or ApproxDP budget, got {budget!r}")
    return budget.rho_within()


def _svt_plans(sens: float, eps0: float, alpha: float) -> tuple[LatticePlan, LatticePlan]:
    """Lattice plans of the sparse-vector noises on one lattice ``g Z``: the threshold's
    ``2 (Delta + g) / eps_0`` and the queries' ``4 (Delta + g) / eps_0`` (module docstring);
    PrivacyParameterError (before any charge) when a gap in ``[0, 2]`` or ``alpha`` would not
    fit the exact lattice range."""
    k = math.frexp(sens)[1] - 1 - LAPLACE_BITS  # g <= 2^-20 Delta
    g = Fraction(2) ** k
    if max(2.0, alpha) / g >= 2**50:
        raise PrivacyParameterError(f"PMW: alpha = {alpha:.3g} is too large for the exact noise")
    plans = []
    for factor in (2, 4):
        units = discrete_laplace_rational_scale(factor * (Fraction(sens) + g) / Fraction(eps0) / g)
        plans.append(LatticePlan("laplace", k, units, float(units * g), float(g)))
    return plans[0], plans[1]


def _noises(plan: LatticePlan, count: int, gen: np.random.Generator) -> np.ndarray:
    """``count`` independent draws of ``plan``'s noise (multiples of its lattice step), drawn
    up front: adding one to a value rounded to the lattice is exactly ``lattice_noisy``."""
    return lattice_noisy(np.zeros(count), plan, gen)


def _rounded(value: float, plan: LatticePlan) -> float:
    return float(np.ldexp(float(to_lattice(np.array([value]), plan.exponent)[0]), plan.exponent))


def checked_parities(data: Any, queries) -> tuple[np.ndarray, int, list[tuple[int, ...]]]:
    """``(z, p, queries)`` of ±1 ``data`` ``(n, p)`` and parity index sets, or
    DataValidationError / ModelTooLargeError (``p > PMW_MAX_VARIABLES``)."""
    z = np.array(data, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] < 1 or not np.all((z == 1.0) | (z == -1.0)):
        raise DataValidationError("data must be (n, p) spins in {-1, +1}")
    p = z.shape[1]
    if p > PMW_MAX_VARIABLES:
        raise ModelTooLargeError(
            f"PMW keeps a table over all 2^{p} points; p > {PMW_MAX_VARIABLES} is refused"
        )
    qs = [tuple(int(i) for i in q) for q in queries]
    if not qs or any(not q or len(set(q)) != len(q) or min(q) < 0 or max(q) >= p for q in qs):
        raise DataValidationError(f"queries must be non-empty sets of indices in 0..{p - 1}")
    return z, p, qs


def _histogram(z: np.ndarray) -> np.ndarray:
    """Counts of the ``2^p`` points, indexed by ``u = sum_i [z_i = +1] 2^i``."""
    index = ((z > 0) * (1 << np.arange(z.shape[1]))).sum(axis=1)
    return np.bincount(index, minlength=1 << z.shape[1])


def parity_sums(z: np.ndarray, queries) -> np.ndarray:
    """``sum_records prod_{i in I} z_i`` for each index set ``I`` (int64, exact), by one
    Walsh-Hadamard transform of the records' histogram."""
    sums = walsh(_histogram(z))
    return np.rint(sums[[_mask(q) for q in queries]]).astype(np.int64)


def pmw_release(
    data: Any,
    queries,
    budget: Budget,
    *,
    alpha: float | None = None,
    max_updates: int | None = None,
    beta: float = 0.05,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> PMWResult:
    """Answers to parity ``queries`` on ±1 ``data`` by online PMW (module docstring).

    ``max_updates`` and ``alpha`` default to :func:`pmw_plan`'s (derived from ``n``, the
    number of queries, ``p``, ``rho`` and the failure probability ``beta``)."""
    z, p, qs = checked_parities(data, queries)
    rho = _rho_of(budget)
    n, m = z.shape[0], len(qs)
    K = pmw_plan(n, m, p, rho, beta).max_updates if max_updates is None else max_updates
    if isinstance(K, bool) or int(K) != K or K < 1:
        raise DataValidationError(f"max_updates must be a positive integer, got {K!r}")
    K = int(K)
    sens = 2.0 / n
    eps0 = math.sqrt(rho / K)
    alpha = 3 * _comparison_slack(n, m, K, rho, beta) if alpha is None else float(alpha)
    if not math.isfinite(alpha) or alpha < 0:
        raise DataValidationError(f"alpha must be finite and >= 0, got {alpha}")
    threshold_plan, query_plan = _svt_plans(sens, eps0, alpha)
    gen = as_generator(rng)
    spent = ZCDP(rho)
    if accountant is not None:
        accountant.charge(spent, what="PMW parities", mechanism="sparse_vector+laplace")
    truth = walsh(_histogram(z) / n)
    masks = np.array([_mask(q) for q in qs])
    bits = (np.arange(1 << p)[:, None] >> np.arange(p)) & 1
    x = np.full(1 << p, 1.0 / (1 << p))
    synthetic = walsh(x)
    answers, updates = np.empty(m), 0
    query_noise = _noises(query_plan, m, gen)  # one per query, as drawn in the loop
    threshold_noise = _noises(threshold_plan, K + 1, gen)  # one per update, and the first
    level = _rounded(alpha, threshold_plan)
    threshold = level + threshold_noise[0]
    for j, mask in enumerate(masks):
        gap = abs(truth[mask] - synthetic[mask])
        if updates < K and _rounded(gap, query_plan) + query_noise[j] >= threshold:
            measured = laplace_mechanism(
                truth[mask], l1_sensitivity=sens, budget=PureDP(eps0), rng=gen
            )
            q_u = np.where(np.sum(bits[:, list(qs[j])], axis=1) % 2 == len(qs[j]) % 2, 1.0, -1.0)
            x = x * np.exp(q_u * (float(measured) - synthetic[mask]) / 2)
            x /= x.sum()
            synthetic = walsh(x)
            updates += 1
            threshold = level + threshold_noise[updates]
            answers[j] = float(measured)
        else:
            answers[j] = synthetic[mask]
    return PMWResult(answers, x, updates, spent)


@dataclass(frozen=True)
class PMW:
    """PMW as a :class:`~pgm_dp.learners.RecordLearner`: releases all parities of order
    ``<= t`` and returns the synthetic distribution as a one-clique MRF (2-state variables,
    code 0 = -1, 1 = +1; ``p <= PMW_MAX_VARIABLES``). ``budget``: ``ZCDP`` or ``ApproxDP``."""

    selects_structure: ClassVar[bool] = True  # one clique of all variables, not mrf's
    t: int = 2
    alpha: float | None = None
    max_updates: int | None = None

    def fit(self, data, mrf, *, budget, rng=None, accountant=None) -> Fit:
        domain = as_model(mrf).domain
        if any(size != 2 for size in domain.shape):
            raise DomainError("PMW over {-1, +1}^p needs 2-state variables")
        if len(domain) > PMW_MAX_VARIABLES:
            raise ModelTooLargeError(f"PMW refuses p = {len(domain)} > {PMW_MAX_VARIABLES}")
        z = 2.0 * domain.encode(data) - 1.0
        qs = parity_queries(len(domain), self.t)
        res = pmw_release(
            z,
            qs,
            budget,
            alpha=self.alpha,
            max_updates=self.max_updates,
            rng=rng,
            accountant=accountant,
        )
        p = len(domain)
        # table index u = sum_i bit_i 2^i; the clique's axes are the variables in order.
        table = (
            np.log(np.maximum(res.distribution, 1e-300)).reshape([2] * p).transpose(range(p)[::-1])
        )
        model = MarkovRandomField(domain, [tuple(domain.attributes)], [table])
        info = {"answers": res.answers, "queries": qs, "updates": res.updates}
        return Fit(model, info=info | {"spent": res.spent, "budget": budget})


def check_sizes(n: int, m: int, p: int, beta: float) -> None:
    if n < 1 or m < 1 or p < 1:
        raise PrivacyParameterError(f"n, m and p must be >= 1, got {n}, {m}, {p}")
    if not 0 < beta < 1:
        raise PrivacyParameterError(f"beta must be in (0, 1), got {beta}")
