"""Additive-noise mechanisms.

Every mechanism follows the same order: validate the privacy parameters, sensitivity and
inputs (``PrivacyParameterError`` / ``DataValidationError``), compute the noise scale, charge
the optional :class:`~pgm_dp.privacy.accountant.Accountant` (which raises
``BudgetExceededError`` and records nothing if the cost does not fit), and only then draw noise.
Inputs are copied, never modified. Noise scales are given in :mod:`pgm_dp.privacy.noise`.

Every additive mechanism is floating-point safe (Mironov 2012; see :func:`perturb`). The
private-argmax mechanisms (:func:`~pgm_dp.privacy.argmax.report_noisy_max`,
:func:`~pgm_dp.privacy.argmax.exponential_mechanism`) are in :mod:`pgm_dp.privacy.argmax`.

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

from ..errors import PrivacyParameterError
from ._inputs import _as_values, _charge
from .accountant import Accountant
from .budget import ZCDP, ApproxDP, Budget, PureDP
from .lattice import LatticePlan, lattice_noisy, plan_gaussian, plan_laplace, to_lattice
from .noise import (
    NoiseModel,
    _need,
    calibrate_gaussian,
    check_sensitivity,
    discrete_gaussian_parameter,
    discrete_laplace_parameter,
)
from .samplers import (
    RngLike,
    as_generator,
    sample_discrete_gaussian_var,
    sample_discrete_laplace,
)

__all__ = [
    "laplace_mechanism",
    "gaussian_mechanism",
    "discrete_laplace_mechanism",
    "discrete_gaussian_mechanism",
    "perturb",
    "MAX_NOISE_SCALE",
]

#: Largest noise scale (Laplace ``b`` or Gaussian ``σ``) a mechanism accepts: beyond it the
#: exact samplers leave int64 (and a release that noisy says nothing). A smaller budget is
#: refused with :class:`~pgm_dp.errors.PrivacyParameterError` before anything is charged.
MAX_NOISE_SCALE = 2.0**40


def _refuse_huge_scale(scale: float, kind: str, budget: Budget) -> None:
    if not scale <= MAX_NOISE_SCALE:  # also catches inf and nan
        raise PrivacyParameterError(
            f"{budget!r} is too small for the {kind} mechanism: its noise scale "
            f"{scale:.3g} exceeds 2**40"
        )


def _nominal_scale(kind: str, sensitivity: Any, budget: Budget) -> float:
    """``Δ/ε`` (Laplace kinds) or ``Δ/sqrt(2ρ)`` (Gaussian kinds, zCDP) in floats, ``inf`` on
    overflow; 0 when the arguments are for the calibration to refuse (wrong notion, bad Δ)."""
    try:
        sens = float(sensitivity)
        if isinstance(sensitivity, bool) or not math.isfinite(sens) or sens < 0:
            return 0.0
        scale = budget.scale_for("laplace" if kind.endswith("laplace") else "gaussian", sens)
        if scale is not None:
            return scale
    except (TypeError, ValueError, AttributeError):  # AttributeError: not a budget
        return 0.0
    except (OverflowError, ZeroDivisionError):
        return math.inf
    return 0.0


def _plan(
    kind: str,
    sensitivity: float,
    budget: Budget,
    calibration: str,
    arr: np.ndarray,
    integer_input: bool,
    max_changed: int | None,
) -> LatticePlan:
    if kind == "laplace":
        _need(budget, (PureDP,), "the Laplace mechanism")
        l1 = check_sensitivity(sensitivity, "l1_sensitivity")
        eps = budget.epsilon  # type: ignore[union-attr]
        return plan_laplace(
            l1, eps, size=arr.size, integer_input=integer_input, max_changed=max_changed
        )
    floor = calibrate_gaussian(sensitivity, budget, calibration).scale  # type: ignore[arg-type]
    l2 = check_sensitivity(sensitivity, "l2_sensitivity")
    rho = budget.rho_within()
    if floor > 0:  # (ε, δ): zCDP route (sound on the lattice), never below the asked calibration
        rho = min(rho, l2 * l2 / (2 * floor * floor))
    return plan_gaussian(
        l2, rho, size=arr.size, integer_input=integer_input, max_changed=max_changed
    )


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
    max_changed: int | None = None,
) -> tuple[np.ndarray, NoiseModel]:
    """Add calibrated noise of ``kind`` to ``values``; return ``(noisy, NoiseModel)``.

    ``sensitivity`` is L1 for the Laplace kinds and L2 for the Gaussian kinds. Every kind is
    floating-point safe (Mironov 2012): the discrete kinds add exact integer noise (CKS 2020)
    to integer values; ``"laplace"``/``"gaussian"`` add exact discrete noise on a lattice
    ``2^k Z`` after rounding the values to it (OpenDP's construction,
    :mod:`~pgm_dp.privacy.lattice`), with the sensitivity increased by the rounding slack for
    non-integer inputs (at most ``max_changed`` coordinates differ between neighbours; default
    all) so the stated budget holds. ``rng``: ``None`` (ChaCha20, OS-keyed) for a real
    release; a seed makes the noise reproducible by whoever knows it (tests, experiments).

    >>> y, m = perturb([3, 4], kind="discrete_laplace", sensitivity=1, budget=PureDP(1.0), rng=0)
    >>> y.dtype, m
    (dtype('int64'), NoiseModel(kind='discrete_laplace', scale=1.0))
    """
    if kind not in ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian"):
        raise PrivacyParameterError(
            "kind must be 'laplace', 'gaussian', 'discrete_laplace' or 'discrete_gaussian', "
            f"got {kind!r}"
        )
    _refuse_huge_scale(_nominal_scale(kind, sensitivity, budget), kind, budget)
    if kind == "discrete_laplace":
        b = discrete_laplace_parameter(sensitivity, budget)  # type: ignore[arg-type]
        model = NoiseModel(kind, float(b))
    elif kind == "discrete_gaussian":
        var = discrete_gaussian_parameter(sensitivity, budget)  # type: ignore[arg-type]
        model = NoiseModel(kind, math.sqrt(var))
    integer_input = np.asarray(values).dtype.kind in "biu"
    arr = _as_values(values, integer=kind.startswith("discrete"))
    if not kind.startswith("discrete"):
        plan = _plan(kind, sensitivity, budget, calibration, arr, integer_input, max_changed)
        model = NoiseModel(kind, plan.scale)  # type: ignore[arg-type]
        if plan.scale:
            to_lattice(arr, plan.exponent)  # refuse values off the exact range before charging
    _refuse_huge_scale(model.scale, kind, budget)  # (ε, δ) Gaussians: known only now
    gen = as_generator(rng)
    label = kind if kind.startswith("discrete") else f"{kind} (lattice 2^{plan.exponent})"
    _charge(accountant, budget, what, label, model.scale)
    if kind == "discrete_laplace":
        return arr + sample_discrete_laplace(b, arr.shape, gen), model
    if kind == "discrete_gaussian":
        return arr + sample_discrete_gaussian_var(var, arr.shape, gen), model
    return lattice_noisy(arr, plan, gen), model


def laplace_mechanism(
    values: Any,
    *,
    l1_sensitivity: float,
    budget: PureDP,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "",
) -> np.ndarray:
    """``values + Laplace(Δ₁/ε)`` (float64), sampled exactly on a lattice ``2^k Z`` after rounding
    ``values`` to it (:mod:`~pgm_dp.privacy.lattice`; floating-point safe); ``ε``-DP.

    Args:
        values: Numbers of any shape (copied, never modified).
        l1_sensitivity: ``Δ₁ >= 0``, the largest L1 change of ``values`` between neighbours.
        budget: The ``ε`` spent.
        rng: ``None`` (ChaCha20 keyed from the OS) for a real release; a seed or generator
            makes the noise reproducible by whoever knows it (tests, experiments).
        accountant: Charged before any noise is drawn; it raises
            :class:`~pgm_dp.errors.BudgetExceededError` (and records nothing) if the cost does
            not fit.
        what: The label of the charge in the accountant's ledger.

    Returns:
        The noisy values, float64, of ``values``'s shape.
    """
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
    """``values + N(0, σ²)`` (float64) on a lattice ``2^k Z`` (exact discrete Gaussian, CKS
    2020; :mod:`~pgm_dp.privacy.lattice`): ``σ = Δ₂/sqrt(2ρ)`` for zCDP; for ``(ε, δ)`` the
    largest ``ρ`` whose CKS conversion fits, or the ``calibration`` σ when larger.

    Args:
        values: Numbers of any shape (copied, never modified).
        l2_sensitivity: ``Δ₂ >= 0``, the largest L2 change of ``values`` between neighbours.
        budget: The ``ρ`` (zCDP) or ``(ε, δ)`` spent.
        rng: ``None`` (ChaCha20 keyed from the OS) for a real release; a seed or generator
            makes the noise reproducible by whoever knows it (tests, experiments).
        accountant: Charged before any noise is drawn; it raises
            :class:`~pgm_dp.errors.BudgetExceededError` (and records nothing) if the cost does
            not fit.
        what: The label of the charge in the accountant's ledger.
        calibration: For ``(ε, δ)``: ``"analytic"`` (Balle & Wang 2018) or ``"classic"``
            (Dwork & Roth Thm. A.1), the smallest σ the noise may have.

    Returns:
        The noisy values, float64, of ``values``'s shape.
    """
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
    """Integer ``values`` + exact discrete Laplace of scale ``Δ₁/ε`` (int64); ``ε``-DP
    (Canonne, Kamath & Steinke 2020).

    Args:
        values: Integers of any shape (copied, never modified).
        l1_sensitivity: ``Δ₁ >= 0``, the largest L1 change of ``values`` between neighbours.
        budget: The ``ε`` spent.
        rng: ``None`` (ChaCha20 keyed from the OS) for a real release; a seed or generator
            makes the noise reproducible by whoever knows it (tests, experiments).
        accountant: Charged before any noise is drawn; it raises
            :class:`~pgm_dp.errors.BudgetExceededError` (and records nothing) if the cost does
            not fit.
        what: The label of the charge in the accountant's ledger.

    Returns:
        The noisy values, int64, of ``values``'s shape.
    """
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
    """Integer ``values`` + exact discrete Gaussian, ``σ² = Δ₂²/(2ρ)`` (int64); ``ρ``-zCDP
    (Canonne, Kamath & Steinke 2020).

    Args:
        values: Integers of any shape (copied, never modified).
        l2_sensitivity: ``Δ₂ >= 0``, the largest L2 change of ``values`` between neighbours.
        budget: The ``ρ`` (zCDP) or ``(ε, δ)`` spent (then the largest ``ρ`` that fits).
        rng: ``None`` (ChaCha20 keyed from the OS) for a real release; a seed or generator
            makes the noise reproducible by whoever knows it (tests, experiments).
        accountant: Charged before any noise is drawn; it raises
            :class:`~pgm_dp.errors.BudgetExceededError` (and records nothing) if the cost does
            not fit.
        what: The label of the charge in the accountant's ledger.

    Returns:
        The noisy values, int64, of ``values``'s shape.
    """
    return perturb(
        values,
        kind="discrete_gaussian",
        sensitivity=l2_sensitivity,
        budget=budget,
        rng=rng,
        accountant=accountant,
        what=what,
    )[0]
