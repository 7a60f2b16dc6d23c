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
    _bern_exp_frac,
    _dlap_batch,
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
    "sample_lattice_units",
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


# -- fine lattices: scale = 2^bits spacings exactly (objective perturbation, PrIsing) ----
FINE_BITS = 40  # the largest power of two the int64 paths below support


def _bern_exp_dyadic(a: np.ndarray, e: int, rng: np.random.Generator) -> np.ndarray:
    """Exact ``Bernoulli(exp(-a / 2^e))`` for int64 ``0 <= a < 2^62``, ``0 <= e <= 124``.

    ``floor(a/2^e)`` ``Bernoulli(exp(-1))`` trials, then CKS Alg. 1 on the remainder ``r``:
    ``Bernoulli(r/(2^e K))`` is ``[U_K = 0] and [U < r]`` with ``U`` uniform on ``[0, 2^e)``,
    drawn as two int64 words when ``e > 62`` (``U < r < 2^62`` iff the high word is 0).
    """
    a = np.asarray(a, dtype=np.int64)
    whole = a >> e if e < 63 else np.zeros_like(a)
    frac = a - (whole << e) if e < 63 else a
    alive = np.ones(a.shape, dtype=bool)
    j = 0
    while True:
        idx = np.flatnonzero(alive & (whole > j))
        if idx.size == 0:
            break
        alive[idx] = _bern_exp_frac(np.ones(idx.size, np.int64), 1, rng)
        j += 1
    stop_k = np.zeros(a.shape, dtype=np.int64)
    active = np.flatnonzero(alive)
    k = 1
    while active.size:
        r = frac[active]
        if e <= 62:
            go = rng.integers(0, 2**e, size=active.size, dtype=np.int64) < r
        else:
            hi = rng.integers(0, 2 ** (e - 62), size=active.size, dtype=np.int64)
            go = (hi == 0) & (rng.integers(0, 2**62, size=active.size, dtype=np.int64) < r)
        if k > 1:
            go &= rng.integers(0, k, size=active.size, dtype=np.int64) == 0
        stop_k[active[~go]] = k
        active = active[go]
        k += 1
    return alive & (stop_k % 2 == 1)


def _dgauss_pow2(bits: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` exact ``N_Z(0, t^2)``, ``t = 2^bits``: CKS Alg. 3 with ``Lap_Z(t)`` proposals.

    Acceptance ``exp(-(|Y| - t)^2 / (2 t^2))`` with ``||Y| - t| = q t + r``, ``r = r1 2^c + r0``
    (``c = bits // 2``) is the product of ``exp(-q^2/2)``, ``exp(-q r / t)``,
    ``exp(-r1^2 / 2^(2 bits - 2c + 1))``, ``exp(-r1 r0 / 2^(2 bits - c))`` and
    ``exp(-r0^2 / 2^(2 bits + 1))``: independent dyadic Bernoullis, all in int64.
    """
    t = 2**bits
    c = bits // 2
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        need = n - filled
        y = _dlap_batch(t, 1, int(need * 1.6) + 16, rng)
        dev = np.abs(np.abs(y) - t)
        q, r = dev >> bits, dev & (t - 1)
        far = q > 2**20  # acceptance < exp(-2^39): taken as 0 (keeps q^2, q r in int64)
        q[far] = 0
        r1, r0 = r >> c, r & (2**c - 1)
        acc = _bern_exp_dyadic(q * q, 1, rng) & ~far
        for num, e in ((q * r, bits), (r1 * r1, 2 * (bits - c) + 1), (r1 * r0, 2 * bits - c)):
            i = np.flatnonzero(acc)
            acc[i] = _bern_exp_dyadic(num[i], e, rng)
        i = np.flatnonzero(acc)
        acc[i] = _bern_exp_dyadic(r0[i] * r0[i], 2 * bits + 1, rng)
        z = y[acc][:need]
        out[filled : filled + z.size] = z
        filled += z.size
    return out


def sample_lattice_units(
    kind: str, size: int, rng: RngLike = None, *, bits: int = FINE_BITS
) -> np.ndarray:
    """Exact discrete Laplace (``P(z) ∝ exp(-|z|/2^bits)``) or Gaussian
    (``P(z) ∝ exp(-z²/(2·4^bits))``) integers, CKS Alg. 2-3, for noise ``z · scale · 2^-bits``
    of scale exactly ``scale`` on the lattice of spacing ``scale · 2^-bits`` (a fine lattice for
    mechanisms whose proof needs a density, see :mod:`pgm_dp.ising.prising_cells`). The
    Gaussian's acceptance step is split into dyadic Bernoullis so ``bits`` up to 40 stays
    in int64 (the generic sampler would take its big-integer path).

    >>> z = sample_lattice_units("gaussian", 4, rng=0, bits=40)
    >>> z.dtype, bool(np.all(np.abs(z) < 2**47))
    (dtype('int64'), True)
    """
    if kind not in ("laplace", "gaussian"):
        raise PrivacyParameterError(f"kind must be 'laplace' or 'gaussian', got {kind!r}")
    if isinstance(bits, bool) or not isinstance(bits, int | np.integer) or not 2 <= bits <= 40:
        raise PrivacyParameterError(f"bits must be an integer in [2, 40], got {bits!r}")
    n = int(size)
    if n < 0:
        raise PrivacyParameterError(f"size must be >= 0, got {size!r}")
    gen = as_generator(rng)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if kind == "laplace":
        return _dlap_batch(2 ** int(bits), 1, n, gen)
    return _dgauss_pow2(int(bits), n, gen)
