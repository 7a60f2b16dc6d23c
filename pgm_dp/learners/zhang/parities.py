"""Parity queries on ±1 data: PMW or per-query noise, whichever the theory says is better.

Zhang et al. (2020, Alg. 5 line 2; Lemma 4.5) release all parities ``q_I(z) = prod_{i in I}
z_i`` of order ``<= t`` with PMW (Hardt & Rothblum 2010). PMW pays for ``K`` updates, not
for the ``m`` queries, so it wins only when ``m`` is large against ``n``; otherwise one
noisy answer per query is better. :func:`release_parities` compares the two high-probability
bounds below (both hold with probability ``>= 1 - beta`` over the noise, for every query at
once; ``n`` is public, as in the paper) and answers with the smaller, saying which.

**Per-query noise.** The count ``c_I = #{records with q_I = +1}`` moves by at most 1 when
one record is replaced, so the ``m`` counts have L2 sensitivity ``sqrt(m)`` and L1
sensitivity ``m``; the answer is ``(2 c_I - n) / n``, clipped to ``[-1, 1]``.

* Gaussian (zCDP; exact discrete Gaussian, Canonne-Kamath-Steinke 2020, ``sigma^2 =
  m / (2 rho)``): max error ``<= (2/n) sigma sqrt(2 ln(2m / beta))``.
* Laplace (pure ε; exact discrete Laplace of scale ``m / ε``): ``<= (2/n)(m/ε) ln(m/beta)``.

**PMW** (:func:`~.pmw.pmw_release`, :func:`~.pmw.pmw_plan`; ``Delta' = (2/n)(1 + 2^-20)`` its
lattice-rounded sensitivity, ``eps_0 = sqrt(rho / K)``, ``L = ln(3(m + 1) / beta)``). On the
event that all ``<= 3m + 1`` Laplace draws stay within ``L`` scales (probability ``>= 1 -
beta``), the sparse-vector noises move a comparison by at most ``nu = 6 Delta' L / eps_0``.
With the threshold ``alpha = 3 nu``: a query that causes no update is answered within ``alpha +
nu``; an update happens only on a true gap ``|d| >= 2 nu``, its answer is within ``nu / 6``,
and the step ``x <- x exp(q r / 2)`` (``r = d + e``, ``|e| <= |d| / 12``) lowers ``KL(D || x)``
by ``>= d r / 2 - r^2 / 8 >= 0.31 d^2 >= 1.24 nu^2`` (Hoeffding's lemma for ``q`` in ``[-1,
1]``). ``KL`` starts at most ``p ln 2``, so there are at most ``0.56 p / nu^2`` updates, which
``K = ceil(sqrt(0.56 p rho) / (6 Delta' L))`` (at most ``m``) covers; every answer is then
within ``4 nu``. (Vadhan 2017, Thm. 4.3's argument with our step and constants; the choice of
``alpha`` and of ``K`` is ours.)

The bounds cross where ``sqrt(m) / n`` (per-query) meets ``n^(-1/2)`` (PMW): per-query
noise wins unless ``m`` exceeds roughly ``200 n sqrt(p / rho)``, which for ``p <= 20`` only
happens where both bounds exceed 1 (``benchmarks/bench_pmw.py`` measures both sides).

>>> rng = np.random.default_rng(0)
>>> z = np.where(rng.random((5000, 6)) < 0.8, 1.0, -1.0)
>>> out = release_parities(z, parity_queries(6, 2), ZCDP(1.0), rng=1)
>>> out.mechanism, bool(np.max(np.abs(out.answers[:6] - 0.6)) < 0.05)
('gaussian', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...errors import PrivacyParameterError
from ...privacy import (
    ZCDP,
    Accountant,
    Budget,
    discrete_gaussian_mechanism,
    discrete_laplace_mechanism,
)
from ...privacy.budget import require_budget
from ...rng import RngLike
from .pmw import (
    _rho_of,
    check_sizes,
    checked_parities,
    parity_queries,
    parity_sums,
    pmw_plan,
    pmw_release,
)

__all__ = ["ParityRelease", "error_bounds", "release_parities"]

Mechanism = Literal["auto", "pmw", "gaussian", "laplace"]


@dataclass(frozen=True)
class ParityRelease:
    """Answers ``(m,)`` in ``[-1, 1]``, the ``mechanism`` used, every candidate's error bound
    (``bounds``, probability ``1 - beta``), PMW's update count (``None`` otherwise), cost."""

    answers: np.ndarray
    mechanism: str
    bounds: dict[str, float]
    updates: int | None
    spent: Budget


def error_bounds(n: int, m: int, p: int, budget: Budget, beta: float = 0.05) -> dict[str, float]:
    """Each mechanism's max-error bound (probability ``1 - beta``) for ``budget``: Laplace for
    a ``PureDP`` budget; Gaussian and PMW for ``ZCDP`` / ``ApproxDP`` (its largest ``rho``)."""
    check_sizes(n, m, p, beta)
    require_budget(budget, Budget, f"need a ZCDP or ApproxDP budget, got {budget!r}")
    laplace = budget.scale_for("laplace", 2.0 / n * m)  # PureDP: 2m / (n eps)
    if laplace is not None:
        return {"laplace": laplace * math.log(m / beta)}
    rho = _rho_of(budget)
    sigma = math.sqrt(m / (2 * rho))
    gauss = 2.0 / n * sigma * math.sqrt(2 * math.log(2 * m / beta))
    return {"gaussian": gauss, "pmw": pmw_plan(n, m, p, rho, beta).bound}


def release_parities(
    data,
    queries,
    budget: Budget,
    *,
    t: int = 2,
    mechanism: Mechanism = "auto",
    beta: float = 0.05,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> ParityRelease:
    """Answers to parity ``queries`` (``None``: all of order ``<= t``) on ±1 ``data``.

    ``mechanism="auto"`` uses the one with the smaller bound (:func:`error_bounds`; a tie
    goes to per-query noise); naming one forces it. The accountant is charged ``budget``
    (as zCDP for Gaussian and PMW) once, before any noise."""
    z, p, qs = checked_parities(
        data, parity_queries(_width(data), t) if queries is None else queries
    )
    n, m = z.shape[0], len(qs)
    bounds = error_bounds(n, m, p, budget, beta)
    if mechanism == "auto":
        mechanism = min(bounds, key=lambda k: (bounds[k], k == "pmw"))  # type: ignore[assignment]
    if mechanism not in bounds:
        allowed = ", ".join(sorted(bounds))
        raise PrivacyParameterError(f"mechanism {mechanism!r} needs another budget ({allowed})")
    if mechanism == "pmw":
        plan = pmw_plan(n, m, p, _rho_of(budget), beta)
        res = pmw_release(
            z,
            qs,
            budget,
            alpha=plan.alpha,
            max_updates=plan.max_updates,
            rng=rng,
            accountant=accountant,
        )
        return ParityRelease(res.answers, "pmw", bounds, res.updates, res.spent)
    counts = (parity_sums(z, qs) + n) // 2  # records with q_I = +1
    if mechanism == "gaussian":
        spent: Budget = ZCDP(_rho_of(budget))
        noisy = discrete_gaussian_mechanism(
            counts,
            l2_sensitivity=math.sqrt(m),
            budget=spent,
            rng=rng,
            accountant=accountant,
            what="parity counts",
        )
    else:
        spent = budget
        noisy = discrete_laplace_mechanism(
            counts,
            l1_sensitivity=m,
            budget=budget,
            rng=rng,
            accountant=accountant,
            what="parity counts",
        )
    answers = np.clip((2.0 * noisy - n) / n, -1.0, 1.0)
    return ParityRelease(answers, str(mechanism), bounds, None, spent)


def _width(data) -> int:
    shape = np.shape(data)
    return int(shape[1]) if len(shape) == 2 else 0
