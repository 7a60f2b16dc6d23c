"""Noise calibration and :class:`NoiseModel`, the description of the noise of a released array.

Calibration formulas (all for sensitivity ``Δ`` of the released vector):

* Laplace, ``ε``-DP: ``b = Δ₁/ε`` (Dwork et al. 2006; Bernstein et al. Eq. 3 with ``Δ₁ = |C|``).
* Gaussian, ``ρ``-zCDP: ``σ = Δ₂/sqrt(2ρ)`` (Bun & Steinke 2016, Prop. 1.6).
* Gaussian, ``(ε, δ)``-DP: ``calibration="analytic"`` (**default**), the smallest ``σ`` of the
  analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8; computed with
  ``dp_accounting.get_sigma_gaussian``), valid for every ``ε > 0``; or ``"classic"``,
  ``σ = Δ₂ sqrt(2 ln(1.25/δ))/ε`` (Dwork & Roth 2014, Thm. A.1), valid only for ``ε < 1``.
* Discrete Laplace, ``ε``-DP: ``b = Δ₁/ε`` (rounded up to a rational, see
  :mod:`pgm_dp.privacy.samplers`).
* Discrete Gaussian, ``ρ``-zCDP: ``σ² = Δ₂²/(2ρ)`` (Canonne, Kamath & Steinke 2020, Thm. 14);
  for an ``(ε, δ)`` budget the largest ``ρ`` whose CKS conversion fits is used.

Example
-------
>>> from pgm_dp.privacy import PureDP
>>> calibrate_laplace(3.0, PureDP(0.5))
NoiseModel(kind='laplace', scale=6.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from ..errors import PrivacyParameterError
from .budget import ZCDP, ApproxDP, Budget, PureDP, require_budget, zcdp_rho_within
from .samplers import discrete_laplace_rational_scale, rational_variance_at_least

__all__ = [
    "LAPLACE_KINDS",
    "NoiseModel",
    "NoiseKind",
    "check_sensitivity",
    "calibrate_laplace",
    "calibrate_gaussian",
    "calibrate_discrete_laplace",
    "calibrate_discrete_gaussian",
    "discrete_laplace_parameter",
    "discrete_gaussian_parameter",
    "zcdp_rho_within",
    "log_density_curvature",
    "log_density_gradient",
    "log_density_kernel",
]

NoiseKind = Literal["laplace", "gaussian", "discrete_laplace", "discrete_gaussian"]
_KINDS = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
#: The kinds whose density is Laplace's, ``exp(-|x| / b)`` (the others are Gaussian).
LAPLACE_KINDS = ("laplace", "discrete_laplace")


@dataclass(frozen=True)
class NoiseModel:
    """Additive noise of a release: ``kind`` and ``scale`` (Laplace ``b`` or Gaussian ``σ``).

    For the discrete kinds, ``scale`` is the rational actually used by the exact sampler.

    >>> m = NoiseModel("gaussian", 2.0)
    >>> m.variance
    4.0
    """

    kind: NoiseKind
    scale: float

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise PrivacyParameterError(f"noise kind must be one of {_KINDS}, got {self.kind!r}")
        s = float(self.scale)
        if not math.isfinite(s) or s < 0:
            raise PrivacyParameterError(f"noise scale must be finite and >= 0, got {self.scale}")
        object.__setattr__(self, "scale", s)

    @property
    def is_discrete(self) -> bool:
        return self.kind.startswith("discrete")

    @property
    def is_laplace(self) -> bool:
        """Whether the density is Laplace's (:data:`LAPLACE_KINDS`), else Gaussian."""
        return self.kind in LAPLACE_KINDS

    @property
    def variance(self) -> float:
        """Variance of one noise coordinate."""
        s = self.scale
        if s == 0:
            return 0.0
        if self.kind == "laplace":
            return 2 * s * s
        if self.kind == "gaussian":
            return s * s
        if self.kind == "discrete_laplace":
            a = math.exp(-1.0 / s)
            return 2 * a / (1 - a) ** 2
        return _dgauss_moments(s)[1]

    def log_density(self, noisy: np.ndarray, true: np.ndarray) -> np.ndarray:
        """Elementwise log density (log pmf for discrete kinds) of ``noisy - true``.

        For the discrete kinds the formula is also evaluated at non-integer differences (same
        normaliser), which learners may use as a smooth surrogate.
        """
        x = np.asarray(noisy, dtype=np.float64) - np.asarray(true, dtype=np.float64)
        s = self.scale
        if s == 0:
            raise PrivacyParameterError("log_density is undefined for zero noise")
        kernel = log_density_kernel(self.kind, s, x)
        if self.kind == "laplace":
            return kernel - math.log(2 * s)
        if self.kind == "gaussian":
            return kernel - 0.5 * math.log(2 * math.pi * s * s)
        if self.kind == "discrete_laplace":
            a = math.exp(-1.0 / s)
            return kernel + math.log((1 - a) / (1 + a))
        return kernel - _dgauss_moments(s)[0]

    def grad_log_density(self, noisy: np.ndarray, true: np.ndarray) -> np.ndarray:
        """Derivative of :meth:`log_density` with respect to ``true`` (0 at kinks)."""
        x = np.asarray(noisy, dtype=np.float64) - np.asarray(true, dtype=np.float64)
        s = self.scale
        if s == 0:
            raise PrivacyParameterError("grad_log_density is undefined for zero noise")
        return log_density_gradient(self.kind, s, x)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "scale": self.scale}


def _dgauss_moments(s: float) -> tuple[float, float]:
    """``(log Z, Var)`` of the discrete Gaussian ``P(k) = exp(-k²/(2s²)) / Z`` on the integers,
    from at most 27 terms (no allocation growing with ``s``).

    For ``s < 1`` the sums over ``|k| <= K = ceil(12 s) + 1`` (the rest is below
    ``e^-72`` relative). For ``s >= 1`` Poisson summation, ``sum_k f(k) = sum_j f̂(j)``
    (the Jacobi theta transformation), with ``f(x) = e^{-x²/(2s²)}`` and ``x² f(x)``:

    ``Z = sqrt(2π) s (1 + 2 sum_{j>=1} q_j)``, ``sum_k k² e^{-k²/(2s²)} = sqrt(2π) s³
    (1 + 2 sum_{j>=1} (1 - 4π²s²j²) q_j)``, ``q_j = e^{-2π²s²j²}``,

    kept to ``j <= 3`` (the ``j = 4`` term is below ``e^-315``). The correction to ``Z``,
    ``2 q_1 = 2 e^{-2π²s²}``, is ``5.4e-9`` at ``s = 1`` and below the double rounding unit
    ``2^-53`` once ``2π²s² > 54 ln 2``, i.e. ``s > 1.38``; the one to the variance,
    ``8π²s² q_1``, once ``s > 1.46``. So for ``s >= 8`` (``q_1 < e^-1263``, which underflows)
    ``Z = sqrt(2π) s`` and ``Var = s²`` to double precision.
    """
    if s < 1:
        k = np.arange(-math.ceil(12 * s) - 1, math.ceil(12 * s) + 2, dtype=np.float64)
        logw = -(k * k) / (2 * s * s)
        w = np.exp(logw)  # the k = 0 term is 1, so no underflow of the sum
        return math.log(float(np.sum(w))), float(np.sum(k * k * w) / np.sum(w))
    if s >= 8:
        return 0.5 * math.log(2 * math.pi) + math.log(s), s * s
    j = np.arange(1.0, 4.0)
    q = np.exp(-2 * math.pi**2 * s * s * j * j)
    theta = 2 * float(np.sum(q))
    second = 2 * float(np.sum((1 - 4 * math.pi**2 * s * s * j * j) * q))
    log_z = math.log(math.sqrt(2 * math.pi) * s) + math.log1p(theta)
    return log_z, s * s * (1 + second) / (1 + theta)


def log_density_kernel(kind: str, scale, residual, smoothing: float = 0.0, xp=np):
    """``log p(y | n)`` up to its constant, elementwise in ``residual = y - n``: ``-|r| / b``
    for :data:`LAPLACE_KINDS`, ``-r^2 / (2 sigma^2)`` for the Gaussian kinds (``scale``: ``b``
    or ``sigma``, a number or one per cell). ``smoothing > 0`` replaces Laplace's ``|r|`` by
    its pseudo-Huber smoothing ``sqrt(r^2 + s^2)``, ``s = smoothing * b``: concave, within
    ``s / b`` of the Laplace log-density, differentiable at ``r = 0`` (CGM-EM's E-step,
    :mod:`pgm_dp.learners.cgm.noise`). ``xp``: the array module (``jax.numpy`` to trace)."""
    r = residual
    if kind in LAPLACE_KINDS:
        if smoothing:
            s = smoothing * scale
            return -(xp.sqrt(r * r + s * s) / scale)
        return -xp.abs(r) / scale
    return -(r * r) / (2 * scale * scale)


def log_density_gradient(kind: str, scale, residual, smoothing: float = 0.0, xp=np):
    """``d/dn log p(y | n)`` elementwise (:func:`log_density_kernel`'s derivative; the
    unsmoothed Laplace's is ``sign(r) / b``, ``0`` at the kink)."""
    r = residual
    if kind in LAPLACE_KINDS:
        if smoothing:
            s = smoothing * scale
            return r / (scale * xp.sqrt(r * r + s * s))
        return xp.sign(r) / scale
    return r / (scale * scale)


def log_density_curvature(kind: str, scale, residual, smoothing: float = 0.0, xp=np):
    """``-d^2/dn^2 log p(y | n) >= 0`` elementwise: ``1 / sigma^2`` for the Gaussian kinds;
    for the Laplace kinds that of the pseudo-Huber smoothing, at most ``1 / (b s)`` (``0``
    away from the kink without smoothing)."""
    r = residual
    if kind in LAPLACE_KINDS:
        if not smoothing:
            return xp.zeros_like(r)
        s = smoothing * scale
        t = r / s
        q = 1.0 + t * t
        return 1.0 / (scale * s * (q * xp.sqrt(q)))  # q^1.5 without a power per cell
    return xp.full_like(r, 1.0 / (scale * scale))


def check_sensitivity(value: object, name: str = "sensitivity") -> float:
    """``value`` as a float, or PrivacyParameterError if negative, NaN, inf or not a number."""
    if isinstance(value, bool):
        raise PrivacyParameterError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0:
        raise PrivacyParameterError(f"{name} must be finite and >= 0, got {value!r}")
    return v


def _need(budget: Budget, kinds: tuple[type, ...], mech: str) -> None:
    names = " or ".join(k.__name__ for k in kinds)
    require_budget(budget, kinds, f"{mech} needs a {names} budget, got {budget!r}")


def calibrate_laplace(l1_sensitivity: float, budget: PureDP) -> NoiseModel:
    """Laplace mechanism: ``b = Δ₁/ε`` gives ``ε``-DP."""
    _need(budget, (PureDP,), "the Laplace mechanism")
    l1 = check_sensitivity(l1_sensitivity, "l1_sensitivity")
    return NoiseModel("laplace", l1 / budget.epsilon)


def discrete_laplace_parameter(l1_sensitivity: float, budget: PureDP) -> Fraction:
    """Exact rational scale ``>= Δ₁/ε`` used by the discrete Laplace mechanism."""
    _need(budget, (PureDP,), "the discrete Laplace mechanism")
    b = Fraction(check_sensitivity(l1_sensitivity, "l1_sensitivity")) / Fraction(budget.epsilon)
    return discrete_laplace_rational_scale(b)


def calibrate_discrete_laplace(l1_sensitivity: float, budget: PureDP) -> NoiseModel:
    """Discrete Laplace: scale ``Δ₁/ε`` rounded up to the sampler's rational."""
    return NoiseModel("discrete_laplace", float(discrete_laplace_parameter(l1_sensitivity, budget)))


def _classic_sigma(l2: float, budget: ApproxDP) -> float:
    if budget.epsilon >= 1:
        raise PrivacyParameterError(
            "classic Gaussian calibration needs epsilon < 1; use calibration='analytic'"
        )
    return l2 * math.sqrt(2 * math.log(1.25 / budget.delta)) / budget.epsilon


def calibrate_gaussian(
    l2_sensitivity: float, budget: ZCDP | ApproxDP, calibration: str = "analytic"
) -> NoiseModel:
    """Gaussian ``σ``: ``Δ₂/sqrt(2ρ)`` for zCDP; analytic (default) or classic for ``(ε, δ)``."""
    _need(budget, (ZCDP, ApproxDP), "the Gaussian mechanism")
    l2 = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    direct = budget.scale_for("gaussian", l2)  # zCDP: sigma = l2 / sqrt(2 rho)
    if direct is not None:
        return NoiseModel("gaussian", direct)
    if budget.delta == 0:
        raise PrivacyParameterError("the Gaussian mechanism needs delta > 0")
    if calibration == "classic":
        return NoiseModel("gaussian", _classic_sigma(l2, budget))
    if calibration != "analytic":
        raise PrivacyParameterError(f"calibration must be 'analytic' or 'classic': {calibration!r}")
    from dp_accounting import get_sigma_gaussian

    # dp-accounting finds the root with a tolerance that may land a hair below it (delta up
    # to 5e-13 relative above the target, seen): a relative 1e-9 more noise keeps it above.
    sigma = float(get_sigma_gaussian(budget.epsilon, budget.delta)) * (1 + 1e-9)
    return NoiseModel("gaussian", l2 * sigma)


def discrete_gaussian_parameter(l2_sensitivity: float, budget: ZCDP | ApproxDP) -> Fraction:
    """Exact rational variance ``>= Δ₂²/(2ρ)`` used by the discrete Gaussian mechanism."""
    _need(budget, (ZCDP, ApproxDP), "the discrete Gaussian mechanism")
    l2 = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    rho = budget.rho_within()
    squared = Fraction(l2) ** 2
    whole = round(l2 * l2)
    if math.sqrt(whole) == l2:  # l2 is the float of sqrt(whole), whose square may be less
        squared = max(squared, Fraction(whole))
    return rational_variance_at_least(squared / (2 * Fraction(rho)))


def calibrate_discrete_gaussian(l2_sensitivity: float, budget: ZCDP | ApproxDP) -> NoiseModel:
    """Discrete Gaussian: ``σ² = Δ₂²/(2ρ)`` (CKS Thm. 14), rounded up to a rational.

    ``scale`` is ``sqrt`` of the rational variance actually used.
    """
    var = discrete_gaussian_parameter(l2_sensitivity, budget)
    return NoiseModel("discrete_gaussian", math.sqrt(var))
