"""Noise samplers: floating-point Laplace/Gaussian and exact discrete Laplace/Gaussian.

All randomness comes from an explicit :class:`numpy.random.Generator` (or a seed), see
:func:`as_generator`, so every experiment is reproducible.

* :func:`sample_laplace`, :func:`sample_gaussian` are numpy's floating-point samplers. They are
  **not** exact: floating-point Laplace/Gaussian noise has the known precision-based leaks
  (Mironov 2012). No mechanism of the package uses them (issue #16): releases use the discrete
  samplers, directly or on a lattice (:mod:`pgm_dp.privacy.lattice`); they remain for modelling
  and for the audits' reference distributions.
* :func:`sample_discrete_laplace`, :func:`sample_discrete_gaussian` are **exact** samplers of
  ``Lap_Z(b)`` (``P(x) ∝ exp(-|x|/b)``) and ``N_Z(0, σ²)`` (``P(x) ∝ exp(-x²/(2σ²))``),
  following Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential
  Privacy", Algorithms 1-3, vectorised over numpy arrays.

Why the discrete samplers are exact
-----------------------------------
Every random choice is a comparison of a *uniform integer* (``Generator.integers``, which is
unbiased: it uses rejection, never floating point) with an *exact integer threshold*, so the only
source of error is the underlying bit generator. The scale is a rational ``t/s``; a float scale is
rounded **up** to such a rational (an increase of at most ``2**-20`` for scales below ``2**20``;
exact when the float already is a dyadic rational with a small denominator, e.g. ``10.0``).
Rounding up only adds noise, so the privacy guarantee of the requested scale is kept. Use
:func:`discrete_laplace_rational_scale` / :func:`discrete_gaussian_rational_variance` to see the
rational actually used.

* ``Bernoulli(exp(-r/b))`` for ``0 <= r <= b`` (CKS Alg. 1): ``K = 1``; while
  ``Bernoulli(r/(b K))`` succeeds, ``K += 1``; return ``K odd``. ``Bernoulli(r/(bK))`` is
  ``[U_K == 0] and [U_b < r]`` with independent uniform integers ``U_K ∈ {0..K-1}``,
  ``U_b ∈ {0..b-1}``. All still-running elements share the same ``K``, so each round is one
  vectorised draw on the active elements. For ``γ > 1``, ``floor(γ)`` Bernoulli(``exp(-1)``)
  trials must all succeed first.
* ``Lap_Z(t/s)`` (CKS Alg. 2): ``U ~ Unif{0..t-1}``, accept with ``Bernoulli(exp(-U/t))``;
  ``V`` = number of ``Bernoulli(exp(-1))`` successes before the first failure; ``X = U + tV`` is
  then geometric with ``P(X = x) ∝ exp(-x/t)``; ``Y = floor(X/s)``; a fair sign bit ``B``;
  reject ``(B = 1, Y = 0)``; return ``(1-2B) Y``. Rejections are handled by drawing a batch of
  candidates and keeping accepted ones in order (accepted candidates are i.i.d. from the target).
* ``N_Z(0, σ²)`` (CKS Alg. 3) with rational ``σ² = n/d`` and ``t = floor(σ) + 1``: draw
  ``Y ~ Lap_Z(t)`` and accept with ``Bernoulli(exp(-γ))``,
  ``γ = (|Y| - σ²/t)² / (2σ²) = (|Y| t d - n)² / (2 n d t²)`` (exact integers). Elements whose
  integers would not fit in int64 (astronomically rare unless σ > ~3·10⁴) take an exact
  pure-Python path.

Example
-------
>>> from pgm_dp.privacy.samplers import sample_discrete_laplace
>>> x = sample_discrete_laplace(2.0, 5, rng=0)
>>> x.dtype, x.shape
(dtype('int64'), (5,))
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil, isfinite, isqrt

import numpy as np

from ..errors import PrivacyParameterError
from ..rng import RngLike, as_generator

__all__ = [
    "as_generator",
    "sample_laplace",
    "sample_gaussian",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "discrete_laplace_rational_scale",
    "discrete_gaussian_rational_variance",
    "rational_variance_at_least",
    "sample_discrete_gaussian_var",
]

_MAX_DEN = 2**20  # denominator used when a float scale must be rounded up to a rational
_MAX_T = 2**40  # numerator bound keeping t * V inside int64
_I63 = 2**63
_L31 = 2**31 - 1


def _check_scale(scale: float | Fraction, name: str) -> None:
    if isinstance(scale, bool):
        raise PrivacyParameterError(f"{name} must be a number, got {scale!r}")
    try:
        ok = isfinite(float(scale)) and scale >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise PrivacyParameterError(f"{name} must be finite and >= 0, got {scale!r}")


# -- floating-point samplers ----
def sample_laplace(scale: float, size: int | tuple[int, ...], rng: RngLike = None) -> np.ndarray:
    """Floating-point ``Laplace(0, scale)`` noise (float64). Not an exact sampler.

    >>> sample_laplace(1.0, (2, 3), rng=0).shape
    (2, 3)
    """
    _check_scale(scale, "Laplace scale")
    return as_generator(rng).laplace(0.0, float(scale), size).astype(np.float64, copy=False)


def sample_gaussian(sigma: float, size: int | tuple[int, ...], rng: RngLike = None) -> np.ndarray:
    """Floating-point ``N(0, sigma²)`` noise (float64). Not an exact sampler.

    >>> sample_gaussian(1.0, 4, rng=0).dtype
    dtype('float64')
    """
    _check_scale(sigma, "Gaussian sigma")
    return as_generator(rng).normal(0.0, float(sigma), size).astype(np.float64, copy=False)


# -- exact rational parameters ----
def discrete_laplace_rational_scale(scale: float | Fraction) -> Fraction:
    """Rational scale ``t/s >= scale`` used by :func:`sample_discrete_laplace`.

    Exact when ``scale`` has denominator ``<= 2**20``; otherwise ``ceil(scale * 2**20) / 2**20``.

    >>> discrete_laplace_rational_scale(2.5)
    Fraction(5, 2)
    """
    _check_scale(scale, "discrete Laplace scale")
    f = Fraction(scale)
    if f > _MAX_T:
        raise PrivacyParameterError(f"discrete Laplace scale {scale} exceeds 2**40")
    if f.denominator <= _MAX_DEN and f.numerator <= _MAX_T:
        return f
    den = _MAX_DEN
    while ceil(f * den) > _MAX_T:
        den //= 2
    return Fraction(ceil(f * den), den)


def discrete_gaussian_rational_variance(sigma: float | Fraction) -> Fraction:
    """Rational variance parameter ``n/d >= sigma²`` used by :func:`sample_discrete_gaussian`.

    ``d`` is the largest power of two (``<= 2**30``) keeping the integers of CKS Alg. 3 in int64
    for ``|Y| <= 16 t``; exact when ``sigma²`` already has such a denominator.

    >>> discrete_gaussian_rational_variance(3.0)
    Fraction(9, 1)
    """
    _check_scale(sigma, "discrete Gaussian sigma")
    return rational_variance_at_least(Fraction(sigma) ** 2)


def rational_variance_at_least(var: Fraction) -> Fraction:
    """The sampler's rational ``σ² >= var`` (see :func:`discrete_gaussian_rational_variance`)."""
    v = Fraction(var)
    if v < 0:
        raise PrivacyParameterError(f"variance must be >= 0, got {var}")
    t = isqrt(v.numerator // v.denominator) + 1

    def fits(n: int, d: int) -> bool:
        return n <= _L31 and 2 * n * d * t * t < _I63 // 2 and 16 * t * t * d <= _L31

    if fits(v.numerator, v.denominator):
        return v
    d = 2**30
    while d > 1 and not fits(ceil(v * d), d):
        d //= 2
    return Fraction(ceil(v * d), d)


# -- exact Bernoulli(exp(-gamma)) (CKS Alg. 1) ----
def _bern_exp_frac(r: np.ndarray, b: np.ndarray | int, rng: np.random.Generator) -> np.ndarray:
    """Vectorised exact ``Bernoulli(exp(-r/b))`` for integer ``0 <= r <= b`` (CKS Alg. 1)."""
    r = np.asarray(r, dtype=np.int64)
    b_arr = np.broadcast_to(np.asarray(b, dtype=np.int64), r.shape)
    stop_k = np.zeros(r.shape, dtype=np.int64)
    active = np.arange(r.size)
    k = 1
    while active.size:
        ra, ba = r[active], b_arr[active]
        go = rng.integers(0, ba, dtype=np.int64) < ra
        if k > 1:
            go &= rng.integers(0, k, size=active.size, dtype=np.int64) == 0
        stop_k[active[~go]] = k
        active = active[go]
        k += 1
    return (stop_k % 2) == 1


def _bern_exp(a: np.ndarray, b: np.ndarray | int, rng: np.random.Generator) -> np.ndarray:
    """Vectorised exact ``Bernoulli(exp(-a/b))`` for integers ``a >= 0``, ``b >= 1``."""
    a = np.asarray(a, dtype=np.int64)
    b_arr = np.broadcast_to(np.asarray(b, dtype=np.int64), a.shape)
    whole, frac = np.divmod(a, b_arr)
    alive = np.ones(a.shape, dtype=bool)
    j = 0
    while True:  # floor(gamma) trials of Bernoulli(exp(-1)) must all succeed
        idx = np.flatnonzero(alive & (whole > j))
        if idx.size == 0:
            break
        alive[idx] = _bern_exp_frac(np.ones(idx.size, np.int64), 1, rng)
        j += 1
    idx = np.flatnonzero(alive)
    alive[idx] = _bern_exp_frac(frac[idx], b_arr[idx], rng)
    return alive


def _geometric_exp1(n: int, rng: np.random.Generator) -> np.ndarray:
    """Exact count of ``Bernoulli(exp(-1))`` successes before the first failure."""
    v = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while active.size:
        ok = _bern_exp_frac(np.ones(active.size, np.int64), 1, rng)
        active = active[ok]
        v[active] += 1
    return v


def _dlap_batch(t: int, s: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Exact ``Lap_Z(t/s)`` samples, exactly ``n`` of them (CKS Alg. 2, vectorised)."""
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        need = n - filled
        m = int(need * 1.7) + 16
        u = rng.integers(0, t, size=m, dtype=np.int64)
        u = u[_bern_exp_frac(u, t, rng)]
        x = u + t * _geometric_exp1(u.size, rng)
        y = x // s
        neg = rng.integers(0, 2, size=y.size, dtype=np.int64) == 1
        keep = ~(neg & (y == 0))
        z = np.where(neg, -y, y)[keep][:need]
        out[filled : filled + z.size] = z
        filled += z.size
    return out


def sample_discrete_laplace(
    scale: float | Fraction, size: int | tuple[int, ...], rng: RngLike = None
) -> np.ndarray:
    """Exact discrete Laplace ``P(x) ∝ exp(-|x|/scale)`` on the integers (int64), CKS Alg. 2.

    ``scale`` is rounded up to :func:`discrete_laplace_rational_scale`. For a query with integer
    L1 sensitivity ``Δ``, scale ``Δ/ε`` gives ε-DP (CKS Sec. 2 / Ghosh et al. 2009).

    >>> sample_discrete_laplace(1.0, 3, rng=1).dtype
    dtype('int64')
    """
    q = discrete_laplace_rational_scale(scale)
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
    n = int(np.prod(shape, dtype=np.int64))
    gen = as_generator(rng)
    if q == 0 or n == 0:
        return np.zeros(shape, dtype=np.int64)
    return _dlap_batch(q.numerator, q.denominator, n, gen).reshape(shape)


# -- pure-Python exact path (big integers) ----
def _uniform_below(b: int, rng: np.random.Generator) -> int:
    """Uniform integer in ``{0..b-1}`` for any Python int ``b >= 1`` (bit rejection)."""
    if b <= _I63:
        return int(rng.integers(0, b, dtype=np.int64)) if b > 1 else 0
    nbits = (b - 1).bit_length()
    nbytes = (nbits + 7) // 8
    while True:
        x = int.from_bytes(rng.bytes(nbytes), "little") >> (8 * nbytes - nbits)
        if x < b:
            return x


def _bern_exp_frac_scalar(r: int, b: int, rng: np.random.Generator) -> bool:
    """Exact ``Bernoulli(exp(-r/b))``, ``0 <= r <= b``, with Python ints (CKS Alg. 1)."""
    k = 1
    while _uniform_below(b, rng) < r and (k == 1 or _uniform_below(k, rng) == 0):
        k += 1
    return k % 2 == 1


def _bern_exp_scalar(a: int, b: int, rng: np.random.Generator) -> bool:
    """Exact ``Bernoulli(exp(-a/b))`` for any ``a >= 0``, ``b >= 1`` (CKS Alg. 1)."""
    for _ in range(a // b):
        if not _bern_exp_frac_scalar(1, 1, rng):
            return False
    return _bern_exp_frac_scalar(a % b, b, rng)


def _dgauss_fast(n_: int, d: int, t: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` exact ``N_Z(0, n_/d)`` samples; CKS Alg. 3 with ``t = floor(σ)+1``."""
    out = np.empty(n, dtype=np.int64)
    den = 2 * n_ * d * t * t
    vector_ok = n_ <= _L31 and den < _I63
    ylim = _L31 // (t * d)
    filled = 0
    while filled < n:
        need = n - filled
        y = _dlap_batch(t, 1, int(need * 1.5) + 16, rng)
        ay = np.abs(y)
        fast = (ay <= ylim) if vector_ok else np.zeros(y.size, dtype=bool)
        acc = np.zeros(y.size, dtype=bool)
        fi = np.flatnonzero(fast)
        if fi.size:
            diff = ay[fi] * (t * d) - n_
            acc[fi] = _bern_exp(diff * diff, den, rng)
        for i in np.flatnonzero(~fast):  # exact big-integer path for rare large |Y|
            num = (int(ay[i]) * t * d - n_) ** 2
            acc[i] = _bern_exp_scalar(num, den, rng)
        z = y[acc][:need]
        out[filled : filled + z.size] = z
        filled += z.size
    return out


def sample_discrete_gaussian(
    sigma: float | Fraction, size: int | tuple[int, ...], rng: RngLike = None
) -> np.ndarray:
    """Exact discrete Gaussian ``P(x) ∝ exp(-x²/(2σ²))`` on the integers (int64), CKS Alg. 3.

    ``σ²`` is rounded up to :func:`discrete_gaussian_rational_variance`. With integer L2
    sensitivity ``Δ`` it gives ``Δ²/(2σ²)``-zCDP (CKS Thm. 4).

    >>> sample_discrete_gaussian(2.0, (2, 2), rng=3).shape
    (2, 2)
    """
    return sample_discrete_gaussian_var(discrete_gaussian_rational_variance(sigma), size, rng)


def sample_discrete_gaussian_var(
    variance: Fraction, size: int | tuple[int, ...], rng: RngLike = None
) -> np.ndarray:
    """Exact ``N_Z(0, v)`` with ``v`` = :func:`rational_variance_at_least` of ``variance``.

    >>> sample_discrete_gaussian_var(Fraction(1, 2), 3, rng=0).shape
    (3,)
    """
    v = rational_variance_at_least(variance)
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
    n = int(np.prod(shape, dtype=np.int64))
    gen = as_generator(rng)
    if v == 0 or n == 0:
        return np.zeros(shape, dtype=np.int64)
    t = isqrt(v.numerator // v.denominator) + 1
    return _dgauss_fast(v.numerator, v.denominator, t, n, gen).reshape(shape)
