"""Private argmax: the exponential mechanism and report-noisy-max, floating-point safe.

These choose one item by its score; AIM and MST (:mod:`pgm_dp.select`), the
private binning and the Frank-Wolfe learners call them.


Zhang et al. 2020, Alg. 1 lines 3-4 (privacy by Lemma 3.3) select a vertex by report-noisy-max
with Laplace noise: with scores of L∞ sensitivity ``Δ`` the scale is ``2Δ/ε`` (``Δ/ε`` when
``monotonic=True``, all scores moving the same way between neighbours; Dwork & Roth 2014,
Claim 3.9). :func:`frank_wolfe_step_budget` splits a ``ρ``-zCDP budget over ``T`` steps: each
step is ``sqrt(2ρ/T)``-DP, hence ``ρ/T``-zCDP (Lemma 2.14), and ``T`` steps compose to ``ρ``
(Lemma 2.15).

Floating-point safety (Mironov 2012; OpenDP's lattice construction): scores are rounded to a
lattice ``g = 2^k`` (:mod:`~pgm_dp.privacy.lattice`; here ``2^20 <= Δ/g < 2^21``) and compared as
exact integers.

* :func:`report_noisy_max` adds exact discrete Laplace noise ``Lap_Z(t)`` (CKS 2020, Alg. 2) to
  the integer scores ``rint(s/g)``. Rounded scores have integer sensitivity
  ``D = ceil(Δ/g) + 1`` (lattice units). Our choice, as the Claim 3.9 proof needs continuous
  noise (no ties): fixing the other noises, output ``i`` under ``c`` needs
  ``r_i >= M - c_i``, and under the neighbour ``c'`` any ``r_i >= M - c_i + 2D + 1`` wins
  strictly whatever the tie-breaking; the geometric tail gives the factor ``exp((2D+1)/t)``,
  so ``t = (2D + 1)/ε`` (``(D + 1)/ε`` when monotonic), i.e. ``b = t g <= 2Δ/ε (1 + 2^-19)``.
* :func:`exponential_mechanism` (McSherry & Talwar 2007) samples ``i ∝ exp(ε u_i / (2Δ'))``
  exactly on the rounded utilities, ``Δ' = g D``: propose ``i`` uniformly, accept with the exact
  ``Bernoulli(exp(-(u_max - u_i) ε / (2Δ')))`` of CKS Alg. 1 (rational arguments).

>>> report_noisy_max([5.0, 0.0, 1.0], sensitivity=0.01, budget=PureDP(1.0), rng=0,
...                  minimize=True)
1
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import DataValidationError, PrivacyParameterError
from ..rng import RngLike, as_generator
from ._inputs import _as_values, _charge
from .accountant import Accountant
from .budget import ZCDP, PureDP, as_zcdp, require_budget  # noqa: F401  (ZCDP: doctest)
from .lattice import LAPLACE_BITS, to_lattice
from .noise import check_sensitivity
from .samplers import _bern_exp_scalar, discrete_laplace_rational_scale, sample_discrete_laplace

__all__ = [
    "exponential_mechanism",
    "report_noisy_max",
    "report_noisy_min",
    "frank_wolfe_step_budget",
    "noisy_min_lattice",
]


def _scores(scores: Any) -> np.ndarray:
    arr = _as_values(scores, integer=False, name="scores")
    if arr.ndim != 1 or arr.size == 0:
        raise DataValidationError(f"scores must be a non-empty 1-d array, got shape {arr.shape}")
    return arr


def _setup(
    scores: Any, sensitivity: float, budget: PureDP, monotonic: bool
) -> tuple[np.ndarray, int, int, int]:
    """Integer scores on the lattice, the exponent ``k``, ``D`` and the factor (1 or 2)."""
    require_budget(budget, PureDP, f"selection mechanisms need a PureDP budget, got {budget!r}")
    delta = check_sensitivity(sensitivity, "sensitivity")
    arr = _scores(scores)
    factor = 1 if monotonic else 2
    if delta == 0:
        return arr, 0, 0, factor
    k, d = _lattice(delta)
    return to_lattice(arr, k), k, d, factor


def _lattice(delta: float) -> tuple[int, int]:
    """The exponent ``k`` (``2^20 <= Δ/g < 2^21``) and ``D = ceil(Δ/g) + 1`` lattice units."""
    k = math.frexp(delta)[1] - 1 - LAPLACE_BITS
    return k, math.ceil(Fraction(delta) / Fraction(2) ** k) + 1


def noisy_min_lattice(
    sensitivity: float, budget: PureDP, monotonic: bool = False
) -> tuple[int, Fraction]:
    """The lattice exponent ``k`` and the exact discrete Laplace scale ``t`` (lattice units)
    that :func:`report_noisy_min` uses: callers that run many selections in one compiled
    program round their scores with ``rint(s / 2^k)``, add ``sample_discrete_laplace(t)``
    noise drawn here and take the row-wise arg-max of ``-units + noise`` (the same
    distribution, ``ε``-DP per row). ``sensitivity`` must be ``> 0``.

    >>> noisy_min_lattice(1.0, PureDP(1.0))[0]
    -20
    """
    require_budget(budget, PureDP, f"selection mechanisms need a PureDP budget, got {budget!r}")
    delta = check_sensitivity(sensitivity, "sensitivity")
    if delta == 0:
        raise PrivacyParameterError("noisy_min_lattice needs a sensitivity > 0")
    k, d = _lattice(delta)
    factor = 1 if monotonic else 2
    return k, discrete_laplace_rational_scale(Fraction(factor * d + 1) / Fraction(budget.epsilon))


def _argbest(values: np.ndarray, gen: np.random.Generator) -> int:
    best = np.flatnonzero(values == values.max())
    return int(best[gen.integers(best.size)]) if best.size > 1 else int(best[0])


def exponential_mechanism(
    scores: Any,
    *,
    sensitivity: float,
    budget: PureDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
    monotonic: bool = False,
) -> int:
    """Index ``i`` with probability ``∝ exp(ε u_i / (2Δ'))`` (``exp(ε u_i/Δ')`` if monotonic),
    sampled exactly on lattice-rounded utilities (module docstring); ``ε``-DP.

    Args:
        scores: One utility per candidate (higher is better).
        sensitivity: ``Δ``, the largest change of any one utility between neighbours.
        budget: The ``ε`` spent.
        rng: ``None`` (ChaCha20 keyed from the OS) for a real release; a seed or generator
            makes the noise reproducible by whoever knows it (tests, experiments).
        accountant: Charged before any noise is drawn; it raises
            :class:`~pgm_dp.errors.BudgetExceededError` (and records nothing) if the cost does
            not fit.
        what: The label of the charge in the accountant's ledger.
        monotonic: Whether every utility moves in the same direction between neighbours
            (then the factor 2 is dropped).

    Returns:
        The index chosen.

    >>> exponential_mechanism([0.0, 100.0], sensitivity=1.0, budget=PureDP(1.0), rng=0)
    1
    """
    units, k, d, factor = _setup(scores, sensitivity, budget, monotonic)
    gen = as_generator(rng)
    scale = factor * d * math.ldexp(1.0, k) / budget.epsilon if d else 0.0
    _charge(accountant, budget, what, f"exponential (exact, lattice 2^{k})", scale)
    if d == 0:
        return _argbest(units, gen)
    eps = Fraction(budget.epsilon)
    gap = [int(units.max()) - int(u) for u in units]  # exact Python ints
    den = factor * d * eps.denominator
    while True:
        i = int(gen.integers(len(gap)))
        if _bern_exp_scalar(gap[i] * eps.numerator, den, gen):
            return i


def report_noisy_max(
    scores: Any,
    *,
    sensitivity: float,
    budget: PureDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
    monotonic: bool = False,
    minimize: bool = False,
) -> int:
    """Arg-max (arg-min if ``minimize``) of ``scores + Laplace(b)``, ``b = (2D+1) g/ε`` on the
    lattice (``≈ 2Δ/ε``; ``(D+1) g/ε`` if monotonic), exact integers (module docstring); ``ε``-DP.
    Zhang et al. Alg. 1 line 3-4 is ``minimize=True``.

    Args:
        scores: One score per candidate.
        sensitivity: ``Δ``, the largest change of any one score between neighbours.
        budget: The ``ε`` spent.
        rng: ``None`` (ChaCha20 keyed from the OS) for a real release; a seed or generator
            makes the noise reproducible by whoever knows it (tests, experiments).
        accountant: Charged before any noise is drawn; it raises
            :class:`~pgm_dp.errors.BudgetExceededError` (and records nothing) if the cost does
            not fit.
        what: The label of the charge in the accountant's ledger.
        monotonic: Whether every score moves in the same direction between neighbours.
        minimize: Report the noisy minimum instead of the maximum.

    Returns:
        The index reported.

    >>> report_noisy_max([0.0, 9.0], sensitivity=0.01, budget=PureDP(1.0), rng=0)
    1
    """
    units, k, d, factor = _setup(scores, sensitivity, budget, monotonic)
    signed = (-units if minimize else units)[None, :]
    plan = (k, d, factor, budget)
    return int(_noisy_argmax(signed, plan, as_generator(rng), accountant, what)[0])


def _noisy_argmax(signed, plan, gen, accountant, what) -> np.ndarray:
    """Row-wise arg-max of the lattice scores ``signed`` plus exact discrete Laplace noise of
    ``t = (factor D + 1)/ε`` lattice units; the accountant is charged once per row."""
    k, d, factor, budget = plan
    if d == 0:
        for _ in signed:
            _charge(accountant, budget, what, "report_noisy_max", 0.0)
        return np.array([_argbest(row, gen) for row in signed])
    t = discrete_laplace_rational_scale(Fraction(factor * d + 1) / Fraction(budget.epsilon))
    for _ in signed:
        _charge(accountant, budget, what, f"report_noisy_max (lattice 2^{k})", float(t) * 2.0**k)
    return np.argmax(signed + sample_discrete_laplace(t, signed.shape, gen), axis=1)


def report_noisy_min(
    scores: Any,
    *,
    sensitivity: float,
    budget: PureDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
    monotonic: bool = False,
) -> np.ndarray:
    """Row-wise :func:`report_noisy_max` with ``minimize=True``: one independent ``ε``-DP
    selection per row of a 2-d ``scores`` (Zhang et al. Alg. 1 lines 3-4 for many problems
    at once), the same exact lattice noise; the accountant is charged ``budget`` per row.

    >>> report_noisy_min([[5.0, 0.0], [0.0, 5.0]], sensitivity=0.01, budget=PureDP(1.0), rng=0)
    array([1, 0])
    """
    arr = _as_values(scores, integer=False, name="scores")
    if arr.ndim != 2 or arr.size == 0:
        raise DataValidationError(f"scores must be a non-empty 2-d array, got shape {arr.shape}")
    rows = [_setup(row, sensitivity, budget, monotonic) for row in arr]  # before any charge
    signed = -np.stack([units for units, *_ in rows])
    plan = (*rows[0][1:], budget)
    return _noisy_argmax(signed, plan, as_generator(rng), accountant, what)


def frank_wolfe_step_budget(rho: ZCDP | float, steps: int) -> PureDP:
    """Per-step pure budget ``ε = sqrt(2ρ/T)`` so that ``T`` selections are ``ρ``-zCDP.

    Each step is ``ε``-DP, hence ``ε²/2 = ρ/T``-zCDP (Zhang et al. Lemma 2.14); ``T`` steps
    compose to ``ρ`` (Lemma 2.15).

    >>> frank_wolfe_step_budget(ZCDP(0.5), 100).epsilon
    0.1
    """
    r = as_zcdp(rho)
    if isinstance(steps, bool) or int(steps) != steps or int(steps) < 1:
        raise PrivacyParameterError(f"steps must be a positive integer, got {steps!r}")
    return r.pure_steps(int(steps))
