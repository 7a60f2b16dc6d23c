"""Floating-point-safe real-valued noise: exact discrete noise on a lattice ``2^k Z``.

Why
---
Adding a floating-point Laplace or Gaussian sample to a value is not differentially private:
the set of floats the sampler can output from ``c`` differs from the set reachable from
``c + 1``, so one release can reveal which input it came from (Mironov 2012, "On Significance of
the Least Significant Bits for Differential Privacy"). numpy's Laplace is ``log`` of a uniform
``k/2^53``: most outputs near ``c`` are reachable from one input only.

Construction (OpenDP's lattice mechanisms, ``make_laplace``/``make_gaussian`` on floats with
granularity ``2^k``; Canonne, Kamath & Steinke 2020 for the exact samplers)
------------------------------------------------------------------------------------------------
For a spacing ``g = 2^k``:

1. round the input to the lattice, ``u = rint(x / g)`` (exact integers);
2. add exact integer noise ``Z``: discrete Laplace ``Lap_Z(b/g)`` or discrete Gaussian
   ``N_Z(0, (σ/g)^2)`` (:mod:`~pgm_dp.privacy.samplers`, CKS Alg. 2-3);
3. release ``(u + Z) g``, a float computed exactly (``|u + Z| < 2^53``).

Every output is a lattice point and every lattice point is reachable from every input, with
probability ratios bounded exactly as for the discrete mechanism: the output is
``ε``-DP (Laplace) or ``ρ``-zCDP (Gaussian, CKS Thm. 14) for the sensitivity of the **rounded**
input. Rounding moves each coordinate by at most ``g/2``, so between neighbours it adds at most
``g`` per coordinate that can differ (``m`` of them): the L1 sensitivity becomes ``Δ₁ + m g``
and the L2 sensitivity ``Δ₂ + g sqrt(m)`` (triangle inequality), and the scale is calibrated on
that, so the stated ``ε``/``ρ`` hold. For integer-valued inputs (counts; integer dtype) with
``g <= 1`` rounding is exact and nothing is added.

Spacing (our choice; OpenDP leaves ``k`` to the caller): ``g`` is the power of two with
``2^20 <= b/g < 2^21`` for Laplace (``2^10 <= σ/g < 2^11`` for Gaussian, which keeps the
CKS integers in int64), made ``2^-⌈log2 m⌉`` finer (up to ``2^-18``, resp. ``2^-3``) for
real-valued inputs so the slack ``m g`` stays about ``2^-20 b``; capped at ``g <= 1`` for integer
inputs. The lattice noise is then the continuous Laplace/Gaussian of the stated scale to within
the rounding (variance relative error below ``1e-6``), so the release keeps a
``NoiseModel("laplace", b)`` / ``NoiseModel("gaussian", σ)``. Under an ``(ε, δ)`` budget the
Gaussian is calibrated through zCDP (the largest ``ρ`` whose CKS conversion fits, as for the
discrete Gaussian), since the analytic-Gaussian calibration is proved for the continuous
Gaussian only.

>>> import numpy as np
>>> p = plan_laplace(1.0, 1.0, size=3, integer_input=True)
>>> p.exponent, p.slack, p.scale
(-20, 0.0, 1.0)
>>> y = lattice_noisy(np.array([1.0, 2.0, 3.0]), p, rng=0)
>>> bool(np.all(y * 2.0**20 == np.rint(y * 2.0**20)))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import DataValidationError, PrivacyParameterError
from ..rng import RngLike, as_generator
from .samplers import (
    discrete_laplace_rational_scale,
    rational_variance_at_least,
    sample_discrete_gaussian_var,
    sample_discrete_laplace,
)

__all__ = [
    "LatticePlan",
    "LAPLACE_BITS",
    "GAUSSIAN_BITS",
    "plan_laplace",
    "plan_gaussian",
    "lattice_noisy",
    "sample_lattice_laplace",
    "sample_lattice_gaussian",
]

LAPLACE_BITS = 20  # b/g in [2^20, 2^21)
GAUSSIAN_BITS = 10  # σ/g in [2^10, 2^11)
_MAX_EXTRA = {"laplace": 18, "gaussian": 3}
_EXACT = 2**53


@dataclass(frozen=True)
class LatticePlan:
    """Lattice noise: ``kind``, spacing ``2^exponent``, the integer parameter (``b/g`` for
    Laplace, ``(σ/g)^2`` for Gaussian, exact rationals), the resulting ``scale`` (``b`` or
    ``σ``) and the sensitivity ``slack`` added for rounding."""

    kind: str
    exponent: int
    units: Fraction
    scale: float
    slack: float

    @property
    def spacing(self) -> float:
        return math.ldexp(1.0, self.exponent)


def _exponent(scale: float, bits: int, extra: int, integer_input: bool) -> int:
    k = math.frexp(scale)[1] - 1 - bits - extra  # floor(log2 scale) - bits - extra
    return min(k, 0) if integer_input else k


def _extra(kind: str, m: int, integer_input: bool) -> int:
    if integer_input or m <= 1:
        return 0
    need = math.ceil(math.log2(m)) if kind == "laplace" else math.ceil(math.log2(m) / 2)
    return min(need, _MAX_EXTRA[kind])


def plan_laplace(
    l1_sensitivity: float,
    epsilon: float,
    *,
    size: int,
    integer_input: bool,
    max_changed: int | None = None,
) -> LatticePlan:
    """Lattice Laplace for an ``ε``-DP release of ``size`` values with L1 sensitivity ``Δ₁``.

    Scale ``b = (Δ₁ + slack)/ε`` with ``slack = m g`` (``m = max_changed``, default ``size``;
    0 for integer inputs), rounded up to the exact sampler's rational ``b/g``.
    """
    if l1_sensitivity == 0:
        return LatticePlan("laplace", 0, Fraction(0), 0.0, 0.0)
    m = max(1, size if max_changed is None else int(max_changed))
    extra = _extra("laplace", m, integer_input)
    k = _exponent(l1_sensitivity / epsilon, LAPLACE_BITS, extra, integer_input)
    g = Fraction(2) ** k
    slack = Fraction(0) if integer_input else m * g
    units = discrete_laplace_rational_scale(
        (Fraction(l1_sensitivity) + slack) / Fraction(epsilon) / g
    )
    return LatticePlan("laplace", k, units, float(units * g), float(slack))


def plan_gaussian(
    l2_sensitivity: float,
    rho: float,
    *,
    size: int,
    integer_input: bool,
    max_changed: int | None = None,
    bits: int | None = None,
) -> LatticePlan:
    """Lattice Gaussian for a ``ρ``-zCDP release: ``σ = (Δ₂ + slack)/sqrt(2ρ)`` with
    ``slack = g sqrt(m)`` (0 for integer inputs); ``(σ/g)^2`` rounded up to the sampler's
    rational (CKS Thm. 14 on the lattice units). ``bits``: ``σ/g >= 2^bits`` exactly (default
    ``GAUSSIAN_BITS`` plus the size-dependent refinement); at most 14 keeps the exact sampler
    on its fast int64 path."""
    if l2_sensitivity == 0:
        return LatticePlan("gaussian", 0, Fraction(0), 0.0, 0.0)
    m = max(1, size if max_changed is None else int(max_changed))
    extra = _extra("gaussian", m, integer_input)
    base, extra = (GAUSSIAN_BITS, extra) if bits is None else (int(bits), 0)
    k = _exponent(l2_sensitivity / math.sqrt(2 * rho), base, extra, integer_input)
    g = math.ldexp(1.0, k)
    slack = 0.0 if integer_input else g * math.sqrt(m) * (1 + 2**-40)  # rounded up
    var = (Fraction(l2_sensitivity) + Fraction(slack)) ** 2 / (2 * Fraction(rho))
    units = rational_variance_at_least(var / Fraction(g) ** 2)
    return LatticePlan("gaussian", k, units, math.sqrt(units) * g, slack)


def _draw(plan: LatticePlan, shape: tuple[int, ...], gen: np.random.Generator) -> np.ndarray:
    if plan.kind == "laplace":
        return sample_discrete_laplace(plan.units, shape, gen)
    return sample_discrete_gaussian_var(plan.units, shape, gen)


def to_lattice(values: np.ndarray, exponent: int) -> np.ndarray:
    """``rint(values / 2^exponent)`` as int64; DataValidationError when it would not be exact."""
    scaled = np.ldexp(np.asarray(values, dtype=np.float64), -exponent)
    if scaled.size and np.max(np.abs(scaled)) >= 2.0**52:
        raise DataValidationError(
            f"values too large for the noise lattice 2^{exponent} (|x| / 2^{exponent} >= 2^52)"
        )
    return np.rint(scaled).astype(np.int64)


def lattice_noisy(values: np.ndarray, plan: LatticePlan, rng: RngLike = None) -> np.ndarray:
    """``(rint(values/g) + Z) g`` as float64, exactly (see the module docstring)."""
    arr = np.asarray(values, dtype=np.float64)
    if plan.scale == 0:
        return arr.copy()
    units = to_lattice(arr, plan.exponent)
    total = units + _draw(plan, arr.shape, as_generator(rng))
    if total.size and np.max(np.abs(total)) >= _EXACT:  # astronomically unlikely
        raise PrivacyParameterError("noisy value left the exactly representable lattice range")
    return np.ldexp(total.astype(np.float64), plan.exponent)


def sample_lattice_laplace(
    scale: float, size: int | tuple[int, ...], rng: RngLike = None
) -> np.ndarray:
    """Laplace noise of scale ``>= scale`` on the lattice ``2^k Z`` (``2^20 <= b/2^k < 2^21``),
    sampled exactly (CKS Alg. 2); float64 multiples of ``2^k``.

    >>> x = sample_lattice_laplace(2.0, 4, rng=0)
    >>> bool(np.all(np.ldexp(x, 19) % 1 == 0))
    True
    """
    plan = plan_laplace(float(scale), 1.0, size=1, integer_input=True)
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
    return lattice_noisy(np.zeros(shape), plan, rng)


def sample_lattice_gaussian(
    sigma: float, size: int | tuple[int, ...], rng: RngLike = None
) -> np.ndarray:
    """Gaussian noise of standard deviation ``>= sigma`` on the lattice ``2^k Z``
    (``2^10 <= σ/2^k < 2^11``), sampled exactly (CKS Alg. 3); float64.

    >>> sample_lattice_gaussian(1.0, (2, 3), rng=0).shape
    (2, 3)
    """
    plan = plan_gaussian(float(sigma), 0.5, size=1, integer_input=True)
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
    return lattice_noisy(np.zeros(shape), plan, rng)
