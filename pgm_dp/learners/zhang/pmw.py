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
noise. Defaults (ours; the paper leaves them open): ``K = 25`` updates and ``alpha`` = the
query-noise scale times ``log(2m)`` (few false hits among ``m`` queries).

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
from ...privacy.lattice import LAPLACE_BITS, LatticePlan, lattice_noisy
from ...privacy.noise import zcdp_rho_within
from ...privacy.samplers import discrete_laplace_rational_scale
from ...rng import RngLike, as_generator
from ..base import Fit
from .pairwise import as_model

__all__ = ["PMW", "PMW_MAX_VARIABLES", "PMWResult", "parity_queries", "pmw_release", "walsh"]

PMW_MAX_VARIABLES = 20
"""Largest ``p`` PMW accepts: its table has ``2^p`` float64 cells (8 MiB at ``p = 20``)."""


@dataclass(frozen=True)
class PMWResult:
    """Released answers ``(m,)``, the synthetic distribution ``(2^p,)``, updates, cost."""

    answers: np.ndarray
    distribution: np.ndarray
    updates: int
    spent: ZCDP


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


def _rho_of(budget: Budget) -> float:
    if isinstance(budget, ZCDP):
        return budget.rho
    if isinstance(budget, ApproxDP):
        return zcdp_rho_within(budget)
    raise PrivacyParameterError(f"PMW needs a ZCDP or ApproxDP budget, got {budget!r}")


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


def _noisy(value: float, plan: LatticePlan, gen: np.random.Generator) -> float:
    return float(lattice_noisy(np.array([value]), plan, gen)[0])


def _checked(data: Any, queries, max_updates: int):
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
    if isinstance(max_updates, bool) or int(max_updates) != max_updates or max_updates < 1:
        raise DataValidationError(f"max_updates must be a positive integer, got {max_updates!r}")
    return z, p, qs


def pmw_release(
    data: Any,
    queries,
    budget: Budget,
    *,
    alpha: float | None = None,
    max_updates: int = 25,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> PMWResult:
    """Answers to parity ``queries`` on ±1 ``data`` by online PMW (module docstring)."""
    z, p, qs = _checked(data, queries, max_updates)
    rho = _rho_of(budget)
    n, m, K = z.shape[0], len(qs), int(max_updates)
    sens = 2.0 / n
    eps0 = math.sqrt(rho / K)
    query_scale = 4 * sens / eps0
    alpha = query_scale * math.log(2 * m) if alpha is None else float(alpha)
    if not math.isfinite(alpha) or alpha < 0:
        raise DataValidationError(f"alpha must be finite and >= 0, got {alpha}")
    threshold_plan, query_plan = _svt_plans(sens, eps0, alpha)
    gen = as_generator(rng)
    spent = ZCDP(rho)
    if accountant is not None:
        accountant.charge(spent, what="PMW parities", mechanism="sparse_vector+laplace")
    index = ((z > 0) * (1 << np.arange(p))).sum(axis=1)
    truth = walsh(np.bincount(index, minlength=1 << p) / n)
    masks = np.array([_mask(q) for q in qs])
    bits = (np.arange(1 << p)[:, None] >> np.arange(p)) & 1
    x = np.full(1 << p, 1.0 / (1 << p))
    synthetic = walsh(x)
    answers, updates = np.empty(m), 0
    threshold = _noisy(alpha, threshold_plan, gen)
    for j, mask in enumerate(masks):
        gap = abs(truth[mask] - synthetic[mask])
        if updates < K and _noisy(gap, query_plan, gen) >= threshold:
            measured = laplace_mechanism(
                truth[mask], l1_sensitivity=sens, budget=PureDP(eps0), rng=gen
            )
            q_u = np.where(np.sum(bits[:, list(qs[j])], axis=1) % 2 == len(qs[j]) % 2, 1.0, -1.0)
            x = x * np.exp(q_u * (float(measured) - synthetic[mask]) / 2)
            x /= x.sum()
            synthetic = walsh(x)
            updates += 1
            threshold = _noisy(alpha, threshold_plan, gen)
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
    max_updates: int = 25

    def fit(self, data, mrf, *, budget, rng=None, accountant=None) -> Fit:
        domain = as_model(mrf).domain
        if any(size != 2 for size in domain.shape):
            raise DomainError("PMW over {-1, +1}^p needs 2-state variables")
        if len(domain) > PMW_MAX_VARIABLES:
            raise ModelTooLargeError(f"PMW refuses p = {len(domain)} > {PMW_MAX_VARIABLES}")
        z = 2.0 * domain.encode(data) - 1.0
        qs = parity_queries(len(domain), self.t)
        res = pmw_release(z, qs, budget, alpha=self.alpha, max_updates=self.max_updates, rng=rng,
                          accountant=accountant)  # fmt: skip
        p = len(domain)
        # table index u = sum_i bit_i 2^i; the clique's axes are the variables in order.
        table = (
            np.log(np.maximum(res.distribution, 1e-300)).reshape([2] * p).transpose(range(p)[::-1])
        )
        model = MarkovRandomField(domain, [tuple(domain.attributes)], [table])
        info = {"answers": res.answers, "queries": qs, "updates": res.updates}
        return Fit(model, info=info | {"spent": res.spent, "budget": budget})
