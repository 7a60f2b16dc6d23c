"""Private Ising learning by per-node L2-regularised logistic regression and output
perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Sec. 3 / Cor. 8), a Gaussian-noise,
``rho``-zCDP counterpart of Zhang et al.'s Alg. 2 (same node-wise regressions, same
``A_ij = w_j / 2``, Lemma 3.7 of Zhang et al. 2020).

For node ``i`` the features are ``x = [z_-i, 1]`` (``||x||_2 = sqrt(p) =: xi``), the label
``y = z_i`` and the estimate the exact minimiser of the strongly convex objective

    ``J(w) = (1/n) sum_m log(1 + exp(-y_m <w, x_m>)) + (lam2 / 2) ||w||_2^2``.

Conditions of the sensitivity bound, all checked here: the loss is convex and differentiable
in ``w`` with ``|d loss / d margin| < 1``, so every record's gradient has norm ``<= xi``
(spins are ±1: ``||x||_2 = sqrt(p)`` exactly); the regulariser makes ``J`` ``lam2``-strongly
convex (``lam2 > 0``). Neighbours differ in **one record replaced**; ``n`` is public (``lam2``
and ``sigma`` are functions of it, and ``fit.info`` shows both), the relation of Zhang et al.
(their Sec. 2). Replacing one record changes ``n J`` by ``l_1' - l_1`` whose gradient has norm
``<= 2 xi``; by strong convexity (``n lam2 ||w' - w|| <= ||grad (n J)(w')|| <= 2 xi``) the
minimisers move by at most ``2 xi / (n lam2)`` (Chaudhuri et al. 2011, Cor. 8).

The computed ``w`` is within ``r = gamma / (2 lam2)`` of the exact minimiser ``w*``,
``gamma = tol xi / n``, on every data set: a damped Newton (compiled; Armijo steps, never
increasing ``J``) runs until ``||grad J(w)||_2 <= gamma / 2`` for every node, which gives
``||w - w*|| <= ||grad J(w)|| / lam2 <= r``; should it not get there in ``max_iter`` steps,
gradient descent (step ``2 / (m + L)``, ``m = lam2``, ``L = lam2 + p / 4``) continues for
:func:`descent_steps` steps, a number computed from ``p``, ``lam2`` and ``gamma`` alone for
which the contraction ``||w_t - w*|| <= ((L - m) / (L + m))^t ||w_0 - w*||`` (Nesterov 2004,
Thm. 2.1.15) and ``||w_0 - w*||^2 <= 2 (J(w_0) - J*) / lam2 <= 2 log 2 / lam2`` (``J(w_0) <=
J(0) = log 2``, ``J* >= 0``) prove the same ``r``. So the computed ``w`` has L2 sensitivity
at most ``Delta = 2 xi (1 + tol) / (n lam2)`` per node and ``sqrt(p) Delta`` for all ``p``
nodes together, nothing is refused after the data are read, and neither the number of
iterations nor which solver finished is released (the running time is not covered, as
nowhere in this library). The ``p`` vectors are released at once by the Gaussian mechanism
of :mod:`pgm_dp.privacy` (exact discrete Gaussian on a lattice, ``sigma = sqrt(p) Delta /
sqrt(2 rho)``: ``rho``-zCDP, Bun & Steinke 2016, Prop. 1.6). Nothing else touches the data.
Settings (``n``, ``p``, ``lam2``, ``tol``) for which :func:`descent_steps` exceeds
:data:`MAX_DESCENT_STEPS` are refused before anything is read (a tiny ``lam2`` is not one of
them: ``r`` then exceeds ``r_0`` and no step is needed).

``lam2`` defaults to ``c sqrt(p / (n sqrt(2 rho)))`` (``c = lam2_scale = 2``): it balances
the noise, ``~ p / (n lam2 sqrt(rho))``, against the shrinkage, ``~ lam2``; a function of the
public ``n``, ``p`` and ``rho`` only. For ``p <= 16`` the released weights are then corrected
for the shrinkage by post-processing (:func:`debias`, ``correct=True``; no data used).

>>> from pgm_dp.ising import gibbs_ising
>>> A = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, -0.4], [0.0, -0.4, 0.0]])
>>> z = gibbs_ising(A, n_chains=10000, n_sweeps=20, rng=0)
>>> est = learn_ising_logistic(z, rho=1.0, rng=1)
>>> bool(np.max(np.abs(est.A - A)) < 0.15)
True
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import expit

from ..._config import one_blas_thread
from ...errors import DataValidationError, PrivacyParameterError
from ...privacy import ZCDP, Accountant
from ...privacy.mechanisms import perturb
from ...rng import RngLike, as_generator
from ..base import Fit
from .pairwise import _budget_rho, _rho, _spins, as_model, check_spins, model_from_tables

__all__ = [
    "LogisticEstimate",
    "OutputPerturbationIsing",
    "debias",
    "default_lam2",
    "descent_steps",
    "learn_ising_logistic",
    "output_sensitivity",
]

#: the shrinkage correction enumerates ``2^p`` states: up to this ``p``
MAX_DEBIAS_P = 16
_STEPS = 2.0 ** -np.arange(8)  # damped Newton: the largest step with Armijo's decrease
#: most gradient-descent steps :func:`learn_ising_logistic` may need (else ``lam2`` is refused)
MAX_DESCENT_STEPS = 10**7


@dataclass(frozen=True)
class LogisticEstimate:
    """``A`` ``(p, p)`` (row ``i`` from node ``i``), fields ``theta``, the regulariser, the
    Gaussian ``sigma`` on each ``w`` and the cost: public numbers and the noisy release only
    (no iteration count, module doc)."""

    A: np.ndarray
    theta: np.ndarray
    lam2: float
    sigma: float
    spent: ZCDP | None


def default_lam2(n: int, p: int, rho: float | None, scale: float = 2.0) -> float:
    """``scale sqrt(p / (n sqrt(2 rho)))`` (module doc); ``rho = None``: ``scale p / n``.

    >>> round(default_lam2(100_000, 16, 1.0, scale=1.0), 5)
    0.01064
    """
    if rho is None:
        return scale * p / n
    return scale * math.sqrt(p / (n * math.sqrt(2 * rho)))


def output_sensitivity(n: int, p: int, lam2: float, tol: float) -> float:
    """One node's L2 sensitivity ``2 xi (1 + tol) / (n lam2)``, ``xi = sqrt(p)`` (module doc).

    >>> output_sensitivity(1000, 4, 0.1, 0.0)
    0.04
    """
    return 2.0 * math.sqrt(p) * (1.0 + tol) / (n * lam2)


def descent_steps(p: int, lam2: float, gamma: float) -> int:
    """Gradient-descent steps that bring any ``w`` with ``J(w) <= log 2`` within ``gamma / (2
    lam2)`` of ``w*`` (module doc): ``log(r_0 / r) / log((L + m) / (L - m))`` rounded up,
    ``r_0 = sqrt(2 log 2 / lam2)``, ``m = lam2``, ``L = lam2 + p / 4``. Public numbers only.

    >>> descent_steps(3, 0.1, 1e-4)
    38
    """
    m, big = lam2, lam2 + p / 4
    ratio = math.sqrt(2 * math.log(2) / lam2) / (gamma / (2 * lam2))
    if ratio <= 1:
        return 0
    return math.ceil(math.log(ratio) / math.log1p(2 * m / (big - m)))


def _gradient(W, F, Y, M, weight, n, lam2):
    """Every node's ``grad J`` ``(p, d)`` (masked to its coordinates) and the sigmoids."""
    s = jax.nn.sigmoid(-Y * (F @ W.T))  # (u, p)
    return M * ((-(Y * s) * weight[:, None]).T @ F / n + lam2 * W), s


@functools.partial(jax.jit, static_argnames=("max_iter",))
def _newton(F, weight, mask, n, lam2, gamma, max_iter):
    """Damped Newton on every node's ``J`` at once. ``F`` ``(u, p + 1)`` unique rows of
    ``[z, 1]`` with multiplicities ``weight``; node ``b``'s label is ``F[:, b]`` and ``mask[b]``
    its coordinates. Stops when every ``||grad J_b||_2 <= gamma / 2``; a step that no
    ``_STEPS`` length makes decrease ``J`` (Armijo) is not taken, so ``J`` never increases."""
    Y = F[:, : mask.shape[0]]  # (u, p)
    M = mask.astype(F.dtype)  # (p, d)

    def objective(W):  # W (p, d) -> (p,)
        m = F @ W.T
        return weight @ jnp.logaddexp(0.0, -Y * m) / n + lam2 / 2 * (W * W).sum(1)

    def grad_hess(W):
        g, s = _gradient(W, F, Y, M, weight, n, lam2)
        c = s * (1 - s) * weight[:, None] / n  # (u, p)
        H = jnp.einsum("ub,ud,ue->bde", c, F, F) * M[:, :, None] * M[:, None, :]
        return g, H + lam2 * jnp.eye(F.shape[1])

    def cond(state):
        W, it, gnorm = state
        return (it < max_iter) & (gnorm.max() > gamma / 2)

    def body(state):
        W, it, _ = state
        g, H = grad_hess(W)
        d = jnp.linalg.solve(H, g[..., None])[..., 0]  # (p, d)
        f0 = objective(W)
        trial = jax.vmap(lambda a: objective(W - a * d))(jnp.asarray(_STEPS))  # (k, p)
        ok = trial <= f0 - 1e-4 * _STEPS[:, None] * (g * d).sum(1)
        a = jnp.where(ok.any(0), jnp.asarray(_STEPS)[jnp.argmax(ok, axis=0)], 0.0)
        W = W - a[:, None] * d
        gW = grad_hess(W)[0]
        return W, it + 1, jnp.sqrt((gW * gW).sum(1))

    W0 = jnp.zeros(mask.shape)
    g0 = grad_hess(W0)[0]
    return jax.lax.while_loop(cond, body, (W0, 0, jnp.sqrt((g0 * g0).sum(1))))


@functools.partial(jax.jit, static_argnames=("steps",))
def _descent(W, F, weight, mask, n, lam2, steps):
    """``steps`` gradient-descent steps of length ``2 / (m + L)`` on every node (module doc)."""
    Y, M = F[:, : mask.shape[0]], mask.astype(F.dtype)
    size = 2.0 / (2 * lam2 + mask.shape[0] / 4)

    def body(_, W):
        return W - size * _gradient(W, F, Y, M, weight, n, lam2)[0]

    return jax.lax.fori_loop(0, steps, body, W)


def debias(W: np.ndarray, lam2: float) -> np.ndarray:
    """Post-processing of released ``W`` ``(p, p + 1)``: undo the ridge shrinkage to first
    order, ``w_b + lam2 H_b^-1 w_b``, with ``H_b = E[s(1 - s) x x^T]`` (``s = sigmoid(<w_b,
    x>)``) under the Ising model the released ``W`` itself defines (``A = (W + W^T) / 4``
    off the diagonal, ``theta = W[:, p] / 2``), enumerated exactly over its ``2^p`` states.
    The stationarity ``grad L(w_reg) = -lam2 w_reg`` and ``grad L(w*) = 0`` give
    ``w* - w_reg ~ lam2 H^-1 w_reg``. Uses no data: privacy is unchanged. A node whose
    ``H`` is singular to working precision (extreme released weights) is left as released:
    this never raises."""
    p = W.shape[0]
    states = 1.0 - 2.0 * ((np.arange(2**p)[:, None] >> np.arange(p)) & 1)  # (2^p, p)
    A = (W[:, :p] + W[:, :p].T) / 4
    np.fill_diagonal(A, 0.0)
    energy = 0.5 * ((states @ A) * states).sum(1) + states @ (W[:, p] / 2)
    prob = np.exp(energy - energy.max())
    prob /= prob.sum()
    S = np.hstack([states, np.ones((2**p, 1))])  # x = [z, 1]; node b drops column b
    V = W.copy()
    V[np.arange(p), np.arange(p)] = 0.0
    sig = expit(S @ V.T)  # (2^p, p)
    C = prob[:, None] * sig * (1 - sig)
    out = W.copy()
    for b in range(p):
        keep = np.arange(p + 1) != b
        H = (S[:, keep] * C[:, b : b + 1]).T @ S[:, keep]
        with np.errstate(all="ignore"):
            step = lam2 * np.linalg.lstsq(H, V[b, keep], rcond=None)[0]
        if np.linalg.cond(H) < 1e12 and np.all(np.isfinite(step)):
            out[b, keep] += step  # else node b is left as released (H singular)
    return out


def _fit(z: np.ndarray, lam2: float, tol: float, max_iter: int, descent: int | None = None):
    """Every node's ``w`` within ``gamma / (2 lam2)`` of its ``w*`` (module doc): Newton, then
    ``descent`` (default :func:`descent_steps`) gradient steps only if Newton did not certify
    it. Returns ``W`` alone."""
    n, p = z.shape
    if descent is None:
        descent = descent_steps(p, lam2, tol * math.sqrt(p) / n)
    F = np.hstack([z, np.ones((n, 1))])
    rows, weight = np.unique(F, axis=0, return_counts=True)
    args = (
        jnp.asarray(rows),
        jnp.asarray(weight, dtype=jnp.float64),
        jnp.asarray(~np.eye(p, p + 1, dtype=bool)),
        float(n),
        lam2,
    )
    gamma = tol * math.sqrt(p) / n
    W, _, gnorm = _newton(*args, gamma, max_iter)
    if np.max(np.asarray(gnorm)) > gamma / 2:
        W = _descent(W, *args, descent)
    return np.array(W)


def _check_options(n, p, r, lam2, lam2_scale, tol, max_iter) -> tuple[float, int]:
    """``lam2`` (default or given) and the descent steps, or a ValueError: every check of
    :func:`learn_ising_logistic`, on public numbers, before the data are read."""
    if r is not None and not r > 0:
        raise PrivacyParameterError(f"rho must be > 0 (or None / inf: non-private), got {r}")
    if lam2 is None:
        lam2 = default_lam2(n, p, r, lam2_scale)
    if isinstance(lam2, bool) or not (math.isfinite(lam2) and lam2 > 0):
        raise DataValidationError(f"lam2 must be finite and > 0, got {lam2!r}")
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
        raise DataValidationError("need an integer max_iter >= 1")
    if not (math.isfinite(tol) and 0 < tol <= 1):
        raise DataValidationError("need 0 < tol <= 1")
    descent = descent_steps(p, float(lam2), tol * math.sqrt(p) / n)
    if descent > MAX_DESCENT_STEPS:
        raise DataValidationError(
            f"lam2 = {lam2!r} and tol = {tol!r} need {descent} gradient steps to certify the "
            f"solver's accuracy (at most {MAX_DESCENT_STEPS}); use another lam2 or a larger tol"
        )
    return float(lam2), descent


def learn_ising_logistic(
    samples: Any,
    rho: ZCDP | float | None,
    *,
    lam2: float | None = None,
    lam2_scale: float = 2.0,
    tol: float = 0.01,
    max_iter: int = 100,
    correct: bool = True,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> LogisticEstimate:
    """``rho``-zCDP Ising couplings by per-node logistic regression with output perturbation
    (module doc; neighbours: one record replaced, ``n`` public); ``rho`` ``None``/``inf``: the
    same regressions without noise. Every check runs on public numbers before the data are
    read; nothing raises after the charge."""
    z = check_spins(samples)
    n, p = z.shape
    r = _rho(rho)
    lam2, descent = _check_options(n, p, r, lam2, lam2_scale, tol, max_iter)
    W = _fit(z, lam2, tol, int(max_iter), descent)
    sigma, spent = 0.0, None
    if r is not None:
        delta = math.sqrt(p) * output_sensitivity(n, p, lam2, tol)  # all p nodes together
        used = ~np.eye(p, p + 1, dtype=bool)  # the diagonal is 0 whatever the data
        W[used], model = perturb(
            W[used],
            kind="gaussian",
            sensitivity=delta,
            budget=ZCDP(r),
            rng=as_generator(rng),
            accountant=accountant,
            what="per-node logistic regression, output perturbation",
        )
        sigma, spent = model.scale, ZCDP(r)
    if correct and r is not None and p <= MAX_DEBIAS_P:
        with one_blas_thread():  # small products: a thread pool costs more than it gives
            W = debias(W, lam2)
    A = W[:, :p] / 2
    A[np.diag_indices(p)] = 0.0
    return LogisticEstimate(A, W[:, p] / 2, lam2, sigma, spent)


@dataclass(frozen=True)
class OutputPerturbationIsing:
    """:func:`learn_ising_logistic` as a :class:`~pgm_dp.learners.RecordLearner` (``budget``:
    ``ZCDP`` or None; neighbours: one record replaced, ``n`` public); an edge takes ``(A_ij +
    A_ji) / 2``, as :class:`ZhangIsing` does. ``fit.info``: the noisy ``A`` and ``theta``,
    ``lam2``, ``sigma`` (both functions of the public ``n``), ``spent``, ``budget``."""

    lam2: float | None = None
    lam2_scale: float = 2.0

    def fit(self, data, mrf, *, budget=None, rng=None, accountant=None) -> Fit:
        mrf = as_model(mrf)
        z, rho = _spins(data, mrf), _budget_rho(budget, "OutputPerturbationIsing")
        model_from_tables(mrf, lambda i: np.zeros(2), lambda i, j: np.zeros((2, 2)))  # checks
        est = learn_ising_logistic(
            z, rho, lam2=self.lam2, lam2_scale=self.lam2_scale, rng=rng, accountant=accountant
        )
        spin = np.array([-1.0, 1.0])
        A = (est.A + est.A.T) / 2
        model = model_from_tables(
            mrf, lambda i: est.theta[i] * spin, lambda i, j: A[i, j] * np.outer(spin, spin)
        )
        info = {"A": est.A, "theta": est.theta, "lam2": est.lam2, "sigma": est.sigma}
        return Fit(model, info=info | {"spent": est.spent, "budget": budget})
