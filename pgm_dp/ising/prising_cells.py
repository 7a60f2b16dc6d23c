"""PrIsing's release on a public grid: why the lattice noise keeps Theorem 3.1, and the cell.

The problem. Algorithm 1 (Chakraborty, Chatterjee & Dalal 2024) releases the root ``β̂`` of
``L_σ(β) + Δβ/n + b/n = 0``. Theorem 3.1's proof is a change of variables (Eq. 9-10): it
needs ``b`` to have a density. A float (or lattice) ``b`` released through a full-precision
``β̂`` is not private: ``b(β̂; s) = -(n L_s(β̂) + Δβ̂)`` is the noise for the true ``s = σ``
and lands on the noise's support, for another ``s`` it almost never does.

The release. With ``S_σ(β) = Σ_i m_i (σ_i - tanh(β m_i)) = -n L_σ(β)`` (non-increasing) and
``b_σ(β) = S_σ(β) - Δβ`` (strictly decreasing, Eq. 9), ``β̂ ∈ (g_k, g_{k+1}]`` iff
``b ∈ I_k = [b_σ(g_{k+1}), b_σ(g_k))`` and ``β̂ = 0`` (boundary) iff ``b ∈ [b_σ(0), ∞)``, for the
public grid ``g_k = k g`` (``g`` the ``resolution``). Releasing only the cell (its midpoint
``(k + 1/2) g``, or the boundary value) is post-processing of the continuous mechanism, so
Theorem 3.1 holds for it at the calibration's ``(ε', δ')``. Cells are at least ``W = Δ g`` wide
in ``b`` (``S`` is non-increasing).

Implementation. ``b`` is ``z h`` with ``z`` the exact discrete Laplace / Gaussian integer of
scale ``2^40`` (:func:`~pgm_dp.privacy.lattice.sample_lattice_units`), ``h = scale · 2^-40``;
the cell is found by exact comparisons of ``b + Δ g_k`` (rationals) with the computed
``S̃_σ(g_k)``, from the float root's cell, never by rounding the float root.

Error bound (``η``). (i) ``|S̃_σ(β) - S_σ(β)| <= τ = 8 (n + 2) u R`` with ``u = 2^-53``,
``R = Σ_ij J_ij``: ``m_i`` is a sum of ``n`` terms (error ``<= γ_n r_i``, ``r_i = Σ_j J_ij``), and
``|∂/∂m (m (σ - tanh(β m)))| <= 2.45``; ``β``, ``β m``, ``tanh`` (4 ulp), the difference and
the product add ``<= 9 u |m_i|``; the final sum of ``n`` terms ``<= 2.02 γ_n R``: in all
``<= (4.6 n + 9.1) u R``. So the implemented cell ``k`` (even if evaluations differ between
calls) satisfies ``b ∈ [b_σ(g_{k+1}) - τ, b_σ(g_k) + τ)`` and contains
``[b_σ(g_{k+1}) + τ, b_σ(g_k) - τ)``. (ii) The noise density ``f`` has
``|(log f)'| <= λ``: ``1/s`` for Laplace; ``(T+1)/γ`` for the Gaussian on
``|x| <= (T+1)γ``. For a lattice point ``x``, ``h f(x) <= e^{λh} ∫_x^{x+h} f`` and
``>= e^{-λh} ∫_{x-h}^x f``; summing over the lattice points of the implemented cell and
comparing with ``∫_{I_k} f`` leaves two end pieces of width ``<= τ + h`` each, and a piece of
width ``v`` at an end ``e`` of ``I_k`` has mass ``<= v f(e) e^{λv}`` while ``∫_{I_k} f >=
w f(e) / e`` (``w = min(W, 1/λ)``). The lattice normaliser ``Z = Σ_x h f(x)`` is in
``[1, 1 + (λh)²/12]`` (Laplace: ``x coth x``; Gaussian: Poisson summation). Hence, with
``x = (2τ + h)/w <= 10^-3``, every cell's lattice probability is within ``(1 ± η)`` of its
continuous one, ``η = 3x + 2λh + 10^-12`` (the last term covers the float rounding of the
calibration formulas). (iii) Then for any set ``E`` of outputs and neighbours ``σ, σ'``:
``P_h(E|σ) <= (1+η) P(E|σ) <= (1+η)(e^{ε'} P(E|σ') + δ') <= e^{ε'+3η} P_h(E|σ') + (1+η)δ'``
(``(1+η)/(1-η) <= e^{3η}``). The Gaussian's ``λ`` holds on ``|x| <= (T+1)γ`` only: cells
are cut at ``±Tγ`` and the tails, ``<= (3 e^ε + 2) Φ̄(T - 1) <= 2.5 e^-30 δ`` for
``T = 1 + sqrt(2 (ε + log(1/δ) + 30))``, go to ``δ``. Calibrating at ``ε' = ε - 3η`` and
``δ' = δ (1 - 10^-12)/(1 + η)`` keeps the claimed ``(ε, δ)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..errors import PrivacyParameterError
from ..privacy.lattice import FINE_BITS, sample_lattice_units

__all__ = ["FINE_BITS", "roundoff_bound", "lattice_eta", "draw_units", "find_cells"]

_U = 2.0**-53
_MAX_X = 1e-3  # (2 tau + h) / w above this: the grid is too fine for the float evaluation


def roundoff_bound(n: int, total: float) -> float:
    """``τ = 8 (n + 2) u R``: bound on ``|S̃_σ(β) - S_σ(β)|`` (module docstring, (i))."""
    return 8.0 * (n + 2) * _U * float(total)


def gaussian_tail_T(epsilon: float, delta: float) -> float:
    """``T = 1 + sqrt(2 (ε + log(1/δ) + 30))``: the Gaussian's cut (module docstring)."""
    return 1.0 + math.sqrt(2.0 * (epsilon + math.log(1.0 / delta) + 30.0))


def lattice_eta(
    mechanism: str,
    scale: float,
    width: float,
    tau: float,
    *,
    epsilon: float,
    delta: float,
    bits: int = FINE_BITS,
) -> float:
    """``η`` of the module docstring for noise ``scale`` on spacing ``scale 2^-bits`` and
    cells at least ``width`` wide in ``b`` (``Δ g``). Raises :class:`PrivacyParameterError`
    when ``(2τ + h)/w > 10^-3`` (the grid is too fine for the float evaluation of ``L``)."""
    h = math.ldexp(scale, -bits)
    if mechanism == "laplace":
        lam = 1.0 / scale
    else:
        lam = (gaussian_tail_T(epsilon, delta) + 1.0) / scale
    w = min(width, 1.0 / lam)
    x = (2.0 * tau + h) / w
    if not x <= _MAX_X:
        raise PrivacyParameterError(
            f"resolution too fine: cells of width {width:.3g} in the noise b against a "
            f"rounding bound {tau:.3g} for L; use a resolution at least "
            f"{(2.0 * tau + h) / _MAX_X / width:.3g} times larger"
        )
    return 3.0 * x + 2.0 * lam * h + 1e-12


def draw_units(mechanism: str, size: int, gen: np.random.Generator) -> np.ndarray:
    """The noise ``b = z · scale · 2^-40`` as exact integers ``z`` (int64)."""
    return sample_lattice_units(mechanism, size, gen, bits=FINE_BITS)


def _s_tilde(k: np.ndarray, m: np.ndarray, sig: np.ndarray, g: float) -> np.ndarray:
    """``S̃_σ(k g)`` per row, the float evaluation the bound ``τ`` is about."""
    beta = k.astype(np.float64) * g
    return np.sum(m * (sig - np.tanh(beta[:, None] * m)), axis=1)


def _below(
    k: np.ndarray, rows: np.ndarray, z, h: float, Delta: float, g: float, m, sig
) -> np.ndarray:
    """``b < b̃(g_k)``, i.e. ``z h + Δ k g < S̃(k g)`` exactly, for the given ``rows``."""
    s = _s_tilde(k, m[rows], sig[rows], g)
    bf = z[rows].astype(np.float64) * h
    pf = Delta * (k.astype(np.float64) * g)
    v = (bf + pf) - s
    slack = 8.0 * _U * (np.abs(bf) + np.abs(pf) + np.abs(s)) + 1e-300
    out = v < 0
    for i in np.flatnonzero(np.abs(v) <= slack):  # undecided in floats: exact rationals
        r = rows[i]
        lhs = int(z[r]) * Fraction(h) + Fraction(Delta) * Fraction(g) * int(k[i])
        out[i] = lhs < Fraction(float(s[i]))
    return out


def find_cells(
    m: np.ndarray,
    sig: np.ndarray,
    z: np.ndarray,
    h: float,
    Delta: float,
    g: float,
    start: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Cells ``k`` (``β̂ ∈ (kg, (k+1)g]``) and boundary flags (``b >= b̃(0)``) per row.

    ``start``: the float root (any value; only a starting point); the answer is decided by
    the bracketing comparisons ``b < b̃(g_k)`` and ``b >= b̃(g_{k+1})``, stepping ``k``.
    """
    r = z.shape[0]
    if m.shape[0] == 1 and r > 1:
        m, sig = np.broadcast_to(m, (r, m.shape[1])), np.broadcast_to(sig, (r, m.shape[1]))
    with np.errstate(invalid="ignore", over="ignore"):
        k0 = np.floor(np.nan_to_num(start, nan=0.0, posinf=0.0) / g)
    k = np.clip(k0, 0, 2.0**52).astype(np.int64)
    boundary = np.zeros(r, dtype=bool)
    active = np.arange(r)
    while active.size:
        ka = k[active]
        lo = _below(ka, active, z, h, Delta, g, m, sig)  # beta_hat > g_k
        hi = ~_below(ka + 1, active, z, h, Delta, g, m, sig)  # beta_hat <= g_{k+1}
        down = ~lo
        boundary[active[down & (ka == 0)]] = True
        k[active[down & (ka > 0)]] -= 1
        k[active[lo & ~hi]] += 1
        active = active[(down & (ka > 0)) | (lo & ~hi)]
    return k, boundary
