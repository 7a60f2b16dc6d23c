"""Gibbs sampling of Ising models on one network, many chains at once (blocked scan).

Conventions for :func:`gibbs_ising` (``J`` symmetric with zero diagonal):

* ``convention="pairwise"`` (default): ``P(σ) ∝ exp(β Σ_{i<j} J_ij σ_i σ_j + Σ_i θ_i σ_i)``
  ``= exp(β/2 · σᵀJσ + θᵀσ)``: each unordered pair counted once. This is PrIsing's model
  (Chakraborty et al. 2024, Eq. 1-2: ``exp(β/2 · H_n(σ))`` with ``H_n(σ) = σᵀ J_n σ`` summed
  over all ordered pairs), whose conditional is ``P(σ_i = 1 | σ_-i) = e^{β m_i} /
  (e^{β m_i} + e^{-β m_i})`` with ``m_i = Σ_j J_ij σ_j``, and also Zhang et al. (2020)
  Def. 2.1 (``Σ_{i<=j} A_ij z_i z_j`` with ``A_ii = 0``, i.e. ``A = βJ``).
* ``convention="quadratic"``: ``P(σ) ∝ exp(β σᵀJσ + θᵀσ)`` (each pair counted twice), i.e. the
  pairwise model with ``2β``.

In both, ``P(σ_i = +1 | σ_-i) = 1 / (1 + exp(-2 h_i))`` with ``h_i = c β m_i + θ_i`` and
``c = 1`` (pairwise) or ``2`` (quadratic).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from .._progress import tqdm
from ..errors import DataValidationError, DomainError
from ..inference.gibbs import Scan, check_count, check_spins, gibbs_blocks
from ..rng import RngLike, as_generator
from .networks import check_coupling

__all__ = ["gibbs_ising"]


def gibbs_ising(
    J,
    theta=None,
    *,
    n_chains: int,
    n_sweeps: int,
    rng: RngLike,
    init=None,
    beta: float = 1.0,
    convention: Literal["pairwise", "quadratic"] = "pairwise",
    scan: Scan = "blocked",
    progress: bool = False,
) -> np.ndarray:
    """Final states of ``n_chains`` independent Gibbs chains after ``n_sweeps`` sweeps.

    Samples (approximately, for ``n_sweeps`` large enough) from the Ising model of the module
    docstring. ``J``: symmetric, zero-diagonal, finite ``(p, p)`` array or scipy sparse
    matrix (signs free); ``theta``: external field ``(p,)`` (default 0); ``init``: ``(p,)`` or
    ``(n_chains, p)`` spins (default i.i.d. uniform ±1 per chain). One sweep updates every
    site once (``scan``: see :mod:`pgm_dp.inference.gibbs`). Returns a float64
    ``(n_chains, p)`` array of ±1.

    >>> J = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> s = gibbs_ising(J, n_chains=4000, n_sweeps=5, rng=0, beta=1.0)
    >>> bool(abs((s[:, 0] * s[:, 1]).mean() - np.tanh(1.0)) < 0.05)
    True
    """
    Jc = check_coupling(J)
    p = Jc.shape[0]
    n_chains = check_count(n_chains, "n_chains", 1)
    n_sweeps = check_count(n_sweeps, "n_sweeps", 0)
    beta_f = float(beta)
    if not np.isfinite(beta_f):
        raise DataValidationError(f"beta must be finite, got {beta!r}")
    if convention not in ("pairwise", "quadratic"):
        raise DomainError(f"convention must be 'pairwise' or 'quadratic', got {convention!r}")
    th = np.zeros(p) if theta is None else np.asarray(theta, dtype=np.float64)
    if th.shape != (p,) or not np.all(np.isfinite(th)):
        raise DataValidationError(f"theta must be a finite vector of length {p}")
    if scan not in ("blocked", "sequential"):
        raise DomainError(f"scan must be 'blocked' or 'sequential', got {scan!r}")
    gen = as_generator(rng)
    init_arr = None if init is None else check_spins(init, p, n_chains, "init")

    K = (2.0 if convention == "quadratic" else 1.0) * beta_f * Jc
    pattern = sp.csr_array(Jc)
    blocks = gibbs_blocks(pattern, p, scan)
    if init_arr is None:
        state = np.where(gen.random((p, n_chains)) < 0.5, 1.0, -1.0)
    else:
        state = np.ascontiguousarray(init_arr.T)
    has_theta = bool(np.any(th != 0))

    if scan == "sequential" and sp.issparse(K):
        Kc = sp.csr_array(K)
        rows = [
            (Kc.indices[Kc.indptr[i] : Kc.indptr[i + 1]], Kc.data[Kc.indptr[i] : Kc.indptr[i + 1]])
            for i in range(p)
        ]

        def field(k: int) -> np.ndarray:
            idx, w = rows[k]
            return (w @ state[idx])[None, :]
    else:
        mats = [K[b] for b in blocks]

        def field(k: int) -> np.ndarray:
            return np.asarray(mats[k] @ state)

    for _ in tqdm(range(n_sweeps), disable=not progress, desc="Gibbs sweeps", leave=False):
        for k, b in enumerate(blocks):
            h = field(k)
            if has_theta:
                h = h + th[b][:, None]
            u = gen.random((b.size, n_chains))
            state[b] = np.where(u < expit(2.0 * h), 1.0, -1.0)
    return np.ascontiguousarray(state.T)
