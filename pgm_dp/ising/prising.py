"""PrIsing: differentially private estimation of β in a one-parameter Ising model.

Chakraborty, Chatterjee & Dalal, "PrIsing: Privacy-Preserving Peer Effect Estimation via Ising
Model", AISTATS 2024. Model (Eq. 1-2): ``P_β(σ) ∝ exp(β/2 · σᵀ J_n σ)`` on ``{-1, +1}^n`` with
``J_n`` symmetric, non-negative, zero diagonal (sample it with
:func:`pgm_dp.ising.gibbs_ising`, ``convention="pairwise"``, the default).

* :func:`pseudo_likelihood_score` — ``L_σ(β) = -(1/n) Σ_i m_i (σ_i - tanh(β m_i))`` (Eq. 4),
  ``m_i = Σ_j J_ij σ_j`` (Eq. 5). ``L_σ = -(1/n) d/dβ log Π_i f_i(β, σ_i)``: minus the
  derivative of the log pseudo-likelihood of Eq. 3, divided by ``n``.
* :func:`mple` — ``β̂ = inf{β >= 0 : L_σ(β) = 0}`` (Eq. 6).
* :func:`prising` — Algorithm 1 (one release, optional accountant); :func:`prising_batch` runs
  it independently on many outcome vectors (simulations); :func:`prising_calibration` gives
  ``ζ``, ``Δ`` and the noise scale.

Monotonicity (why a bracketing root finder is exact here). For
``G(β) = L_σ(β) + Δβ/n + b/n``, ``G'(β) = (1/n) Σ_i m_i² sech²(β m_i) + Δ/n >= 0`` (the
negative log pseudo-likelihood is convex in β); ``G`` is strictly increasing unless all
``m_i = 0`` and ``Δ = 0``. Hence the zero set is empty, a point, or (only in that degenerate
case) everything, and ``inf{β >= 0 : G(β) = 0}`` is found by bracketing ``[0, 2^k]`` and a
safeguarded Newton-bisection iteration, vectorised over replicates.

No root in ``[0, ∞)`` (the paper reads ``inf ∅ = ∞``). Two cases, documented choices:

* ``G(0) > 0`` (e.g. ``σᵀJσ < 0`` without noise): ``G > 0`` on ``[0, ∞)``, so the objective
  (pseudo-likelihood, or its perturbed version) decreases on ``[0, ∞)`` and its maximiser over
  the parameter space ``β >= 0`` is ``0``. With ``no_root="boundary"`` (default) we return
  ``0.0``; with ``no_root="inf"`` the literal ``inf ∅ = ∞``. For PrIsing this is a
  deterministic relabelling of the output ``∞`` (post-processing), so Theorem 3.1 still holds.
* ``Δ = 0`` and ``G(β) < 0`` for all β (each node agrees with the sign of its field): the
  pseudo-likelihood increases without bound; :func:`mple` returns ``inf`` with a
  ``RuntimeWarning`` in both modes. With ``Δ > 0`` (PrIsing) ``G → ∞``, so this cannot happen.

``σ`` must be coded ±1 (``{0, 1}`` codes are rejected: map them with ``2x - 1`` yourself).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp

from ..errors import DataValidationError, PrivacyParameterError
from ..privacy import Accountant, ApproxDP, PureDP
from ..privacy.lattice import sample_lattice_gaussian, sample_lattice_laplace
from ..privacy.samplers import as_generator
from .networks import check_coupling

__all__ = [
    "PrIsingCalibration",
    "PrIsingResult",
    "pseudo_likelihood_score",
    "mple",
    "prising_calibration",
    "prising",
    "prising_batch",
]

NoRoot = Literal["boundary", "inf"]
_DELTA_RTOL = 1e-12  # a user Delta this close below the minimum is raised to the minimum


def _sigma(sigma, n: int | None, *, batch: bool) -> np.ndarray:
    arr = np.asarray(sigma)
    real = np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    if not (real or np.issubdtype(arr.dtype, np.bool_)):
        raise DataValidationError(f"sigma must be a real numeric array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    want = (1, 2) if batch else (1,)
    if arr.ndim not in want or arr.shape[-1] == 0:
        raise DataValidationError(
            f"sigma must be a non-empty {'1-D or 2-D' if batch else '1-D'} "
            f"array, got shape {arr.shape}"
        )
    if n is not None and arr.shape[-1] != n:
        raise DataValidationError(f"sigma has length {arr.shape[-1]} but J is {n} x {n}")
    if not np.all((arr == 1.0) | (arr == -1.0)):
        hint = " (map {0, 1} codes to ±1 with 2*x - 1)" if np.all((arr == 0) | (arr == 1)) else ""
        raise DataValidationError(f"sigma must contain only -1 and +1{hint}")
    return arr


def _fields(J, sig: np.ndarray) -> np.ndarray:
    """``m = J σ`` row-wise for ``sig`` of shape ``(r, n)``; returns ``(r, n)``."""
    return np.asarray(J @ sig.T).T if sp.issparse(J) else sig @ J


#: The local fields ``m = J σ`` row-wise (public: the Bayesian PrIsing posterior uses them).
local_fields = _fields


def pseudo_likelihood_score(beta, sigma, J):
    """``L_σ(β) = -(1/n) Σ_i m_i(σ)(σ_i - tanh(β m_i(σ)))`` (PrIsing Eq. 4-5), vectorised.

    ``sigma`` is ``(n,)`` or ``(r, n)``; the result has shape
    ``broadcast(np.shape(beta), sigma.shape[:-1])`` (a float for scalar inputs). ``J`` is any
    symmetric, zero-diagonal, finite matrix (dense or sparse; non-negativity is not needed).

    >>> J = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> float(pseudo_likelihood_score(0.0, [1, 1], J))
    -1.0
    """
    Jc = check_coupling(J)
    sig = _sigma(sigma, Jc.shape[0], batch=True)
    m = _fields(Jc, np.atleast_2d(sig))
    if sig.ndim == 1:
        m = m[0]
    b = np.asarray(beta, dtype=np.float64)[..., None]
    out = -np.mean(m * (sig - np.tanh(b * m)), axis=-1)
    return float(out) if out.ndim == 0 else out


def _g(beta: np.ndarray, m: np.ndarray, a: np.ndarray, slope: float, shift: np.ndarray):
    """``G(β) = L(β) + slope·β + shift`` and ``G'(β)`` for rows of ``m`` (``a = mean(m σ)``)."""
    t = np.tanh(beta[:, None] * m)
    g = -a + np.mean(m * t, axis=1) + slope * beta + shift
    dg = np.mean(m * m * (1.0 - t * t), axis=1) + slope
    return g, dg


def _first_root(
    m: np.ndarray, sig: np.ndarray, slope: float, shift: np.ndarray, no_root: str
) -> tuple[np.ndarray, np.ndarray]:
    """``inf{β >= 0 : G_r(β) = 0}`` per row; returns (roots, boundary flags). See module doc."""
    r = shift.shape[0]
    if m.shape[0] == 1 and r > 1:
        m, sig = np.broadcast_to(m, (r, m.shape[1])), np.broadcast_to(sig, (r, m.shape[1]))
    a = np.mean(m * sig, axis=1)
    g0 = -a + shift
    res = np.zeros(r)
    boundary = g0 > 0
    if no_root == "inf":
        res[boundary] = np.inf
    active = g0 < 0
    if slope == 0:
        g_inf = np.mean(np.abs(m), axis=1) - a + shift
        never = active & (g_inf <= 0)
        if np.any(never):
            warnings.warn(
                "the pseudo-likelihood equation has no root: L(beta) < 0 for every beta "
                "(every node agrees with its local field); returning inf",
                RuntimeWarning,
                stacklevel=3,
            )
            res[never] = np.inf
            active &= ~never
    idx = np.flatnonzero(active)
    if idx.size == 0:
        return res, boundary
    mm, aa, ss = m[idx], a[idx], shift[idx]
    lo = np.zeros(idx.size)
    hi = np.ones(idx.size)
    low = np.ones(idx.size, dtype=bool)
    while np.any(low) and hi.max() < 1e300:  # bracket: double hi until G(hi) > 0
        g, _ = _g(hi, mm, aa, slope, ss)
        low = g <= 0
        lo[low], hi[low] = hi[low], 2.0 * hi[low]
    if np.any(low):  # G(hi) <= 0 up to 1e300: numerically no finite root
        res[idx[low]] = np.inf
        keep = ~low
        idx, mm, aa, ss, lo, hi = idx[keep], mm[keep], aa[keep], ss[keep], lo[keep], hi[keep]
    x = 0.5 * (lo + hi)
    done = np.zeros(idx.size, dtype=bool)
    for _ in range(200):  # safeguarded Newton (Newton step if inside the bracket, else bisect)
        g, dg = _g(x, mm, aa, slope, ss)
        done |= g == 0
        lo = np.where(g < 0, x, lo)
        hi = np.where(g > 0, x, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - g / dg
        ok = np.isfinite(newton) & (newton > lo) & (newton < hi)
        nxt = np.where(ok, newton, 0.5 * (lo + hi))
        done |= (hi - lo) <= 1e-13 * np.maximum(1.0, hi)
        done |= np.abs(nxt - x) <= 1e-15 * np.maximum(1.0, x)
        x = np.where(done, x, nxt)
        if np.all(done):
            break
    res[idx] = x
    return res, boundary


def _check_no_root(no_root: str) -> None:
    if no_root not in ("boundary", "inf"):
        raise ValueError(f"no_root must be 'boundary' or 'inf', got {no_root!r}")


def mple(sigma, J, *, no_root: NoRoot = "boundary"):
    """Maximum pseudo-likelihood estimate ``β̂ = inf{β >= 0 : L_σ(β) = 0}`` (PrIsing Eq. 6).

    ``sigma`` ``(n,)`` gives a float, ``(r, n)`` an array of ``r`` estimates. Root at 0: if
    ``L_σ(0) = 0`` (e.g. ``J = 0``) the estimate is ``0``. No root: see the module docstring
    (``L_σ(0) > 0`` → ``0.0``, or ``inf`` with ``no_root="inf"``; ``L_σ < 0`` everywhere →
    ``inf`` with a ``RuntimeWarning``). Accuracy: relative ``~1e-13``.

    >>> J = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]) / 2
    >>> round(mple([1, 1, -1], J), 6)
    0.0
    """
    _check_no_root(no_root)
    Jc = check_coupling(J)
    sig = _sigma(sigma, Jc.shape[0], batch=True)
    s2 = np.atleast_2d(sig)
    est, _ = _first_root(_fields(Jc, s2), s2, 0.0, np.zeros(s2.shape[0]), no_root)
    return float(est[0]) if sig.ndim == 1 else est


@dataclass(frozen=True)
class PrIsingCalibration:
    """Public constants of Algorithm 1 for a given ``J``, ``ε``, ``δ`` (no data involved).

    ``zeta = max_j 8 d_j / n`` with ``d_j = n Σ_k J_jk``; ``Delta_min = max_j (24/(ε n))
    Σ_i d_i J_ij``; ``noise_scale`` is ``γ = ζ √(8 log(2/δ) + 4ε) / ε`` (Gaussian, ``δ > 0``)
    or the Laplace scale ``2ζ/ε`` (``δ = 0``).
    """

    n: int
    epsilon: float
    delta: float
    zeta: float
    Delta_min: float
    Delta: float
    mechanism: Literal["gaussian", "laplace"]
    noise_scale: float
    budget: PureDP | ApproxDP


def _calibrate(Jc, n: int, epsilon, delta, Delta) -> PrIsingCalibration:
    budget = ApproxDP(epsilon, delta)  # validates ε > 0 finite, 0 <= δ < 1
    eps, dlt = budget.epsilon, budget.delta
    row = np.asarray(Jc.sum(axis=1), dtype=np.float64).ravel()
    if not np.any(row > 0):
        raise DataValidationError("J has no non-zero entry: β is not identifiable (ζ = 0)")
    d = n * row  # d_i = n Σ_j J_ij
    zeta = float(np.max(8.0 * d / n))
    delta_min = float(np.max(24.0 / (eps * n) * np.asarray(Jc @ d).ravel()))
    if Delta is None:
        big_delta = delta_min
    else:
        try:
            big_delta = float(Delta)
        except (TypeError, ValueError):
            big_delta = math.nan
        if isinstance(Delta, bool) or not math.isfinite(big_delta):
            raise PrivacyParameterError(f"Delta must be a finite number, got {Delta!r}")
        if big_delta < delta_min * (1 - _DELTA_RTOL):
            raise PrivacyParameterError(
                f"Delta={big_delta:.6g} is below the minimum {delta_min:.6g} permitted by "
                "Algorithm 1 (max_j 24/(eps n) sum_i d_i J_ij)"
            )
        big_delta = max(big_delta, delta_min)
    if dlt > 0:
        scale = zeta * math.sqrt(8.0 * math.log(2.0 / dlt) + 4.0 * eps) / eps
        return PrIsingCalibration(
            n, eps, dlt, zeta, delta_min, big_delta, "gaussian", scale, budget
        )
    return PrIsingCalibration(
        n, eps, dlt, zeta, delta_min, big_delta, "laplace", 2.0 * zeta / eps, PureDP(eps)
    )


def prising_calibration(J, epsilon: float, delta: float, *, Delta=None) -> PrIsingCalibration:
    """``ζ``, ``Δ`` (the minimum of Algorithm 1 unless a larger ``Delta`` is given) and the
    noise scale for a non-negative symmetric zero-diagonal ``J`` (dense or sparse).

    >>> c = prising_calibration(np.array([[0.0, 0.5], [0.5, 0.0]]), 1.0, 0.0)
    >>> c.zeta, c.Delta, c.mechanism, c.noise_scale
    (4.0, 6.0, 'laplace', 8.0)
    """
    Jc = check_coupling(J, nonnegative=True)
    return _calibrate(Jc, Jc.shape[0], epsilon, delta, Delta)


@dataclass(frozen=True)
class PrIsingResult:
    """Output of :func:`prising`. Only ``estimate`` is the private release.

    The noise draw ``b`` is deliberately not kept: with ``estimate`` and the public ``J`` it
    would reveal ``L_σ(β̂)``, a function of σ. ``boundary`` is True when ``G(0) > 0`` and the
    boundary value (``0.0``, or ``inf`` with ``no_root="inf"``) was returned. ``calibration``
    holds ``ζ``, ``Δ``, the noise scale (``γ`` or the Laplace scale), the mechanism and the
    budget ``PureDP(ε)``/``ApproxDP(ε, δ)``.
    """

    estimate: float
    boundary: bool
    calibration: PrIsingCalibration

    @property
    def zeta(self) -> float:
        return self.calibration.zeta

    @property
    def Delta(self) -> float:
        return self.calibration.Delta

    @property
    def noise_scale(self) -> float:
        return self.calibration.noise_scale

    @property
    def mechanism(self) -> str:
        return self.calibration.mechanism

    @property
    def budget(self) -> PureDP | ApproxDP:
        return self.calibration.budget


def _draw(cal: PrIsingCalibration, size: int, gen: np.random.Generator) -> np.ndarray:
    """``b`` drawn exactly on a lattice ``2^k Z`` (``2^20 <= scale/2^k < 2^21`` for Laplace,
    ``2^10`` for Gaussian; CKS 2020 samplers), not by numpy's float sampler (Mironov 2012).
    Our choice: Chakraborty et al.'s proof assumes a continuous density for ``b``; the lattice
    draw has the same scale to within ``2^-20`` relative, and no float-sampler artefacts."""
    if cal.mechanism == "gaussian":
        return sample_lattice_gaussian(cal.noise_scale, size, gen)
    return sample_lattice_laplace(cal.noise_scale, size, gen)


def prising(
    sigma,
    J,
    epsilon: float,
    delta: float,
    rng,
    *,
    Delta=None,
    accountant: Accountant | None = None,
    no_root: NoRoot = "boundary",
) -> PrIsingResult:
    """Algorithm 1 of PrIsing: ``(ε, δ)``-node-outcome-DP estimate of β (Theorem 3.1).

    ``m_i = Σ_j J_ij σ_j``, ``d_i = n Σ_j J_ij``, ``ζ = max_j 8 d_j/n``; ``b ~ N(0, γ²)`` with
    ``γ = ζ √(8 log(2/δ) + 4ε)/ε`` if ``δ > 0``, ``b ~ Laplace(0, 2ζ/ε)`` if ``δ = 0``;
    ``Δ >= max_j (24/(ε n)) Σ_i d_i J_ij`` (the minimum unless a larger ``Delta`` is given;
    a smaller one raises :class:`~pgm_dp.errors.PrivacyParameterError`); returns
    ``β̂_priv = inf{β >= 0 : L_σ(β) + Δβ/n + b/n = 0}`` (boundary case: module docstring).

    All inputs are validated first; then ``accountant`` (if given) is charged
    ``PureDP(ε)``/``ApproxDP(ε, δ)``; only then is the noise drawn.

    >>> from pgm_dp.ising.networks import karate_club, scale_symmetric
    >>> A, s = karate_club()
    >>> res = prising(s, scale_symmetric(A), epsilon=50.0, delta=1e-3, rng=0)
    >>> res.mechanism, res.estimate >= 0
    ('gaussian', True)
    """
    _check_no_root(no_root)
    Jc = check_coupling(J, nonnegative=True)
    n = Jc.shape[0]
    sig = _sigma(sigma, n, batch=False)
    cal = _calibrate(Jc, n, epsilon, delta, Delta)
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be a pgm_dp.privacy.Accountant, got {accountant!r}")
    gen = as_generator(rng)
    m = _fields(Jc, sig[None, :])
    if accountant is not None:
        accountant.charge(
            cal.budget,
            what="PrIsing: Ising inverse temperature beta (Algorithm 1)",
            mechanism=f"objective perturbation ({cal.mechanism})",
            scale=cal.noise_scale,
        )
    b = _draw(cal, 1, gen)
    est, bnd = _first_root(m, sig[None, :], cal.Delta / n, b / n, no_root)
    return PrIsingResult(float(est[0]), bool(bnd[0]), cal)


def prising_batch(
    sigmas,
    J,
    epsilon: float,
    delta: float,
    rng,
    *,
    Delta=None,
    no_root: NoRoot = "boundary",
) -> np.ndarray:
    """Independent runs of Algorithm 1 on the rows of ``sigmas`` ``(r, n)`` (fresh noise each).

    For simulations (each row is a separate data set, as in PrIsing Sec. 4), so no accountant
    is involved; use :func:`prising` for a release. Returns the ``r`` private estimates.

    >>> J = np.array([[0.0, 0.5], [0.5, 0.0]])
    >>> prising_batch([[1, 1], [1, -1]], J, 1.0, 0.1, rng=0).shape
    (2,)
    """
    _check_no_root(no_root)
    Jc = check_coupling(J, nonnegative=True)
    n = Jc.shape[0]
    sig = np.atleast_2d(_sigma(sigmas, n, batch=True))
    cal = _calibrate(Jc, n, epsilon, delta, Delta)
    gen = as_generator(rng)
    b = _draw(cal, sig.shape[0], gen)
    est, _ = _first_root(_fields(Jc, sig), sig, cal.Delta / n, b / n, no_root)
    return est
