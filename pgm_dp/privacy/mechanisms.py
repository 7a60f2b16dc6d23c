"""Additive-noise and selection mechanisms.

Every mechanism follows the same order: validate the privacy parameters, sensitivity and
inputs (``PrivacyParameterError`` / ``DataValidationError``), compute the noise scale, charge
the optional :class:`~pgm_dp.privacy.accountant.Accountant` (which raises
``BudgetExceededError`` and records nothing if the cost does not fit), and only then draw noise.
Inputs are copied, never modified. Noise scales are given in :mod:`pgm_dp.privacy.noise`.

Selection (for private Frank-Wolfe, Zhang et al. 2020, Alg. 1, lines 3-4, privacy by
Lemma 3.3): :func:`report_noisy_max` adds Laplace noise to every score and returns the arg-max
(``minimize=True``: the arg-min, as in Alg. 1). With scores of L∞ sensitivity ``Δ`` the Laplace
scale is ``2Δ/ε`` (``Δ/ε`` when ``monotonic=True``, i.e. all scores move in the same direction
between neighbours; Dwork & Roth 2014, Claim 3.9). :func:`frank_wolfe_step_budget` splits a
``ρ``-zCDP budget over ``T`` steps: each step is ``sqrt(2ρ/T)``-DP, hence ``ρ/T``-zCDP
(Lemma 2.14), and ``T`` steps are ``ρ``-zCDP (Lemma 2.15).

Example
-------
>>> import numpy as np
>>> from pgm_dp.privacy import Accountant, PureDP
>>> acc = Accountant(PureDP(1.0))
>>> y = laplace_mechanism(np.array([10.0, 20.0]), l1_sensitivity=1.0, budget=PureDP(0.5),
...                       rng=0, accountant=acc, what="two counts")
>>> y.shape, acc.spent
((2,), PureDP(epsilon=0.5))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import DataValidationError, PrivacyParameterError
from .accountant import Accountant
from .budget import ZCDP, ApproxDP, Budget, PureDP
from .noise import (
    NoiseModel,
    calibrate_gaussian,
    calibrate_laplace,
    check_sensitivity,
    discrete_gaussian_parameter,
    discrete_laplace_parameter,
)
from .samplers import (
    RngLike,
    as_generator,
    sample_discrete_gaussian_var,
    sample_discrete_laplace,
    sample_gaussian,
    sample_laplace,
)

__all__ = [
    "laplace_mechanism",
    "gaussian_mechanism",
    "discrete_laplace_mechanism",
    "discrete_gaussian_mechanism",
    "exponential_mechanism",
    "report_noisy_max",
    "report_noisy_min",
    "frank_wolfe_step_budget",
    "perturb",
]


def _as_values(values: Any, *, integer: bool, name: str = "values") -> np.ndarray:
    """A fresh float64 (or int64 when ``integer``) copy of ``values``; errors on bad entries."""
    try:
        arr = np.array(values, copy=True)
    except (TypeError, ValueError) as err:
        raise DataValidationError(f"{name} must be numeric: {err}") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise DataValidationError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise DataValidationError(f"{name} contain NaN or inf")
    if not integer:
        return arr.astype(np.float64)
    if arr.dtype.kind == "f":
        if np.any(arr != np.round(arr)):
            raise DataValidationError(f"discrete mechanisms need integer {name}")
        if arr.size and np.max(np.abs(arr)) >= 2.0**62:
            raise DataValidationError(f"{name} too large for int64")
    return arr.astype(np.int64)


def _charge(
    accountant: Accountant | None, cost: Budget, what: str, mechanism: str, scale: float
) -> None:
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise PrivacyParameterError(f"accountant must be an Accountant, got {accountant!r}")
        accountant.charge(cost, what=what, mechanism=mechanism, scale=scale)


def perturb(
    values: Any,
    *,
    kind: str,
    sensitivity: float,
    budget: Budget,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
    calibration: str = "analytic",
) -> tuple[np.ndarray, NoiseModel]:
    """Add calibrated noise of ``kind`` to ``values``; return ``(noisy, NoiseModel)``.

    ``sensitivity`` is L1 for the Laplace kinds and L2 for the Gaussian kinds. This is the
    shared body of the four additive mechanisms below.

    >>> y, m = perturb([3, 4], kind="discrete_laplace", sensitivity=1, budget=PureDP(1.0), rng=0)
    >>> y.dtype, m
    (dtype('int64'), NoiseModel(kind='discrete_laplace', scale=1.0))
    """
    if kind == "laplace":
        model = calibrate_laplace(sensitivity, budget)  # type: ignore[arg-type]
    elif kind == "gaussian":
        model = calibrate_gaussian(sensitivity, budget, calibration)  # type: ignore[arg-type]
    elif kind == "discrete_laplace":
        b = discrete_laplace_parameter(sensitivity, budget)  # type: ignore[arg-type]
        model = NoiseModel(kind, float(b))
    elif kind == "discrete_gaussian":
        var = discrete_gaussian_parameter(sensitivity, budget)  # type: ignore[arg-type]
        model = NoiseModel(kind, math.sqrt(var))
    else:
        raise PrivacyParameterError(
            "kind must be 'laplace', 'gaussian', 'discrete_laplace' or 'discrete_gaussian', "
            f"got {kind!r}"
        )
    arr = _as_values(values, integer=model.is_discrete)
    gen = as_generator(rng)
    _charge(accountant, budget, what, kind, model.scale)
    if kind == "laplace":
        noise = sample_laplace(model.scale, arr.shape, gen)
    elif kind == "gaussian":
        noise = sample_gaussian(model.scale, arr.shape, gen)
    elif kind == "discrete_laplace":
        noise = sample_discrete_laplace(b, arr.shape, gen)
    else:
        noise = sample_discrete_gaussian_var(var, arr.shape, gen)
    return arr + noise, model


def laplace_mechanism(
    values: Any,
    *,
    l1_sensitivity: float,
    budget: PureDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
) -> np.ndarray:
    """``values + Laplace(Δ₁/ε)`` (float64, floating-point sampler); ``ε``-DP."""
    return perturb(
        values,
        kind="laplace",
        sensitivity=l1_sensitivity,
        budget=budget,
        rng=rng,
        accountant=accountant,
        what=what,
    )[0]


def gaussian_mechanism(
    values: Any,
    *,
    l2_sensitivity: float,
    budget: ZCDP | ApproxDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
    calibration: str = "analytic",
) -> np.ndarray:
    """``values + N(0, σ²)`` (float64): ``σ = Δ₂/sqrt(2ρ)`` for zCDP; for ``(ε, δ)`` the
    analytic Gaussian (Balle & Wang 2018, default) or ``calibration="classic"`` (``ε < 1``)."""
    return perturb(
        values,
        kind="gaussian",
        sensitivity=l2_sensitivity,
        budget=budget,
        rng=rng,
        accountant=accountant,
        what=what,
        calibration=calibration,
    )[0]


def discrete_laplace_mechanism(
    values: Any,
    *,
    l1_sensitivity: float,
    budget: PureDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
) -> np.ndarray:
    """Integer ``values`` + exact discrete Laplace of scale ``Δ₁/ε`` (int64); ``ε``-DP."""
    return perturb(
        values,
        kind="discrete_laplace",
        sensitivity=l1_sensitivity,
        budget=budget,
        rng=rng,
        accountant=accountant,
        what=what,
    )[0]


def discrete_gaussian_mechanism(
    values: Any,
    *,
    l2_sensitivity: float,
    budget: ZCDP | ApproxDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
) -> np.ndarray:
    """Integer ``values`` + exact discrete Gaussian, ``σ² = Δ₂²/(2ρ)`` (int64); ``ρ``-zCDP."""
    return perturb(
        values,
        kind="discrete_gaussian",
        sensitivity=l2_sensitivity,
        budget=budget,
        rng=rng,
        accountant=accountant,
        what=what,
    )[0]


def _scores(scores: Any) -> np.ndarray:
    arr = _as_values(scores, integer=False, name="scores")
    if arr.ndim != 1 or arr.size == 0:
        raise DataValidationError(f"scores must be a non-empty 1-d array, got shape {arr.shape}")
    return arr


def _selection_setup(
    scores: Any, sensitivity: float, budget: PureDP, monotonic: bool
) -> tuple[np.ndarray, float]:
    if not isinstance(budget, PureDP):
        raise PrivacyParameterError(f"selection mechanisms need a PureDP budget, got {budget!r}")
    delta = check_sensitivity(sensitivity, "sensitivity")
    return _scores(scores), (1.0 if monotonic else 2.0) * delta / budget.epsilon


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
    """Index ``i`` with probability ``∝ exp(ε u_i / (2Δ))`` (``exp(ε u_i/Δ)`` if monotonic).

    McSherry & Talwar 2007; sampled by the Gumbel-max trick (floating point): arg-max of
    ``u_i/s + Gumbel`` with ``s = 2Δ/ε``. ``ε``-DP.

    >>> exponential_mechanism([0.0, 100.0], sensitivity=1.0, budget=PureDP(1.0), rng=0)
    1
    """
    arr, s = _selection_setup(scores, sensitivity, budget, monotonic)
    gen = as_generator(rng)
    _charge(accountant, budget, what, "exponential", s)
    if s == 0:
        best = np.flatnonzero(arr == arr.max())
        return int(best[gen.integers(best.size)])
    return int(np.argmax(arr / s + gen.gumbel(size=arr.size)))


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
    """Arg-max (arg-min if ``minimize``) of ``scores + Laplace(b)``, ``b = 2Δ/ε`` (``Δ/ε`` if
    monotonic); ``ε``-DP. Zhang et al. Alg. 1 line 3-4 is ``minimize=True``.

    >>> report_noisy_max([5.0, 0.0, 1.0], sensitivity=0.01, budget=PureDP(1.0), rng=0,
    ...                  minimize=True)
    1
    """
    arr, b = _selection_setup(scores, sensitivity, budget, monotonic)
    gen = as_generator(rng)
    _charge(accountant, budget, what, "report_noisy_max", b)
    noisy = arr + sample_laplace(b, arr.size, gen)
    return int(np.argmin(noisy) if minimize else np.argmax(noisy))


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
    selection per row of a 2-d ``scores`` (Zhang et al. Alg. 1 lines 3-4 for many problems at
    once); returns the ``(rows,)`` arg-mins. The noise is drawn as in :func:`report_noisy_max`
    (keep the two in step); the accountant is charged ``budget`` once per row.

    >>> report_noisy_min([[5.0, 0.0], [0.0, 5.0]], sensitivity=0.01, budget=PureDP(1.0), rng=0)
    array([1, 0])
    """
    arr = _as_values(scores, integer=False, name="scores")
    if arr.ndim != 2 or arr.size == 0:
        raise DataValidationError(f"scores must be a non-empty 2-d array, got shape {arr.shape}")
    _, b = _selection_setup(arr[0], sensitivity, budget, monotonic)
    gen = as_generator(rng)
    for _ in range(arr.shape[0]):
        _charge(accountant, budget, what, "report_noisy_max", b)
    return np.argmin(arr + sample_laplace(b, arr.shape, gen), axis=1)


def frank_wolfe_step_budget(rho: ZCDP | float, steps: int) -> PureDP:
    """Per-step pure budget ``ε = sqrt(2ρ/T)`` so that ``T`` selections are ``ρ``-zCDP.

    Each step is ``ε``-DP, hence ``ε²/2 = ρ/T``-zCDP (Zhang et al. Lemma 2.14); ``T`` steps
    compose to ``ρ`` (Lemma 2.15).

    >>> frank_wolfe_step_budget(ZCDP(0.5), 100).epsilon
    0.1
    """
    r = rho if isinstance(rho, ZCDP) else ZCDP(rho)
    if isinstance(steps, bool) or int(steps) != steps or int(steps) < 1:
        raise PrivacyParameterError(f"steps must be a positive integer, got {steps!r}")
    return PureDP(math.sqrt(2 * r.rho / int(steps)))
