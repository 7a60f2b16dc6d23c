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
  ``ζ``, ``Δ`` and the noise scale. Both release the root's cell on a public grid of spacing
  ``resolution`` (default ``1e-3``), decided exactly from exact lattice noise, never the
  full-precision root: Theorem 3.1 needs ``b`` to have a density, and a full-precision root
  of lattice noise reveals σ (:mod:`pgm_dp.ising.prising_cells` has the argument).

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
from ..privacy.samplers import as_generator
from .networks import check_coupling
from .prising_cells import FINE_BITS, draw_units, find_cells, lattice_eta, roundoff_bound

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
DEFAULT_RESOLUTION = 1e-3  # spacing of the public grid the estimate is released on


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
    m: np.ndarray,
    sig: np.ndarray,
    slope: float,
    shift: np.ndarray,
    no_root: str,
    xtol: float = 1e-13,
) -> tuple[np.ndarray, np.ndarray]:
    """``inf{β >= 0 : G_r(β) = 0}`` per row; returns (roots, boundary flags). See module doc.

    ``xtol``: relative bracket width at which to stop (a Newton step below ``1e-15``
    relative stops it too)."""
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
        done |= np.abs(newton - x) <= min(xtol, 1e-15) * np.maximum(1.0, x)  # converged
        ok = np.isfinite(newton) & (newton > lo) & (newton < hi)
        nxt = np.where(ok, newton, 0.5 * (lo + hi))
        done |= (hi - lo) <= xtol * np.maximum(1.0, hi)
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

    ``zeta = max_j 8 d_j / n`` with ``d_j = n Σ_k J_jk``; ``Delta_min = max_j (24/(ε' n))
    Σ_i d_i J_ij``; ``noise_scale`` is ``γ = ζ √(8 log(2/δ') + 4ε') / ε'`` (Gaussian, ``δ > 0``)
    or the Laplace scale ``2ζ/ε'`` (``δ = 0``). ``epsilon``/``delta``/``budget`` are the
    claimed guarantee; the noise is calibrated at ``epsilon_noise = ε' = ε - 3η`` and
    ``delta_noise = δ' = δ (1 - 10^-12)/(1 + η)``, where ``eta`` bounds the relative error of
    the exact lattice noise (spacing ``noise_spacing = scale · 2^-40``) and of the float
    evaluation of ``L`` on each cell of the public grid of spacing ``resolution``
    (:mod:`pgm_dp.ising.prising_cells`).
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
    resolution: float = DEFAULT_RESOLUTION
    eta: float = 0.0
    epsilon_noise: float = math.nan
    delta_noise: float = math.nan

    @property
    def noise_spacing(self) -> float:
        """Spacing ``h = noise_scale · 2^-40`` of the noise lattice."""
        return math.ldexp(self.noise_scale, -FINE_BITS)


def _resolution(resolution) -> float:
    try:
        g = float(resolution)
    except (TypeError, ValueError):
        g = math.nan
    if isinstance(resolution, bool) or not (math.isfinite(g) and g > 0):
        raise PrivacyParameterError(f"resolution must be a finite number > 0, got {resolution!r}")
    return g


def _user_delta(Delta, delta_min: float) -> float | None:
    """A user ``Delta`` checked against Algorithm 1's minimum at the claimed ``ε``."""
    if Delta is None:
        return None
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
    return big_delta


def _calibrate(Jc, n: int, epsilon, delta, Delta, resolution) -> PrIsingCalibration:
    budget = ApproxDP(epsilon, delta)  # validates ε > 0 finite, 0 <= δ < 1
    eps, dlt = budget.epsilon, budget.delta
    g = _resolution(resolution)
    row = np.asarray(Jc.sum(axis=1), dtype=np.float64).ravel()
    if not np.any(row > 0):
        raise DataValidationError("J has no non-zero entry: β is not identifiable (ζ = 0)")
    d = n * row  # d_i = n Σ_j J_ij
    zeta = float(np.max(8.0 * d / n))
    jd = float(np.max(np.asarray(Jc @ d).ravel()))
    user = _user_delta(Delta, 24.0 / (eps * n) * jd)
    mech = "gaussian" if dlt > 0 else "laplace"
    tau = roundoff_bound(n, float(row.sum()))

    def at(e: float, dl: float) -> tuple[float, float, float, float]:
        delta_min = 24.0 / (e * n) * jd
        big_delta = delta_min if user is None else max(user, delta_min)
        if mech == "gaussian":
            scale = zeta * math.sqrt(8.0 * math.log(2.0 / dl) + 4.0 * e) / e
        else:
            scale = 2.0 * zeta / e
        # cells are >= Delta_min g wide whatever Delta is used: eta does not depend on Delta
        eta = lattice_eta(mech, scale, delta_min * g, tau, epsilon=eps, delta=dlt or 1.0)
        return delta_min, big_delta, scale, eta

    eta = 2.0 * at(eps, dlt)[3]  # margin for the shift of Δ and the scale with ε'
    eps_n, dlt_n = eps - 3.0 * eta, dlt * (1.0 - 1e-12) / (1.0 + eta)
    if eps_n < 0.9 * eps:
        raise PrivacyParameterError(
            f"epsilon={eps:g} is too small for resolution={g:g} on this J (eta={eta:.3g}); "
            "use a coarser resolution"
        )
    delta_min, big_delta, scale, eta_n = at(eps_n, dlt_n)
    if eta_n > eta:  # cannot happen for the changes of order eta above
        raise PrivacyParameterError(f"internal: lattice error {eta_n:.3g} above {eta:.3g}")
    cost = ApproxDP(eps, dlt) if mech == "gaussian" else PureDP(eps)
    return PrIsingCalibration(
        n, eps, dlt, zeta, delta_min, big_delta, mech, scale, cost, g, eta, eps_n, dlt_n
    )


def prising_calibration(
    J, epsilon: float, delta: float, *, Delta=None, resolution: float = DEFAULT_RESOLUTION
) -> PrIsingCalibration:
    """``ζ``, ``Δ`` (the minimum of Algorithm 1 unless a larger ``Delta`` is given) and the
    noise scale for a non-negative symmetric zero-diagonal ``J`` (dense or sparse), with the
    noise calibrated at ``ε' = ε - 3η`` (``η`` ~ 1e-8: :class:`PrIsingCalibration`).

    >>> c = prising_calibration(np.array([[0.0, 0.5], [0.5, 0.0]]), 1.0, 0.0)
    >>> c.zeta, round(c.Delta, 6), c.mechanism, round(c.noise_scale, 6), c.eta < 1e-6
    (4.0, 6.0, 'laplace', 8.0, True)
    """
    Jc = check_coupling(J, nonnegative=True)
    return _calibrate(Jc, Jc.shape[0], epsilon, delta, Delta, resolution)


@dataclass(frozen=True)
class PrIsingResult:
    """Output of :func:`prising`. Only ``estimate`` is the private release.

    ``estimate`` is the midpoint ``(k + 1/2) g`` of the cell ``(k g, (k+1) g]`` of the public
    grid (``g = calibration.resolution``) holding the root, or the boundary value (``0.0``, or
    ``inf`` with ``no_root="inf"``) when ``boundary`` (``G(0) >= 0``). Neither the
    full-precision root nor the noise ``b`` is kept: with the public ``J`` either would reveal
    ``L_σ`` at a known point, a function of σ (:mod:`pgm_dp.ising.prising_cells`).
    ``calibration`` holds ``ζ``, ``Δ``, the noise scale (``γ`` or the Laplace scale), the
    mechanism, the budget ``PureDP(ε)``/``ApproxDP(ε, δ)`` and the resolution.
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

    @property
    def resolution(self) -> float:
        return self.calibration.resolution


def _release(m, sig, cal: PrIsingCalibration, gen, no_root: str) -> tuple[np.ndarray, ...]:
    """Draw ``b`` (exact lattice noise, spacing ``scale 2^-40``) and return the snapped
    estimates and boundary flags: the cell is decided by exact comparisons of ``b`` with
    ``b_σ`` at grid points, started from the float root's cell (``prising_cells``)."""
    r = sig.shape[0]
    z = draw_units(cal.mechanism, r, gen)
    h, n = cal.noise_spacing, sig.shape[1]
    shift = z.astype(np.float64) * h / n
    root, _ = _first_root(m, sig, cal.Delta / n, shift, "boundary", xtol=1e-9)  # a start only
    k, bnd = find_cells(m, sig, z, h, cal.Delta, cal.resolution, root)
    est = (k.astype(np.float64) + 0.5) * cal.resolution
    est[bnd] = np.inf if no_root == "inf" else 0.0
    return est, bnd


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
    resolution: float = DEFAULT_RESOLUTION,
) -> PrIsingResult:
    """Algorithm 1 of PrIsing: ``(ε, δ)``-node-outcome-DP estimate of β (Theorem 3.1).

    ``m_i = Σ_j J_ij σ_j``, ``d_i = n Σ_j J_ij``, ``ζ = max_j 8 d_j/n``; ``b ~ N(0, γ²)`` with
    ``γ = ζ √(8 log(2/δ) + 4ε)/ε`` if ``δ > 0``, ``b ~ Laplace(0, 2ζ/ε)`` if ``δ = 0``;
    ``Δ >= max_j (24/(ε n)) Σ_i d_i J_ij`` (the minimum unless a larger ``Delta`` is given;
    a smaller one raises :class:`~pgm_dp.errors.PrivacyParameterError`);
    ``β̂_priv = inf{β >= 0 : L_σ(β) + Δβ/n + b/n = 0}`` (boundary case: module docstring).

    Released: the cell of ``β̂_priv`` on the public grid of spacing ``resolution`` (its
    midpoint; 0.0 at the boundary), a post-processing of the continuous mechanism. ``b`` is
    exact lattice noise (spacing ``scale·2^-40``); the cell is decided exactly from ``b``.
    Each cell's probability is then within ``1 ± η`` of the continuous one (``η`` ~ 1e-8,
    :class:`PrIsingCalibration`), so the noise, ``Δ`` and ``ζ`` are calibrated at
    ``ε - 3η`` and ``δ(1 - 10^-12)/(1 + η)`` and the claimed ``(ε, δ)`` holds
    (derivation: :mod:`pgm_dp.ising.prising_cells`).

    All inputs are validated first; then ``accountant`` (if given) is charged
    ``PureDP(ε)``/``ApproxDP(ε, δ)``; only then is the noise drawn.

    >>> from pgm_dp.ising.networks import karate_club, scale_symmetric
    >>> A, s = karate_club()
    >>> res = prising(s, scale_symmetric(A), epsilon=50.0, delta=1e-3, rng=0)
    >>> res.mechanism, res.estimate >= 0, round(res.estimate / 1e-3 - 0.5, 9).is_integer()
    ('gaussian', True, True)
    """
    _check_no_root(no_root)
    Jc = check_coupling(J, nonnegative=True)
    n = Jc.shape[0]
    sig = _sigma(sigma, n, batch=False)
    cal = _calibrate(Jc, n, epsilon, delta, Delta, resolution)
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be a pgm_dp.privacy.Accountant, got {accountant!r}")
    gen = as_generator(rng)
    m = _fields(Jc, sig[None, :])
    if accountant is not None:
        accountant.charge(
            cal.budget,
            what="PrIsing: Ising inverse temperature beta (Algorithm 1)",
            mechanism=f"objective perturbation ({cal.mechanism}), grid {cal.resolution:g}",
            scale=cal.noise_scale,
        )
    est, bnd = _release(m, sig[None, :], cal, gen, no_root)
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
    resolution: float = DEFAULT_RESOLUTION,
) -> np.ndarray:
    """Independent runs of Algorithm 1 on the rows of ``sigmas`` ``(r, n)`` (fresh noise each).

    For simulations (each row is a separate data set, as in PrIsing Sec. 4), so no accountant
    is involved; use :func:`prising` for a release. Returns the ``r`` released (grid-snapped)
    estimates, exactly as :func:`prising` releases them.

    >>> J = np.array([[0.0, 0.5], [0.5, 0.0]])
    >>> prising_batch([[1, 1], [1, -1]], J, 1.0, 0.1, rng=0).shape
    (2,)
    """
    _check_no_root(no_root)
    Jc = check_coupling(J, nonnegative=True)
    n = Jc.shape[0]
    sig = np.atleast_2d(_sigma(sigmas, n, batch=True))
    cal = _calibrate(Jc, n, epsilon, delta, Delta, resolution)
    gen = as_generator(rng)
    est, _ = _release(_fields(Jc, sig), sig, cal, gen, no_root)
    return est
